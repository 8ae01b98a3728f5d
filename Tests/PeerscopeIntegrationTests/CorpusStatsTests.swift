import Foundation
import XCTest
import Peerscope
import PeerscopeCore

/// Issue 2: every corpus capture is read without a crash, and `stats.frames` equals MANIFEST.md.
final class CorpusStatsTests: XCTestCase {
    func testEveryCorpusCaptureMatchesTheManifestFrameCount() throws {
        let shared = try Place.requireShared()
        let rows = try Place.manifest(shared)
        XCTAssertGreaterThan(rows.count, 20, "the manifest table was not parsed")
        // The folder, not only the manifest: a capture added without a manifest row is not skipped.
        let files = try FileManager.default.contentsOfDirectory(atPath: shared.appendingPathComponent("corpus").path)
            .filter { $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }
        XCTAssertEqual(Set(files), Set(rows.keys), "captures in corpus/ and rows in MANIFEST.md")
        var mismatches: [String] = []
        for (name, expected) in rows.sorted(by: { $0.key < $1.key }) {
            let path = shared.appendingPathComponent("corpus").appendingPathComponent(name).path
            let r = try PeerscopeRun.decode(paths: [path], options: DecodeOptions(), collectEvents: true)
            if r.stats.frames != expected.packets {
                mismatches.append("\(name): frames \(r.stats.frames), manifest \(expected.packets)")
            }
            // The manifest's byte column is the file size. For classic pcap that is a 24-byte file header
            // plus a 16-byte record header and the captured bytes per frame: check our byte count with it.
            let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readData(ofLength: 4)
            if [Data([0xD4, 0xC3, 0xB2, 0xA1]), Data([0x4D, 0x3C, 0xB2, 0xA1])].contains(head) {
                let size = 24 + 16 * r.stats.frames + r.stats.capturedBytes
                if size != expected.bytes { mismatches.append("\(name): 24+16*frames+captured = \(size), file size \(expected.bytes)") }
            }
            XCTAssertTrue(r.complete, "\(name): \(r.inputProblems)")
            XCTAssertNotNil(r.stats.firstT)
            XCTAssertLessThanOrEqual(r.stats.firstT ?? 0, r.stats.lastT ?? 0)
            XCTAssertEqual(r.stats.linkTypes.values.reduce(0, +), r.stats.frames)
        }
        XCTAssertEqual(mismatches, [])
    }

    func testSeveralFilesAreMergedByCaptureTime() throws {
        let shared = try Place.requireShared()
        let a = shared.appendingPathComponent("corpus/zeek-webrtc-stun-dtls.pcap").path
        let b = shared.appendingPathComponent("corpus/sanders-tcp-retransmissions.pcapng").path
        var times: [Nanos] = []
        var inputs: Set<Int> = []
        let r = try PeerscopeRun.decode(paths: [a, b], options: DecodeOptions(wantsMessages: true)) { m in
            times.append(m.frame.t)
            inputs.insert(m.frame.input)
        }
        XCTAssertEqual(r.stats.frames, 14 + 6)
        XCTAssertEqual(times, times.sorted(), "messages come out in capture-time order across inputs")
    }

    func testReaderDiagnosticsReachTheRun() throws {
        // The big-endian pcapng's times are beyond 2262 (tshark: 4734231571822.539464 to
        // 4734231571892.884464, a 70.345 s span): shifted, with the reader's diagnostic in the run.
        let shared = try Place.requireShared()
        let path = shared.appendingPathComponent("corpus/nfstream-dhcp-big-endian.pcapng").path
        let r = try PeerscopeRun.decode(paths: [path])
        XCTAssertEqual(r.diagnostics.map(\.id), ["capture.timestamp.shifted"])
        XCTAssertEqual(r.diagnosticCounts["capture.timestamp.shifted"], 1)
        let first = try XCTUnwrap(r.stats.firstT), last = try XCTUnwrap(r.stats.lastT)
        XCTAssertEqual(last - first, 70_345_000_000)
    }
}
