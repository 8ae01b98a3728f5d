import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import PeerscopeTimeline

/// Captures that start after the invitation (the usual case in the field): the samples cut with
/// their first frames dropped, through the project's own reader and writer.
final class MidSessionTests: XCTestCase {
    private var tmp: URL!

    override func setUpWithError() throws {
        tmp = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-mid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: tmp)
    }

    /// Writes `sample` without its frames before `firstKept` (1-based) and returns the new file.
    private func cutFrames(_ sample: String, from firstKept: UInt64) throws -> String {
        let src = Place.samples.appendingPathComponent(sample).path
        let out = tmp.appendingPathComponent("\(sample)-from-\(firstKept).pcapng").path
        let reader = try CaptureFileReader(path: src)
        let writer = try PcapngWriter(path: out)
        while let f = reader.next() {
            guard f.info.number >= firstKept else { continue }
            try writer.write(RawFrame(info: f.info, data: Bytes(f.data.array)))
        }
        try writer.close()
        XCTAssertNil(reader.problem)
        return out
    }

    /// The number of the first frame that carries UDP between the two devices (STUN/DTLS/GCK), found
    /// by decoding the sample: cuts are made at and after it, so the invitation is not in the input.
    private func firstSessionFrame(_ sample: String) throws -> UInt64 {
        let a = try analyze(Place.samples.appendingPathComponent(sample).path)
        let first = a.report.timelines.events.first { e in
            ["ice", "dtls", "gck"].contains { e.kind.isIn($0) }
        }
        guard case .frame(_, let n)? = first?.evidence else {
            XCTFail("\(sample): no session traffic")
            return 0
        }
        return n
    }

    private func analyze(_ path: String) throws -> Analysis {
        _ = FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        return try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [path]))
    }

    private func aboveInfo(_ a: Analysis) -> [String] {
        a.report.findings.filter { $0.severity > .info }.map { "\($0.severity) \($0.kind) \($0.peer): \($0.message)" }
    }

    /// Each device is one peer: the address-only (STUN/DTLS) and participant-only (GCK) views join.
    private func assertOneSessionBetweenTwoPeers(_ a: Analysis, _ label: String) {
        let t = a.report.timelines
        XCTAssertEqual(t.peers.count, 2, "\(label): peers \(t.peers.map(\.peer.label))")
        XCTAssertEqual(t.sessions.count, 1, "\(label): sessions \(t.sessions.map(\.key))")
        for s in t.sessions {
            XCTAssertNotNil(s.established, "\(label): \(s.key) not established")
        }
    }

    func testHealthyPairJoinedMidSessionIsOneCleanSession() throws {
        let start = try firstSessionFrame("healthy-pair.pcapng")
        for skip in [0, 3, 6, 12, 20] as [UInt64] {
            let path = try cutFrames("healthy-pair.pcapng", from: start + skip)
            let a = try analyze(path)
            let label = "healthy-pair from frame \(start + skip)"
            assertOneSessionBetweenTwoPeers(a, label)
            XCTAssertEqual(aboveInfo(a), [], label)
            XCTAssertFalse(a.report.findings.contains { $0.details["case"] == "data-before-connected" }, label)
        }
    }

    func testEncryptedHealthyPairJoinedMidSessionIsClean() throws {
        let start = try firstSessionFrame("healthy-pair-encrypted.pcapng")
        for skip in [0, 4, 7, 10, 15, 30] as [UInt64] {
            let path = try cutFrames("healthy-pair-encrypted.pcapng", from: start + skip)
            let a = try analyze(path)
            let label = "healthy-pair-encrypted from frame \(start + skip)"
            XCTAssertEqual(a.report.timelines.sessions.count, 1, label)
            XCTAssertTrue(a.report.timelines.sessions.allSatisfy { $0.established != nil }, label)
            XCTAssertEqual(aboveInfo(a), [], label)
        }
    }

    /// A failing sample joined late keeps its real finding (same kinds as the whole capture) and
    /// gains no identity split, no handshake or data-before-connected finding.
    func testKeepaliveTimeoutJoinedMidSessionKeepsOnlyTheRealFinding() throws {
        let whole = try analyze(Place.samples.appendingPathComponent("keepalive-timeout.pcapng").path)
        let wholeKinds = Set(whole.report.findings.filter { $0.severity > .info }.map(\.kind))
        XCTAssertFalse(wholeKinds.isEmpty)
        let start = try firstSessionFrame("keepalive-timeout.pcapng")
        for skip in [0, 4, 10] as [UInt64] {
            let a = try analyze(try cutFrames("keepalive-timeout.pcapng", from: start + skip))
            let label = "keepalive-timeout from frame \(start + skip)"
            assertOneSessionBetweenTwoPeers(a, label)
            XCTAssertEqual(Set(a.report.findings.filter { $0.severity > .info }.map(\.kind)), wholeKinds, label)
            XCTAssertFalse(a.report.findings.contains { $0.kind == HandshakeTimeoutDetector.kind }, label)
            XCTAssertFalse(a.report.findings.contains { $0.details["case"] == "data-before-connected" }, label)
        }
    }
}
