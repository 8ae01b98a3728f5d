import PeerscopeCore
import PeerscopeTimeline

/// `reconnect-storm`: more than `reconnect-storm.count` (3) reconnect attempts between a pair within
/// `reconnect-storm.window` seconds (60). An attempt is a session instance after the pair's first,
/// a refused TCP connection to the peer (a stale SRV record of an app that is gone), or a
/// `session.reconnect` log line. The message lists the delays between the end of one attempt and
/// the start of the next (the back-off). Warning; the peer named is the one the attempts were aimed
/// at (the one that keeps going away); for log lines, the peer the line names.
public struct ReconnectStormDetector: Detector {
    public static let kind = "reconnect-storm"
    /// Two signs of a connection attempt this close together are one attempt.
    static let sameAttempt: Nanos = 500 * CaptureTime.millisecond
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "a peer reconnecting more than N times in M seconds, with the back-off delays observed",
        thresholds: [
            ThresholdDescriptor("reconnect-storm.count", 3, unit: "count", "more reconnects than this within the window is a storm"),
            ThresholdDescriptor("reconnect-storm.window", 60, "the window, in seconds"),
        ],
        make: { ReconnectStormDetector(config: $0) })

    let maxCount: Int
    let window: Nanos

    public init(config: DetectorConfig) {
        maxCount = config.count("reconnect-storm.count", fallback: 3)
        window = config.nanos("reconnect-storm.window")
    }

    private struct Attempt {
        var t: Nanos
        var evidence: Evidence
        var by: PeerRef?
        /// Time since the previous attempt ended (or started), when known.
        var delay: Nanos?
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        var out: [Finding] = []
        var groups: [String: (PeerRef?, [Attempt])] = [:]
        var unnamed: Set<PeerRef> = []

        // (time, evidence, target, end of the attempt)
        var raw: [PeerPair: [(Nanos, Evidence, PeerRef?, Nanos)]] = [:]
        var byPair: [PeerPair: [SessionInstance]] = [:]
        for s in input.timelines.sessions { byPair[s.pair, default: []].append(s) }
        for (pair, list) in byPair {
            let insts = list.sorted { $0.number < $1.number }
            for (i, cur) in insts.enumerated() {
                let target = cur.originator.map { pair.other($0) }
                // The first instance is not a reconnect, but its end starts the back-off clock.
                // A superseded instance ended when the next began; its back-off ran from its last packet.
                let end = cur.isSuperseded ? (cur.quietSince ?? cur.lastT) : (cur.end ?? cur.start)
                raw[pair, default: []].append((cur.start, cur.startEvidence, i == 0 ? nil : target, end))
            }
        }
        var refusals: Set<Evidence> = []
        for e in input.timelines.events where e.kind == .tcpRefused {
            guard let pair = e.pair else { continue }
            let refuser: PeerRef? = { if case .id? = e.from { return e.from } else { return e.to } }()
            raw[pair, default: []].append((e.t, e.evidence, refuser ?? e.from, e.t))
            refusals.insert(e.evidence)
        }
        for (pair, list) in raw {
            var attempts: [Attempt] = []
            var lastEnd: Nanos?
            var lastStart: Nanos?
            for (i, a) in list.sorted(by: { $0.0 < $1.0 }).enumerated() {
                let isFirstInstance = i == 0 && a.2 == nil
                // One attempt seen twice (a log's state change and its refused connection, a few ms
                // apart) counts once; the refusal names the side that refused.
                if let s = lastStart, a.0 &- s < ReconnectStormDetector.sameAttempt, !attempts.isEmpty {
                    if refusals.contains(a.1), let b = a.2 { attempts[attempts.count - 1].by = b }
                    lastEnd = max(lastEnd ?? a.3, a.3)
                    continue
                }
                if !isFirstInstance {
                    attempts.append(Attempt(t: a.0, evidence: a.1, by: a.2, delay: lastEnd.map { max(0, a.0 &- $0) }))
                }
                lastStart = a.0
                lastEnd = max(lastEnd ?? a.3, a.3)
            }
            groups["pair|\(pair)"] = (nil, attempts)
        }
        // Reconnect attempts that logs announce, per peer.
        var logAttempts: [PeerRef: [Attempt]] = [:]
        for e in input.timelines.events where e.kind == .reconnectAttempt {
            guard let p = input.subject(e) else { continue }
            if !input.namesPeer(e) { unnamed.insert(p) }
            let delay = e[.delay].flatMap { DetectorConfig.number($0) }.map { CaptureTime.nanos(seconds: $0) }
            logAttempts[p, default: []].append(Attempt(t: e.t, evidence: e.evidence, by: p, delay: delay))
        }
        for (p, a) in logAttempts { groups["log|\(p)"] = (p, a) }

        for (key, (peerHint, attempts)) in groups.sorted(by: { $0.key < $1.key }) {
            for burst in bursts(attempts, moreThan: maxCount, within: window, start: \.t, end: \.t) {
                let slice = Array(burst)
                let n = slice.count
                var votes: [PeerRef: Int] = [:]
                for a in slice { if let b = a.by { votes[b, default: 0] += 1 } }
                let peer = peerHint ?? votes.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
                let delays = slice.compactMap(\.delay).map { CaptureTime.duration($0) }
                let span = CaptureTime.duration(slice[slice.count - 1].t &- slice[0].t)
                var from = ""
                if key.hasPrefix("pair|"), let p = peer,
                   let pair = raw.keys.first(where: { key == "pair|\($0)" }), pair.contains(p) {
                    from = " from \(input.label(pair.other(p)))"
                }
                out.append(input.finding(
                    ReconnectStormDetector.kind, .warning, peer: peer, t: slice[0].t,
                    "\(n) reconnect attempts to \(input.label(peer))\(from) in \(span) (more than \(maxCount) in \(secondsText(Double(window) / 1e9)))"
                        + (delays.isEmpty ? "" : "; delays: \(delays.joined(separator: ", "))"),
                    evidence: slice.map(\.evidence), key: "\(ReconnectStormDetector.kind)|\(key)|\(slice[0].t)",
                    details: ["count": String(n), "span": span, "delays": delays.joined(separator: ",")]
                        .merging(key.hasPrefix("log|") ? ["outcome": "log", "peerNamed": peer.map { unnamed.contains($0) ? "false" : "true" } ?? "false"] : [:]) { a, _ in a }))
            }
        }
        return out
    }
}

/// `declined-invitation`: an invitation answered with accept = NO (warning; the peer that
/// declined), or a log decision that declines a connection (info: MPC's tie-break between two
/// connections also declines one).
public struct DeclinedInvitationDetector: Detector {
    public static let kind = "declined-invitation"
    public static let descriptor = DetectorDescriptor(
        kind: kind, summary: "an invitation was declined", thresholds: [],
        make: { DeclinedInvitationDetector(config: $0) })

    public init(config: DetectorConfig) {}

    func isLog(_ e: ResolvedEvent) -> Bool { if case .logLine = e.evidence { return true } else { return false } }

    public func run(_ input: DetectorInput) -> [Finding] {
        var out: [Finding] = []
        for e in input.timelines.events {
            switch e.kind {
            case .inviteResponse where e.event.accepted == false:
                out.append(input.finding(
                    DeclinedInvitationDetector.kind, .warning, peer: e.from, t: e.t,
                    "\(input.label(e.from)) declined the invitation from \(input.label(e.to))",
                    evidence: [e.evidence], key: "\(DeclinedInvitationDetector.kind)|\(input.scope(e))|\(e.t)",
                    details: isLog(e) ? ["outcome": "log"] : [:]))
            case .connectionDecision where e.state == .invitationDeclined:
                if DuplicateConnectionDetector.saysAlreadyConnected(e.attrs) { continue }  // duplicate-connection reports that
                let peer = input.subject(e)
                out.append(input.finding(
                    DeclinedInvitationDetector.kind, .info, peer: peer, t: e.t,
                    "log: a connection with \(input.label(peer)) was declined",
                    evidence: [e.evidence], key: "\(DeclinedInvitationDetector.kind)|log|\(input.scope(e))|\(e.t)",
                    details: ["outcome": "log"]))
            default: break
            }
        }
        return out
    }
}
