import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports

/// Other apps' STUN/DTLS (WebRTC calls, DTLS 1.3 with connection IDs) is not MPC: it appears in the
/// timelines but is not judged (no finding above info).
final class NonMPCCorpusTests: XCTestCase {
    static let files = [
        "zeek-dtls13-cid.pcap", "ndpi-stun-google-meet.pcapng", "ndpi-whatsapp-login-call.pcap", "ndpi-stun-5if.pcap",
    ]

    func testOtherAppsSTUNAndDTLSAreNotJudged() throws {
        let shared = try Place.requireShared()
        _ = FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        for name in NonMPCCorpusTests.files {
            let path = shared.appendingPathComponent("corpus/\(name)").path
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(name) not in the corpus") }
            let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [path]))
            XCTAssertFalse(a.report.timelines.events.isEmpty, "\(name): its flows still appear in the timelines")
            let judged = a.report.findings.filter { $0.severity > .info }
            XCTAssertEqual(judged.map { "\($0.severity) \($0.kind) \($0.peer): \($0.message)" }, [], name)
        }
    }

    /// Every sample peer known only by address has MPC evidence, so the rule leaves the samples'
    /// findings alone (their baselines check the findings themselves).
    func testSamplesAllHaveMPCEvidence() throws {
        _ = FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        let samples = try FileManager.default.contentsOfDirectory(atPath: Place.samples.path).filter { $0.hasSuffix(".pcapng") }
        XCTAssertFalse(samples.isEmpty)
        for name in samples {
            let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [Place.samples.appendingPathComponent(name).path]))
            XCTAssertEqual(DetectorSuite.nonMPCPeers(a.report.timelines).map(\.description), [], name)
        }
    }
}
