import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

final class HandshakeTimeoutTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testUnansweredICEChecksAtEndOfInputBlameTheSilentPeer() throws {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceRequest, 1, A, B)
        s.packet(.iceRequest, 2, A, B)
        let f = s.findings(end: 20).of("handshake-timeout")
        XCTAssertEqual(f.count, 1)
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertEqual(x.peerID, PeerIdentity.idString(0x0FED_CBA9_8765_4321))
        XCTAssertEqual(x.severity, .error)
        XCTAssertTrue(x.openAtEnd)
        XCTAssertEqual(x.details["phase"], "ice")
        XCTAssertEqual(x.t, Script.at(10), "stamped when the 10 s timer fires")
        XCTAssertEqual(x.details["since"], CaptureTime.iso8601(Script.at(0)), "when the checks began")
        XCTAssertEqual(x.evidence.count, 3)
        XCTAssertTrue(x.message.contains("ICE"))
    }

    func testAnswerExactlyAtThresholdIsInTimeAndJustAfterIsLate() {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceSuccess, 10.0, B, A)
        XCTAssertTrue(s.findings().of("handshake-timeout").isEmpty, "timeouts are strictly greater than the threshold")

        let late = Script()
        late.packet(.iceRequest, 0, A, B)
        late.packet(.iceSuccess, 10.001, B, A)
        let f = late.findings().of("handshake-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.severity, .warning)
        XCTAssertEqual(f.first?.details["outcome"], "late")
        XCTAssertEqual(f.first?.peer, "Bob")
    }

    func testEndOfInputDuringHandshakeIsReportedAsOpen() throws {
        let s = Script()
        s.packet(.gckHello, 0, A, B)
        let f = s.findings(end: 5).of("handshake-timeout")
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(x.severity, .info, "within the timeout: in progress, not yet a failure")
        XCTAssertTrue(x.openAtEnd)
        XCTAssertEqual(x.details["phase"], "gck")
        XCTAssertEqual(x.details["outcome"], "open")
    }

    func testSessionEndingBeforeTheTimeoutIsNotATimeout() {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.log(.disconnected, 3, B, A)
        XCTAssertTrue(s.findings(end: 30).of("handshake-timeout").isEmpty)
    }

    func testIncompleteDTLSBlamesThePeerThatOwesTheNextMessage() throws {
        let s = Script()
        s.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsHandshake, 0.1, B, A, attrs: ["message": "ServerHello"])
        let f = s.findings(end: 15).of("handshake-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Alice")
        XCTAssertEqual(f.first?.details["phase"], "dtls")

        let ok = Script()
        ok.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        ok.packet(.dtlsHandshake, 0.1, B, A, attrs: ["message": "ServerHello"])
        ok.packet(.dtlsEstablished, 0.3, A, B)
        XCTAssertTrue(ok.findings(end: 15).of("handshake-timeout").isEmpty)
    }

    func testAppHandshakeThresholdOverride() {
        let s = Script()
        s.connect(A, B, at: 0)
        s.packet(.appHandshake, 1, A, B)
        s.packet(.appHandshakeResponse, 6, B, A)
        XCTAssertTrue(s.findings().of("handshake-timeout").isEmpty)
        let f = s.findings(config: DetectorConfig(values: ["handshake-timeout.app": 3])).of("handshake-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertEqual(f.first?.details["threshold"], "3s")
    }

    func testInvitationUsesItsOwnThirtySecondTimeout() {
        let s = Script()
        s.packet(.invite, 0, A, B)
        s.packet(.inviteResponse, 20, B, A, attrs: ["accepted": "true"])
        XCTAssertTrue(s.findings().of("handshake-timeout").isEmpty, "20 s is inside MPC's 30 s invite timeout")

        let never = Script()
        never.packet(.invite, 0, A, B)
        let f = never.findings(end: 40).of("handshake-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.details["phase"], "invitation")
        XCTAssertEqual(f.first?.severity, .error)
        XCTAssertEqual(f.first?.peer, "Bob")
    }

    func testLogLineConfirmsThePacketFinding() throws {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceRequest, 1, A, B)
        // Alice's log (its own side implicit) names Bob's participant: ICE timeout, then giving up.
        let bobP = PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321))
        s.log(.iceTimeout, 10.2, bobP, attrs: ["state": "ICE"])
        s.log(.gckGivingUp, 10.3, bobP)
        let f = s.findings(end: 12).of("handshake-timeout")
        XCTAssertEqual(f.count, 1, "\(f.map(\.message))")
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertTrue(x.evidence.contains(.frame(input: 0, frame: 1)))
        XCTAssertTrue(x.evidence.contains(.logLine(input: 1, line: 1)))
        XCTAssertTrue(x.evidence.contains(.logLine(input: 1, line: 2)))
        XCTAssertEqual(x.details["confirmedByLog"], "true")
    }

    func testLogTimeoutsAreFindingsAndBurstsMerge() throws {
        let s = Script()
        let bobP = PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321))
        s.log(.iceTimeout, 10, bobP, attrs: ["channel": "0", "state": "ICE"])
        s.log(.gckGivingUp, 10.001, bobP, attrs: ["channel": "0"])
        s.log(.gckGivingUp, 10.002, bobP, attrs: ["channel": "1"])
        s.log(.gckGivingUp, 10.003, bobP, attrs: ["channel": "2"])
        let f = s.findings().of("handshake-timeout")
        XCTAssertEqual(f.count, 1, "one failure, four log lines")
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertEqual(x.evidence.count, 4)
        XCTAssertEqual(x.severity, .error)

        let ignored = Script()
        ignored.log(.iceTimeout, 10, bobP, attrs: ["state": "Connected"])
        XCTAssertTrue(ignored.findings().of("handshake-timeout").isEmpty, "GCK ignores a timeout on a connected channel")
    }
}

final class KeepaliveTimeoutTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testOneDirectionFallsSilentUntilEndOfInput() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 30, every: 2, A, B)
        s.repeating(.appKeepAlive, from: 1.5, to: 45, every: 2, B, A)
        let f = s.findings(end: 45).of("keepalive-timeout")
        XCTAssertEqual(f.count, 1)
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Alice", "the silent sender")
        XCTAssertEqual(x.severity, .error)
        XCTAssertTrue(x.openAtEnd)
        XCTAssertEqual(x.details["level"], "app")
        XCTAssertEqual(x.t, Script.at(35), "last keep-alive at 29 s + the 6 s timeout")
        XCTAssertEqual(x.details["since"], CaptureTime.iso8601(Script.at(29)))
        XCTAssertEqual(x.details["direction"], "Alice -> Bob")
    }

    func testGapExactlyAtThresholdIsFineAndLongerGapThatRecoversIsAWarning() {
        let s = Script()
        s.connect(A, B, at: 0)
        for t in [1.0, 7.0, 9.0, 11.0] {
            s.packet(.appKeepAlive, t, A, B)
            s.packet(.appKeepAlive, t + 0.1, B, A)
        }
        XCTAssertTrue(s.findings(end: 12).of("keepalive-timeout").isEmpty, "a 6.000 s gap is not > 6 s")

        let g = Script()
        g.connect(A, B, at: 0)
        for t in [1.0, 7.5, 9.5, 11.5] { g.packet(.appKeepAlive, t, A, B) }
        for t in [1.1, 3.1, 5.1, 7.1, 9.1, 11.1] { g.packet(.appKeepAlive, t, B, A) }
        let f = g.findings(end: 12).of("keepalive-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.severity, .warning)
        XCTAssertEqual(f.first?.peer, "Alice")
        XCTAssertEqual(f.first?.details["outcome"], "recovered")
    }

    func testReconnectDoesNotSpanSilenceAcrossSessions() {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 10, every: 2, A, B)
        s.repeating(.appKeepAlive, from: 1.2, to: 10, every: 2, B, A)
        s.log(.disconnected, 10, B, A)
        s.connect(A, B, at: 30)
        s.repeating(.appKeepAlive, from: 31, to: 40, every: 2, A, B)
        s.repeating(.appKeepAlive, from: 31.2, to: 40, every: 2, B, A)
        let tl = s.timelines(end: 40)
        XCTAssertEqual(tl.sessions.count, 2)
        XCTAssertTrue(s.findings(end: 40).of("keepalive-timeout").isEmpty)
    }

    func testSessionTrafficSilenceFromHeartbeats() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.gckHeartbeat, from: 1, to: 60, every: 5.5, A, B)
        s.repeating(.gckHeartbeat, from: 1.2, to: 20, every: 5.5, B, A)
        let f = s.findings(end: 60).of("keepalive-timeout")
        XCTAssertEqual(f.count, 1)
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertEqual(x.details["level"], "session")
        XCTAssertEqual(f.first?.severity, .error)

        let quiet = DetectorConfig(values: ["keepalive-timeout.session": 50])
        XCTAssertTrue(s.findings(end: 60, config: quiet).of("keepalive-timeout").isEmpty)
    }

    /// Steady traffic reaches the detector coalesced (as the engine keeps it): a run has no silence
    /// inside, so only the gaps between runs and after the last one count.
    func testCoalescedRunsAreContinuousTraffic() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 21, every: 2, A, B)     // 1 ... 19
        s.repeating(.appKeepAlive, from: 28, to: 40, every: 2, A, B)    // silent 19 -> 28
        s.repeating(.appKeepAlive, from: 1.5, to: 40, every: 2, B, A)
        let plain = s.findings(end: 40).of("keepalive-timeout")
        var coalescer = EventCoalescer(gap: 5 * CaptureTime.second)
        var folded: [PeerEvent] = []
        let flowAB = FlowKey(.udp, Endpoint(.v4(1), 16402), Endpoint(.v4(2), 16402))
        for var e in s.events {
            if e.kind == .appKeepAlive { e.flow = e.from == A ? flowAB : flowAB.reversed }
            coalescer.add(e, to: &folded)
        }
        XCTAssertEqual(folded.filter { $0.kind == .appKeepAlive }.count, 3, "A's two runs and B's one")
        let b = TimelineBuilder(identities: s.facts.identities)
        b.add(contentsOf: folded)
        let f = DetectorSuite.run(timelines: b.finish(at: Script.at(40)), config: .defaults, end: Script.at(40))
            .of("keepalive-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.map(\.t), plain.map(\.t), "the same finding as from every keep-alive")
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Alice")
        XCTAssertEqual(x.details["since"], CaptureTime.iso8601(Script.at(19)))
        XCTAssertEqual(x.details["silent"], "9s")
    }

    /// A log that stops (the app was suspended) stops showing what its device received: silences
    /// after its end are not judged from it.
    func testSilenceSeenOnlyThroughALogEndsWhereThatLogEnds() {
        let s = Script()
        func line(_ kind: EventKind, _ t: Double, input: Int, _ from: PeerHint, _ to: PeerHint) {
            s.events.append(PeerEvent(kind: kind, t: Script.at(t), evidence: .logLine(input: input, line: Int(t * 10)),
                                      from: from, to: to, source: "log-test"))
        }
        line(.stateChange, 0.5, input: 1, B, A)
        for t in stride(from: 1.0, through: 10, by: 2) { line(.appKeepAlive, t, input: 2, A, B) }   // Bob's log: received from Alice
        line(EventKind("log.lifecycle"), 10.5, input: 2, B, .unknown)                                                   // Bob's log ends
        for t in stride(from: 1.5, through: 29.5, by: 2) { line(.appKeepAlive, t, input: 1, B, A) } // Alice's log: received from Bob
        line(.disconnected, 30, input: 1, B, A)
        let f = s.findings(end: 30).of("keepalive-timeout")
        XCTAssertTrue(f.isEmpty, f.map(\.message).joined(separator: "; "))

        // The same silence in a log that goes on is a finding.
        let g = Script()
        func gline(_ kind: EventKind, _ t: Double, input: Int, _ from: PeerHint, _ to: PeerHint) {
            g.events.append(PeerEvent(kind: kind, t: Script.at(t), evidence: .logLine(input: input, line: Int(t * 10)),
                                      from: from, to: to, source: "log-test"))
        }
        gline(.stateChange, 0.5, input: 1, B, A)
        for t in stride(from: 1.0, through: 10, by: 2) { gline(.appKeepAlive, t, input: 2, A, B) }
        gline(EventKind("log.lifecycle"), 29, input: 2, B, .unknown)
        for t in stride(from: 1.5, through: 29.5, by: 2) { gline(.appKeepAlive, t, input: 1, B, A) }
        gline(.disconnected, 30, input: 1, B, A)
        XCTAssertEqual(g.findings(end: 30).of("keepalive-timeout").map(\.peer), ["Alice"])
    }

    /// Two captures joined (nothing at all for 10 minutes in between): a session of the first that
    /// is silent in the second was not observed across the hole.
    func testSilenceAcrossACaptureGapIsNotJudged() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 10, every: 2, A, B)
        s.repeating(.appKeepAlive, from: 1.5, to: 10, every: 2, B, A)
        s.packet(.announced, 700, Script.carol, .unknown)   // the second capture: someone else
        let f = s.findings(end: 700).of("keepalive-timeout")
        XCTAssertFalse(f.isEmpty)
        XCTAssertTrue(f.allSatisfy { $0.severity == .info && $0.details["outcome"] == "capture-gap" }, f.map(\.message).joined(separator: "; "))
        let strict = DetectorConfig(values: ["keepalive-timeout.capture-gap": 0])
        XCTAssertTrue(s.findings(end: 700, config: strict).of("keepalive-timeout").contains { $0.severity == .error })
        // A silence in a capture that kept running is judged.
        let g = Script()
        g.connect(A, B, at: 0)
        g.repeating(.appKeepAlive, from: 1, to: 10, every: 2, A, B)
        g.repeating(.appKeepAlive, from: 1.5, to: 10, every: 2, B, A)
        g.repeating(.announced, from: 10, to: 700, every: 120, Script.carol, .unknown)
        XCTAssertTrue(g.findings(end: 700).of("keepalive-timeout").contains { $0.severity == .error })
    }

    func testHeartbeatTimeoutLogLine() {
        let s = Script()
        s.log(.gckTimeout, 5, PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321)),
              attrs: ["wait": "Heartbeat", "channel": "0"])
        let f = s.findings().of("keepalive-timeout")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertTrue(s.findings().of("handshake-timeout").isEmpty, "a heartbeat timeout is not a handshake timeout")
    }
}

final class DuplicateConnectionTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testCrossingInvitations() {
        let s = Script()
        s.packet(.invite, 1.0, A, B)
        s.packet(.invite, 1.2, B, A)
        let f = s.findings().of("duplicate-connection")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.details["case"], "crossing-invitations")
        XCTAssertEqual(f.first?.peer, "Bob")

        let single = Script()
        single.packet(.invite, 1.0, A, B)
        single.packet(.inviteResponse, 1.1, B, A, attrs: ["accepted": "true"])
        XCTAssertTrue(single.findings().of("duplicate-connection").isEmpty)
    }

    /// Issue #11: an invitation while a session is up is not by itself a duplicate (the session may have
    /// died without a word on the wire, and this is the reconnect); only traffic on both instances at once
    /// is (`SessionInstanceTests`).
    func testInviteWhileConnectedAloneIsNoDuplicate() {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.gckHeartbeat, from: 1, to: 12, every: 5, A, B)
        s.repeating(.gckHeartbeat, from: 1, to: 12, every: 5, B, A)
        s.packet(.invite, 10, A, B)
        XCTAssertEqual(s.findings().of("duplicate-connection").map(\.message), [])
    }

    func testTwoInvitationChannelsAtOnce() throws {
        let s = Script()
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        s.packet(.invitationHello, 1, A, B, flow: FlowKey(.tcp, Endpoint(a, 50001), Endpoint(b, 60000)))
        s.packet(.invitationHello, 1.5, B, A, flow: FlowKey(.tcp, Endpoint(b, 50002), Endpoint(a, 60001)))
        let f = s.findings().of("duplicate-connection")
        XCTAssertEqual(f.filter { $0.details["case"] == "channels" }.count, 1)
    }

    /// Other TCP traffic between two devices (HTTPS, file sharing) is not an invitation channel:
    /// only connections to a known MPC endpoint are (the tcp-connection plugin marks them).
    func testOrdinaryTCPConnectionsAreNotInvitationChannels() throws {
        let s = Script()
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        for (i, port) in [443, 443, 445].enumerated() {
            s.packet(.tcpOpened, 1 + Double(i), A, B, flow: FlowKey(.tcp, Endpoint(a, 50001 + UInt16(i)), Endpoint(b, UInt16(port))))
        }
        XCTAssertTrue(s.findings().of("duplicate-connection").isEmpty)
        XCTAssertFalse(s.timelines().peers.flatMap(\.entries).contains { $0.state == .invitationChannel })

        let m = Script()
        for i in 0 ..< 2 {
            m.packet(.tcpOpened, 1 + Double(i), A, B, attrs: ["invitation": "srv"],
                     flow: FlowKey(.tcp, Endpoint(a, 50001 + UInt16(i)), Endpoint(b, 60000)))
        }
        XCTAssertEqual(m.findings().of("duplicate-connection").filter { $0.details["case"] == "channels" }.count, 1)
    }

    func testOneNameBehindTwoPeerIDsAtOnce() {
        let ipad1 = PeerHint(peerID: 0x0000_0000_0000_1001, displayName: "iPad")
        let ipad2 = PeerHint(peerID: 0x0000_0000_0000_2002, displayName: "iPad")
        let s = Script()
        s.packet(.announced, 0, ipad1, .unknown)
        s.packet(.announced, 1, ipad2, .unknown)
        s.packet(.updated, 10, ipad1, .unknown)
        let f = s.findings().of("duplicate-connection")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peerID, PeerIdentity.idString(0x2002), "the newer ID")

        let restarted = Script()
        restarted.packet(.announced, 0, ipad1, .unknown)
        restarted.packet(.goodbye, 5, ipad1, .unknown)
        restarted.packet(.announced, 6, ipad2, .unknown)
        XCTAssertTrue(restarted.findings().of("duplicate-connection").isEmpty, "one after the other is a restart")
    }

    /// Many peer IDs behind one name (every copy of a group reuses its names): each newer ID is paired
    /// with the first older one, in order of first appearance, still seen when it appeared, as a scan
    /// from the oldest finds it (the detector searches a running maximum instead).
    func testOneNameBehindManyPeerIDsNamesTheFirstOlderStillSeen() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: UInt64) -> UInt64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (seed >> 33) % n
        }
        // Peer k appears at 10k s (distinct, increasing) and is last seen 0-40 s later: a newer one is
        // sometimes paired with its predecessor, sometimes with one much older, sometimes with none.
        var spans: [(id: UInt64, first: Double, last: Double)] = []
        for k in 0 ..< 60 {
            let first = Double(10 * k)
            let last = first + (next(4) == 0 ? Double(next(40)) + 15 : Double(next(9)))
            spans.append((0x1000 + UInt64(k), first, last))
        }
        let s = Script()
        var events: [(Double, EventKind, PeerHint)] = []
        for p in spans {
            let h = PeerHint(peerID: p.id, displayName: "iPad")
            events.append((p.first, .announced, h))
            if p.last > p.first { events.append((p.last, .updated, h)) }
        }
        for (t, kind, h) in events.sorted(by: { $0.0 < $1.0 }) { s.packet(kind, t, h, .unknown) }
        var expected: [String] = []
        for i in 1 ..< spans.count {
            if let older = spans[..<i].first(where: { $0.last >= spans[i].first }) {
                expected.append("\(PeerIdentity.idString(older.id)),\(PeerIdentity.idString(spans[i].id))")
            }
        }
        let got = s.findings().of("duplicate-connection").filter { $0.details["case"] == "name" }.compactMap { $0.details["peerIDs"] }
        XCTAssertGreaterThan(Set(expected.map { $0.prefix(13) }).count, 3, "pairs with several different older IDs")
        XCTAssertLessThan(expected.count, spans.count - 1, "some newer IDs overlap none")
        XCTAssertEqual(got.sorted(), expected.sorted())
    }

    func testNameConflictEvent() {
        let s = Script()
        s.packet(.nameConflict, 2, A, .unknown)
        XCTAssertEqual(s.findings().of("duplicate-connection").first?.peer, "Alice")
    }
}

final class ChannelErrorTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testDTLSAlertBlamesSender() {
        let s = Script()
        s.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsAlert, 0.2, B, A, attrs: ["level": "fatal", "description": "handshake_failure"])
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertEqual(f.first?.severity, .error)
    }

    func testResetOnInvitationChannelBeforeResponse() throws {
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        let flow = FlowKey(.tcp, Endpoint(a, 50001), Endpoint(b, 60000))
        let s = Script()
        s.packet(.invitationHello, 0, A, B, flow: flow)
        s.packet(.invite, 0.1, A, B, flow: flow)
        s.packet(.tcpReset, 0.2, B, A, flow: flow.reversed)
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertTrue(s.findings().of("handshake-timeout").isEmpty, "the reset is reported, not a timeout too")

        let after = Script()
        after.packet(.invitationHello, 0, A, B, flow: flow)
        after.packet(.invite, 0.1, A, B, flow: flow)
        after.packet(.inviteResponse, 0.2, B, A, attrs: ["accepted": "true"], flow: flow.reversed)
        after.packet(.tcpReset, 0.3, B, A, flow: flow.reversed)
        XCTAssertTrue(after.findings().of("channel-error").isEmpty)
    }

    func testChecksumAndDataBeforeSecureChannel() {
        let s = Script()
        s.packet(.checksumError, 0, A, B)
        s.packet(.dtlsHandshake, 1, A, B, attrs: ["message": "ClientHello"])
        s.log(.appChat, 1.5, B, A)
        s.packet(.dtlsHandshake, 1.6, B, A, attrs: ["message": "ServerHello"])
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 2)
        XCTAssertEqual(f.first { $0.details["case"] == "checksum" }?.peer, "Alice")
        XCTAssertEqual(f.first { $0.details["case"] == "data-before-secure" }?.peer, "Bob")

        let ok = Script()
        ok.packet(.dtlsHandshake, 1, A, B, attrs: ["message": "ClientHello"])
        ok.packet(.dtlsEstablished, 1.2, B, A)
        ok.packet(.dtlsApplicationData, 1.5, B, A)
        XCTAssertTrue(ok.findings().of("channel-error").isEmpty)
    }

    func testEncryptionMismatch() {
        let s = Script()
        s.packet(.invite, 0, A, B)
        s.packet(.inviteResponse, 0.1, B, A, attrs: ["accepted": "true", "encryption": "none"])
        s.packet(.inviteConnect, 0.2, A, B, attrs: ["encryption": "required"])
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")

        let same = Script()
        same.packet(.invite, 0, A, B)
        same.packet(.inviteResponse, 0.1, B, A, attrs: ["accepted": "true", "encryption": "required"])
        same.packet(.inviteConnect, 0.2, A, B, attrs: ["encryption": "optional"])
        XCTAssertTrue(same.findings().of("channel-error").isEmpty)
    }

    func testICMPUnreachableForSessionFlowOnly() throws {
        // As the ICMP plugin reports it: from = sender of the quoted packet, to = unreachable destination.
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        let s = Script()
        s.packet(.icmpUnreachable, 1, PeerHint(address: a), PeerHint(address: b),
                 attrs: ["summary": "port unreachable"], flow: FlowKey(.udp, Endpoint(a, 16402), Endpoint(b, 16401)))
        s.packet(.icmpUnreachable, 2, PeerHint(address: a), PeerHint(address: b),
                 attrs: ["summary": "port unreachable"], flow: FlowKey(.udp, Endpoint(a, 5000), Endpoint(b, 53)))
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 1, "the DNS flow is not a session flow")
        XCTAssertEqual(f.first?.severity, .error)
        XCTAssertEqual(f.first?.peer, "unknown peer at 192.0.2.2", "the unreachable side")

        // A known peer whose session is open: the dead app is at fault.
        let d = Script()
        d.connect(A, B, at: 0)
        d.packet(.icmpUnreachable, 3, A, B, attrs: ["summary": "port unreachable", "quoted": "udp 192.0.2.1:55000 > 192.0.2.2:55001"])
        XCTAssertEqual(d.findings().of("channel-error").first?.peer, "Bob")
    }

    func testSendErrorsAggregate() {
        let s = Script()
        for i in 0 ..< 3 { s.log(.sendError, Double(i), B, A) }
        let f = s.findings().of("channel-error")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.details["count"], "3")
        XCTAssertEqual(f.first?.evidence.count, 3)
    }
}

final class ReconnectAndDeclineTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func flapping(_ times: Int) -> Script {
        let s = Script()
        var t = 0.0
        for i in 0 ..< times {
            s.connect(A, B, at: t)
            s.log(.disconnected, t + 1, B, A)
            t += 2 + Double(i)  // back-off grows by a second each time
        }
        return s
    }

    func testReconnectStormWithDelays() throws {
        let s = flapping(6)  // 5 reconnects within 20 s
        let f = s.findings().of("reconnect-storm")
        XCTAssertEqual(f.count, 1)
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.details["count"], "5")
        XCTAssertEqual(x.peer, "Bob", "the peer the reconnects were aimed at")
        XCTAssertTrue(x.message.contains("delays: 1.000s, 2.000s, 3.000s, 4.000s, 5.000s"), x.message)
    }

    func testRefusedConnectionsCountAsAttempts() throws {
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        let s = Script()
        s.connect(A, B, at: 0)
        s.packet(.icmpUnreachable, 5, A, B, attrs: ["quoted": "udp 192.0.2.1:16402 > 192.0.2.2:16401"])
        var t = 6.0
        for d in [0.0, 1, 2, 3, 4] {
            t += d
            s.packet(.tcpRefused, t, B, A, flow: FlowKey(.tcp, Endpoint(b, 50000), Endpoint(a, 40000 + UInt16(d))))
        }
        let f = s.findings()
        let storm = try XCTUnwrap(f.of("reconnect-storm").first)
        XCTAssertEqual(storm.peer, "Bob")
        XCTAssertEqual(storm.details["count"], "5")
        XCTAssertTrue(storm.message.contains("delays: 1.000s, 1.000s, 2.000s, 3.000s, 4.000s"), storm.message)
        // The refusals follow the ICMP error: one channel-error, citing only the ICMP frame (the
        // refusals are the storm's evidence) and counting the follow-ups.
        let ce = f.of("channel-error")
        XCTAssertEqual(ce.count, 1)
        XCTAssertEqual(ce.first?.evidence.count, 1)
        XCTAssertEqual(ce.first?.details["followUpCount"], "5")
        XCTAssertEqual(s.timelines().sessions.first?.endReason, "peer unreachable (ICMP)")
    }

    func testFewReconnectsAreNotAStormUnlessConfigured() {
        let s = flapping(4)  // 3 reconnects: not more than 3
        XCTAssertTrue(s.findings().of("reconnect-storm").isEmpty)
        let strict = DetectorConfig(values: ["reconnect-storm.count": 2])
        XCTAssertEqual(s.findings(config: strict).of("reconnect-storm").count, 1)
        let narrow = DetectorConfig(values: ["reconnect-storm.count": 2, "reconnect-storm.window": 2])
        XCTAssertTrue(s.findings(config: narrow).of("reconnect-storm").isEmpty)
    }

    func testDeclinedInvitation() {
        let s = Script()
        s.packet(.invite, 0, A, B)
        s.packet(.inviteResponse, 0.5, B, A, attrs: ["accepted": "false"])
        let f = s.findings().of("declined-invitation")
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertEqual(s.timelines().sessions.first?.endReason, "declined")

        let ok = Script()
        ok.packet(.invite, 0, A, B)
        ok.packet(.inviteResponse, 0.5, B, A, attrs: ["accepted": "true"])
        XCTAssertTrue(ok.findings(end: 5).of("declined-invitation").isEmpty)
    }
}

final class DetectorConfigTests: XCTestCase {
    func testYAMLShapedDictionary() throws {
        let c = try DetectorConfig(dictionary: [
            "detectors": [
                "ignore": ["declined-invitation"],
                "thresholds": ["handshake-timeout.ice": "500ms", "keepalive-timeout": ["app": 8] as [String: Any]] as [String: Any],
                "reconnect-storm": ["count": 5, "enabled": false] as [String: Any],
            ] as [String: Any],
        ])
        XCTAssertEqual(c.values["handshake-timeout.ice"], 0.5)
        XCTAssertEqual(c.values["keepalive-timeout.app"], 8)
        XCTAssertEqual(c.values["reconnect-storm.count"], 5)
        XCTAssertFalse(c.isEnabled("declined-invitation"))
        XCTAssertFalse(c.isEnabled("reconnect-storm"))
        XCTAssertTrue(c.isEnabled("handshake-timeout"))
        XCTAssertEqual(c.value("keepalive-timeout.session"), 15, "defaults from the registry")
        XCTAssertEqual(c.value("handshake-timeout.invite"), 30)
    }

    func testYamsStyleMappingsAndAWholeFile() throws {
        let inner: [AnyHashable: Any] = ["app": 9]
        let c = try DetectorConfig(dictionary: ["detectors": ["thresholds": ["keepalive-timeout": inner] as [AnyHashable: Any]] as [AnyHashable: Any],
                                                "output": "ignored by the detectors"])
        XCTAssertEqual(c.values["keepalive-timeout.app"], 9)
    }

    func testTyposAreRejected() {
        XCTAssertThrowsError(try DetectorConfig(dictionary: ["thresholds": ["handshake-timeout.icee": 5]]))
        XCTAssertThrowsError(try DetectorConfig(dictionary: ["only": ["handshake-timeouts"]]))
        XCTAssertThrowsError(try DetectorConfig(dictionary: ["keepalive-timeout.app": "soon"]))
        XCTAssertEqual(DetectorConfig(values: ["nope.x": 1]).problems(), ["unknown threshold 'nope.x'"])
    }

    func testOnlyAndIgnoreSelectDetectors() {
        let s = Script()
        s.packet(.invite, 0, Script.alice, Script.bob)
        s.packet(.inviteResponse, 0.5, Script.bob, Script.alice, attrs: ["accepted": "false"])
        s.packet(.checksumError, 1, Script.alice, Script.bob)
        XCTAssertEqual(Set(s.findings().map(\.kind)), ["declined-invitation", "channel-error"])
        XCTAssertEqual(Set(s.findings(config: DetectorConfig(only: ["channel-error"])).map(\.kind)), ["channel-error"])
        XCTAssertEqual(Set(s.findings(config: DetectorConfig(ignore: ["channel-error"])).map(\.kind)), ["declined-invitation"])
    }

    func testEveryKindHasDefaultsFromTheSeeds() {
        XCTAssertEqual(DetectorSuite.kinds, ["handshake-timeout", "keepalive-timeout", "duplicate-connection",
                                             "channel-error", "reconnect-storm", "declined-invitation", "invitation-storm",
                                             "flapping"])
        XCTAssertEqual(DetectorSuite.threshold(named: "keepalive-timeout.interval")?.defaultValue, 2)
        XCTAssertEqual(DetectorSuite.threshold(named: "keepalive-timeout.app")?.defaultValue, 6)
        XCTAssertEqual(DetectorSuite.threshold(named: "handshake-timeout.app")?.defaultValue, 10)
        for t in DetectorSuite.thresholds {
            XCTAssertTrue(DetectorSuite.kinds.contains { t.name.hasPrefix($0 + ".") }, t.name)
        }
    }
}
