import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeReports

/// The JSON report carries what reading the logs gave (`stats.logs`): lines, entries, entries no log
/// plugin understood per format (before, only on stderr), entries per plugin; capture-only reports
/// are unchanged; the schema describes it.
final class LogStatsReportTests: XCTestCase {
    func analyze(captures: [String], logs: [String]) throws -> Analysis {
        FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        return try PeerscopeAnalysis.analyze(AnalysisOptions(captures: captures, logs: logs))
    }

    func tempLog(_ text: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-logstats-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent("device.log")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func testUnknownLinesPerFormatAreInTheJSONReport() throws {
        let log = try tempLog("""
            2026-01-15 10:00:00.000000+0000 App[1:2] [GCKSession] Disconnecting participant [2308149F].
            2026-01-15 10:00:00.100000+0000 App[1:2] [GCKSession] My routing table: 2 nodes.
            2026-01-15 10:00:01.000000+0000 App[1:2] Something nobody understands
            2026-01-15 10:00:02.000000+0000 App[1:2] Something else nobody understands

            """)
        let a = try analyze(captures: [], logs: [log, "Samples/logs/channel-error-icmp/alices-iphone.log"])
        let v = try JSONParser.parse(JSONReportWriter.render(a.report))
        let logs = try XCTUnwrap(v["stats"]?["logs"], "stats.logs present when logs were read")
        XCTAssertEqual(logs["inputs"]?.int64Value, 2)
        let icmp = try String(contentsOfFile: "Samples/logs/channel-error-icmp/alices-iphone.log", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(logs["lines"]?.int64Value, Int64(4 + icmp.count))
        XCTAssertEqual(logs["lines"]?.int64Value, v["stats"]?["logLines"]?.int64Value)
        XCTAssertEqual(logs["unknown"]?.int64Value, 2, "the two app lines; every MPC line of the sample is understood")
        XCTAssertEqual(logs["unknownByFormat"]?["xcode"]?.int64Value, 2)
        XCTAssertEqual(logs["unknownByFormat"]?.objectValue?.count, 1)
        XCTAssertEqual(logs["recognizedByPlugin"]?["log-mpc-disconnect"]?.int64Value, 1)
        XCTAssertEqual(logs["recognizedByPlugin"]?["log-mpc-routing"]?.int64Value,
                       Int64(1 + icmp.filter { $0.contains("routing table") }.count))
        let recognized = logs["recognizedByPlugin"]?.objectValue?.reduce(Int64(0)) { $0 + ($1.1.int64Value ?? 0) } ?? -1
        XCTAssertEqual(recognized + 2, logs["entries"]?.int64Value, "every entry is understood or counted unknown")
        // The same numbers the analysis hands to stderr.
        XCTAssertEqual(a.logs?.unknownCounts, ["xcode": 2])
        try validate(JSONReportWriter.render(a.report))
    }

    func testCaptureOnlyReportsHaveNoLogStats() throws {
        let a = try analyze(captures: ["Samples/healthy-pair.pcapng"], logs: [])
        let v = try JSONParser.parse(JSONReportWriter.render(a.report))
        XCTAssertNotNil(v["stats"]?["logLines"])
        XCTAssertNil(v["stats"]?["logs"])
    }

    func validate(_ json: String) throws {
        func python(_ args: [String]) -> (Int32, String)? {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3"] + args
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = pipe
            do { try p.run() } catch { return nil }
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        guard let (code, _) = python(["-c", "import jsonschema"]), code == 0 else {
            throw XCTSkip("python3 with jsonschema is not available")
        }
        let file = try tempLog("").replacingOccurrences(of: "device.log", with: "report.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: file))
        let schema = Place.packageRoot.appendingPathComponent("Schemas/peerscope.report.v1.schema.json").path
        let script = """
            import json, sys, jsonschema
            s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))
            v = jsonschema.Draft202012Validator(s)
            errs = list(v.iter_errors(d))
            for e in errs[:5]: print(list(e.absolute_path), e.message)
            # the schema describes stats.logs: a wrong type there fails
            d["stats"]["logs"]["unknownByFormat"] = {"xcode": -1}
            sys.exit(1 if errs else (0 if list(v.iter_errors(d)) else 2))
            """
        let (rc, out) = try XCTUnwrap(python(["-c", script, schema, file]))
        XCTAssertEqual(rc, 0, out)
    }
}
