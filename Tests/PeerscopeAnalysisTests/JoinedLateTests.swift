import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// Sessions joined after their setup, participant/endpoint identity, send errors that close the
/// channel, and timers whose deadline falls in a stretch with no input.
final class JoinedLateTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    static let epA = Endpoint(IPAddress.v4(0xC000_020A), 16402)
    static let epB = Endpoint(IPAddress.v4(0xC000_0214), 16401)

    /// GCK names participants; STUN on the same endpoints names only addresses: one peer each.
    func testParticipantAndEndpointViewsAreOnePeer() throws {
        let s = Script()
        let pa = PeerHint(participantID: 0x1111_1111), pb = PeerHint(participantID: 0x2222_2222)
        let ha = PeerHint(endpoint: JoinedLateTests.epA), hb = PeerHint(endpoint: JoinedLateTests.epB)
        let ab = FlowKey(.udp, JoinedLateTests.epA, JoinedLateTests.epB)
        let ba = FlowKey(.udp, JoinedLateTests.epB, JoinedLateTests.epA)
        s.packet(.iceRequest, 0, ha, hb, flow: ab)
        s.packet(.iceSuccess, 0.01, hb, ha, flow: ba)
        s.repeating(.gckData, from: 0.5, to: 5, every: 0.5, pa, pb)
        // The GCK events carry their flow as the plugins give it.
        for i in s.events.indices where s.events[i].kind == .gckData { s.events[i].flow = ab }
        s.packet(.gckHeartbeat, 5, pb, pa, flow: ba)
        let t = s.timelines(end: 6)
        XCTAssertEqual(Set(t.peers.map(\.peer.ref)), [.participant(0x1111_1111), .participant(0x2222_2222)],
                       t.peers.map(\.peer.label).joined(separator: ", "))
        XCTAssertEqual(t.sessions.count, 1)
        XCTAssertEqual(t.peer(.participant(0x1111_1111))?.addresses, [JoinedLateTests.epA.address])
    }

    /// ICE checks then data, no handshake: the session was up before the input began.
    func testDataAfterOnlyICEChecksIsAnEstablishedSessionJoinedLate() throws {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceSuccess, 0.01, B, A)
        s.packet(.appChat, 0.5, A, B)
        s.repeating(.appKeepAlive, from: 1, to: 9, every: 2, A, B)
        s.repeating(.appKeepAlive, from: 1.5, to: 9, every: 2, B, A)
        let t = s.timelines(end: 9)
        let inst = try XCTUnwrap(t.sessions.first)
        XCTAssertTrue(inst.startedBeforeInput)
        XCTAssertEqual(inst.established, Script.at(0.5))
        XCTAssertEqual(s.findings(end: 9).filter { $0.severity > .info }.map(\.message), [])
        // With a handshake step seen, data before it is connected is still judged.
        let h = Script()
        h.packet(.iceRequest, 0, A, B)
        h.packet(.gckHello, 0.1, A, B)
        h.packet(.appChat, 0.5, A, B)
        XCTAssertTrue(h.findings(end: 2).contains { $0.details["case"] == "data-before-connected" })
    }

    func testSendErrorShowingTheChannelClosedIsAnError() throws {
        let s = Script()
        s.log(.sendError, 1, B, A, attrs: ["layer": "ssl", "sslError": "errSSLClosedAbort", "error": "Connection reset by peer"])
        s.log(.sendError, 1.1, B, A, attrs: ["layer": "udp", "packet": "Data"])
        let f = try XCTUnwrap(s.findings().of("channel-error").first)
        XCTAssertEqual(f.severity, .error)
        XCTAssertEqual(f.details["count"], "2")
        // The same errors without a sign of a closed channel stay warnings.
        let w = Script()
        w.log(.sendError, 1, B, A, attrs: ["layer": "udp", "code": "8000003D"])
        w.log(.sendError, 1.1, B, A, attrs: ["layer": "udp", "packet": "Data"])
        XCTAssertEqual(w.findings().of("channel-error").first?.severity, .warning)
        // Marking the channel invalid closes it.
        let m = Script()
        m.log(.sendError, 1, B, A, attrs: ["layer": "udp", "packet": "Data", "channelInvalid": "true"])
        XCTAssertEqual(m.findings().of("channel-error").first?.severity, .error)
    }

    func testSendErrorFollowedByTheSessionsEndIsAnError() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 6, every: 2, A, B)
        s.log(.sendError, 6, B, A, attrs: ["layer": "udp", "code": "8000003D"])
        s.log(.disconnected, 7, B, A)
        XCTAssertEqual(s.findings(end: 8).of("channel-error").first?.severity, .error)
    }

    /// A handshake timer whose deadline falls in a stretch with no input at all is not judged.
    func testHandshakeDeadlineInACaptureGapIsNotJudged() {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceSuccess, 900, B, A)   // the next capture, 15 minutes later
        XCTAssertEqual(s.findings(end: 901).of("handshake-timeout").map(\.message), [])
        let strict = DetectorConfig(values: ["keepalive-timeout.capture-gap": 0])
        XCTAssertFalse(s.findings(end: 901, config: strict).of("handshake-timeout").isEmpty)
        // Still unanswered at the end of a capture that kept running: judged.
        let g = Script()
        g.packet(.iceRequest, 0, A, B)
        g.repeating(.announced, from: 1, to: 900, every: 120, Script.carol, .unknown)
        XCTAssertTrue(g.findings(end: 900).of("handshake-timeout").contains { $0.severity == .error })
    }

    /// Address-only peers are judged only with MPC evidence (GCK, MPC ports on both ends, DTLS with
    /// the 0xD0 prefix, an MPC identity on either side).
    func testFindingsWithoutMPCEvidenceAreNotJudged() throws {
        let x = Endpoint(.v4(0xC000_020A), 50000), y = Endpoint(.v4(0xC000_0214), 3478)
        func silentDTLS(_ attrs: [String: String], ports: (UInt16, UInt16)? = nil) -> [Finding] {
            let s = Script()
            let a = ports.map { Endpoint(x.address, $0.0) } ?? x, b = ports.map { Endpoint(y.address, $0.1) } ?? y
            let ha = PeerHint(endpoint: a), hb = PeerHint(endpoint: b)
            s.packet(.dtlsHandshake, 0, ha, hb, attrs: attrs.merging(["message": "ClientHello"]) { $1 }, flow: FlowKey(.udp, a, b))
            return s.findings(end: 30).filter { $0.severity > .info }
        }
        XCTAssertEqual(silentDTLS([:]).map(\.message), [], "plain DTLS between ordinary hosts")
        XCTAssertFalse(silentDTLS(["mpcPrefix": "D0"]).isEmpty, "DTLS with MPC's prefix")
        XCTAssertFalse(silentDTLS([:], ports: (16402, 16401)).isEmpty, "MPC's ports on both ends")
        // A known peer: judged whatever the flow.
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        XCTAssertFalse(s.findings(end: 30).filter { $0.severity > .info }.isEmpty)
    }

    /// An ICMP error cites its own frame, not the refused reconnects that followed (they are the
    /// follow-up's evidence), and its session step is the reporter's, not the quoted packet's sender.
    func testICMPErrorEvidenceAndAttribution() throws {
        let a = try XCTUnwrap(IPAddress("192.0.2.12")), b = try XCTUnwrap(IPAddress("192.0.2.20"))
        let s = Script()
        s.facts.learn(peerID: try XCTUnwrap(A.peerID), endpoint: Endpoint(a, 16402))
        s.facts.learn(peerID: try XCTUnwrap(B.peerID), endpoint: Endpoint(b, 16401))
        s.connect(A, B, at: 0)
        let flow = FlowKey(.udp, Endpoint(a, 16402), Endpoint(b, 16401))
        s.packet(.gckData, 1.0, A, B, flow: flow)
        let quotedFrame = s.packet(.gckData, 1.9, A, B, flow: flow)
        s.packet(.gckData, 1.95, B, A, flow: FlowKey(.udp, Endpoint(b, 16401), Endpoint(a, 16402)))
        // The ICMP event's flow is the quoted packet's.
        let icmp = s.packet(.icmpUnreachable, 2, A, B, attrs: ["reporter": "192.0.2.20", "summary": "port unreachable"], flow: flow)
        var refused: [Evidence] = []
        for i in 0 ..< 3 { refused.append(s.packet(.tcpRefused, 3 + Double(i), B, A)) }
        let f = try XCTUnwrap(s.findings(end: 10).of("channel-error").first { $0.details["case"] == "icmp-unreachable" })
        XCTAssertEqual(f.evidence, [quotedFrame, icmp], "the ICMP frame and the latest packet of the flow it quotes")
        XCTAssertTrue(Set(f.evidence).isDisjoint(with: refused))
        XCTAssertEqual(f.details["followUpCount"], "3")
        let inst = try XCTUnwrap(s.timelines(end: 10).sessions.first)
        XCTAssertEqual(inst.milestone(.error)?.by, .id(try XCTUnwrap(B.peerID)), "Bob's host sent the ICMP")
    }

    /// The identity facts are events like the others: the detectors on a script's events alone (no
    /// timelines built beforehand) name the peers the facts tie the endpoints to, as the full run does.
    func testDetectorsOnEventsAloneUseTheIdentityFactsAmongThem() throws {
        let ea = Endpoint(try XCTUnwrap(IPAddress("192.0.2.12")), 16402), eb = Endpoint(try XCTUnwrap(IPAddress("192.0.2.20")), 16401)
        let s = Script()
        s.facts.learn(peerID: try XCTUnwrap(A.peerID), endpoint: ea)
        s.facts.learn(peerID: try XCTUnwrap(B.peerID), endpoint: eb)
        // The packets know only the endpoints.
        let ha = PeerHint(endpoint: ea), hb = PeerHint(endpoint: eb)
        s.connect(ha, hb, at: 0)
        s.packet(.appHandshake, 1, ha, hb)
        s.packet(.appHandshakeResponse, 1.1, hb, ha)
        s.repeating(.appKeepAlive, from: 2, to: 10, every: 2, ha, hb)
        s.repeating(.appKeepAlive, from: 2.5, to: 10, every: 2, hb, ha)
        let full = s.findings(end: 60)
        XCTAssertFalse(full.isEmpty)
        let alone = DetectorSuite.run(s.facts.events + s.events, timelines: .empty, end: Script.at(60))
        XCTAssertEqual(alone.map(\.message), full.map(\.message))
        XCTAssertEqual(alone.map(\.evidence), full.map(\.evidence))
        XCTAssertTrue(full.contains { $0.message.contains("Alice") || $0.message.contains("Bob") }, "\(full.map(\.message))")
        let withoutFacts = DetectorSuite.run(s.events, timelines: .empty, end: Script.at(60))
        XCTAssertNotEqual(withoutFacts.map(\.message), full.map(\.message))
    }
}
