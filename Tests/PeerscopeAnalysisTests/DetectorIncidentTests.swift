import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// One duplicate-connection incident gives one finding; its flows are written client > server.
final class DuplicateIncidentTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testCrossingInvitationsOverTwoChannelsAreOneFinding() throws {
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        let aToB = FlowKey(.tcp, Endpoint(a, 50001), Endpoint(b, 60000))   // Alice dials Bob's SRV port
        let bToA = FlowKey(.tcp, Endpoint(b, 50002), Endpoint(a, 60001))   // Bob dials Alice's SRV port
        let s = Script()
        s.packet(.invitationHello, 1.0, A, B, flow: aToB)
        s.packet(.invite, 1.01, A, B, flow: aToB)
        s.packet(.invitationHello, 1.04, B, A, flow: bToA)
        s.packet(.invite, 1.05, B, A, flow: bToA)
        let f = s.findings(end: 5).of("duplicate-connection")
        XCTAssertEqual(f.count, 1, f.map(\.message).joined(separator: "\n"))
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob", "the second inviter")
        XCTAssertEqual(x.t, Script.at(1.04), "the first observation of the incident")
        let cases = Set((x.details["cases"] ?? "").split(separator: ",").map(String.init))
        XCTAssertEqual(cases, ["channels", "crossing-invitations"])
        XCTAssertEqual(x.details["observations"], "2")
        XCTAssertEqual(x.evidence.count, 4, "both channels' hellos and both invites")
        XCTAssertTrue(x.message.contains("also: Alice and Bob invited each other"), x.message)
        // Direction kept: Bob's channel is Bob's port > Alice's advertised port, not the canonical order.
        XCTAssertTrue(x.message.contains("\(bToA)"), x.message)
        XCTAssertFalse(x.message.contains("\(bToA.reversed)"), x.message)
        XCTAssertTrue(x.message.contains("\(aToB)"), x.message)
    }

    func testAnOpenedConnectionReportedFromTheServerSideIsWrittenClientFirst() throws {
        let a = try XCTUnwrap(IPAddress("192.0.2.1")), b = try XCTUnwrap(IPAddress("192.0.2.2"))
        let aToB = FlowKey(.tcp, Endpoint(a, 50001), Endpoint(b, 60000))
        let bToA = FlowKey(.tcp, Endpoint(b, 50002), Endpoint(a, 60001))
        let s = Script()
        s.packet(.tcpOpened, 1.0, A, B, attrs: ["invitation": "srv", "client": "\(aToB.src)", "server": "\(aToB.dst)"], flow: aToB)
        // The event's flow is the segment's direction (server to client here); the attrs say who dialled.
        s.packet(.tcpOpened, 1.2, B, A, attrs: ["invitation": "srv", "client": "\(bToA.src)", "server": "\(bToA.dst)"], flow: bToA.reversed)
        let x = try XCTUnwrap(s.findings(end: 5).of("duplicate-connection").first)
        XCTAssertTrue(x.message.contains("\(bToA)"), x.message)
    }

    /// Observations about two pairs, interleaved in time: each joins its own pair's incident, never the
    /// other pair's that came between (the incidents are looked up by pair).
    func testInterleavedIncidentsOfTwoPairsJoinTheirOwnPair() {
        let C = Script.carol
        let s = Script()
        s.packet(.invite, 1.0, A, B)
        s.packet(.invite, 1.02, A, C)
        s.packet(.invite, 1.05, B, A)   // A and B cross
        s.packet(.invite, 1.07, C, A)   // A and C cross
        s.packet(.invite, 1.1, A, B)    // A and B again: the same incident
        let f = s.findings(end: 5).of("duplicate-connection")
        XCTAssertEqual(f.map(\.t), [Script.at(1.05), Script.at(1.07)], f.map(\.message).joined(separator: "\n"))
        XCTAssertEqual(f.map { $0.details["observations"] }, ["2", nil])
        XCTAssertTrue(f.first?.message.contains("Bob") == true && f.first?.message.contains("Carol") == false, f.first?.message ?? "")
        XCTAssertTrue(f.last?.message.contains("Carol") == true && f.last?.message.contains("Bob") == false, f.last?.message ?? "")
    }

    func testIncidentsFurtherApartThanTheWindowStaySeparate() {
        let s = Script()
        s.packet(.invite, 1.0, A, B)
        s.packet(.invite, 1.1, B, A)
        s.packet(.inviteResponse, 1.2, B, A, attrs: ["accepted": "true"])
        s.packet(.inviteResponse, 1.3, A, B, attrs: ["accepted": "true"])
        s.packet(.invite, 50.0, A, B)
        s.packet(.invite, 50.1, B, A)
        let f = s.findings(end: 55).of("duplicate-connection")
        XCTAssertEqual(f.map(\.t), [Script.at(1.1), Script.at(50.1)], f.map(\.message).joined(separator: "\n"))
        XCTAssertTrue(f.allSatisfy { $0.details["observations"] == nil }, "nothing folded across 49 s")
    }
}
