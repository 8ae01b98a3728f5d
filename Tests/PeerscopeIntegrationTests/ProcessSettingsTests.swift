import Foundation
@testable import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeReports
import XCTest

/// The one setting of the whole process an analysis makes (glibc's mmap threshold, as decoding of
/// capture files starts and before the timeline stage): on by default, as the `peerscope` command
/// runs; an embedding app turns it off with `Configuration.keepLargeBlocksMapped = false`, and then the
/// call is never made. The report is the same either way.
final class ProcessSettingsTests: XCTestCase {
    /// `calls`: the calls made; `beforeDecoded`: those made before decoding ended (the `.decoded` stage).
    func analyse(keepLargeBlocksMapped: Bool?) throws -> (calls: Int, beforeDecoded: Int, json: String) {
        var c = AnalysisSession.Configuration()
        if let keepLargeBlocksMapped { c.keepLargeBlocksMapped = keepLargeBlocksMapped }
        let s = AnalysisSession(c)
        var calls = 0
        var beforeDecoded: Int?
        s.setMmapThreshold = { calls += 1 }
        s.onStage = { if case .decoded = $0, beforeDecoded == nil { beforeDecoded = calls } }
        s.add([Place.samples.appendingPathComponent("healthy-pair.pcapng").path])
        let r = try s.finish().report
        return (calls, beforeDecoded ?? -1, JSONReportWriter.render(r))
    }

    func testTheMmapThresholdIsSetOnlyWhenTheConfigurationSaysSo() throws {
        XCTAssertTrue(AnalysisSession.Configuration().keepLargeBlocksMapped)
        let byDefault = try analyse(keepLargeBlocksMapped: nil)
        XCTAssertEqual(byDefault.calls, 2)
        let on = try analyse(keepLargeBlocksMapped: true)
        XCTAssertEqual(on.calls, 2)
        let off = try analyse(keepLargeBlocksMapped: false)
        XCTAssertEqual(off.calls, 0)
        XCTAssertEqual(off.json, on.json)
    }

    /// A capture file's decoders run with the threshold already set (the first call comes before
    /// decoding ends, not only before the timeline stage), and only when the configuration says so.
    func testTheThresholdIsSetBeforeDecodingCaptureFiles() throws {
        XCTAssertEqual(try analyse(keepLargeBlocksMapped: true).beforeDecoded, 1)
        XCTAssertEqual(try analyse(keepLargeBlocksMapped: false).beforeDecoded, 0)
    }

    /// A live session's provisional reports (`capture --follow`) and its last one follow the setting too.
    func testALiveSessionsReportsFollowTheSetting() throws {
        for keep in [true, false] {
            var c = AnalysisSession.Configuration()
            c.keepLargeBlocksMapped = keep
            let s = AnalysisSession(c)
            var calls = 0
            s.setMmapThreshold = { calls += 1 }
            let input = s.addLiveInput("live:test")
            let reader = try CaptureFileReader(path: Place.samples.appendingPathComponent("healthy-pair.pcapng").path)
            while var f = reader.next() {
                f.info.input = input
                s.feed(f)
            }
            _ = s.provisionalReport()
            _ = try s.finish()
            XCTAssertEqual(calls, keep ? 2 : 0)
        }
    }
}
