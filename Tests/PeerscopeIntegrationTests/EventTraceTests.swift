import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import PeerscopeTimeline

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

    /// Identity facts travel as events: a version 2 trace has no `identity` lines, and its
    /// `identity.*` events carry what the reports need.
    func testIdentityFactsAreEventsInTheTrace() throws {
        let (direct, replayed, text) = try Self.roundTrip(captures: [Place.samples.appendingPathComponent("identity-collision.pcapng").path],
                                                          logs: [])
        let lines = text.split(separator: "\n")
        XCTAssertTrue(lines.first?.contains("\"schema\":\"peerscope.events/2\"") ?? false)
        XCTAssertFalse(lines.contains { $0.hasPrefix("{\"identity\"") })
        XCTAssertTrue(text.contains("\"kind\":\"identity.learned\""))
        XCTAssertTrue(text.contains("\"kind\":\"identity.advertised\""))
        XCTAssertEqual(JSONReportWriter.render(replayed), JSONReportWriter.render(direct))
        // Without them the same events give another report (the facts are not decoration).
        var trace = try EventTrace.read(Array(text.utf8), path: "t")
        trace.events.removeAll { $0.kind.isIn("identity") }
        XCTAssertNotEqual(TextReportWriter.render(AnalysisSession.report(trace)), TextReportWriter.render(direct))
    }

    /// Folding the `identity.*` events gives what the decoders' directory knew at the end, on every
    /// sample and corpus capture, with the logs: names, addresses, endpoints and advertisement times.
    func testFoldedFactsAreWhatTheDecodersDirectoryKnew() throws {
        var checked = 0, peers = 0
        for g in try EventCatalogueTests.inputGroups() {
            let s = AnalysisSession()
            s.addCaptures(g.captures)
            s.addLogs(g.logs)
            let decoded = try s.decode()
            let folded = PeerIdentities(events: decoded.trace.events).entries
            let known = decoded.run.directory.entries
            let name = (g.captures + g.logs)[0]
            XCTAssertEqual(Set(folded.keys), Set(known.keys), name)
            for (id, k) in known {
                let f = try XCTUnwrap(folded[id], name)
                XCTAssertEqual(f.displayName, k.displayName, name)
                XCTAssertEqual(f.addresses, k.addresses, name)
                XCTAssertEqual(f.endpoints, k.endpoints, name)
                XCTAssertEqual(f.advertisedFirst, k.advertisedFirst, name)
                XCTAssertEqual(f.advertisedLast, k.advertisedLast, name)
                peers += 1
            }
            // Refreshes are coalesced: at most one advertisement event per peer and plugin.
            let ads = decoded.trace.events.filter { $0.kind == .identityAdvertised }
            XCTAssertEqual(ads.count, Set(ads.map { "\($0.source) \($0.from)" }).count, name)
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 14)
        XCTAssertGreaterThan(peers, 20)
    }

    /// A trace written before identity facts were events (`peerscope.events/1`, by the version of
    /// `decode --events` before this one, committed) still reads, to the report analysing its inputs gives.
    func testAVersion1TraceStillReadsToTheSameReport() throws {
        let path = Place.packageRoot.appendingPathComponent("Tests/Fixtures/traces/identity-collision.v1.events.jsonl").path
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        XCTAssertTrue(String(decoding: bytes.prefix(40), as: UTF8.self).contains("peerscope.events/1"))
        let trace = try EventTrace.read([UInt8](bytes), path: path)
        XCTAssertEqual(Set(trace.events.filter { $0.kind == .identityLearned }.compactMap(\.from.peerID)).count, 3)
        XCTAssertTrue(zip(trace.events, trace.events.dropFirst()).allSatisfy { $0.t <= $1.t }, "in time order")
        // The trace names its inputs relative to the package root.
        let inputs = trace.inputs.map { Place.packageRoot.appendingPathComponent($0).path }
        let direct = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [inputs[0]], logs: Array(inputs.dropFirst()))).report
        var replayed = AnalysisSession.report(trace)
        replayed.inputs = direct.inputs
        XCTAssertEqual(JSONReportWriter.render(replayed), JSONReportWriter.render(direct))
        XCTAssertEqual(TextReportWriter.render(replayed), TextReportWriter.render(direct))
        XCTAssertFalse(direct.discovery.peers.isEmpty)
    }

    /// Events are the whole interface: the detectors on the decoded events alone (no directory, no
    /// timelines built beforehand) find what the full analysis finds, on every sample. (Where the
    /// identity facts among them change findings: `JoinedLateTests.testDetectorsOnEventsAloneUse...`.)
    func testDetectorsOnEventsAloneFindWhatTheFullRunFinds() throws {
        var checked = 0, withFindings = 0
        for g in try EventCatalogueTests.inputGroups() where g.captures.first?.contains("/Samples/") ?? false {
            let s = AnalysisSession()
            s.addCaptures(g.captures)
            s.addLogs(g.logs)
            let trace = try s.decode().trace
            let full = AnalysisSession.report(trace).findings
            let end = max(trace.stats.lastT ?? Int64.min, trace.events.last?.t ?? Int64.min)
            func summary(_ fs: [Finding]) -> [String] {
                fs.map { "\($0.kind) \($0.t) \($0.severity) \($0.message) \($0.evidence) \($0.details.sorted { $0.key < $1.key })" }
            }
            let alone = DetectorSuite.run(trace.events, timelines: .empty, end: end)
            XCTAssertEqual(summary(alone), summary(full), g.captures[0])
            if !full.isEmpty { withFindings += 1 }
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 14, "every sample")
        XCTAssertGreaterThanOrEqual(withFindings, 10)
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
