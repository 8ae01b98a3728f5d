import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// Issue #11: session instances as MPC has them. A new invitation (another invitation channel or
/// invite ID) or a fresh ICE + GCK Hello starts a new instance; the older one ends `superseded` when
/// it goes quiet, and only traffic on both at once makes a duplicate.
final class SessionInstanceTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    struct Net {
        let a: IPAddress, b: IPAddress
        init() throws {
            a = try XCTUnwrap(IPAddress("192.0.2.1"))
            b = try XCTUnwrap(IPAddress("192.0.2.2"))
        }
        /// Alice's invitation channel number `n` (a new client port each time) to Bob's SRV port.
        func invitation(_ n: Int) -> FlowKey { FlowKey(.tcp, Endpoint(a, UInt16(50000 + n)), Endpoint(b, 60000)) }
        func udp(_ pa: UInt16, _ pb: UInt16) -> FlowKey { FlowKey(.udp, Endpoint(a, pa), Endpoint(b, pb)) }
    }

    /// One invitation and session on `udp` at `s`; heartbeats both ways until `until`.
    func session(_ s: Script, _ net: Net, n: Int, at t: Double, until: Double, udp: FlowKey) {
        s.packet(.invitationHello, t, A, B, flow: net.invitation(n))
        s.packet(.invite, t + 0.01, A, B, attrs: ["inviteID": "\(n)"], flow: net.invitation(n))
        s.packet(.inviteResponse, t + 0.02, B, A, attrs: ["accepted": "true", "inviteID": "\(n)"], flow: net.invitation(n).reversed)
        s.packet(.inviteConnect, t + 0.03, A, B, attrs: ["inviteID": "\(n)"], flow: net.invitation(n))
        s.packet(.tcpClosed, t + 0.04, B, A, flow: net.invitation(n).reversed)
        s.packet(.iceRequest, t + 0.1, A, B, flow: udp)
        s.packet(.iceSuccess, t + 0.11, B, A, flow: udp.reversed)
        s.packet(.gckHello, t + 0.12, A, B, flow: udp)
        s.packet(.gckHello, t + 0.13, B, A, flow: udp.reversed)
        var h = t + 0.5
        while h < until {
            s.packet(.gckHeartbeat, h, A, B, flow: udp)
            s.packet(.gckHeartbeat, h + 0.2, B, A, flow: udp.reversed)
            h += 1.0
        }
    }

    func testReinvitationsOnTheSamePortsSupersedeAndMakeAStormNotADuplicate() throws {
        let net = try Net()
        let s = Script()
        let udp = net.udp(16402, 16402)
        // Six sessions on the same UDP ports; each goes quiet, then a re-invitation after 0, 1, 2, 3, 4 s.
        var t = 0.0
        for n in 1 ... 6 {
            session(s, net, n: n, at: t, until: t + 2, udp: udp)
            t += 2 + Double(n - 1)
        }
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.map(\.number), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(tl.sessions.prefix(5).map(\.endReason), Array(repeating: "superseded", count: 5))
        XCTAssertTrue(tl.sessions.allSatisfy { $0.overlap == nil })
        XCTAssertEqual(tl.sessions[0].supersededBy, 2)
        XCTAssertEqual(tl.sessions[0].end, tl.sessions[1].start)
        XCTAssertNil(tl.sessions[5].end)

        let findings = DetectorSuite.run(timelines: tl)
        XCTAssertEqual(findings.filter { $0.kind == "duplicate-connection" }.map(\.message), [])
        let storm = try XCTUnwrap(findings.first { $0.kind == "reconnect-storm" })
        XCTAssertEqual(storm.peer, "Bob")
        XCTAssertEqual(storm.details["count"], "5")
        // The gaps are the quiet before each re-invitation (from Bob's last heartbeat): the back-off, growing.
        XCTAssertEqual(storm.details["delays"], "0.300s,1.300s,2.300s,3.300s,4.300s")
    }

    func testTrafficOnBothSessionsAtOnceIsADuplicateWithItsCase() throws {
        let net = try Net()
        let s = Script()
        // #1 on 16402, quiet after 3 s; #2 re-invited on the same ports at 4 s (superseding #1);
        // at 10 s Bob invites back while #2 runs: #3 on 16401 carries heartbeats beside #2.
        session(s, net, n: 1, at: 0, until: 3, udp: net.udp(16402, 16402))
        session(s, net, n: 2, at: 4, until: 20, udp: net.udp(16402, 16402))
        let back = FlowKey(.tcp, Endpoint(net.b, 51000), Endpoint(net.a, 61000))
        s.packet(.invitationHello, 10, B, A, flow: back)
        s.packet(.invite, 10.01, B, A, attrs: ["inviteID": "1"], flow: back)
        s.packet(.tcpClosed, 10.05, A, B, flow: back.reversed)
        let udp3 = net.udp(16401, 16401)
        s.packet(.iceRequest, 10.1, B, A, flow: udp3.reversed)
        s.packet(.iceSuccess, 10.11, A, B, flow: udp3)
        s.packet(.gckHello, 10.12, B, A, flow: udp3.reversed)
        s.packet(.gckHello, 10.13, A, B, flow: udp3)
        s.repeating(.gckHeartbeat, from: 10.5, to: 20, every: 1, B, A)
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.map(\.number), [1, 2, 3])
        XCTAssertEqual(tl.sessions[0].endReason, "superseded")
        XCTAssertEqual(tl.sessions[1].supersededBy, 3)
        XCTAssertNil(tl.sessions[1].end, "#2 went on carrying traffic: not superseded")
        // #2's first heartbeat more than the grace period after #3 began.
        XCTAssertEqual(tl.sessions[1].overlap?.t, Script.at(11.5))

        let dups = DetectorSuite.run(timelines: tl).filter { $0.kind == "duplicate-connection" }
        XCTAssertEqual(dups.count, 1, "\(dups.map(\.message))")
        XCTAssertEqual(dups.first?.details["case"], "overlap-traffic")
        XCTAssertEqual(dups.first?.peer, "Bob")
        XCTAssertEqual(dups.first?.t, Script.at(10))
    }

    func testStragglersWithinTheGraceDoNotKeepTheOldSessionAlive() throws {
        let net = try Net()
        let s = Script()
        session(s, net, n: 1, at: 0, until: 3, udp: net.udp(16402, 16402))
        // #2 on other ports; one of #1's packets arrives 0.5 s after #2's first.
        session(s, net, n: 2, at: 4, until: 9, udp: net.udp(16401, 16401))
        s.packet(.gckHeartbeat, 4.5, B, A, flow: net.udp(16402, 16402).reversed)
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.map(\.endReason), ["superseded", nil])
        XCTAssertEqual(DetectorSuite.run(timelines: tl).filter { $0.kind == "duplicate-connection" }.count, 0)
    }

    func testARepeatedInviteOnTheSameChannelIsTheSameInstance() throws {
        let net = try Net()
        let s = Script()
        session(s, net, n: 1, at: 0, until: 5, udp: net.udp(16402, 16402))
        // The same invitation channel and invite ID again (a retransmission seen twice): no new instance.
        s.packet(.invite, 5.5, A, B, attrs: ["inviteID": "1"], flow: net.invitation(1))
        XCTAssertEqual(s.timelines().sessions.count, 1)
    }
}

/// Issue #11: patterns only logs show.
final class LogPatternDetectorTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testRepeatedFoundsWithinASecondAreAnInvitationStorm() throws {
        let s = Script()
        // After background -> foreground the app restarts its browser four times in 0.8 s.
        for dt in [0.0, 0.2, 0.5, 0.8] {
            s.log(.found, 10 + dt, B)
            s.log("log.inviting", 10 + dt + 0.01, .unknown, B)
        }
        let f = s.findings().filter { $0.kind == "invitation-storm" }
        XCTAssertEqual(f.count, 2, "\(f.map(\.message))")   // found x4 and invited x4, each its own finding
        XCTAssertEqual(Set(f.map(\.peer)), ["Bob"])
        XCTAssertEqual(Set(f.compactMap { $0.details["count"] }), ["4"])
        XCTAssertEqual(f.first?.t, Script.at(10))

        // Three founds spread over three seconds are browsing, not a storm.
        let calm = Script()
        for dt in [0.0, 1.5, 3.0] { calm.log(.found, 10 + dt, B) }
        XCTAssertTrue(calm.findings().filter { $0.kind == "invitation-storm" }.isEmpty)
    }

    func testConnectedThenNotConnectedRepeatedlyIsFlapping() throws {
        let s = Script()
        for k in 0 ..< 4 {
            s.log(.stateChange, Double(k) * 20, B, attrs: ["to": "Connected"])
            s.log(.stateChange, Double(k) * 20 + 4, B, attrs: ["to": "Not Connected"])
        }
        let f = s.findings().filter { $0.kind == "flapping" }
        XCTAssertEqual(f.count, 1, "\(f.map(\.message))")
        XCTAssertEqual(f.first?.peer, "Bob")
        XCTAssertEqual(f.first?.details["count"], "4")
        XCTAssertEqual(f.first?.details["held"], "4.000s,4.000s,4.000s,4.000s")

        // Sessions that hold for a minute before dropping do not flap.
        let steady = Script()
        for k in 0 ..< 4 {
            steady.log(.stateChange, Double(k) * 80, B, attrs: ["to": "Connected"])
            steady.log(.stateChange, Double(k) * 80 + 60, B, attrs: ["to": "Not Connected"])
        }
        XCTAssertTrue(steady.findings().filter { $0.kind == "flapping" }.isEmpty)
    }
}

/// Issue #11: a session's plane from its packets: plaintext, DTLS, or DTLS that fell back to plaintext.
final class SessionPlaneScriptTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testDTLSThroughoutIsDTLS() {
        let s = Script()
        s.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsHandshake, 0.1, B, A, attrs: ["message": "ServerHello"])
        s.packet(.dtlsChangeCipherSpec, 0.2, A, B)
        s.packet(.dtlsChangeCipherSpec, 0.3, B, A)
        s.repeating(.dtlsApplicationData, from: 1, to: 5, every: 1, A, B)
        XCTAssertEqual(s.timelines().sessions.first?.plane, .dtls)
    }

    func testDTLSThenPlaintextGCKFromBothIsAFallback() {
        let s = Script()
        s.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsHandshake, 1, B, A, attrs: ["message": "ClientHello"])
        s.connect(A, B, at: 12)   // ICE and plaintext GCK Hellos both ways after the DTLS attempt
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.last?.plane, .dtlsFellBackToPlaintext)
        XCTAssertTrue(DetectorSuite.run(timelines: tl).filter { $0.details["case"] == "encryption" }.isEmpty)
    }

    func testLogOnlySessionsHaveNoPlane() {
        let s = Script()
        s.log(.stateChange, 0, B, A, attrs: ["to": "Connecting"])
        s.log(.stateChange, 1, B, A, attrs: ["to": "Connected"])
        XCTAssertNil(s.timelines().sessions.first?.plane)
    }
}

/// Issue #11: a configuration error names its fix.
final class ConfigurationFindingTests: XCTestCase {
    func testPermissionErrorNamesTheInfoPlistKeysForTheServiceSeen() {
        let s = Script()
        s.packet(.browse, 0, Script.alice, .unknown, attrs: ["service": "_chat-app._tcp.local"])
        s.log(.permissionError, 1, .unknown, attrs: ["code": "-72008", "permission": "local-network"])
        let f = s.findings().filter { $0.details["case"] == "permission" }
        XCTAssertEqual(f.count, 1)
        XCTAssertEqual(f.first?.details["fix"],
                       "Info.plist needs NSLocalNetworkUsageDescription and NSBonjourServices listing both _chat-app._tcp and _chat-app._udp")
        XCTAssertTrue(f.first?.message.contains("(-72008)") ?? false)
    }
}
