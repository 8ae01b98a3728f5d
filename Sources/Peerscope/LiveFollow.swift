import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import PeerscopeTimeline

/// Something `capture --follow` announces as the capture runs.
public struct FollowNotice: Sendable {
    public enum Kind: String, Sendable {
        case finding
        case peerAppeared = "peer-appeared"
        case peerLeft = "peer-left"
    }

    public var kind: Kind
    /// Capture time the notice is about (the finding's time, the peer's first or last sighting).
    public var t: Nanos
    /// One line for people.
    public var text: String
    /// One JSON object (a JSON Lines record): `type` and the notice's fields.
    public var json: JSONValue
}

/// Runs the detectors over what a live capture has collected so far and reports what is new since
/// the last look: findings (by their stable key), peers that appeared, peers that left (mDNS goodbye
/// or expiry). Each look analyses the events kept so far (steady traffic is coalesced, so they grow
/// with peers and sessions, not packets); `LiveCaptureFollow` spaces looks out so they never take more
/// than about a fifth of the time.
public final class LiveFollow {
    private var findings: Set<String> = []
    private var peers: Set<PeerRef> = []
    private var gone: Set<PeerRef> = []
    private var eventsSeen = -1
    private var lookedAt: Nanos = .min

    public init() {}

    /// What is new in `session`'s live analysis since the last call, in capture-time order.
    public func look(_ session: AnalysisSession) -> [FollowNotice] {
        // Something new, or capture time moved on (a silence may now be long enough to judge).
        let now = session.liveLastT ?? .min
        guard session.liveEventCount != eventsSeen || now &- lookedAt >= CaptureTime.second else { return [] }
        eventsSeen = session.liveEventCount
        lookedAt = now
        let report = session.provisionalReport()
        let end = max(now, report.timelines.end)
        var out: [FollowNotice] = []
        for p in report.timelines.peers where !peers.contains(p.peer.ref) {
            peers.insert(p.peer.ref)
            let t = p.peer.firstSeen ?? end
            let id = p.peer.peerID.map(PeerIdentity.idString)
            let label = p.peer.label + (id.map { " [\($0)]" } ?? "")
            out.append(FollowNotice(kind: .peerAppeared, t: t, text: "\(CaptureTime.iso8601(t))  peer appeared: \(label)",
                                    json: .object([("type", .string("peer-appeared")), ("t", .int(t)), ("time", .string(CaptureTime.iso8601(t))),
                                                   ("peer", .string(p.peer.label)), ("peerID", id.map { .string($0) } ?? .null)])))
        }
        for p in report.discovery.peers {
            guard let t = p.gone else {
                gone.remove(p.ref)
                continue
            }
            guard !gone.contains(p.ref) else { continue }
            gone.insert(p.ref)
            let label = p.displayName ?? "\(p.ref)"
            out.append(FollowNotice(kind: .peerLeft, t: t, text: "\(CaptureTime.iso8601(t))  peer left: \(label)",
                                    json: .object([("type", .string("peer-left")), ("t", .int(t)), ("time", .string(CaptureTime.iso8601(t))),
                                                   ("peer", .string(label))])))
        }
        let marks = FindingMarks(report)
        for (i, f) in report.findings.enumerated() where !findings.contains(f.key) {
            findings.insert(f.key)
            var json: [(String, JSONValue)] = [("type", .string("finding"))]
            if case .object(let members) = JSONReportWriter.finding(f, marks: marks, index: i) { json += members }
            out.append(FollowNotice(kind: .finding, t: f.t,
                                    text: "\(CaptureTime.iso8601(f.t))  \(f.severity.rawValue) \(f.kind): \(f.peer): \(f.message)",
                                    json: .object(json)))
        }
        return out.sorted { $0.t < $1.t }
    }
}
