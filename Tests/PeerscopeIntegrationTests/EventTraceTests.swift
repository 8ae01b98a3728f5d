import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeReports

/// Issue 14: events are the whole interface after decoding. `decode --events` writes them (with the
/// identity facts) and `analyze --events` gives the report analysing the inputs gives.
final class EventTraceTests: XCTestCase {
    /// The trace of `captures` + `logs` written as JSON Lines and read back.
    static func roundTrip(captures: [String], logs: [String], payloads: Bool = false) throws -> (direct: Report, replayed: Report, text: String) {
        let direct = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: captures, logs: logs)).report
        let s = AnalysisSession()
        s.addCaptures(captures)
        s.addLogs(logs)
        var text = ""
        try s.decode().trace.write(payloads: payloads) { text += $0.jsonText + "\n" }
        let trace = try EventTrace.read(Array(text.utf8), path: "trace.events.jsonl")
        return (direct, AnalysisSession.report(trace), text)
    }

    func testEverySampleReplaysToTheSameFindingsTimelinesAndSessions() throws {
        var checked = 0, withFindings = 0
        for g in try EventCatalogueTests.inputGroups() where g.captures.first?.contains("/Samples/") ?? false {
            let (direct, replayed, _) = try Self.roundTrip(captures: g.captures, logs: g.logs)
            let name = g.captures[0]
            XCTAssertEqual(replayed.findings.map(\.message), direct.findings.map(\.message), name)
            XCTAssertEqual(replayed.findings.map(\.evidence), direct.findings.map(\.evidence), name)
            XCTAssertEqual(replayed.timelines.peers.map(\.entries), direct.timelines.peers.map(\.entries), name)
            XCTAssertEqual(replayed.timelines.sessions.map(\.history), direct.timelines.sessions.map(\.history), name)
            // The whole report, discovery and stats included.
            XCTAssertEqual(JSONReportWriter.render(replayed), JSONReportWriter.render(direct), name)
            XCTAssertEqual(TextReportWriter.render(replayed), TextReportWriter.render(direct), name)
            if !direct.findings.isEmpty { withFindings += 1 }
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 14, "every sample")
        XCTAssertGreaterThanOrEqual(withFindings, 10, "the comparison covers findings")
    }

    func testEveryCorpusCaptureReplaysToTheSameReport() throws {
        _ = try Place.requireShared()
        var checked = 0
        for g in try EventCatalogueTests.inputGroups() where g.captures.first?.contains("/corpus/") ?? false {
            let (direct, replayed, _) = try Self.roundTrip(captures: g.captures, logs: g.logs)
            XCTAssertEqual(JSONReportWriter.render(replayed), JSONReportWriter.render(direct), g.captures[0])
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20)
    }

    func testTheTraceCarriesNoMessageContentsUnlessAsked() throws {
        // A sample with chat messages: their text travels only with --show-payloads.
        let name = "keepalive-timeout"
        let capture = Place.samples.appendingPathComponent("\(name).pcapng").path
        var withPayloads = EngineOptions()
        withPayloads.decode.showPayloads = true
        let s = AnalysisSession(AnalysisSession.Configuration(engine: withPayloads))
        s.addCaptures([capture])
        let trace = try s.decode().trace
        let chats = trace.events.filter { $0.kind == .appChat }
        XCTAssertFalse(chats.isEmpty)
        XCTAssertTrue(chats.allSatisfy { $0[.content] != nil }, "decoded with payloads, the events carry the text")
        var shared = "", full = ""
        trace.write(payloads: false) { shared += $0.jsonText + "\n" }
        trace.write(payloads: true) { full += $0.jsonText + "\n" }
        XCTAssertFalse(shared.contains("\"content\""))
        XCTAssertTrue(full.contains("\"content\""))
        let replayed = try EventTrace.read(Array(shared.utf8), path: "t")
        XCTAssertTrue(replayed.events.filter { $0.kind == .appChat }.allSatisfy { $0[.content] == nil })
    }

    func testABadTraceLineIsNamed() throws {
        let (_, _, text) = try Self.roundTrip(captures: [Place.samples.appendingPathComponent("healthy-pair.pcapng").path], logs: [])
        var lines = text.split(separator: "\n").map(String.init)
        lines[2] = "{\"event\": {\"kind\": \"gck.hello\"}}"
        XCTAssertThrowsError(try EventTrace.read(Array(lines.joined(separator: "\n").utf8), path: "t.jsonl")) { e in
            XCTAssertEqual("\(e)", "t.jsonl:3: malformed event")
        }
        XCTAssertThrowsError(try EventTrace.read(Array("{\"x\":1}\n".utf8), path: "t.jsonl")) { e in
            XCTAssertTrue("\(e)".hasPrefix("t.jsonl:1: not a peerscope event trace"))
        }
    }

    func testCLIDecodeEventsThenAnalyzeEvents() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("trace.events.jsonl").path
        let logs = try FileManager.default.contentsOfDirectory(atPath: Place.samples.appendingPathComponent("logs/duplicate-connection").path)
            .sorted().map { "Samples/logs/duplicate-connection/\($0)" }
        let decode = try CLI.run(["decode", "--events", "Samples/duplicate-connection.pcapng"] + logs + ["-o", trace])
        XCTAssertEqual(decode.status, 0, decode.stderr)
        let replayed = try CLI.run(["analyze", "--format", "json", "--events", trace])
        let direct = try CLI.run(["analyze", "--format", "json", "Samples/duplicate-connection.pcapng"] + logs)
        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        XCTAssertEqual(replayed.stdout, direct.stdout)
        XCTAssertTrue(direct.stdout.contains("duplicate-connection"))
        let mixed = try CLI.run(["analyze", "--events", trace, "Samples/duplicate-connection.pcapng"])
        XCTAssertEqual(mixed.status, 2, "a trace is analysed alone")
    }
}
