import PeerscopeCore

// The session state machine: instances opened, superseded, established and closed per pair.
extension TimelineBuilder {
    func open(_ pair: PeerPair, _ e: PeerEvent, originator: PeerRef, beforeInput: Bool) -> Int {
        let n = (counts[pair] ?? 0) + 1
        counts[pair] = n
        if n == 1 {
            pairsOf[pair.a, default: []].append(pair)
            pairsOf[pair.b, default: []].append(pair)
        }
        var inst = SessionInstance(key: SessionKey(pair: pair, number: n), originator: originator, start: e.t,
                                   evidence: e.evidence)
        inst.startedBeforeInput = beforeInput
        sessions.append(SessionWork(instance: inst))
        latest[pair] = sessions.count - 1
        return sessions.count - 1
    }

    /// Opens the pair's next instance while `si` is still open: `si` is judged at the end (see
    /// `settleSuperseded`).
    func openSuccessor(of si: Int, _ pair: PeerPair, _ e: PeerEvent, originator: PeerRef) -> Int {
        let n = open(pair, e, originator: originator, beforeInput: false)
        sessions[si].successor = n
        sessions[n].predecessor = si
        sessions[si].instance.supersededBy = sessions[n].instance.number
        return n
    }

    /// An instance whose successor began while it was open ends `superseded` at the successor's start
    /// when it carried no traffic after that start (beyond `supersedeGrace`) on a flow the successor
    /// did not use; otherwise both were alive at once and it keeps its own end (`overlap` says when).
    func settleSuperseded() {
        for w in sessions {
            guard let n = w.successor else { continue }
            let next = sessions[n]
            let after = next.instance.start &+ supersedeGrace
            let alive = w.udpLast.filter { f, last in last.t > after && next.udpLast[f] == nil }
                .map { f, last in (key: f, value: w.firstAfterSuccessor[f] ?? last) }
            if let first = alive.min(by: { x, y in
                x.value.t != y.value.t ? x.value.t < y.value.t : x.key.description < y.key.description
            }) {
                // The earliest packet of the older instance's traffic after the successor began.
                w.instance.overlap = (first.value.t, first.value.evidence)
            } else if w.instance.end == nil || w.instance.end.map({ $0 > next.instance.start }) == true {
                w.instance.end = next.instance.start
                w.instance.endReason = SessionInstance.superseded
                w.instance.quietSince = min(w.udpLast.values.map(\.t).max() ?? w.instance.lastT, next.instance.start)
                w.instance.endEvidence = next.instance.startEvidence
            }
        }
    }

    /// The plane from the packets alone: who sent plaintext GCK (`0xC1…`), who sent DTLS (`0xD0…`).
    static func classifyPlane(_ w: SessionWork, _ s: inout SessionInstance) {
        for side in [s.pair.a, s.pair.b] {
            let clear = w.plaintextFrom.contains(side, of: s.pair), secure = w.dtlsFrom.contains(side, of: s.pair)
            if clear && secure {
                s.setPlane((w.firstDTLS ?? 0) < (w.firstPlaintext ?? 0) ? .dtlsFellBackToPlaintext : .plaintext, of: side)
            } else if clear {
                s.setPlane(.plaintext, of: side)
            } else if secure {
                s.setPlane(.dtls, of: side)
            }
        }
        let planes = Set([s.planeA, s.planeB].compactMap { $0 } + s.otherPlanes.values)
        if planes.isEmpty {
            s.plane = nil
        } else if planes.count == 1 {
            s.plane = planes.first
        } else if planes.contains(.dtlsFellBackToPlaintext) || (w.plaintextFrom.isDisjoint(with: w.dtlsFrom) == false) {
            s.plane = .dtlsFellBackToPlaintext
        } else if planes == [.dtls, .plaintext], let a = s.plane(of: s.pair.a), let b = s.plane(of: s.pair.b), a != b,
                  (w.firstPlaintext ?? 0) > (w.firstDTLS ?? 0), s.established != nil {
            // Both planes, each side one, but the session came up: DTLS gave way to plaintext.
            s.plane = .dtlsFellBackToPlaintext
        } else {
            s.plane = .mismatch
        }
    }

    /// True when `e` begins a new instance of a pair whose instance `w` is open and established: a
    /// new invitation (another invitation channel, another invite ID), a fresh ICE + GCK Hello, a
    /// DTLS ClientHello, or a state change to connecting.
    func startsNewInstance(_ e: PeerEvent, _ w: SessionWork) -> Bool {
        switch e.kind {
        case .invite, .invitationHello:
            if let f = e.flow, f.proto == .tcp { return !w.inviteFlows.contains(f.canonical) }
            if let id = e[.inviteID] { return !w.inviteIDs.isEmpty && !w.inviteIDs.contains(id) }
            return false
        case .gckHello:
            guard w.instance.milestone(.gckConnected) != nil, let ice = w.lastICERequest else { return false }
            let window = TimelineBuilder.freshHandshakeWindow
            return e.t &- ice <= window && (w.lastGCKHello.map { e.t &- $0 > window } ?? true)
        case .dtlsHandshake: return TimelineBuilder.isClientHello(e)
        case .stateChange: return e.targetState == "connecting"
        default: return false
        }
    }

    func close(_ si: Int, at e: PeerEvent, reason: String) {
        guard sessions[si].instance.end == nil else { return }
        sessions[si].instance.end = e.t
        sessions[si].instance.endReason = reason
        sessions[si].instance.endEvidence = e.evidence
    }

    static func isClientHello(_ e: PeerEvent) -> Bool {
        (e[.message] ?? "").lowercased().filter { $0.isLetter }.contains("clienthello")
    }

    func instanceIndex(for pair: PeerPair, _ e: PeerEvent, originator: PeerRef) -> Int? {
        let role = role(e)
        guard let si = latest[pair] else {
            switch role {
            case .start: return open(pair, e, originator: originator, beforeInput: false)
            case .traffic: return open(pair, e, originator: originator, beforeInput: true)
            case .attach: return nil
            }
        }
        // Packets on a UDP flow that only an older, still open instance of the pair used are its own
        // (a duplicate session on other ports); the newest instance takes a flow once it uses it.
        // A handshake packet on such a flow belongs to the newest instance while that one is being set
        // up (a reconnect on the same ports); once it is up, it is the older one's recurring check.
        if let f = e.flow, f.proto == .udp, sessions[si].predecessor != nil, sessions[si].udpLast[f.canonical] == nil,
           self.role(e) != .start || sessions[si].instance.established != nil, !startsNewInstance(e, sessions[si]) {
            var older = sessions[si].predecessor
            while let prev = older {
                if sessions[prev].instance.end == nil, sessions[prev].udpLast[f.canonical] != nil { return prev }
                older = sessions[prev].predecessor
            }
        }
        let inst = sessions[si].instance
        if let end = inst.end {
            switch role {
            case .start: return open(pair, e, originator: originator, beforeInput: false)
            case .traffic where e.t &- end > reopenGap: return open(pair, e, originator: originator, beforeInput: true)
            default:
                // Stragglers of a finished instance attach to it; much later ones belong to no instance.
                return e.t &- end > reopenGap ? nil : si
            }
        }
        if role == .start, inst.established != nil {
            if startsNewInstance(e, sessions[si]) { return openSuccessor(of: si, pair, e, originator: originator) }
            if e.kind == .invite || e.kind == .inviteConnect || e.kind == .invitationHello {
                sessions[si].instance.overlappingAttempts.append(e.evidence)
            }
        }
        return si
    }

    func milestone(_ si: Int, _ state: TimelineState, _ e: PeerEvent, by: PeerRef) {
        guard sessions[si].instance.milestone(state) == nil else { return }
        // The builder's box of the peer (every side of a session event has one; a reporter may not).
        sessions[si].instance.milestones.append(SessionMilestone(state: state, t: e.t, evidence: e.evidence,
                                                                 byBox: peers[by]?.box ?? Shared(by)))
    }

    static let gckKinds: Set<EventKind> = [.gckHello, .gckDD, .gckLSA, .gckLSAACK, .gckHeartbeat]
    static let establishing: Set<TimelineState> = [
        .connected, .gckConnected, .secureChannelUp, .appHandshakeDone, .keepAlive, .heartbeat,
    ]

    func apply(_ e: PeerEvent, state s0: TimelineState, letter l0: Character?, from: PeerRef, to: PeerRef,
                       by: PeerRef, at si: Int) -> (TimelineState, Character?) {
        var state = s0, letter = l0
        let w = sessions[si]
        if w.instance.eventCount == 0 { w.instance.originator = from }
        w.instance.eventCount &+= e.count
        w.instance.lastT = max(w.instance.lastT, e.lastT)
        if let f = e.flow {
            let c = f.canonical
            if f.proto == .udp, case .frame = e.evidence {
                if w.udpLast[c].map({ e.lastT >= $0.t }) ?? true { w.udpLast[c] = (e.lastT, e.lastEvidence ?? e.evidence) }
                if let n = w.successor, w.firstAfterSuccessor[c] == nil {
                    let after = sessions[n].instance.start &+ supersedeGrace
                    if e.t > after {
                        w.firstAfterSuccessor[c] = (e.t, e.evidence)
                    } else if e.lastT > after {
                        w.firstAfterSuccessor[c] = (e.lastT, e.lastEvidence ?? e.evidence)
                    }
                }
            }
            if f.proto == .tcp, e.kind.isIn("invitation") { w.inviteFlows.insert(c) }
        }
        if e.kind.isIn("invitation"), let id = e[.inviteID] { w.inviteIDs.insert(id) }
        if e.kind == .iceRequest { w.lastICERequest = e.lastT }
        if case .frame = e.evidence {
            if e.kind.isIn("gck") {
                w.plaintextFrom.insert(from, of: w.instance.pair)
                if w.firstPlaintext == nil { w.firstPlaintext = e.t }
            } else if e.kind.isIn("dtls") {
                w.dtlsFrom.insert(from, of: w.instance.pair)
                if w.firstDTLS == nil { w.firstDTLS = e.t }
            }
        }
        if e.kind == .gckHello { w.lastGCKHello = e.lastT }
        if e.kind.isIn("dtls") { w.instance.encrypted = true }
        if e.kind == .dtlsHandshake || e.kind == .dtlsChangeCipherSpec || e.kind == .dtlsEstablished { w.dtlsStarted = true }
        if TimelineBuilder.gckKinds.contains(e.kind) {
            w.gckFrom.insert(from, of: w.instance.pair)
            if w.gckFrom.count == 2, w.instance.milestone(.gckConnected) == nil { state = .gckConnected; letter = "G" }
        }
        if e.kind == .dtlsChangeCipherSpec {
            w.ccsFrom.insert(from, of: w.instance.pair)
            if w.ccsFrom.count == 2, !w.secure { state = .secureChannelUp; letter = "U" }
        }
        if state == .secureChannelUp { w.secure = true }
        // DTLS records without a handshake seen: the secure channel was up before the input began.
        if e.kind == .dtlsApplicationData, !w.dtlsStarted { w.secure = true }
        if state == .data, w.instance.established == nil, !(w.dtlsStarted && !w.secure) {
            // Data on a session joined late shows the session is up. ICE checks alone before it
            // (connectivity checks recur during a session) do not make it a session being set up.
            let onlyChecks = w.instance.milestones.allSatisfy { $0.state == .iceChecks || $0.state == .iceConnected }
            if w.instance.startedBeforeInput || onlyChecks {
                w.instance.startedBeforeInput = true
                w.instance.established = e.t
            }
        }
        if TimelineBuilder.establishing.contains(state), w.instance.established == nil { w.instance.established = e.t }
        if let letter { w.history.add(letter, sent: from == w.instance.originator, times: e.count) }
        if state != .other { milestone(si, state, e, by: by) }

        switch e.kind {
        case .disconnected: close(si, at: e, reason: "disconnected")
        case .stateChange:
            let target = e.targetState
            if target == "notconnected" || target == "disconnected" { close(si, at: e, reason: "disconnected") }
        case .inviteResponse where e.accepted == false: close(si, at: e, reason: "declined")
        case .connectionDecision where state == .invitationDeclined: close(si, at: e, reason: "declined")
        case .inviteTimeout: close(si, at: e, reason: "invitation timed out")
        case .icmpUnreachable: close(si, at: e, reason: "peer unreachable (ICMP)")
        case .dtlsAlert:
            // A fatal alert or close_notify ends the secure channel. An unreadable (encrypted) alert is
            // one of those in practice: the other warnings are not sent by MPC's DTLS.
            let level = (e[.level] ?? "").lowercased()
            let description = e[.description] ?? level
            if description == "close_notify" {
                close(si, at: e, reason: "closed (DTLS close_notify)")
            } else if level == "fatal" || level == "encrypted" {
                close(si, at: e, reason: level == "encrypted" ? "DTLS alert (encrypted)" : "DTLS alert (\(description))")
            }
        case .iceTimeout, .dtlsTimeout, .gckGivingUp, .gckTimeout:
            let st = (e[.state] ?? "").lowercased().filter { $0.isLetter }
            let wait = (e[.wait] ?? "").lowercased()
            let alreadyUp = st == "connected" || st == "dtlsconnected"
            if sessions[si].instance.established == nil, !alreadyUp, !(e.kind == .gckTimeout && wait.contains("heartbeat")) {
                close(si, at: e, reason: "handshake gave up")
            }
        default: break
        }
        return (state, letter)
    }
}
