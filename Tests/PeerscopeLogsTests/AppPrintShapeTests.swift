import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// Issue #11: app prints in the shapes real apps write them. Each line is read on its own (plain app
/// print, one per log) and must give the event and the peer; the shapes come from the issue and from
/// public sample apps (read, not copied; repository and file in each comment).
final class AppPrintShapeTests: XCTestCase {
    func events(_ line: String) throws -> [PeerEvent] {
        let text = "2024-03-03 10:00:00.000000+0000 App[1:2] \(line)"
        var o = LogOptions()
        o.collectUnknown = true
        return try LogAnalyzer.read(text: text, path: "app.log", options: o, directory: PeerDirectory()).events
    }

    func assertState(_ line: String, _ peer: String, _ state: String, file: StaticString = #filePath, lineNo: UInt = #line) throws {
        let e = try events(line)
        XCTAssertEqual(e.map(\.kind), [.stateChange], line, file: file, line: lineNo)
        XCTAssertEqual(e.first?.from.displayName, peer, line, file: file, line: lineNo)
        XCTAssertEqual(e.first?.attrs["to"], state, line, file: file, line: lineNo)
    }

    // The three lines of the issue.
    func testTheIssuesThreeLines() throws {
        try assertState("Peer [Bob's iPhone] changed state to Connected", "Bob's iPhone", "Connected")
        try assertState("session(_:peer:didChange:) Bob's iPhone -> notConnected", "Bob's iPhone", "Not Connected")
        let found = try events("Browser found Bob's iPhone")
        XCTAssertEqual(found.map(\.kind), [.found])
        XCTAssertEqual(found.first?.from.displayName, "Bob's iPhone")
    }

    func testStateChangeShapesFromPublicSampleApps() throws {
        // clarknt/100-days-of-swift 50-Project25/Project25/ViewController.swift (Hacking with Swift project 25):
        // print("Connected: \(peerID.displayName)"), print("Connecting: \(peerID.displayName)").
        try assertState("Connected: Bob's iPhone", "Bob's iPhone", "Connected")
        try assertState("Connecting: Bob's iPhone", "Bob's iPhone", "Connecting")
        // The same project as many copies extend it with the notConnected case.
        try assertState("Not Connected: Bob's iPhone", "Bob's iPhone", "Not Connected")
        // Hesham-Salama/MultipeerChat MultipeerChat/Services/Session.swift: "Peer ID \(displayName) connected" etc.
        try assertState("Peer ID Bob's iPhone connected", "Bob's iPhone", "Connected")
        try assertState("Peer ID Bob's iPhone disconnected", "Bob's iPhone", "Not Connected")
        try assertState("Peer ID Bob's iPhone is connecting", "Bob's iPhone", "Connecting")
        // aromal-sasidharan/MultipeerExample MultipeerExample/SessionManager.swift: NSLog of
        // "peer \(peerID) didChangeState: \(state.stringValue())" (MCPeerID's description, NotConnected).
        try assertState("peer <MCPeerID: 0x600003d3c1e0 DisplayName = Bob's iPhone> didChangeState: NotConnected", "Bob's iPhone", "Not Connected")
        // jngd/bonjour-service-example bonjour-service-example/ServiceSessionDelegate.swift:
        // "peerID \(peerID) state \(state)", the state as Swift prints an imported enum.
        try assertState("peerID <MCPeerID: 0x281f2c0a0 DisplayName = Bob's iPhone> state MCSessionState(rawValue: 2)", "Bob's iPhone", "Connected")
        // Several copies of a MultipeerService tutorial: "SESS peer peerId: \(peerID) didChange state: \(state)".
        try assertState("SESS peer peerId: <MCPeerID: 0x2830e8000 DisplayName = Bob's iPhone> didChange state: MCSessionState(rawValue: 0)", "Bob's iPhone", "Not Connected")
        // Raw values, quoted names, Swift's leading-dot case names.
        try assertState("\"Bob's iPhone\" changed state to 1", "Bob's iPhone", "Connecting")
        try assertState("peer Bob's iPhone didChange .connected", "Bob's iPhone", "Connected")
        try assertState("Session state changed: [Bob's iPhone] -> 2", "Bob's iPhone", "Connected")
        try assertState("Connected to Bob's iPhone", "Bob's iPhone", "Connected")
        try assertState("Disconnected from [Bob's iPhone].", "Bob's iPhone", "Not Connected")
        try assertState("MPC: peer 'Bob' state = not connected", "Bob", "Not Connected")
    }

    func testBrowserAndInvitationShapes() throws {
        // wvdk/Programming-Exercises MyFirstMultipeerConnection/.../ViewController.swift:
        // "Found peer with ID: \(peerID) and info: \(info)", "Lost peer with ID: \(peerID)".
        let found = try events("Found peer with ID: <MCPeerID: 0x600000c2c0a0 DisplayName = Bob's iPhone> and info: nil")
        XCTAssertEqual(found.map(\.kind), [.found])
        XCTAssertEqual(found.first?.from.displayName, "Bob's iPhone")
        let lost = try events("Lost peer with ID: <MCPeerID: 0x600000c2c0a0 DisplayName = Bob's iPhone>")
        XCTAssertEqual(lost.map(\.kind), [.lost])
        XCTAssertEqual(lost.first?.from.displayName, "Bob's iPhone")
        let invited = try events("Sent invitation to [Bob's iPhone]")
        XCTAssertEqual(invited.map(\.kind), [.logInviting])
        XCTAssertEqual(invited.first?.to.displayName, "Bob's iPhone")
        let declined = try events("Invitation from Bob's iPhone declined")
        XCTAssertEqual(declined.map(\.kind), [.connectionDecision])
        XCTAssertEqual(declined.first?.from.displayName, "Bob's iPhone")
    }

    func testLinesThatNameNoPeerOrNoSessionAreNotRead() throws {
        // Not MPC, or no peer: these stay unknown (and `--show-unknown` lists them).
        for line in ["Wi-Fi connected", "Connected to session", "Battery state: 2",
                     "Peer connected", "Upload connecting"] {
            XCTAssertEqual(try events(line).map(\.kind), [], line)
        }
    }

    func testAnAppsConsoleExcerptGivesItsConnectAndDisconnect() throws {
        // The shape of the excerpt in the issue: only "Inviting …" used to be understood.
        let text = """
        2024-03-03 10:00:00.000000+0000 App[1:2] Browser found Bob's iPhone
        2024-03-03 10:00:00.100000+0000 App[1:2] Inviting Bob's iPhone
        2024-03-03 10:00:01.200000+0000 App[1:2] Peer [Bob's iPhone] changed state to Connecting
        2024-03-03 10:00:02.300000+0000 App[1:2] Peer [Bob's iPhone] changed state to Connected
        2024-03-03 10:00:09.000000+0000 App[1:2] session(_:peer:didChange:) Bob's iPhone -> notConnected
        """
        let r = try LogAnalyzer.read(text: text, path: "app.log", options: LogOptions(), directory: PeerDirectory())
        XCTAssertEqual(r.unknownCounts, [:])
        XCTAssertEqual(r.events.map(\.kind), [.found, .logInviting, .stateChange, .stateChange, .stateChange])
        XCTAssertEqual(r.events.compactMap { $0.attrs["to"] }, ["Connecting", "Connected", "Not Connected"])
        XCTAssertEqual(Set(r.events.compactMap { $0.from.displayName ?? $0.to.displayName }), ["Bob's iPhone"])
    }
}
