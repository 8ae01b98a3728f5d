import PeerscopeCore

/// One line of a peer's timeline. Repeated traffic (keep-alives, heartbeats, data, ICE checks,
/// handshake messages) is folded: `t` is the first, `lastT` the last, `count` how many.
public struct TimelineEntry: Sendable, Hashable {
    /// Another input saying the same as the entry (see `corroboration`).
    public struct Corroboration: Sendable, Hashable {
        public var source: String
        public var evidence: Evidence
    }

    public var t: Nanos
    public var lastT: Nanos
    public var count: Int
    public var state: TimelineState
    public var kind: EventKind
    /// True when this peer sent it (or, for a log line, is its subject); false when the other side did.
    public var sent: Bool
    /// The other peer, when the event had two sides.
    public var counterpart: PeerRef?
    public var session: SessionKey?
    /// First and last evidence of the run (one item when `count == 1`).
    public var evidence: [Evidence]
    public var source: String
    /// Other inputs saying the same thing at about the same time (a device log line beside the frame,
    /// MPC's own line beside the app's print): plugin and evidence, at most `maxCorroboration`.
    public var corroboration: [Corroboration] = []
    public static let maxCorroboration = 4
    /// Short detail from the event's attributes (never message contents).
    public var detail: String
    public var letter: Character?

    public init(t: Nanos, state: TimelineState, kind: EventKind, sent: Bool, counterpart: PeerRef?, session: SessionKey?,
                evidence: [Evidence], source: String, detail: String, letter: Character?) {
        self.t = t
        lastT = t
        count = 1
        self.state = state
        self.kind = kind
        self.sent = sent
        self.counterpart = counterpart
        self.session = session
        self.evidence = evidence
        self.source = source
        self.detail = detail
        self.letter = letter
    }
}

/// How each event kind shows in a timeline.
public enum TimelineMapping {
    /// Attribute keys safe to show as detail (names, states, codes; never payloads).
    public static let detailKeys: [String] = {
        typealias Text = EventAttribute<String>
        return [Text.note, .message, .description, .level, .from, .to, .state, .wait].map(\.key)
            + [EventAttribute<Bool>.accepted.key, Text.decision.key, Text.inviteID.key]
            + [Text.type, .channel, .reason, .encryption, .attempt, .delay, .code, .service, .port, .content].map(\.key)
    }()

    public static func detail(_ attrs: [String: String]) -> String {
        var parts: [String] = []
        for k in detailKeys {
            guard let v = attrs[k], !v.isEmpty else { continue }
            // Message contents (present only with --show-payloads) are shown longer than other values.
            let limit = k == "content" ? 240 : 60
            let short = v.count > limit ? String(v.prefix(limit - 3)) + "..." : v
            parts.append("\(k)=\(short)")
        }
        return parts.joined(separator: " ")
    }

    /// The detail of one event: its attributes, except that a receipt names what it acknowledges.
    public static func detail(_ kind: EventKind, _ attrs: [String: String]) -> String {
        if attrs.isEmpty { return "" }
        if kind == .invitationReceipt {
            return "for \(attrs[.type] ?? "?")" + (attrs[.matched] == false ? " (no such message seen)" : "")
        }
        return detail(attrs)
    }

    public static func isAccepted(_ attrs: [String: String]) -> Bool? { EventAttributes.isAccepted(attrs) }

    /// The target state of a `session.state` event: "connected", "connecting", "notconnected".
    public static func targetState(_ attrs: [String: String]) -> String { EventAttributes.targetState(attrs) }

    /// The state and history letter of an event, as the event catalogue declares them.
    @inlinable public static func classify(_ e: PeerEvent) -> (TimelineState, Character?) {
        let s = EventCatalogue.step(e)
        return (s.state, s.letter)
    }
}
