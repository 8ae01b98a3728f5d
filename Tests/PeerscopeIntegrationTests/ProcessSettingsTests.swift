import Foundation
@testable import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeReports
import XCTest

/// The one setting of the whole process an analysis makes (glibc's mmap threshold, before the
/// timeline stage): on by default, as the `peerscope` command runs; an embedding app turns it off
/// with `Configuration.keepLargeBlocksMapped = false`, and then the call is never made. The report is
/// the same either way.
final class ProcessSettingsTests: XCTestCase {
    func analyse(keepLargeBlocksMapped: Bool?) throws -> (calls: Int, json: String) {
        var c = AnalysisSession.Configuration()
        if let keepLargeBlocksMapped { c.keepLargeBlocksMapped = keepLargeBlocksMapped }
        let s = AnalysisSession(c)
        var calls = 0
        s.setMmapThreshold = { calls += 1 }
        s.add([Place.samples.appendingPathComponent("healthy-pair.pcapng").path])
        let r = try s.finish().report
        return (calls, JSONReportWriter.render(r))
    }

    func testTheMmapThresholdIsSetOnlyWhenTheConfigurationSaysSo() throws {
        XCTAssertTrue(AnalysisSession.Configuration().keepLargeBlocksMapped)
        let byDefault = try analyse(keepLargeBlocksMapped: nil)
        XCTAssertEqual(byDefault.calls, 1)
        let on = try analyse(keepLargeBlocksMapped: true)
        XCTAssertEqual(on.calls, 1)
        let off = try analyse(keepLargeBlocksMapped: false)
        XCTAssertEqual(off.calls, 0)
        XCTAssertEqual(off.json, on.json)
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
