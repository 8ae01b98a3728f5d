import PeerscopeCore
import PeerscopeTimeline

/// `channel-error`: a channel broke or carried something it should not have.
///
/// | case | severity | peer at fault |
/// |---|---|---|
/// | DTLS alert: fatal (level 2) error; warning level (1) warning, `close_notify` info; encrypted (level and description unreadable) error when no session traffic follows it (the channel is dead), else warning | per level | the sender of the alert |
/// | ICMP unreachable for a session or invitation flow (evidence: the ICMP frame and the latest frame of the quoted flow) | error | the unreachable peer (else the reporter) |
/// | TCP reset on an invitation channel before the response | error | the side that sent the reset |
/// | TCP connection to a known peer refused | error | the refusing peer |
/// | a packet failing its CRC (`channel.checksum`) | warning | the sender |
/// | app or GCK data while the DTLS handshake was still running, or app messages while the session was still being set up | error | the sender |
/// | incompatible encryption preferences (`encryption` attr required vs none, or the log line) | error | the peer with `none` (log: the peer named) |
/// | send errors from logs (one finding per session, with the count): error when one shows the channel closed or aborted (or the session ended within 5 s), else warning | per case | the peer named |
/// | local network permission errors (-72008) | error | the log owner |
public struct ChannelErrorDetector: Detector {
    public static let kind = "channel-error"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "DTLS alerts, ICMP unreachable, resets, bad checksums, data before the secure channel, encryption mismatch, send errors",
        thresholds: [],
        make: { ChannelErrorDetector(config: $0) })

    public init(config: DetectorConfig) {}


    /// Where an alert's channel lives: its session, else its flow (both directions).
    static func trafficScope(_ e: ResolvedEvent) -> String { TrafficScope(e).text }

    /// `trafficScope` as a value: the traffic of every session event is filed under it, its text made
    /// once per scope after the loop (two scopes of one text are one scope, as their texts were).
    enum TrafficScope: Hashable {
        case session(SessionKey)
        case flow(FlowKey)
        case pair(PeerPair?)

        init(_ e: ResolvedEvent) {
            if let s = e.session { self = .session(s) } else if let f = e.flow { self = .flow(f.canonical) } else { self = .pair(e.pair) }
        }

        var text: String {
            switch self {
            case .session(let s): "session|\(s)"
            case .flow(let f): "flow|\(f)"
            case .pair(let p): "pair|\(p.map { "\($0)" } ?? "?")"
            }
        }
    }

    private static func encryption(_ v: String?) -> String? {
        switch squash(v) {
        case "required", "1": return "required"
        case "none", "2": return "none"
        case "optional", "0": return "optional"
        default: return nil
        }
    }

    /// How soon after a send error the session's end shows the error ended the channel.
    static let sendErrorEndWindow: Nanos = 5 * CaptureTime.second

    /// A send error that shows the channel closed or aborted (SSL closed/abort, connection reset or
    /// refused, no route, channel marked invalid), or that the session ended soon after.
    static func sendErrorClosedChannel(_ e: ResolvedEvent, _ input: DetectorInput) -> Bool {
        let a = e.attrs
        if a[.channelInvalid] == true { return true }
        let text = [a[.sslError], a[.error], a[.errno]].compactMap { $0 }.map { squash($0) }.joined(separator: " ")
        let closing = ["closedabort", "closedgraceful", "closednotify", "connectionreset", "connectionrefused",
                       "noroutetohost", "hostisdown", "networkisunreachable", "brokenpipe"]
        if closing.contains(where: { text.contains($0) }) { return true }
        if let inst = input.session(e.session), let end = inst.end, end >= e.t, end &- e.t <= sendErrorEndWindow {
            return true
        }
        return false
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        let kind = ChannelErrorDetector.kind
        var out: [Finding] = []
        var invitationFlows: Set<FlowKey> = []
        var answeredPairs: Set<PeerPair> = []
        var encryption: [SessionKey: [PeerRef: (String, Evidence)]] = [:]
        var sendErrors: [String: (Finding, Int)] = [:]
        var sendOrder: [String] = []
        var refused: [String: (Finding, Int)] = [:]
        var refusedOrder: [String] = []
        var encryptedAlerts: [(ResolvedEvent, String, String)] = []
        var lastTrafficByScope: [TrafficScope: Nanos] = [:]
        // The latest frames of each UDP flow (runs' first and last frames): the packet an ICMP
        // error quotes is the latest one before it.
        var lastUDPFrame: [FlowKey: (first: Evidence, last: Evidence)] = [:]

        for e in input.timelines.events {
            var scope: String { input.scope(e) }
            // Read once: each read goes to the event store (see `ResolvedEvent`).
            let eventKind = e.kind
            if case .frame = e.evidence, let f = e.flow, f.proto == .udp, eventKind != .icmpUnreachable {
                let last = e.lastEvidence ?? e.evidence   // a coalesced run: its last frame
                let first = e.evidence
                // Updated in place (one lookup): the latest first and latest last frame so far.
                func latest(_ v: inout (first: Evidence, last: Evidence)) {
                    v.first = max(v.first, first)
                    v.last = max(v.last, last)
                }
                latest(&lastUDPFrame[f, default: (first, last)])
            }
            if case .frame = e.evidence, eventKind != .dtlsAlert,
               eventKind.isIn("dtls") || eventKind.isIn("gck") || eventKind.isIn("app") {
                let k = TrafficScope(e)
                lastTrafficByScope[k] = max(lastTrafficByScope[k] ?? e.lastT, e.lastT)
            }
            switch eventKind {
            case .invitationHello, .invitationAccept, .invite, .inviteConnect, .invitationReceipt:
                if let f = e.flow { invitationFlows.insert(f.canonical) }
                if let p = e.pair, eventKind == .invite { answeredPairs.remove(p) }
            case .inviteResponse:
                if let f = e.flow { invitationFlows.insert(f.canonical) }
                if let p = e.pair { answeredPairs.insert(p) }
            default: break
            }

            switch eventKind {
            case .dtlsAlert:
                let level = squash(e[.level])
                let desc = e[.description] ?? "unknown"
                let key = "\(kind)|alert|\(scope)|\(squash(desc))"
                if level == "encrypted" || squash(desc).hasPrefix("encrypted") {
                    // Level and description are inside the record: judged after the loop by what followed.
                    encryptedAlerts.append((e, key, ChannelErrorDetector.trafficScope(e)))
                    break
                }
                let closeNotify = squash(desc).contains("closenotify") || desc == "0"
                let fatal = level == "fatal" || level == "2"
                let severity: Severity = closeNotify && !fatal ? .info : (fatal ? .error : .warning)
                let levelText = fatal ? "fatal " : (level == "warning" || level == "1" ? "warning " : (level.isEmpty ? "" : level + " "))
                out.append(input.finding(kind, severity, peer: e.from, t: e.t,
                                         "\(input.label(e.from)) sent a DTLS \(levelText)alert (\(desc)) to \(input.label(e.to))",
                                         evidence: [e.evidence], key: key,
                                         details: ["case": "dtls-alert", "description": desc, "level": level]))

            case .icmpUnreachable:
                // The ICMP plugin gives `from` = the sender of the quoted packet, `to` = the destination
                // it could not reach, and the quoted flow as the event's flow (`quotedFlow`).
                let quotedFlow = e.quotedFlow
                let quoted = quotedFlow.map { "\($0)" } ?? ""
                let sessionFlow = quotedFlow.map(MPCPorts.touchesGCK) ?? false
                    || (e.flow.map { invitationFlows.contains($0.canonical) } ?? false)
                    || e[.invitation] != nil
                let peer = e.to ?? e.from
                let known: Bool = {
                    if case .id? = e.to { return e.session != nil }
                    return false
                }()
                guard sessionFlow || known else { break }
                let what = e[.summary] ?? e[.description] ?? "unreachable"
                // The ICMP frame and the packet it quotes (the latest frame of the quoted flow).
                var evidence = [e.evidence]
                if let quotedFlow, let q = lastUDPFrame[quotedFlow] {
                    // A run still going past the ICMP error: its first frame is the latest known before.
                    if q.last < e.evidence { evidence.insert(q.last, at: 0) } else if q.first < e.evidence { evidence.insert(q.first, at: 0) }
                }
                out.append(input.finding(kind, .error, peer: peer, t: e.t,
                                         "ICMP \(what) for traffic from \(input.label(e.from)) to \(input.label(peer))\(quoted.isEmpty ? "" : " (\(quoted))")",
                                         evidence: evidence, key: "\(kind)|icmp|\(e.session.map { "\($0)" } ?? quoted)",
                                         details: ["case": "icmp-unreachable"]))

            case .tcpReset:
                let onInvitation = e.flow.map { invitationFlows.contains($0.canonical) } ?? false
                guard onInvitation || e[.invitation] != nil else { break }
                if let p = e.pair, answeredPairs.contains(p) { break }
                var d = ["case": "tcp-reset"]
                let fromLog: Bool = { if case .logLine = e.evidence { true } else { false } }()
                // A log line ("End of stream ... Connection reset by peer") confirms the packet finding.
                if fromLog { d["outcome"] = "log" }
                out.append(input.finding(kind, .error, peer: e.from, t: e.t,
                                         "\(fromLog ? "log: " : "")\(input.label(e.from)) reset the invitation channel with \(input.label(e.to)) before the invitation was answered",
                                         evidence: [e.evidence], key: "\(kind)|reset|\(e.flow.map { "\($0.canonical)" } ?? scope)",
                                         details: d))

            case .tcpRefused:
                // The refusing side: a known peer whose advertised port no longer listens (stale record).
                let refuser: PeerRef? = {
                    if case .id? = e.from { return e.from }
                    if case .id? = e.to { return e.to }
                    return nil
                }()
                guard let refuser else { break }
                // One finding per pair; it joins an earlier channel error of the same peer (the app
                // that died) as its follow-up.
                let k = "\(kind)|refused|\(e.pair.map { "\($0)" } ?? scope)"
                if var (f, n) = refused.removeValue(forKey: k) {
                    n &+= 1
                    if f.evidence.count < Finding.maxEvidence { f.evidence.append(e.evidence) }
                    f.message = "\(n) connections to \(input.label(refuser)) refused (stale advertisement or the app is gone)"
                    f.detailAttrs["count"] = String(n)
                    refused[k] = (f, n)
                } else {
                    refused[k] = (input.finding(kind, .error, peer: refuser, t: e.t,
                                                "connection to \(input.label(refuser)) refused (stale advertisement or the app is gone)",
                                                evidence: [e.evidence], key: k,
                                                details: ["case": "tcp-refused", "count": "1", "outcome": "follow-up"]), 1)
                    refusedOrder.append(k)
                }

            case .checksumError:
                out.append(input.finding(kind, .warning, peer: e.from, t: e.t,
                                         "\(input.label(e.from)) sent a packet that fails its checksum\(e[.type].map { " (\($0))" } ?? "")",
                                         evidence: [e.evidence], key: "\(kind)|checksum|\(scope)",
                                         details: ["case": "checksum"]))

            case .appHandshake, .appHandshakeResponse, .appKeepAlive, .appChat, .appOther, .gckData:
                // The instance (a lookup and a copy) only for an event that may be a finding: most app
                // data comes once the session is up.
                guard let s = e.session else { break }
                let beforeSecure = e.dtlsStartedBefore && !e.secureBefore
                guard beforeSecure || (eventKind.isIn("app") && !e.establishedBefore), let inst = input.session(s) else { break }
                if beforeSecure {
                    out.append(input.finding(kind, .error, peer: e.from, t: e.t,
                                             "\(input.label(e.from)) sent data to \(input.label(e.to)) before the secure channel was established",
                                             evidence: [e.evidence], key: "\(kind)|before-secure|\(s)",
                                             details: ["case": "data-before-secure"]))
                } else if eventKind.isIn("app"), !e.establishedBefore, !inst.startedBeforeInput,
                          [.connecting, .iceChecks, .secureHandshake, .gckHandshake].contains(where: { st in
                              inst.milestone(st).map { $0.t <= e.t } ?? false
                          }) {
                    out.append(input.finding(kind, .error, peer: e.from, t: e.t,
                                             "\(input.label(e.from)) sent app data to \(input.label(e.to)) before the session was connected",
                                             evidence: [e.evidence], key: "\(kind)|before-connected|\(s)",
                                             details: ["case": "data-before-connected"]))
                }

            case .encryptionIncompatible:
                let peer = input.subject(e)
                out.append(input.finding(kind, .error, peer: peer, t: e.t,
                                         "\(input.label(peer)) has an incompatible encryption preference\((e[.preference] ?? e[.encryption]).map { " (\($0))" } ?? "")",
                                         evidence: [e.evidence], key: "\(kind)|encryption|\(scope)",
                                         details: ["case": "encryption", "outcome": "log"]))

            case .sendError:
                let peer = input.subject(e)
                let k = "\(kind)|send|\(scope)"
                let fatal = input.namesPeer(e) && ChannelErrorDetector.sendErrorClosedChannel(e, input)
                if var (f, n) = sendErrors.removeValue(forKey: k) {
                    n &+= 1
                    if f.evidence.count < Finding.maxEvidence { f.evidence.append(e.evidence) }
                    if fatal {
                        f.severity = .error
                        f.detailAttrs["channel"] = "closed"
                    }
                    f.message = "\(n) send errors to \(input.label(peer)) (first at \(input.at(f.t)))"
                    f.detailAttrs["count"] = String(n)
                    sendErrors[k] = (f, n)
                } else {
                    // Without a remote peer named, a send error is the log owner's own symptom: info.
                    // One that shows the channel closed or aborted (or that the session ended right
                    // after) is the failure itself, as the packets' finding is: error.
                    let named = input.namesPeer(e)
                    var f = input.finding(kind, named ? (fatal ? .error : .warning) : .info, peer: peer, t: e.t, "send error to \(input.label(peer))",
                                          evidence: [e.evidence], key: k, details: ["case": "send-error", "count": "1", "outcome": "log"])
                    if fatal { f.detailAttrs["channel"] = "closed" }
                    sendErrors[k] = (f, 1)
                    sendOrder.append(k)
                }

            case .permissionError:
                let svc = ChannelErrorDetector.serviceType(input)
                let fix = "Info.plist needs NSLocalNetworkUsageDescription and NSBonjourServices listing both \(svc)._tcp and \(svc)._udp"
                out.append(input.finding(kind, .error, peer: e.from ?? e.to, t: e.t,
                                         "local network permission or Bonjour service declaration missing\(e[.code].map { " (\($0))" } ?? ""): \(fix)",
                                         evidence: [e.evidence], key: "\(kind)|permission|\(scope)",
                                         details: ["case": "permission", "fix": fix]))
            default: break
            }

            // Encryption preferences carried in the connection data.
            if e.kind == .inviteResponse || e.kind == .inviteConnect, let s = e.session, let from = e.from,
               let pref = ChannelErrorDetector.encryption(e[.encryption]) {
                var m = encryption[s] ?? [:]
                m[from] = (pref, e.evidence)
                encryption[s] = m
                let prefs = Set(m.values.map(\.0))
                if m.count == 2, prefs == ["required", "none"] {
                    let none = m.first { $0.value.0 == "none" }?.key
                    out.append(input.finding(kind, .error, peer: none, t: e.t,
                                             "encryption preferences do not match: \(input.label(none)) uses none, \(input.label(none.map { s.pair.other($0) })) requires encryption",
                                             evidence: m.values.map(\.1).sorted(), key: "\(kind)|encryption|\(s)",
                                             details: ["case": "encryption"]))
                }
            }
        }
        // An encrypted alert followed by no more session traffic (either way) killed the channel:
        // fatal. With traffic after it, it was a warning-level alert.
        var lastTraffic: [String: Nanos] = [:]
        if !encryptedAlerts.isEmpty {
            for (scope, t) in lastTrafficByScope { lastTraffic[scope.text] = max(lastTraffic[scope.text] ?? t, t) }
        }
        for (e, key, trafficKey) in encryptedAlerts {
            let after = (lastTraffic[trafficKey] ?? e.t) > e.t
            out.append(input.finding(kind, after ? .warning : .error, peer: e.from, t: e.t,
                                     "\(input.label(e.from)) sent an encrypted DTLS alert (level and description unreadable) to \(input.label(e.to))"
                                         + (after ? "; session traffic continued after it" : "; no session traffic followed: the alert closed the channel"),
                                     evidence: [e.evidence], key: key,
                                     details: ["case": "dtls-alert", "description": "encrypted", "level": "encrypted",
                                               "followedBy": after ? "traffic" : "silence"]))
        }
        for k in sendOrder { if let (f, _) = sendErrors[k] { out.append(f) } }
        for k in refusedOrder { if let (f, _) = refused[k] { out.append(f) } }
        // The packets alone: one side plaintext GCK, the other DTLS, and the session never came up.
        for s in input.timelines.sessions where s.plane == .mismatch && s.established == nil {
            guard let clear = s.planeBySide.first(where: { $0.value == .plaintext })?.key else { continue }
            let secure = s.pair.other(clear)
            out.append(input.finding(
                kind, .error, peer: clear, t: s.start,
                "encryption preferences do not match (from the packets): \(input.label(clear)) sends plaintext GCK (0xC1…, encryption none), "
                    + "\(input.label(secure)) sends DTLS (0xD0…, encryption required or optional); session #\(s.number) never came up: "
                    + "give both sides' MCSession the same encryptionPreference",
                evidence: [s.startEvidence] + (s.endEvidence.map { [$0] } ?? []), key: "\(kind)|encryption|\(s.key)",
                details: ["case": "encryption", "planes": "\(input.label(clear))=plaintext,\(input.label(secure))=dtls"]))
        }
        return out
    }

    /// Handshake timeouts of a pair whose encryption preferences do not match are its consequence, not
    /// another problem: they join the `encryption` finding (`details["explains"]`) when they fall in a
    /// session of that pair that began before they fired and had not ended a second before the mismatch.
    static func foldIntoEncryptionMismatch(_ findings: [Finding], _ t: Timelines) -> [Finding] {
        let mismatches = findings.indices.filter { findings[$0].kind == kind && findings[$0].detailAttrs["case"] == "encryption" }
        guard !mismatches.isEmpty else { return findings }
        var out = findings
        var drop: Set<Int> = []
        for i in findings.indices where findings[i].kind == HandshakeTimeoutDetector.kind {
            let h = findings[i]
            guard let hp = h.peerRef, let m = mismatches.first(where: { j in
                let e = findings[j]
                guard let ep = e.peerRef, h.t >= e.t &- CaptureTime.second else { return false }
                return t.sessions.contains { s in
                    s.pair.contains(ep) && s.pair.contains(hp) && s.start <= h.t && (s.end ?? Nanos.max) >= e.t &- CaptureTime.second
                }
            }) else { continue }
            let phase = h.detailAttrs["phase"].map { " (\($0))" } ?? ""
            out[m].detailAttrs["explains"] = (out[m].detailAttrs["explains"].map { $0 + "," } ?? "") + "handshake-timeout" + phase
            out[m].evidence = Array(Set(out[m].evidence).union(h.evidence).sorted().prefix(Finding.maxEvidence))
            drop.insert(i)
        }
        return out.indices.filter { !drop.contains($0) }.map { out[$0] }
    }

    /// The Bonjour service type the capture or logs name (`_chat-app`), else a placeholder.
    static func serviceType(_ input: DetectorInput) -> String {
        for e in input.timelines.events where e.kind.isIn("discovery") {
            guard let svc = e[.service], svc.hasPrefix("_") else { continue }
            if let name = svc.split(separator: ".").first { return String(name) }
        }
        return "_<service>"
    }
}
