import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

final class UserPatternTests: XCTestCase {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-patterns-\(getpid())-\(UUID().uuidString)")

    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func write(_ name: String, _ text: String) throws -> String {
        let p = dir.appendingPathComponent(name).path
        try text.write(toFile: p, atomically: true, encoding: .utf8)
        return p
    }

    static let yaml = """
    patterns:
      - id: lobby-timeout
        regex: 'Lobby gave up on (?<displayName>[^ ]+) after (?<seconds>\\d+)s'
        kind: app.timeout
        attrs:
          what: lobby
          note: "waited ${seconds}s"
      - id: relay
        regex: 'relay (?<participant>[0-9A-F]{8}) dropped on ch(?<channel>\\d+)'
        kind: lobby.relay_dropped
        summary: the relay dropped a participant
      - id: broken
        regex: 'unclosed (group'
        kind: app.other
    """

    func testTwoPatternsAndOneBadRegexReportedWithFileAndEntry() throws {
        let path = try write("patterns.yaml", Self.yaml)
        let log = """
        2024-03-03 10:00:00.000000+0000 App[1:2] Lobby gave up on Zoe after 12s
        2024-03-03 10:00:01.000000+0000 App[1:2] relay 2308149F dropped on ch0
        2024-03-03 10:00:01.010000+0000 App[1:2] relay 2308149F dropped on ch1
        2024-03-03 10:00:02.000000+0000 App[1:2] [GCKSession] Disconnecting participant [2308149F].
        """
        var o = LogOptions()
        o.patternsFile = path
        let r = try LogAnalyzer.read(text: log, options: o, directory: PeerDirectory())
        XCTAssertEqual(r.events.map(\.kind), [.appTimeout, EventKind("lobby.relay_dropped"), .disconnected])
        XCTAssertEqual(r.events[0].source, "log-user-lobby-timeout")
        XCTAssertEqual(r.events[0].from.displayName, "Zoe")
        XCTAssertEqual(r.events[0].attrs, ["what": "lobby", "note": "waited 12s", "seconds": "12"])
        XCTAssertEqual(r.events[1].from.participantID, 0x2308_149F)
        XCTAssertEqual(r.events[1].attrs["channel"], "0,1")
        let bad = r.problems.filter { $0.id == "log.patterns.invalid" }
        XCTAssertEqual(bad.count, 1)
        XCTAssertTrue(bad[0].message.contains(path), bad[0].message)
        XCTAssertTrue(bad[0].message.contains("entry 3 (broken)"), bad[0].message)
        XCTAssertEqual(bad[0].severity, .error)
        // The listing includes the user's plugins with their summary.
        let (engine, _) = try LogEngine.standard(patternsFile: path)
        XCTAssertEqual(engine.plugins.prefix(2).map(\.descriptor.summary).last, "the relay dropped a participant")
    }

    func testFileLevelErrorsNameTheFile() throws {
        var o = LogOptions()
        o.patternsFile = dir.appendingPathComponent("missing.yaml").path
        XCTAssertThrowsError(try LogAnalyzer.read(text: "x", options: o, directory: PeerDirectory())) { e in
            XCTAssertTrue("\(e)".contains("missing.yaml"), "\(e)")
        }
        o.patternsFile = try write("bad.yaml", "patterns: [unclosed")
        XCTAssertThrowsError(try LogAnalyzer.read(text: "x", options: o, directory: PeerDirectory())) { e in
            XCTAssertTrue("\(e)".contains("bad.yaml"), "\(e)")
        }
        o.patternsFile = try write("scalar.yaml", "just a string")
        XCTAssertThrowsError(try LogAnalyzer.read(text: "x", options: o, directory: PeerDirectory()))
    }

    func testEntryErrors() throws {
        let (plugins, problems) = try UserPatternPlugin.parse(yaml: """
        - regex: 'a(?<x>b)c'
          kind: app.other
        - kind: app.other
        - regex: 'abc'
          kind: 'not a kind!'
        - id: dup
          regex: 'x'
          kind: a.b
        - id: dup
          regex: 'y'
          kind: a.b
        - 42
        """, file: "p.yaml")
        XCTAssertEqual(plugins.map(\.id), ["log-user-1", "log-user-dup"])
        XCTAssertEqual(problems.count, 4)
        XCTAssertTrue(problems.allSatisfy { $0.message.hasPrefix("p.yaml: entry ") })
        XCTAssertTrue(problems[0].message.contains("entry 2"))
        XCTAssertTrue(problems[2].message.contains("duplicate"))
    }

    func testDerivedNeedles() {
        XCTAssertEqual(UserPatternPlugin.derivedNeedle("Lobby gave up on (?<n>.+) after"), "Lobby gave up on ")
        XCTAssertEqual(UserPatternPlugin.derivedNeedle(#"relay \[(?<p>\w+)\] dropped"#), "] dropped")
        XCTAssertNil(UserPatternPlugin.derivedNeedle("foo|bar"))
        XCTAssertNil(UserPatternPlugin.derivedNeedle("(?i)hello world"))
        XCTAssertEqual(UserPatternPlugin.derivedNeedle("colou?r timeout"), "r timeout")
        // A pattern whose needle is derived still matches only lines containing it.
        let (plugins, _) = (try? UserPatternPlugin.parse(yaml: "- regex: 'abc(?<displayName>\\w+)'\n  kind: app.other", file: "f")) ?? ([], [])
        XCTAssertEqual(plugins.first?.rules.first.map { String(decoding: $0.needle, as: UTF8.self) }, "abc")
    }
}
