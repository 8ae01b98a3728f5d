import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// Stable identities of peers and findings, for comparing one run with another (baselines,
/// `peerscope diff`, suppressions, SARIF `partialFingerprints`).
///
/// A peer's identity is, in this order:
/// - `name:DISPLAY NAME` — what the user named the device; MPC draws a new random peer ID for every
///   `MCPeerID` an app creates (each launch, unless the app archives it), so the display name is what
///   stays the same from one capture to the next. Peers of one report that share a display name are
///   numbered in the order they were first seen (`name:Alice's iPhone`, `name:Alice's iPhone#2`);
/// - `id:IDSTRING` — the 13-character peer ID, when no display name is known;
/// - `participant:HEX` — the GCK participant ID, when only that is known;
/// - `address:ROLE` — a peer known only by its address, by the part it played: `originator` of a
///   session, `responder` in one, or `unattached` (addresses change from network to network);
/// - `log-owner:FILE` — the device that wrote a log, by the log's file name.
///
/// A finding's fingerprint is 16 hex digits of FNV-1a (64 bits) over, one per line:
/// `peerscope-fingerprint/1`, the finding's kind, the identity of the peer at fault, the identity of
/// the other peer of the session or pair the finding is about (empty when none), and its phase or
/// case (`details.phase`, `details.case`, `details.level`, those present, comma-separated). Times, frame
/// numbers, log lines, addresses, ports, session numbers and counts are left out, so the same problem
/// in tomorrow's capture has the same fingerprint. Two findings of one report may share one (the
/// same problem twice): comparisons count them.
public struct FindingIdentities: Sendable {
    public static let version = "peerscope-fingerprint/1"

    /// Identities are made when asked, from the report's peers: a table of every peer's identity held
    /// megabytes while a report of tens of thousands of peers was written (each peer's JSON names its own).
    private let timelines: Timelines
    /// Peers sharing their display name with an earlier-seen peer: their number within the name (2, 3, ...).
    private var rank: [PeerRef: Int] = [:]
    private var originators: Set<PeerRef> = [], inSession: Set<PeerRef> = []
    private var pairs: [String: PeerPair] = [:]
    private let inputs: [String]

    public init(_ r: Report) {
        inputs = r.inputs
        let tl = r.timelines
        timelines = tl
        for s in tl.sessions {
            if let o = s.originator { originators.insert(o) }
            inSession.insert(s.pair.a)
            inSession.insert(s.pair.b)
            pairs[s.key.description] = s.pair
            pairs[s.pair.description] = s.pair
        }
        // The named peers by name (positions, not a table of names): only a name shared by several
        // peers numbers them, in the order they were first seen.
        var named: [Int32] = []
        for (i, p) in tl.peers.enumerated() {
            if let n = p.peer.displayName, !n.isEmpty { named.append(Int32(truncatingIfNeeded: i)) }
        }
        func name(_ i: Int32) -> String { tl.peers[Int(i)].peer.displayName ?? "" }
        named.sort { name($0) < name($1) }
        var lo = 0
        while lo < named.count {
            var hi = lo + 1
            let n = name(named[lo])
            while hi < named.count, name(named[hi]) == n { hi += 1 }
            if hi - lo > 1 {
                let ordered = named[lo ..< hi].map { tl.peers[Int($0)].peer }.sorted { a, b in
                    let (x, y) = (a.firstSeen ?? Int64.max, b.firstSeen ?? Int64.max)
                    return x != y ? x < y : a.ref.description < b.ref.description
                }
                for (k, info) in ordered.enumerated() where k > 0 { rank[info.ref] = k + 1 }
            }
            lo = hi
        }
    }

    /// The identity of a peer of the report (documented above).
    private func identity(of info: PeerInfo) -> String {
        if let n = info.displayName, !n.isEmpty { return "name:" + n + (rank[info.ref].map { "#\($0)" } ?? "") }
        switch info.ref {
        case .id(let v): return "id:" + PeerIdentity.idString(v)
        case .participant(let x): return "participant:" + PeerIdentity.participantHex(x)
        case .name(let n): return "name:" + n
        case .address:
            return "address:" + (originators.contains(info.ref) ? "originator" : inSession.contains(info.ref) ? "responder" : "unattached")
        case .logOwner(let i): return "log-owner:" + Self.fileName(i < inputs.count && i >= 0 ? inputs[i] : "input \(i + 1)")
        }
    }

    static func fileName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    /// The stable identity of a peer of this report.
    public func identity(_ ref: PeerRef?, label: String? = nil) -> String {
        if let ref, let info = timelines.peer(ref) { return identity(of: info) }
        if let label, !label.isEmpty { return "name:" + label }
        return ref.map { "ref:\($0)" } ?? "unknown"
    }

    /// The lines the fingerprint is computed from (documented above).
    public func basis(_ f: Finding) -> [String] {
        let peer = identity(f.peerRef, label: f.peer)
        var other = ""
        if let me = f.peerRef {
            for part in f.key.split(separator: "|") {
                if let pair = pairs[String(part)], pair.contains(me) {
                    other = identity(pair.other(me))
                    break
                }
            }
        }
        let phase = ["phase", "case", "level"].compactMap { f.detailAttrs[$0] }.joined(separator: ",")
        return [Self.version, f.kind, peer, other, phase]
    }

    public func fingerprint(_ f: Finding) -> String { Self.hash(basis(f).joined(separator: "\n")) }

    /// FNV-1a, 64 bits, as 16 lower-case hex digits.
    public static func hash(_ s: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
