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

    private var peerIdentity: [PeerRef: String] = [:]
    private var pairs: [String: PeerPair] = [:]
    private let inputs: [String]

    public init(_ r: Report) {
        inputs = r.inputs
        let tl = r.timelines
        // Sized once: one identity per peer (growing by doubling held the old table and the new together).
        peerIdentity.reserveCapacity(tl.peers.count)
        var originators: Set<PeerRef> = [], inSession: Set<PeerRef> = []
        for s in tl.sessions {
            if let o = s.originator { originators.insert(o) }
            inSession.insert(s.pair.a)
            inSession.insert(s.pair.b)
            pairs[s.key.description] = s.pair
            pairs[s.pair.description] = s.pair
        }
        var byName: [String: [PeerInfo]] = [:]
        for p in tl.peers {
            let info = p.peer
            if let n = info.displayName, !n.isEmpty { byName[n, default: []].append(info); continue }
            let id: String
            switch info.ref {
            case .id(let v): id = "id:" + PeerIdentity.idString(v)
            case .participant(let x): id = "participant:" + PeerIdentity.participantHex(x)
            case .name(let n): id = "name:" + n
            case .address:
                id = "address:" + (originators.contains(info.ref) ? "originator" : inSession.contains(info.ref) ? "responder" : "unattached")
            case .logOwner(let i): id = "log-owner:" + Self.fileName(i < inputs.count && i >= 0 ? inputs[i] : "input \(i + 1)")
            }
            peerIdentity[info.ref] = id
        }
        for (name, infos) in byName {
            let ordered = infos.sorted { a, b in
                let (x, y) = (a.firstSeen ?? Int64.max, b.firstSeen ?? Int64.max)
                return x != y ? x < y : a.ref.description < b.ref.description
            }
            for (k, info) in ordered.enumerated() { peerIdentity[info.ref] = "name:" + name + (k == 0 ? "" : "#\(k + 1)") }
        }
    }

    static func fileName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    /// The stable identity of a peer of this report.
    public func identity(_ ref: PeerRef?, label: String? = nil) -> String {
        if let ref, let id = peerIdentity[ref] { return id }
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
