import PeerscopeCore
import PeerscopeTimeline

/// `handshake-timeout`: a setup phase began and did not complete within its timeout.
///
/// Phases (each its own threshold): `invitation` (invite without a response; MPC's own invite
/// timeout, 30 s), `ice` (ICE checks without a STUN success), `dtls` (DTLS handshake not completed),
/// `gck` (GCK Hello not answered), `app` (app `handshake` without a `handshake_response`).
/// The peer at fault is the one that did not answer. An answer that came after the timeout is a
/// warning; no answer at all is an error; a phase still waiting at the end of input within its
/// timeout is reported as `info` (open at end). Log lines (`ice.timeout`, `dtls.timeout`,
/// `gck.givingup`, `gck.timeout` other than Heartbeat, `invitation.timeout`, `app.timeout` about a
/// handshake) are findings too, at fault the peer the line names; in a capture merged with logs they
/// join the packet finding. A log saying the timer fired may end the session a moment before the
/// timer's time on capture time (the app's timer starts before its first packet): within 2 s the
/// packet finding still stands, citing the unanswered frames and the log lines. A timer whose
/// deadline falls in a stretch with no input at all (`keepalive-timeout.capture-gap`) is not judged.
public struct HandshakeTimeoutDetector: Detector {
    public static let kind = "handshake-timeout"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "a handshake phase (invitation, ICE, DTLS, GCK Hello, app handshake) did not complete in time",
        thresholds: [
            ThresholdDescriptor("handshake-timeout.invite", 30, "invitation without a response (MPC's invite timeout)"),
            ThresholdDescriptor("handshake-timeout.ice", 10, "ICE connectivity checks without a success response"),
            ThresholdDescriptor("handshake-timeout.dtls", 10, "DTLS handshake not completed"),
            ThresholdDescriptor("handshake-timeout.gck", 10, "GCK Hello not answered"),
            ThresholdDescriptor("handshake-timeout.app", 10, "app handshake without a handshake_response"),
        ],
        make: { HandshakeTimeoutDetector(config: $0) })

    public enum Phase: String, Sendable, CaseIterable {
        case invitation, ice, dtls, gck, app

        var threshold: String {
            switch self {
            case .invitation: "handshake-timeout.invite"
            default: "handshake-timeout.\(rawValue)"
            }
        }

        var what: String {
            switch self {
            case .invitation: "invitation"
            case .ice: "ICE connectivity checks"
            case .dtls: "DTLS handshake"
            case .gck: "GCK Hello"
            case .app: "app handshake"
            }
        }
    }

    let limits: [Phase: Nanos]
    /// `keepalive-timeout.capture-gap`: a stretch this long with no input at all was not observed;
    /// a timer whose deadline falls in one is not judged (its answer may be in the gap).
    let captureGap: Nanos

    public init(config: DetectorConfig) {
        var l: [Phase: Nanos] = [:]
        for p in Phase.allCases { l[p] = config.nanos(p.threshold) }
        limits = l
        captureGap = config.nanos("keepalive-timeout.capture-gap")
    }

    /// True when `t` falls strictly inside one of the stretches with no input.
    static func inHole(_ t: Nanos, _ holes: [(Nanos, Nanos)]) -> Bool { CaptureHoles.contains(t, holes) }

    private struct Pending {
        var phase: Phase
        var session: SessionKey
        var requester: PeerRef
        var responder: PeerRef
        var start: Nanos
        /// Frames first (up to 3): what the capture shows went unanswered.
        var evidence: [Evidence]
        /// Log lines about the same requests (up to 2), cited after the frames.
        var logEvidence: [Evidence] = []
        var count: Int

        mutating func add(_ ev: Evidence) {
            if case .logLine = ev {
                if logEvidence.count < 2 { logEvidence.append(ev) }
            } else if evidence.count < 3 {
                evidence.append(ev)
            }
        }

        var allEvidence: [Evidence] { evidence + logEvidence }
    }

    /// A log line saying a setup timer fired or GCK gave up (phase nil: whichever was running).
    private struct LogTimeout {
        var t: Nanos
        var phase: Phase?
        var session: SessionKey?
        var subject: PeerRef?
    }

    private struct Key: Hashable {
        var phase: Phase
        var session: SessionKey
        var responder: PeerRef?
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        var out: [Finding] = []
        var pending: [Key: Pending] = [:]
        var order: [Key] = []
        var holes: [(Nanos, Nanos)] = []
        var lastSeen: Nanos?
        var bySession: [SessionKey: [Key]] = [:]

        func begin(_ phase: Phase, _ e: ResolvedEvent, requester: PeerRef, responder: PeerRef, session: SessionKey,
                   keyResponder: PeerRef?) {
            let k = Key(phase: phase, session: session, responder: keyResponder)
            if var p = pending[k] {
                p.count &+= 1
                p.add(e.evidence)
                if phase == .dtls { p.requester = requester; p.responder = responder }
                pending[k] = p
                return
            }
            var p = Pending(phase: phase, session: session, requester: requester, responder: responder,
                            start: e.t, evidence: [], count: 1)
            p.add(e.evidence)
            pending[k] = p
            order.append(k)
            bySession[session, default: []].append(k)
        }

        func complete(_ k: Key, _ e: ResolvedEvent) {
            guard let p = pending.removeValue(forKey: k) else { return }
            let limit = limits[p.phase] ?? 0
            let waited = e.t &- p.start
            if waited > limit, !HandshakeTimeoutDetector.inHole(fireTime(p, limit), holes) {
                out.append(input.finding(
                    HandshakeTimeoutDetector.kind, .warning, peer: p.responder, t: fireTime(p, limit),
                    "\(p.phase.what) from \(input.label(p.requester)) to \(input.label(p.responder)) answered only after \(CaptureTime.duration(waited)) (timeout \(secondsText(Double(limit) / 1e9)))",
                    evidence: p.allEvidence + [e.evidence], key: key(p),
                    details: details(p, waited: waited, limit: limit, outcome: "late")))
            }
        }

        func completeAll(_ phases: [Phase], session: SessionKey, _ e: ResolvedEvent) {
            for k in bySession[session] ?? [] where phases.contains(k.phase) && pending[k] != nil {
                complete(k, e)
            }
        }

        var logTimeouts: [LogTimeout] = []

        for e in input.timelines.events {
            if let l = lastSeen, captureGap > 0, e.t > l, e.t &- l > captureGap { holes.append((l, e.t)) }
            lastSeen = max(lastSeen ?? e.lastT, e.lastT)
            // The kind read once; `logFinding` only for the kinds it can take (it gives nil for any other).
            let kind = e.kind
            switch kind {
            case .inviteTimeout, .iceTimeout, .dtlsTimeout, .gckGivingUp, .gckTimeout, .appTimeout:
                if let f = logFinding(e, input) {
                    out.append(f)
                    logTimeouts.append(LogTimeout(t: e.t, phase: HandshakeTimeoutDetector.logPhase(e), session: e.session,
                                                  subject: input.subject(e)))
                }
            default: break
            }
            guard let s = e.session, let from = e.from, let to = e.to else { continue }
            switch kind {
            case .invite:
                begin(.invitation, e, requester: from, responder: to, session: s, keyResponder: to)
            case .inviteResponse:
                complete(Key(phase: .invitation, session: s, responder: from), e)
            case .tcpReset, .tcpRefused, .tcpClosed:
                // The channel is gone: channel-error reports it; the invite is no longer waiting.
                for k in bySession[s] ?? [] where k.phase == .invitation { pending.removeValue(forKey: k) }
            case .iceRequest:
                begin(.ice, e, requester: from, responder: to, session: s, keyResponder: to)
            case .iceSuccess:
                complete(Key(phase: .ice, session: s, responder: from), e)
            case .dtlsHandshake, .dtlsChangeCipherSpec:
                if e.state == .secureChannelUp {
                    completeAll([.ice, .dtls], session: s, e)
                } else {
                    begin(.dtls, e, requester: from, responder: to, session: s, keyResponder: nil)
                    completeAll([.ice], session: s, e)
                }
            case .dtlsEstablished, .dtlsApplicationData:
                completeAll([.ice, .dtls], session: s, e)
            case .gckHello where e.state != .gckConnected:
                begin(.gck, e, requester: from, responder: to, session: s, keyResponder: to)
                completeAll([.ice, .dtls], session: s, e)
            case .gckHello, .gckDD, .gckLSA, .gckLSAACK, .gckHeartbeat, .gckData:
                complete(Key(phase: .gck, session: s, responder: from), e)
                completeAll([.ice, .dtls], session: s, e)
            case .appHandshake:
                begin(.app, e, requester: from, responder: to, session: s, keyResponder: to)
            case .appHandshakeResponse:
                complete(Key(phase: .app, session: s, responder: from), e)
            default:
                break
            }
        }

        // Flush: phases never answered, judged at the end of their session or of the input.
        for k in order {
            guard let p = pending[k] else { continue }
            let limit = limits[p.phase] ?? 0
            // The deadline passed while nothing was observed: the answer may be in the gap.
            if HandshakeTimeoutDetector.inHole(fireTime(p, limit), holes) { continue }
            let inst = input.session(p.session)
            if let sEnd = inst?.end {
                let waited = sEnd &- p.start
                // A log saying this timer fired can end the session a moment before the timer's
                // time on capture time (the app's timer started before its first packet): the
                // capture still shows what went unanswered.
                let fired = waited <= limit ? firedByLog(p, limit: limit, sessionEnd: sEnd, logTimeouts) : nil
                guard waited > limit || fired != nil else { continue }
                let how = fired != nil ? "; the timer fired and the session ended (\(inst?.endReason ?? "ended"))"
                    : "; session ended (\(inst?.endReason ?? "ended")) after \(CaptureTime.duration(waited))"
                var f = input.finding(
                    HandshakeTimeoutDetector.kind, .error, peer: p.responder, t: fireTime(p, limit),
                    "\(p.phase.what) from \(input.label(p.requester)) to \(input.label(p.responder)) not answered within \(secondsText(Double(limit) / 1e9))\(how)",
                    evidence: p.allEvidence + (inst?.endEvidence.map { [$0] } ?? []), key: key(p),
                    details: details(p, waited: max(waited, limit), limit: limit, outcome: "unanswered"))
                f.silence = p.start ... max(p.start, fireTime(p, limit))
                out.append(f)
            } else {
                let waited = input.end &- p.start
                if waited > limit {
                    var f = input.finding(
                        HandshakeTimeoutDetector.kind, .error, peer: p.responder, t: fireTime(p, limit),
                        "\(p.phase.what) from \(input.label(p.requester)) to \(input.label(p.responder)) not answered within \(secondsText(Double(limit) / 1e9)) (still open at end of input, \(CaptureTime.duration(waited)))",
                        evidence: p.allEvidence, key: key(p),
                        details: details(p, waited: waited, limit: limit, outcome: "unanswered"), openAtEnd: true)
                    f.silence = p.start ... max(p.start, input.end)
                    out.append(f)
                } else {
                    out.append(input.finding(
                        HandshakeTimeoutDetector.kind, .info, peer: p.responder, t: p.start,
                        "\(p.phase.what) from \(input.label(p.requester)) to \(input.label(p.responder)) still in progress at end of input after \(CaptureTime.duration(waited)) (timeout \(secondsText(Double(limit) / 1e9)))",
                        evidence: p.allEvidence, key: key(p),
                        details: details(p, waited: waited, limit: limit, outcome: "open"), openAtEnd: true))
                }
            }
        }
        return out
    }

    /// How far before the timer's time (on capture time) a log line saying it fired may come.
    static let logSlack: Nanos = 2 * CaptureTime.second

    /// The time of a log line saying `p`'s timer fired (same phase, or GCK giving up), about its session or
    /// its responder, from `logSlack` before the timer's time to just after the session ended.
    private func firedByLog(_ p: Pending, limit: Nanos, sessionEnd: Nanos, _ logs: [LogTimeout]) -> Nanos? {
        let due = fireTime(p, limit)
        return logs.first { l in
            guard l.phase == nil || l.phase == p.phase else { return false }
            guard l.session == p.session || (l.session == nil && l.subject == p.responder) else { return false }
            return l.t >= due &- HandshakeTimeoutDetector.logSlack && l.t <= sessionEnd &+ HandshakeTimeoutDetector.logSlack
        }?.t
    }

    /// A timeout is stamped when its timer fires (start + threshold, on capture time), as the app's
    /// own timer would; when the phase began is in `details["since"]`.
    private func fireTime(_ p: Pending, _ limit: Nanos) -> Nanos { p.start.addingReportingOverflow(limit).overflow ? p.start : p.start &+ limit }

    private func key(_ p: Pending) -> String { "\(HandshakeTimeoutDetector.kind)|\(p.phase.rawValue)|\(p.session)" }

    private func details(_ p: Pending, waited: Nanos, limit: Nanos, outcome: String) -> [String: String] {
        ["phase": p.phase.rawValue, "waited": secondsText(Double(waited / 1_000_000) / 1000),
         "threshold": secondsText(Double(limit) / 1e9), "outcome": outcome, "requests": String(p.count),
         "session": String(p.session.number), "since": CaptureTime.iso8601(p.start)]
    }

    /// The phase a log timeout line is about, or nil when it is not a handshake timeout.
    static func logPhase(_ e: ResolvedEvent) -> Phase? {
        switch e.kind {
        case .inviteTimeout: return .invitation
        case .iceTimeout: return .ice
        case .dtlsTimeout: return .dtls
        case .gckGivingUp:
            let w = squash(e[.wait])
            if w.contains("dtls") { return .dtls }
            if w.contains("hello") || w.contains("dd") || w.contains("lsa") { return .gck }
            if w.contains("ice") { return .ice }
            return nil  // "gave up" after whichever timeout came before: see `logFinding`
        case .gckTimeout:
            let w = squash(e[.wait])
            if w.contains("heartbeat") { return nil }
            if w.contains("dtls") { return .dtls }
            if w.contains("ice") { return .ice }
            return .gck
        case .appTimeout:
            let what = squash(e[.what] ?? e[.type] ?? e[.phase] ?? e[.timer])
            return what.contains("keep") ? nil : .app
        default: return nil
        }
    }

    private func logFinding(_ e: ResolvedEvent, _ input: DetectorInput) -> Finding? {
        let phase = HandshakeTimeoutDetector.logPhase(e)
        guard phase != nil || e.kind == .gckGivingUp, !saysConnected(e.attrs) else { return nil }
        let phaseName = phase?.rawValue ?? "gave-up"
        let peer = input.subject(e)
        let scope = e.session.map { "\($0)" } ?? peer.map { "\($0)" } ?? "?"
        let what = e.kind == .gckGivingUp ? "GCK gave up setting up the session (not connected in time)"
            : "\(phase?.what ?? "session setup") timed out"
        var d = ["phase": phaseName, "outcome": "log", "source": e.source]
        if let c = e[.channel] { d["channel"] = c }
        return input.finding(HandshakeTimeoutDetector.kind, .error, peer: peer, t: e.t,
                             "log: \(what) with \(input.label(peer))", evidence: [e.evidence],
                             key: "\(HandshakeTimeoutDetector.kind)|log|\(phaseName)|\(scope)", details: d)
    }
}
