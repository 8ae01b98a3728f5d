import PeerscopeCore

/// Two peers, smaller first. A group session of up to 8 peers is a mesh of these pairs.
public struct PeerPair: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let a: PeerRef
    public let b: PeerRef

    public init(_ x: PeerRef, _ y: PeerRef) {
        if x <= y { a = x; b = y } else { a = y; b = x }
    }

    public func other(_ p: PeerRef) -> PeerRef { p == a ? b : a }
    public func contains(_ p: PeerRef) -> Bool { p == a || p == b }

    public static func < (x: PeerPair, y: PeerPair) -> Bool { x.a != y.a ? x.a < y.a : x.b < y.b }
    public var description: String { "\(a)~\(b)" }
}

/// One session instance: the `number`th time (from 1) the pair set up a session.
public struct SessionKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var pair: PeerPair
    public var number: Int

    public init(pair: PeerPair, number: Int) {
        self.pair = pair
        self.number = number
    }

    public static func < (x: SessionKey, y: SessionKey) -> Bool {
        x.pair != y.pair ? x.pair < y.pair : x.number < y.number
    }

    public var description: String { "\(pair)#\(number)" }
}

/// A step a session instance reached, the first time it did.
///
/// Stored compactly (an instance has about ten, a long capture hundreds of thousands): the peer is the
/// timeline builder's box of it, shared with the entries and resolved events naming it (40 bytes, not
/// 72 with a copy of the peer). It reads and writes as a plain value.
public struct SessionMilestone: Sendable, Hashable {
    public var t: Nanos
    public var evidence: Evidence
    public var state: TimelineState
    var byBox: Shared<PeerRef>?
    public var by: PeerRef? {
        get { byBox?.value }
        set { byBox = newValue.map(Shared.init) }
    }

    init(state: TimelineState, t: Nanos, evidence: Evidence, byBox: Shared<PeerRef>?) {
        self.t = t
        self.evidence = evidence
        self.state = state
        self.byBox = byBox
    }

    init(state: TimelineState, t: Nanos, evidence: Evidence, by: PeerRef?) {
        self.init(state: state, t: t, evidence: evidence, byBox: by.map(Shared.init))
    }

    public static func == (a: SessionMilestone, b: SessionMilestone) -> Bool {
        a.state == b.state && a.t == b.t && a.evidence == b.evidence && a.by == b.by
    }

    public func hash(into h: inout Hasher) {
        h.combine(state)
        h.combine(t)
        h.combine(evidence)
        h.combine(by)
    }
}

/// A session instance between two peers: from its first event (invitation, ICE, DTLS, GCK...) to its
/// end (disconnect, decline, timeout, a new handshake that superseded it) or the end of input.
public struct SessionInstance: Sendable, Hashable {
    public var key: SessionKey
    public var pair: PeerPair { key.pair }
    public var number: Int { key.number }
    /// The side that sent the instance's first event (the inviter when the invitation was seen).
    public var originator: PeerRef?
    public var start: Nanos
    public var startEvidence: Evidence
    /// Nil while still open at the end of input.
    public var end: Nanos?
    public var endReason: String?
    public var endEvidence: Evidence?
    /// When the session counted as up: connected state, GCK connected, secure channel up, app
    /// handshake done or the first keep-alive/heartbeat/data seen.
    public var established: Nanos?
    /// The instance was already up when the input began (its first event was traffic).
    public var startedBeforeInput: Bool
    /// DTLS handshake seen (the session is encrypted).
    public var encrypted: Bool
    public var milestones: [SessionMilestone]
    /// New invitations or connect attempts seen while this instance was established.
    public var overlappingAttempts: [Evidence]
    /// Zeek-style history; upper case = `originator`.
    public var history: String
    public var eventCount: Int
    public var lastT: Nanos
    /// The instance of the pair that started while this one was still open (a new invitation, or a
    /// fresh ICE + GCK Hello or DTLS handshake): this one ended `superseded` when it carried no
    /// traffic after that one's first packet (beyond a short grace period), else both were alive.
    public var supersededBy: Int?
    /// Traffic this instance carried after its successor began (on a flow the successor never
    /// used): the evidence that two instances were alive at once.
    public var overlap: (t: Nanos, evidence: Evidence)? {
        get { overlapT.flatMap { t in overlapEvidence.map { (t, $0) } } }
        set { overlapT = newValue?.t; overlapEvidence = newValue?.evidence }
    }
    public var overlapT: Nanos?
    /// For a superseded instance: its last packet (it ended somewhere in the quiet after it, which the
    /// capture does not show; its successor's start is only the latest it can have ended).
    public var quietSince: Nanos?
    /// The session's plane, from its packets alone (nil when no session packet was seen): see `Plane`.
    public var plane: Plane?
    /// Each side's plane, from the packets it sent (`plaintext`: GCK `0xC1…`; `dtls`: `0xD0` + DTLS).
    /// Stored as the pair's two sides (`planeA`, `planeB`) and any other peer in a table that stays
    /// empty: a long capture has tens of thousands of instances, each with a table of its own before.
    public var planeBySide: [PeerRef: Plane] {
        get {
            var d = otherPlanes
            if let p = planeA { d[key.pair.a] = p }
            if let p = planeB { d[key.pair.b] = p }
            return d
        }
        set {
            var others = newValue
            planeA = others.removeValue(forKey: key.pair.a)
            planeB = others.removeValue(forKey: key.pair.b)
            otherPlanes = others.isEmpty ? [:] : others
        }
    }

    /// `planeBySide[side] = plane`, without building the table.
    mutating func setPlane(_ plane: Plane, of side: PeerRef) {
        if side == key.pair.a { planeA = plane } else if side == key.pair.b { planeB = plane } else { otherPlanes[side] = plane }
    }

    /// `planeBySide[side]`, without building the table.
    func plane(of side: PeerRef) -> Plane? {
        if side == key.pair.a { return planeA }
        if side == key.pair.b { return planeB }
        return otherPlanes[side]
    }
    var planeA: Plane?
    var planeB: Plane?
    var otherPlanes: [PeerRef: Plane] = [:]

    public enum Plane: String, Sendable, Hashable {
        /// GCK packets in the clear (`encryptionPreference: .none`).
        case plaintext
        /// Every session datagram DTLS (`0xD0` + a DTLS record).
        case dtls
        /// DTLS first, then plaintext GCK (`.optional` degrading when DTLS fails).
        case dtlsFellBackToPlaintext = "dtls-fell-back-to-plaintext"
        /// One side plaintext, the other DTLS: an encryption-preference mismatch.
        case mismatch
    }
    public var overlapEvidence: Evidence?

    public init(key: SessionKey, originator: PeerRef?, start: Nanos, evidence: Evidence) {
        self.key = key
        self.originator = originator
        self.start = start
        startEvidence = evidence
        startedBeforeInput = false
        encrypted = false
        milestones = []
        overlappingAttempts = []
        history = ""
        eventCount = 0
        lastT = start
        supersededBy = nil
        overlapT = nil
        overlapEvidence = nil
        quietSince = nil
    }

    /// The end reason of an instance that a newer one replaced while it had gone quiet.
    public static let superseded = "superseded"
    public var isSuperseded: Bool { endReason == SessionInstance.superseded }

    public func milestone(_ s: TimelineState) -> SessionMilestone? { milestones.first { $0.state == s } }

    /// The end of the instance, or `inputEnd` when it was still open.
    public func endOr(_ inputEnd: Nanos) -> Nanos { end ?? max(inputEnd, lastT) }
}
