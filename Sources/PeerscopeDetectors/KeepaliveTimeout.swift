import PeerscopeCore
import PeerscopeTimeline

/// `keepalive-timeout`: in an established session instance, one direction fell silent.
///
/// * App level: once the session's app keep-alives have started (first `keep_alive` either way),
///   a direction with no app message (keep-alive or any other; the seed app resets its timer on any
///   message) for more than `keepalive-timeout.app` (6 s; the app sends every
///   `keepalive-timeout.interval`, 2 s).
/// * Session level (packets only): a direction that sent session traffic (GCK, DTLS, ICE, app)
///   but then nothing for more than `keepalive-timeout.session` (15 s; GCK heartbeats come every
///   5.5-6 s) after the session was established. Not reported when an app-level finding covers the
///   same silence.
/// * Logs: `gck.timeout` with wait = Heartbeat, and `app.timeout` about keep-alives.
///
/// Gaps never span session instances: a reconnect starts a new clock. A silence that ended (traffic
/// came back) is a warning; one that lasted until the session ended or the input ended is an error.
/// The peer at fault is the silent sender.
public struct KeepaliveTimeoutDetector: Detector {
    public static let kind = "keepalive-timeout"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "an established session fell silent in one direction (app keep-alives, GCK heartbeats)",
        thresholds: [
            ThresholdDescriptor("keepalive-timeout.app", 6, "no app keep-alive (or other app message) for longer than this"),
            ThresholdDescriptor("keepalive-timeout.interval", 2, "the app's keep-alive interval (for messages)"),
            ThresholdDescriptor("keepalive-timeout.session", 15, "no GCK heartbeat or other session traffic for longer than this"),
            ThresholdDescriptor("keepalive-timeout.capture-gap", 300,
                                "a stretch with no frames or log lines at all this long means the capture was not running: silences across it are not judged"),
        ],
        make: { KeepaliveTimeoutDetector(config: $0) })

    let appLimit: Nanos
    let interval: Double
    let sessionLimit: Nanos

    let captureGap: Nanos

    public init(config: DetectorConfig) {
        captureGap = config.nanos("keepalive-timeout.capture-gap")
        appLimit = config.nanos("keepalive-timeout.app")
        interval = config.value("keepalive-timeout.interval")
        sessionLimit = config.nanos("keepalive-timeout.session")
    }

    private static let appKinds: Set<EventKind> = [.appHandshake, .appHandshakeResponse, .appKeepAlive, .appChat, .appOther]
    private static let sessionFamilies = ["gck", "dtls", "ice", "app"]

    private struct Direction: Hashable {
        var session: SessionKey
        var from: PeerRef
        var to: PeerRef
    }

    private struct Gap {
        var dir: Direction
        var start: Nanos
        var end: Nanos
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        var out: [Finding] = []
        // Per direction, the indexes of its events (a span is read from the event when needed: a large
        // capture has millions of them).
        let events = input.timelines.events
        var appTimes: [Direction: [Int32]] = [:]
        var packetTimes: [Direction: [Int32]] = [:]
        var keepAliveStart: [SessionKey: Nanos] = [:]
        var kaSeen: Set<Direction> = []

        // How far each log reaches: a direction seen only through a log's "received" lines is
        // not judged after that log ends (a suspended app stops writing, not only sending).
        var logEnd: [Int: Nanos] = [:]
        var appLogInputs: [Direction: Set<Int>] = [:]
        var appFromFrames: Set<Direction> = []
        // The same direction's app messages seen in frames only: a silence found in a capture merged
        // with logs cites the frames around it too, not only the log lines.
        var appFrames: [Direction: [Int32]] = [:]

        // Stretches with no evidence at all (two captures joined, a capture paused): nothing in them
        // was observed, so a silence across one is not a finding.
        var holes: [(Nanos, Nanos)] = []
        var lastSeen: Nanos?
        var lastKind: EventKind?
        var isApp = false, isSession = false

        for (index, e) in events.enumerated() {
            let span = Int32(truncatingIfNeeded: index)
            if let l = lastSeen, captureGap > 0, e.t > l, e.t &- l > captureGap { holes.append((l, e.t)) }
            lastSeen = max(lastSeen ?? e.lastT, e.lastT)
            if case .logLine(let i, _) = e.evidence { logEnd[i] = max(logEnd[i] ?? e.t, e.lastT) }
            // The kind is read once, and what it says is worked out once per run of one kind (a set
            // lookup hashes the kind's text).
            let kind = e.kind
            if kind != lastKind {
                lastKind = kind
                isApp = KeepaliveTimeoutDetector.appKinds.contains(kind)
                isSession = KeepaliveTimeoutDetector.sessionFamilies.contains(where: { kind.isIn($0) })
            }
            if let f = logFinding(e, kind, input) { out.append(f) }
            guard isApp || isSession, let s = e.session, let from = e.from, let to = e.to else { continue }
            let d = Direction(session: s, from: from, to: to)
            if isApp {
                appTimes[d, default: []].append(span)
                if case .frame = e.evidence { appFrames[d, default: []].append(span) }
                // The logs that record this direction's keep-alives (usually the receiver's "Received
                // data" lines) are the ones that can show its silences.
                if kind == .appKeepAlive {
                    switch e.evidence {
                    case .logLine(let i, _): appLogInputs[d, default: []].insert(i)
                    case .frame: appFromFrames.insert(d)
                    }
                }
                if kind == .appKeepAlive {
                    if keepAliveStart[s] == nil { keepAliveStart[s] = e.t }
                    kaSeen.insert(d)
                }
            }
            if case .frame = e.evidence, isSession {
                packetTimes[d, default: []].append(span)
            }
        }

        var appGaps: [Direction: [Gap]] = [:]
        for inst in input.timelines.sessions {
            guard let established = inst.established else { continue }
            // A superseded instance ended somewhere in the quiet after its last packet: silence there
            // is the reconnect's (reconnect-storm), not a keep-alive verdict.
            let stop = inst.isSuperseded ? (inst.quietSince ?? inst.lastT) : inst.endOr(input.end)
            let ended = inst.end != nil
            let dirs = [Direction(session: inst.key, from: inst.pair.a, to: inst.pair.b),
                        Direction(session: inst.key, from: inst.pair.b, to: inst.pair.a)]
            if let kaStart = keepAliveStart[inst.key] {
                for d in dirs {
                    // A direction whose keep-alives were never seen is not judged: app logs often
                    // print only what they receive.
                    guard kaSeen.contains(d), let times = appTimes[d] else { continue }
                    var appStop = stop
                    if !appFromFrames.contains(d), let inputs = appLogInputs[d],
                       let reach = inputs.compactMap({ logEnd[$0] }).max() {
                        appStop = min(stop, reach)
                    }
                    for g in gaps(times, events, clockStart: kaStart, stop: appStop, limit: appLimit) {
                        appGaps[d, default: []].append(Gap(dir: d, start: g.start, end: g.end))
                        out.append(finding(input, inst, d, g, level: "app", limit: appLimit, ended: ended,
                                           hole: hole(in: g, holes), frames: framesAround(g, appFrames[d] ?? [], events)))
                    }
                }
            }
            for d in dirs {
                guard let times = packetTimes[d], !times.isEmpty else { continue }
                for g in gaps(times, events, clockStart: established, stop: stop, limit: sessionLimit) {
                    let covered = (appGaps[d] ?? []).contains { $0.start < g.end && g.start < $0.end }
                    if covered { continue }
                    out.append(finding(input, inst, d, g, level: "session", limit: sessionLimit, ended: ended,
                                       hole: hole(in: g, holes)))
                }
            }
        }
        return out
    }

    /// One event, or a coalesced run of them, in one direction.
    private struct Span {
        var t: Nanos
        var lastT: Nanos
        var evidence: Evidence
        var lastEvidence: Evidence

        init(_ e: ResolvedEvent) {
            t = e.t
            lastT = max(e.t, e.lastT)
            evidence = e.evidence
            lastEvidence = e.lastEvidence ?? e.evidence
        }
    }

    private struct Silence {
        var start: Nanos
        var end: Nanos
        var startEvidence: Evidence?
        var endEvidence: Evidence?
        /// Traffic came back (false: silent until the session or input ended).
        var recovered: Bool
    }

    /// Silences longer than `limit` in one direction's times, the clock starting at `clockStart`.
    /// Silences longer than `limit` in one direction's traffic, the clock starting at `clockStart`.
    /// A span is one event or a coalesced run, which has no silence longer than the coalescing gap
    /// (never longer than `limit`) inside it.
    private func gaps(_ spans: [Int32], _ events: [ResolvedEvent], clockStart: Nanos, stop: Nanos, limit: Nanos) -> [Silence] {
        var out: [Silence] = []
        var last = clockStart
        var lastEvidence: Evidence?
        for i in spans {
            let s = Span(events[Int(i)])
            if s.lastT <= clockStart { lastEvidence = s.lastEvidence; continue }
            if s.t > stop { break }
            if s.t > last, s.t &- last > limit {
                out.append(Silence(start: last, end: s.t, startEvidence: lastEvidence, endEvidence: s.evidence, recovered: true))
            }
            let end = min(s.lastT, stop)
            if end >= last {
                last = end
                lastEvidence = end == s.lastT ? s.lastEvidence : s.evidence
            }
        }
        if stop &- last > limit {
            out.append(Silence(start: last, end: stop, startEvidence: lastEvidence, endEvidence: nil, recovered: false))
        }
        return out
    }

    /// The last frame at or before a silence begins and, when it recovered, the first frame at or after it ends.
    private func framesAround(_ g: Silence, _ indexes: [Int32], _ events: [ResolvedEvent]) -> [Evidence] {
        let frames = indexes.lazy.map { Span(events[Int($0)]) }
        var ev: [Evidence] = []
        if let before = frames.last(where: { $0.t <= g.start }) { ev.append(before.lastT <= g.start ? before.lastEvidence : before.evidence) }
        if g.recovered, let after = frames.first(where: { $0.t >= g.end }) { ev.append(after.evidence) }
        return ev
    }

    /// The first stretch without any evidence inside the silence `g`.
    private func hole(in g: Silence, _ holes: [(Nanos, Nanos)]) -> (Nanos, Nanos)? {
        CaptureHoles.first(startingIn: g.start, g.end, holes)
    }

    private func finding(_ input: DetectorInput, _ inst: SessionInstance, _ d: Direction, _ g: Silence, level: String,
                         limit: Nanos, ended: Bool, hole: (Nanos, Nanos)? = nil, frames: [Evidence] = []) -> Finding {
        let silent = CaptureTime.duration(g.end &- g.start)
        let what = level == "app"
            ? "sent no app keep-alive to \(input.label(d.to)) for \(silent) (timeout \(secondsText(Double(limit) / 1e9)), expected every \(secondsText(interval)))"
            : "sent no session traffic (GCK heartbeats) to \(input.label(d.to)) for \(silent) (timeout \(secondsText(Double(limit) / 1e9)))"
        var tail = ""
        var severity = Severity.warning
        var openAtEnd = false
        if !g.recovered {
            severity = .error
            if ended {
                tail = "; silent until the session ended (\(inst.endReason ?? "ended"))"
            } else {
                tail = "; still silent at end of input"
                openAtEnd = true
            }
        }
        var outcome = g.recovered ? "recovered" : (ended ? "session-ended" : "open")
        if let (h0, h1) = hole {
            // Not observed: the input has nothing at all for a long stretch inside this silence.
            severity = .info
            openAtEnd = false
            outcome = "capture-gap"
            tail = "; not judged: the input has no frames or log lines for \(CaptureTime.duration(h1 &- h0)) from \(CaptureTime.iso8601(h0)) (capture not running?)"
        }
        var ev: [Evidence] = []
        if let s = g.startEvidence { ev.append(s) }
        if let e = g.endEvidence { ev.append(e) } else if !g.recovered, let e = inst.endEvidence, ended { ev.append(e) }
        for f in frames where !ev.contains(f) { ev.append(f) }
        var f = input.finding(
            KeepaliveTimeoutDetector.kind, severity, peer: d.from, t: g.start.addingReportingOverflow(limit).overflow ? g.start : g.start &+ limit,
            "\(input.label(d.from)) \(what)\(tail)", evidence: ev,
            key: "\(KeepaliveTimeoutDetector.kind)|\(level)|\(inst.key)|\(d.from)|\(g.start)",
            details: ["level": level, "direction": "\(input.label(d.from)) -> \(input.label(d.to))",
                      "silent": secondsText(Double((g.end &- g.start) / 1_000_000) / 1000),
                      "threshold": secondsText(Double(limit) / 1e9), "session": String(inst.number),
                      "since": CaptureTime.iso8601(g.start),
                      "outcome": outcome],
            openAtEnd: openAtEnd)
        f.silence = g.start ... max(g.start, g.end)
        return f
    }

    private func logFinding(_ e: ResolvedEvent, _ kind: EventKind, _ input: DetectorInput) -> Finding? {
        // Asked of every event: the kind first, the attributes only of the two timeout kinds.
        let isHeartbeat = kind == .gckTimeout && squash(e[.wait]).contains("heartbeat")
        let isAppKeepAlive = kind == .appTimeout && squash(e[.what] ?? e[.type] ?? e[.phase] ?? e[.timer]).contains("keep")
        guard isHeartbeat || isAppKeepAlive else { return nil }
        let peer = input.subject(e)
        let scope = e.session.map { "\($0)" } ?? peer.map { "\($0)" } ?? "?"
        let msg = isHeartbeat ? "log: GCK heartbeat timeout expired for \(input.label(peer))"
            : "log: app keep-alive timeout for \(input.label(peer))"
        return input.finding(KeepaliveTimeoutDetector.kind, .error, peer: peer, t: e.t, msg, evidence: [e.evidence],
                             key: "\(KeepaliveTimeoutDetector.kind)|log|\(isHeartbeat ? "heartbeat" : "app")|\(scope)",
                             details: ["level": isHeartbeat ? "session" : "app", "outcome": "log", "source": e.source])
    }
}
