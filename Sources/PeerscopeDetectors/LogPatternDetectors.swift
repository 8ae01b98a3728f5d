import PeerscopeCore
import PeerscopeTimeline

/// `invitation-storm`: one device's log finds or invites the same peer more than
/// `invitation-storm.count` (2) times within `invitation-storm.window` (1 s), as apps do after
/// background -> foreground (each restart of the browser finds the peer again and invites it again).
/// Seen only in logs (the wire shows at most the invitations that got out). Warning; the peer named is
/// the one found or invited.
public struct InvitationStormDetector: Detector {
    public static let kind = "invitation-storm"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "a log finding or inviting the same peer several times within a second (browser restarted in a loop)",
        thresholds: [
            ThresholdDescriptor("invitation-storm.count", 2, unit: "count", "more founds (or invitations) of one peer than this within the window is a storm"),
            ThresholdDescriptor("invitation-storm.window", 1, "the window, in seconds"),
        ],
        make: { InvitationStormDetector(config: $0) })

    let maxCount: Int
    let window: Nanos

    public init(config: DetectorConfig) {
        maxCount = config.count("invitation-storm.count", fallback: 2)
        window = config.nanos("invitation-storm.window")
    }

    private struct Key: Hashable, Comparable {
        var input: Int
        var what: String
        var peer: PeerRef
        static func < (x: Key, y: Key) -> Bool {
            x.input != y.input ? x.input < y.input : (x.what != y.what ? x.what < y.what : x.peer < y.peer)
        }
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        var groups: [Key: [ResolvedEvent]] = [:]
        for e in input.timelines.events {
            guard case .logLine(let inputIndex, _) = e.evidence else { continue }
            let what: String
            switch e.kind {
            case .found: what = "found"
            case "log.inviting", .invite: what = "invited"
            default: continue
            }
            guard let p = input.subject(e), input.namesPeer(e) else { continue }
            groups[Key(input: inputIndex, what: what, peer: p), default: []].append(e)
        }
        var out: [Finding] = []
        for (key, list) in groups.sorted(by: { $0.key < $1.key }) {
            for slice in bursts(list, moreThan: maxCount, within: window, start: \.t, end: \.t) {
                let n = slice.count
                let first = slice[slice.startIndex], last = slice[slice.endIndex - 1]
                let span = CaptureTime.duration(last.t &- first.t)
                out.append(input.finding(
                    InvitationStormDetector.kind, .warning, peer: key.peer, t: first.t,
                    "log: \(input.label(key.peer)) was \(key.what) \(n) times in \(span) (more than \(maxCount) in "
                        + "\(secondsText(Double(window) / 1e9))): the browser is being restarted in a loop (background/foreground?)",
                    evidence: slice.map(\.evidence), key: "\(InvitationStormDetector.kind)|\(key.input)|\(key.what)|\(key.peer)|\(first.t)",
                    details: ["count": String(n), "span": span, "what": key.what, "threshold": String(maxCount)]))
            }
        }
        return out
    }
}

/// `flapping`: a session that reaches Connected and drops to Not Connected within `flapping.hold`
/// (10 s), more than `flapping.count` (2) times within `flapping.window` (120 s), as the logs tell
/// it (MPC's own state lines or the app's prints; the two devices' lines about one change count once).
/// Warning; the peer named is the one whose state the first line reports. When the same pair has a
/// `reconnect-storm` in that time, the storm tells the story and this finding joins it.
public struct FlappingDetector: Detector {
    public static let kind = "flapping"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "Connected -> Not Connected within seconds, repeatedly",
        thresholds: [
            ThresholdDescriptor("flapping.hold", 10, "a connection that drops within this long after Connected is a flap"),
            ThresholdDescriptor("flapping.count", 2, unit: "count", "more flaps than this within the window is flapping"),
            ThresholdDescriptor("flapping.window", 120, "the window, in seconds"),
        ],
        make: { FlappingDetector(config: $0) })

    let hold: Nanos
    let maxCount: Int
    let window: Nanos
    /// Two lines about one change (each device's log, MPC's and the app's) this close are one change.
    static let sameChange: Nanos = CaptureTime.second

    public init(config: DetectorConfig) {
        hold = config.nanos("flapping.hold")
        maxCount = config.count("flapping.count", fallback: 2)
        window = config.nanos("flapping.window")
    }

    private struct Flap {
        var up: ResolvedEvent
        var down: ResolvedEvent
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        // Per pair (or the peer a line names when the other side is unknown): the connected time, then drops.
        var up: [String: ResolvedEvent] = [:]
        var lastDown: [String: Nanos] = [:]
        var flaps: [String: [Flap]] = [:]
        var subjects: [String: PeerRef] = [:]
        for e in input.timelines.events where e.kind == .stateChange {
            guard case .logLine = e.evidence, let subject = input.subject(e) else { continue }
            let key = e.pair.map { "\($0)" } ?? "\(subject)"
            if subjects[key] == nil { subjects[key] = subject }
            switch TimelineMapping.targetState(e.attrs) {
            case "connected":
                if let u = up[key], e.t &- u.t <= FlappingDetector.sameChange { continue }
                up[key] = e
            case "notconnected", "disconnected":
                if let d = lastDown[key], e.t &- d <= FlappingDetector.sameChange { continue }
                lastDown[key] = e.t
                if let u = up.removeValue(forKey: key), e.t &- u.t <= hold {
                    flaps[key, default: []].append(Flap(up: u, down: e))
                }
            default: break
            }
        }
        var out: [Finding] = []
        for (key, list) in flaps.sorted(by: { $0.key < $1.key }) {
            for burst in bursts(list, moreThan: maxCount, within: window, start: \.up.t, end: \.down.t) {
                let slice = Array(burst)
                let n = slice.count
                let peer = subjects[key]
                let held = slice.map { CaptureTime.duration($0.down.t &- $0.up.t) }
                out.append(input.finding(
                    FlappingDetector.kind, .warning, peer: peer, t: slice[0].up.t,
                    "log: the session with \(input.label(peer)) went Connected -> Not Connected \(n) times in "
                        + "\(CaptureTime.duration(slice[n - 1].down.t &- slice[0].up.t)) (more than \(maxCount) drops within "
                        + "\(secondsText(Double(hold) / 1e9)) of connecting); connected for \(held.joined(separator: ", "))",
                    evidence: slice.flatMap { [$0.up.evidence, $0.down.evidence] },
                    key: "\(FlappingDetector.kind)|\(key)|\(slice[0].up.t)",
                    details: ["count": String(n), "held": held.joined(separator: ","), "pair": key, "threshold": String(maxCount)]))
            }
        }
        return out
    }

    /// A flapping finding about a pair that also has a `reconnect-storm` overlapping it joins the storm
    /// (`details["flapping"]`): one incident, told once.
    static func foldIntoStorms(_ findings: [Finding]) -> [Finding] {
        let storms = findings.indices.filter { findings[$0].kind == ReconnectStormDetector.kind }
        guard !storms.isEmpty else { return findings }
        var out = findings
        var drop: Set<Int> = []
        for i in findings.indices where findings[i].kind == kind {
            let f = findings[i]
            let pair = f.detailAttrs["pair"] ?? ""
            guard let s = storms.first(where: { j in
                let g = findings[j]
                let samePair = (!pair.isEmpty && g.key.contains(pair)) || (g.peerRef != nil && g.peerRef == f.peerRef)
                let last = f.evidence.isEmpty ? f.t : f.t &+ 120 * CaptureTime.second
                return samePair && g.t <= last && f.t <= g.t &+ 120 * CaptureTime.second
            }) else { continue }
            out[s].detailAttrs["flapping"] = f.detailAttrs["count"] ?? "true"
            drop.insert(i)
        }
        return out.indices.filter { !drop.contains($0) }.map { out[$0] }
    }
}
