import PeerscopeCore

/// One line of a peer's timeline. Repeated traffic (keep-alives, heartbeats, data, ICE checks,
/// handshake messages) is folded: `t` is the first, `lastT` the last, `count` how many.
///
/// Stored compactly (a long capture keeps millions; 72 bytes): the kind and plugin are one shared box
/// (`Origin`: one per distinct pair in a timeline build), the counterpart and session another
/// (`Link`: one per distinct pair of a peer's timeline), the evidence two inline values, and the
/// detail is formatted when read, from the attributes of the event that gave it (shared with that
/// event, not copied). The properties read and write as plain values (setting one gives the entry a
/// box of its own).
public struct TimelineEntry: Sendable, Hashable {
    /// Another input saying the same as the entry (see `corroboration`).
    public struct Corroboration: Sendable, Hashable {
        public var source: String
        public var evidence: Evidence
    }

    /// Where the detail comes from: an event's attributes (formatted when read) or given text.
    @usableFromInline enum Detail: Sendable, Hashable {
        case none
        case attrs(EventAttrs)
        /// An `invitation.receipt`'s attributes (the detail names what it acknowledges).
        case receipt(EventAttrs)
        /// Given text (rare: entries made outside the builder), boxed to keep the entry small.
        case text(Shared<String>)

        init(_ kind: EventKind, _ attrs: EventAttrs) {
            if attrs.isEmpty { self = .none } else { self = kind == .invitationReceipt ? .receipt(attrs) : .attrs(attrs) }
        }

        var text: String {
            switch self {
            case .none: ""
            case .attrs(let a): TimelineMapping.detail(a)
            case .receipt(let a): TimelineMapping.detail(.invitationReceipt, a)
            case .text(let s): s.value
            }
        }
    }

    /// An entry's event kind and plugin, shared by the entries that have both the same.
    struct Origin: Hashable, Sendable {
        var kind: EventKind
        var source: String
    }

    /// An entry's counterpart and session instance (the builder's boxes, one per peer and instance),
    /// shared by the entries of a timeline that have both the same.
    struct Link: Hashable, Sendable {
        var counterpart: Shared<PeerRef>?
        var session: Shared<SessionKey>?
    }

    public var t: Nanos
    public var lastT: Nanos
    /// How many events the entry stands for: 32 bits beside the flags, or (`countInBox`, never in a
    /// real capture) in the box of `notes`.
    public var count: Int {
        get {
            if count32 != TimelineEntry.countInBox { return Int(count32) }
            if case .boxed(let b) = notes { return b.value.count ?? 0 }
            return 0
        }
        set {
            if newValue >= 0, newValue < Int(TimelineEntry.countInBox) {
                if count32 == TimelineEntry.countInBox { setBoxed(count: nil) }
                count32 = UInt32(newValue)
            } else {
                count32 = TimelineEntry.countInBox
                setBoxed(count: newValue)
            }
        }
    }
    static let countInBox = UInt32.max
    var origin: Shared<Origin>
    var link: Shared<Link>
    public var kind: EventKind {
        get { origin.value.kind }
        set { origin = Shared(Origin(kind: newValue, source: origin.value.source)) }
    }
    public var source: String {
        get { origin.value.source }
        set { origin = Shared(Origin(kind: origin.value.kind, source: newValue)) }
    }
    /// Other inputs saying the same thing at about the same time (a device log line beside the frame,
    /// MPC's own line beside the app's print): plugin and evidence, at most `maxCorroboration`.
    /// Stored beside the detail's source (`notes`): most entries have none.
    public var corroboration: [Corroboration] {
        get { if case .boxed(let b) = notes { b.value.corroboration } else { [] } }
        set {
            switch notes {
            case .plain(let d): notes = TimelineEntry.notes(d, newValue, nil)
            case .boxed(let b): notes = TimelineEntry.notes(b.value.detail, newValue, b.value.count)
            }
        }
    }
    public static let maxCorroboration = 4
    var counterpartBox: Shared<PeerRef>? {
        get { link.value.counterpart }
        set { link = Shared(Link(counterpart: newValue, session: link.value.session)) }
    }
    var sessionBox: Shared<SessionKey>? {
        get { link.value.session }
        set { link = Shared(Link(counterpart: link.value.counterpart, session: newValue)) }
    }
    /// Where the detail comes from (`detailSource`), with the corroboration when there is some (and a
    /// count that does not fit in 32 bits): one word for them (an entry with corroboration, from a log
    /// line beside a frame, is rare: its parts are boxed).
    @usableFromInline enum Notes: Sendable, Hashable {
        case plain(Detail)
        case boxed(Shared<Boxed>)
    }

    @usableFromInline struct Boxed: Sendable, Hashable {
        var detail: Detail
        var corroboration: [Corroboration]
        var count: Int?
    }

    var notes: Notes
    var detailSource: Detail {
        get {
            switch notes {
            case .plain(let d): d
            case .boxed(let b): b.value.detail
            }
        }
        set {
            switch notes {
            case .plain: notes = .plain(newValue)
            case .boxed(let b): notes = TimelineEntry.notes(newValue, b.value.corroboration, b.value.count)
            }
        }
    }

    /// The notes holding these parts: plain when there is only a detail.
    static func notes(_ detail: Detail, _ corroboration: [Corroboration], _ count: Int?) -> Notes {
        corroboration.isEmpty && count == nil ? .plain(detail)
            : .boxed(Shared(Boxed(detail: detail, corroboration: corroboration, count: count)))
    }

    mutating func setBoxed(count: Int?) {
        switch notes {
        case .plain(let d): notes = TimelineEntry.notes(d, [], count)
        case .boxed(let b): notes = TimelineEntry.notes(b.value.detail, b.value.corroboration, count)
        }
    }

    /// First and last evidence of the run (`last` nil when `count == 1`), packed (see `EvidencePair`).
    var evidencePair: EvidencePair
    var firstEvidence: Evidence {
        get { evidencePair.first }
        set { evidencePair.first = newValue }
    }
    var lastEvidence: Evidence? {
        get { evidencePair.last }
        set { evidencePair.last = newValue }
    }
    public var state: TimelineState
    /// True when this peer sent it (or, for a log line, is its subject); false when the other side did.
    public var sent: Bool
    var letterByte: UInt8
    /// `count` when below `countInBox` (declared last: it fills the word the flags begin).
    var count32: UInt32

    /// The other peer, when the event had two sides.
    public var counterpart: PeerRef? {
        get { counterpartBox?.value }
        set { counterpartBox = newValue.map(Shared.init) }
    }
    public var session: SessionKey? {
        get { sessionBox?.value }
        set { sessionBox = newValue.map(Shared.init) }
    }
    /// First and last evidence of the run (one item when `count == 1`).
    public var evidence: [Evidence] {
        get { lastEvidence.map { [firstEvidence, $0] } ?? [firstEvidence] }
        set {
            guard let first = newValue.first else { return }
            evidencePair = EvidencePair(first, newValue.count > 1 ? newValue.last : nil)
        }
    }
    /// Short detail from the event's attributes (never message contents).
    public var detail: String {
        get { detailSource.text }
        set { detailSource = newValue.isEmpty ? .none : .text(Shared(newValue)) }
    }
    public var letter: Character? {
        get { letterByte == 0 ? nil : Character(Unicode.Scalar(letterByte)) }
        set { letterByte = TimelineEntry.byte(newValue) }
    }

    static func byte(_ c: Character?) -> UInt8 {
        guard let c, let v = c.asciiValue, v != 0 else { return 0 }
        return v
    }

    public init(t: Nanos, state: TimelineState, kind: EventKind, sent: Bool, counterpart: PeerRef?, session: SessionKey?,
                evidence: [Evidence], source: String, detail: String, letter: Character?) {
        self.init(t: t, state: state, origin: Shared(Origin(kind: kind, source: source)), sent: sent,
                  link: Shared(Link(counterpart: counterpart.map(Shared.init), session: session.map(Shared.init))),
                  evidence: evidence.first ?? .frame(input: 0, frame: 0),
                  detail: detail.isEmpty ? .none : .text(Shared(detail)), letter: letter)
        if evidence.count > 1 { lastEvidence = evidence.last }
    }

    init(t: Nanos, state: TimelineState, origin: Shared<Origin>, sent: Bool, link: Shared<Link>, evidence: Evidence,
         detail: Detail, letter: Character?) {
        self.t = t
        lastT = t
        count32 = 1
        self.state = state
        self.origin = origin
        self.sent = sent
        self.link = link
        evidencePair = EvidencePair(evidence)
        notes = .plain(detail)
        letterByte = TimelineEntry.byte(letter)
    }

    public static func == (a: TimelineEntry, b: TimelineEntry) -> Bool {
        a.t == b.t && a.lastT == b.lastT && a.count == b.count && a.state == b.state && a.kind == b.kind && a.sent == b.sent
            && a.counterpart == b.counterpart && a.session == b.session && a.evidence == b.evidence && a.source == b.source
            && a.corroboration == b.corroboration && a.detail == b.detail && a.letter == b.letter
    }

    public func hash(into h: inout Hasher) {
        h.combine(t)
        h.combine(kind)
        h.combine(firstEvidence)
        h.combine(sent)
    }
}

// What a report writer reads of an entry without building values (see `JSONReportWriter+Direct.swift`).
extension TimelineEntry {
    /// `evidence` as its two ends (`last` nil for one item), without building a list.
    public var evidenceEnds: (first: Evidence, last: Evidence?) { (evidencePair.first, evidencePair.last) }
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

    /// `detailKeys` read together from packed attributes (one pass, see `EventAttrs.values(of:)`).
    static let detailKeySet = AttributeKeySet(detailKeys)

    public static func detail(_ attrs: some AttributeLookup) -> String {
        if let packed = attrs as? EventAttrs { return detail(packed: packed) }
        var parts: [String] = []
        for k in detailKeys {
            guard let v = attrs[k], !v.isEmpty else { continue }
            parts.append(detailPart(k, v))
        }
        return parts.joined(separator: " ")
    }

    /// `key=value`, the value shortened. Message contents (present only with --show-payloads) are shown
    /// longer than other values.
    static func detailPart(_ k: String, _ v: String) -> String {
        let limit = k == "content" ? 240 : 60
        // At most `limit` bytes is at most `limit` characters: no count of characters needed.
        let short = v.utf8.count <= limit || v.count <= limit ? v : String(v.prefix(limit - 3)) + "..."
        return "\(k)=\(short)"
    }

    /// The detail of packed attributes: what `detail(_:)` gives by key lookups, with the detail keys
    /// found in one pass over the entries.
    static func detail(packed attrs: EventAttrs) -> String {
        // Most attributes of repeated traffic (a heartbeat's `length`, `sn`) hold no detail key: no
        // list of values for them.
        if attrs.isEmpty || !attrs.containsAny(of: detailKeySet) { return "" }
        var out = ""
        for (k, v) in zip(detailKeys, attrs.values(of: detailKeySet)) {
            guard let v, !v.isEmpty else { continue }
            if !out.isEmpty { out.append(" ") }
            out.append(detailPart(k, v))
        }
        return out
    }

    /// The detail of one event: its attributes, except that a receipt names what it acknowledges.
    public static func detail(_ kind: EventKind, _ attrs: some AttributeLookup) -> String {
        if attrs.isEmpty { return "" }
        if kind == .invitationReceipt {
            return "for \(attrs[.type] ?? "?")" + (attrs[.matched] == false ? " (no such message seen)" : "")
        }
        return detail(attrs)
    }

    public static func isAccepted(_ attrs: some AttributeLookup) -> Bool? { EventAttributes.isAccepted(attrs) }

    /// The target state of a `session.state` event: "connected", "connecting", "notconnected".
    public static func targetState(_ attrs: some AttributeLookup) -> String { EventAttributes.targetState(attrs) }

    /// The state and history letter of an event, as the event catalogue declares them.
    @inlinable public static func classify(_ e: PeerEvent) -> (TimelineState, Character?) {
        let s = EventCatalogue.step(e)
        return (s.state, s.letter)
    }
}
