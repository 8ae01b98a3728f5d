import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// Issue #11: app prints in the shapes real apps write them. Each line is read on its own (plain app
/// print, one per log) and must give the event and the peer; the shapes come from the issue and from
/// public sample apps (read, not copied; repository and file in each comment).
final class AppPrintShapeTests: XCTestCase {
    func events(_ line: String, known: [String] = []) throws -> [PeerEvent] {
        let text = "2024-03-03 10:00:00.000000+0000 App[1:2] \(line)"
        var o = LogOptions()
        o.collectUnknown = true
        let dir = PeerDirectory()
        for (i, n) in known.enumerated() { dir.learn(peerID: UInt64(0x1000 + i), displayName: n) }
        return try LogAnalyzer.read(text: text, path: "app.log", options: o, directory: dir).events
    }

    func assertState(_ line: String, _ peer: String, _ state: String, known: [String] = [], file: StaticString = #filePath,
                     lineNo: UInt = #line) throws {
        let e = try events(line, known: known)
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
        try assertState("Connected: Bob's iPhone", "Bob's iPhone", "Connected", known: ["Bob's iPhone"])
        try assertState("Connecting: Bob's iPhone", "Bob's iPhone", "Connecting", known: ["Bob's iPhone"])
        // A bare name after the state is read only when known (the capture or another line named it).
        XCTAssertEqual(try events("Connected: Bob's iPhone"), [])
        XCTAssertEqual(try events("Connected to Bob's iPhone"), [])
        // The same project as many copies extend it with the notConnected case.
        try assertState("Not Connected: Bob's iPhone", "Bob's iPhone", "Not Connected", known: ["Bob's iPhone"])
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
        try assertState("Connected to Bob's iPhone", "Bob's iPhone", "Connected", known: ["Bob's iPhone"])
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

    // MARK: known names anchor bare-name prints

    func read(_ messages: [String], known: [String] = []) throws -> LogReadResult {
        let text = messages.enumerated().map { i, m in "2024-03-03 10:0\(i):00.000000+0000 App[1:2] \(m)" }.joined(separator: "\n")
        let dir = PeerDirectory()
        for (i, n) in known.enumerated() { dir.learn(peerID: UInt64(0x1000 + i), displayName: n) }
        var o = LogOptions()
        o.collectUnknown = true
        return try LogAnalyzer.read(text: text, path: "app.log", options: o, directory: dir)
    }

    func testABareNameTheCaptureKnowsIsRead() throws {
        let r = try read(["Bob's iPhone connected", "Connected: Bob's iPhone", "Alice's iPad is now notConnected",
                          "Bob's iPhone -> 1", "Disconnected from Alice's iPad", "Bob's iPhone: MCSessionState(rawValue: 0)",
                          "Alice's iPad found", "Lost: Alice's iPad"],
                         known: ["Bob's iPhone", "Alice's iPad"])
        XCTAssertEqual(r.unknownLines.map(\.text), [])
        XCTAssertEqual(r.events.map(\.kind), [.stateChange, .stateChange, .stateChange, .stateChange, .stateChange, .stateChange, .found, .lost])
        XCTAssertEqual(r.events.map { $0.from.displayName }, ["Bob's iPhone", "Bob's iPhone", "Alice's iPad", "Bob's iPhone", "Alice's iPad",
                                                             "Bob's iPhone", "Alice's iPad", "Alice's iPad"])
        XCTAssertEqual(r.events.compactMap { $0.attrs["to"] }, ["Connected", "Connected", "Not Connected", "Connecting", "Not Connected", "Not Connected"])
        XCTAssertEqual(r.recognized["log-app-state-shapes"], 6)
    }

    func testABareNameNobodyKnowsStaysUnknownAndIsListed() throws {
        let lines = ["Bob's iPhone connected", "Connected: Bob's iPhone", "Alice's iPad is now notConnected"]
        let r = try read(lines, known: ["Carol's Mac"])
        XCTAssertEqual(r.events, [])
        XCTAssertEqual(r.unknownLines.map(\.text).map { $0.hasSuffix(lines[0]) || $0.hasSuffix(lines[1]) || $0.hasSuffix(lines[2]) }, [true, true, true])
        XCTAssertEqual(r.unknownCounts.values.reduce(0, +), 3)
    }

    func testAKnownNameAnchorsOnlyWholeAndOnlyAStateChange() throws {
        // `Bob` known: `Bob's Wi-Fi connected` is about something else, and so is a line saying more.
        let r = try read(["Bob's Wi-Fi connected", "Bob uploaded 3 photos and connected", "Bob 2", "2 Bob", "Bobby connected"],
                         known: ["Bob"])
        XCTAssertEqual(r.events, [])
        XCTAssertEqual(r.unknownLines.count, 5)
    }

    func testANameALaterLineTeachesAnchorsAnEarlierLine() throws {
        // The bare line comes first; `Browser found Bob's iPhone` names the peer later: the input is read
        // again with the name, so the order of the lines does not matter.
        let r = try read(["Bob's iPhone connected", "Browser found Bob's iPhone", "Bob's iPhone is now notConnected", "Dave's iPad connected"])
        XCTAssertEqual(r.events.map(\.kind), [.stateChange, .found, .stateChange])
        XCTAssertEqual(r.events.map { $0.from.displayName }, ["Bob's iPhone", "Bob's iPhone", "Bob's iPhone"])
        XCTAssertEqual(r.unknownLines.map { $0.line }, [4])
    }

    func testNamesFromAnEarlierLogAnchorALaterLog() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("anchor-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a.log"), b = dir.appendingPathComponent("b.log")
        try "2024-03-03 10:00:00.000000+0000 App[1:2] Browser found Bob's iPhone\n".write(to: a, atomically: true, encoding: .utf8)
        try "2024-03-03 10:00:01.000000+0000 App[3:4] Bob's iPhone connected\n".write(to: b, atomically: true, encoding: .utf8)
        let r = try LogAnalyzer.read(paths: [a.path, b.path], options: LogOptions(), directory: PeerDirectory())
        XCTAssertEqual(r.events.map(\.kind), [.found, .stateChange])
        XCTAssertEqual(r.events.last?.evidence, .logLine(input: 1, line: 1))
        XCTAssertEqual(r.events.last?.attrs["to"], "Connected")
    }
}
