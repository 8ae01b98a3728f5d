import PeerscopeCore

/// Where a peer is, as a timeline entry says it.
public enum TimelineState: String, Sendable, Hashable, CaseIterable, Comparable {
    case browsing, discovered, updated, lost
    case invitationChannel = "invitation-channel"
    case invited
    case invitationAccepted = "invitation-accepted"
    case invitationDeclined = "invitation-declined"
    case connectionData = "connection-data"
    case connecting
    case iceChecks = "ice-checks"
    case iceConnected = "ice-connected"
    case secureHandshake = "secure-handshake"
    case secureChannelUp = "secure-channel-up"
    case gckHandshake = "gck-handshake"
    case gckConnected = "gck-connected"
    case connected
    case appHandshake = "app-handshake"
    case appHandshakeDone = "app-handshake-done"
    case keepAlive = "keep-alive"
    case heartbeat
    case data
    case timeout
    case error
    case disconnected
    case channelClosed = "channel-closed"
    case other

    public static func < (a: TimelineState, b: TimelineState) -> Bool { a.rawValue < b.rawValue }

    /// States whose repeats are folded into one entry (first/last/count per run).
    public var aggregates: Bool {
        switch self {
        case .keepAlive, .heartbeat, .data, .iceChecks, .secureHandshake, .gckHandshake, .browsing, .discovered, .updated,
             .other: true
        default: false
        }
    }

    /// A coarse group for colours and lanes.
    public var category: String {
        switch self {
        case .browsing, .discovered, .updated, .lost: "discovery"
        case .invitationChannel, .invited, .invitationAccepted, .invitationDeclined, .connectionData: "invitation"
        case .connecting, .iceChecks, .iceConnected, .secureHandshake, .secureChannelUp, .gckHandshake: "handshake"
        case .gckConnected, .connected, .appHandshake, .appHandshakeDone: "connected"
        case .keepAlive, .heartbeat: "keepalive"
        case .data: "data"
        case .timeout, .error: "problem"
        case .disconnected, .channelClosed: "disconnect"
        case .other: "other"
        }
    }
}

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

extension EventKind {
    /// True when the kind is in `family` (`dtls`, `app`...): a cheap `family == x` without splitting.
    @inlinable public func isIn(_ family: String) -> Bool {
        let r = rawValue.utf8, f = family.utf8
        guard r.count > f.count, r.starts(with: f) else { return false }
        return r[r.index(r.startIndex, offsetBy: f.count)] == UInt8(ascii: ".")
    }
}

/// How each event kind shows in a timeline.
public enum TimelineMapping {
    /// Attribute keys safe to show as detail (names, states, codes; never payloads).
    public static let detailKeys: [String] = [
        "note", "message", "description", "level", "from", "to", "state", "wait", "accepted", "decision", "inviteID",
        "type", "channel", "reason", "encryption", "attempt", "delay", "code", "service", "port", "content",
    ]

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
            return "for \(attrs["type"] ?? "?")" + (attrs["matched"] == "false" ? " (no such message seen)" : "")
        }
        return detail(attrs)
    }

    public static func isAccepted(_ attrs: [String: String]) -> Bool? {
        guard let v = attrs["accepted"] ?? attrs["accept"] else { return nil }
        switch v.lowercased() {
        case "true", "yes", "1": return true
        case "false", "no", "0": return false
        default: return nil
        }
    }

    /// The target state of a `session.state` event: "connected", "connecting", "notconnected".
    public static func targetState(_ attrs: [String: String]) -> String {
        (attrs["to"] ?? attrs["state"] ?? "").lowercased().filter { $0.isLetter }
    }

    public static func classify(_ e: PeerEvent) -> (TimelineState, Character?) {
        switch e.kind {
        case .announced, .resolved, .found: return (.discovered, "V")
        case .updated: return (.updated, "V")
        case .goodbye, .expired, .lost: return (.lost, "L")
        case .instanceConflict, .nameConflict: return (.error, "!")
        case .browse: return (.browsing, nil)
        case .invitationHello, .invitationAccept: return (.invitationChannel, "S")
        case .invitationReceipt: return (.invitationChannel, nil)
        case "ice.unanswered", "dtls.stalled": return (.timeout, nil)
        case .tcpOpened:
            // Only a connection to a known MPC endpoint (an advertised SRV port, an invitation-channel
            // end) is an invitation channel; the rest of a device's TCP traffic (HTTPS...) is not.
            return e.attrs["invitation"] != nil ? (.invitationChannel, "S") : (.other, nil)
        case .invite: return (.invited, "I")
        case .inviteResponse:
            return isAccepted(e.attrs) == false ? (.invitationDeclined, "N") : (.invitationAccepted, "A")
        case .inviteConnect: return (.connectionData, "C")
        case .connectionDecision:
            let d = (e.attrs["decision"] ?? "").lowercased()
            return d.hasPrefix("decline") || d == "0" || d == "no" ? (.invitationDeclined, "N") : (.other, nil)
        case .iceRequest: return (.iceChecks, "Q")
        case .iceSuccess: return (.iceConnected, "J")
        case .dtlsHandshake, .dtlsChangeCipherSpec: return (.secureHandshake, "E")
        case .dtlsEstablished: return (.secureChannelUp, "U")
        case .dtlsApplicationData, .gckData, .appChat, .appOther: return (.data, "D")
        case .gckHello, .gckDD, .gckLSA, .gckLSAACK: return (.gckHandshake, "O")
        case .gckHeartbeat: return (.heartbeat, "B")
        case .appHandshake: return (.appHandshake, "W")
        case .appHandshakeResponse: return (.appHandshakeDone, "H")
        case .appKeepAlive: return (.keepAlive, "K")
        case .inviteTimeout, .iceTimeout, .dtlsTimeout, .gckTimeout, .gckGivingUp, .appTimeout: return (.timeout, "T")
        case .stateChange:
            switch targetState(e.attrs) {
            case "connected": return (.connected, "G")
            case "connecting": return (.connecting, "P")
            case "notconnected", "disconnected": return (.disconnected, "X")
            default: return (.other, nil)
            }
        case .reconnectAttempt: return (.connecting, "P")
        case .disconnected: return (.disconnected, "X")
        case .tcpReset, .tcpRefused: return (.error, "R")
        case .tcpClosed: return (.channelClosed, "F")
        case .iceError, .dtlsAlert, .icmpUnreachable, .sendError, .checksumError, .encryptionIncompatible,
             .permissionError:
            return (.error, "!")
        case "log.ice_scheduled": return (.iceChecks, nil)
        case "log.channel_closed": return (.channelClosed, nil)
        case "log.cleanup_timeout": return (.timeout, "T")
        case "log.dtls_failed", "log.stale_identifier", "log.mesh_failed", "log.certificate_rejected": return (.error, "!")
        default: return (.other, nil)
        }
    }
}
