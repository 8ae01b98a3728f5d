import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import XCTest

/// Issue #11: capture quality inside every verdict. The lossy sample's pcapng interface statistics
/// say the capturing machine dropped packets inside the keep-alive silence: the finding is uncertain,
/// says why in every format, and `check` fails on it only with `--strict`.
final class CaptureQualityTests: XCTestCase {
    let capture = "Samples/keepalive-lossy-capture.pcapng"

    func analyze(_ captures: [String], logs: [String] = []) throws -> Analysis {
        FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        return try PeerscopeAnalysis.analyze(AnalysisOptions(captures: captures, logs: logs))
    }

    func testInterfaceStatisticsBecomeLossWindows() throws {
        let reader = try CaptureFileReader(path: Place.packageRoot.appendingPathComponent(capture).path)
        var frames = 0
        while reader.next() != nil { frames += 1 }
        XCTAssertNil(reader.problem)
        let losses = reader.losses
        XCTAssertEqual(losses.count, 1, "\(losses)")
        XCTAssertEqual(losses.first?.reason, .kernelDrop)
        XCTAssertEqual(losses.first?.count, 33, "Alice's 2 packets in the window and 31 others")
        XCTAssertEqual(losses.first.map { $0.end - $0.start }, 2_500_000_000)
        XCTAssertEqual(losses.first?.source?.hasSuffix("(en0)"), true)
    }

    func testASilenceInsideALossWindowIsUncertainWithItsReason() throws {
        let r = try analyze([capture]).report
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        XCTAssertEqual(f.confidence, .uncertain)
        XCTAssertEqual(f.caveats.count, 1)
        XCTAssertTrue(f.caveats[0].hasPrefix("33 packets dropped by the kernel"), f.caveats[0])
        XCTAssertEqual(r.captureLosses.count, 1)

        let json = try JSONParser.parse(JSONReportWriter.render(r))
        let jf = try XCTUnwrap(json["findings"]?.arrayValue?.first { $0["kind"]?.stringValue == "keepalive-timeout" })
        XCTAssertEqual(jf["confidence"]?.stringValue, "uncertain")
        XCTAssertEqual(jf["caveats"]?.arrayValue?.count, 1)
        XCTAssertEqual(json["captureLosses"]?.arrayValue?.first?["reason"]?.stringValue, "kernel-drop")
        XCTAssertEqual(json["captureLosses"]?.arrayValue?.first?["count"]?.int64Value, 33)

        XCTAssertTrue(TextReportWriter.render(r).contains("[uncertain]"))
        XCTAssertTrue(TextReportWriter.render(r).contains("uncertain: 33 packets dropped by the kernel"))
        let sarif = try JSONParser.parse(SARIFWriter.render(r))
        let result = try XCTUnwrap(sarif["runs"]?.arrayValue?.first?["results"]?.arrayValue?.first)
        XCTAssertEqual(result["properties"]?["confidence"]?.stringValue, "uncertain")
        XCTAssertTrue(result["message"]?["text"]?.stringValue?.contains("uncertain: 33 packets dropped") ?? false)
        let junit = JUnitWriter.render(r, failAt: .warning)
        XCTAssertTrue(junit.contains("failures=\"0\""), "an uncertain finding passes")
        XCTAssertTrue(junit.contains("confidence: uncertain"))
        XCTAssertTrue(JUnitWriter.render(r, failAt: .warning, strict: true).contains("<failure "))
    }

    func testTheSameSilenceWithoutLossIsCertain() throws {
        // keepalive-timeout is the same scenario with nothing dropped.
        let r = try analyze(["Samples/keepalive-timeout.pcapng"]).report
        XCTAssertEqual(r.captureLosses, [])
        XCTAssertEqual(r.findings.filter { $0.kind == "keepalive-timeout" }.map(\.confidence), [.certain])
        // A loss window elsewhere in time leaves the finding certain.
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        let far = CaptureLoss(reason: .kernelDrop, start: f.t + 60 * CaptureTime.second, end: f.t + 61 * CaptureTime.second, count: 5)
        XCTAssertEqual(CaptureQuality.qualify([f], losses: [far]).map(\.confidence), [.certain])
        let snap = CaptureLoss(reason: .snaplen, start: f.t - 3 * CaptureTime.second, end: f.t, count: 5)
        XCTAssertEqual(CaptureQuality.qualify([f], losses: [snap]).map(\.confidence), [.certain], "a cut frame was still seen")
    }

    func testTheLogConfirmingTheTimerMakesItCertain() throws {
        let logs = try FileManager.default.contentsOfDirectory(atPath: Place.samples.appendingPathComponent("logs/keepalive-lossy-capture").path)
            .filter { $0.hasSuffix(".log") }.sorted().map { "Samples/logs/keepalive-lossy-capture/\($0)" }
        let r = try analyze([capture], logs: logs).report
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        XCTAssertEqual(f.details["confirmedByLog"], "true")
        XCTAssertEqual(f.confidence, .certain)
    }

    func testCheckFailsOnUncertainFindingsOnlyWhenStrict() throws {
        let relaxed = try CLI.run(["check", capture, "--fail-on", "warning"])
        XCTAssertEqual(relaxed.status, 0, relaxed.stderr)
        let strict = try CLI.run(["check", capture, "--fail-on", "warning", "--strict"])
        XCTAssertEqual(strict.status, 1, strict.stderr)
        let certain = try CLI.run(["check", "Samples/keepalive-timeout.pcapng", "--fail-on", "warning"])
        XCTAssertEqual(certain.status, 1, certain.stderr)
    }
}
