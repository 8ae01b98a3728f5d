import PeerscopeCore
import PeerscopeTimeline

/// A problem a detector found, with the peer at fault and the evidence.
public struct Finding: Sendable, Hashable {
    /// The detector kind (`handshake-timeout`, `keepalive-timeout`, ...).
    public var kind: String
    public var severity: Severity
    /// Display label of the peer at fault: the one that did not answer, fell silent, sent the
    /// alert/reset/bad packet (for a duplicate, either).
    public var peer: String
    /// The 13-character idString of that peer, when known.
    public var peerID: String?
    public var peerRef: PeerRef?
    /// Capture time the problem shows (the start of the silence, the unanswered request...).
    public var t: Nanos
    /// One line; names, times and states only, never message contents.
    public var message: String
    /// Frame numbers and log lines, sorted.
    public var evidence: [Evidence]
    /// Stable identity: findings with the same key are one finding (evidence merged).
    public var key: String
    /// Machine-readable specifics (`phase`, `direction`, `seconds`, `threshold`...). Stored packed
    /// (`detailAttrs`): a long capture has tens of thousands of findings, and a dictionary of seven
    /// texts costs about 700 bytes with its strings, the packed form about 200.
    public var details: [String: String] {
        get { detailAttrs.dictionary }
        set { detailAttrs = EventAttrs(newValue) }
    }
    /// `details`, packed (sorted by key; read like a dictionary without building one).
    public var detailAttrs: EventAttrs
    /// Still open when the input ended (a timer the end of input flushed).
    public var openAtEnd: Bool
    /// `certain`, or `uncertain` when the judgement rests on silence inside a window with known capture
    /// loss (`caveats` say which); `peerscope check` fails on uncertain findings only with `--strict`.
    public var confidence: Confidence = .certain
    /// Why the finding is uncertain (one phrase per capture loss that touches it).
    public var caveats: [String] = []
    /// The capture time whose silence the judgement rests on (an unanswered wait, a gap in keep-alives):
    /// packets missing there could have cleared it.
    public var silence: ClosedRange<Nanos>?

    public enum Confidence: String, Sendable, Hashable {
        case certain, uncertain
    }

    public init(kind: String, severity: Severity, peer: String, peerID: String?, peerRef: PeerRef? = nil, t: Nanos,
                message: String, evidence: [Evidence], key: String, details: [String: String] = [:],
                openAtEnd: Bool = false) {
        self.kind = kind
        self.severity = severity
        self.peer = peer
        self.peerID = peerID
        self.peerRef = peerRef
        self.t = t
        self.message = message
        self.evidence = evidence
        self.key = key
        detailAttrs = EventAttrs(details)
        self.openAtEnd = openAtEnd
    }

    /// Most evidence items kept per finding (the count of all is in `details["evidenceCount"]`).
    public static let maxEvidence = 50

    /// The order findings are reported in: by time, then kind, peer and key (so the same input
    /// always gives the same list).
    public static func reportOrder(_ a: Finding, _ b: Finding) -> Bool {
        if a.t != b.t { return a.t < b.t }
        if a.kind != b.kind { return a.kind < b.kind }
        if a.peer != b.peer { return a.peer < b.peer }
        return a.key < b.key
    }
}

/// Formats seconds for messages: `6s`, `0.5s`, `2.25s`.
public func secondsText(_ s: Double) -> String {
    if s.rounded() == s, abs(s) < 1e12 { return "\(Int64(s))s" }
    let ms = (s * 1000).rounded()
    if ms.rounded() == ms, abs(ms) < 1e12 {
        var t = "\(Int64(ms) / 1000).\(String(Int64(abs(ms)) % 1000).leftPadded(3))"
        while t.hasSuffix("0") { t.removeLast() }
        return t + "s"
    }
    return "\(s)s"
}

extension String {
    func leftPadded(_ n: Int, _ c: Character = "0") -> String {
        count >= n ? self : String(repeating: c, count: n - count) + self
    }
}
