import CPcap
import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest

final class WriterTests: XCTestCase {
    let base: Int64 = 1_763_800_000 * 1_000_000_000

    func frame(_ n: UInt64, t: Int64, lt: UInt32, name: String?, data: [UInt8], orig: Int? = nil) -> RawFrame {
        RawFrame(info: FrameInfo(input: 0, number: n, t: t, capturedLength: data.count,
                                 originalLength: orig ?? data.count, linkType: lt, interfaceName: name),
                 data: Bytes(data))
    }

    func testRoundTripKeepsTimesBytesLinkTypesAndNames() throws {
        let dir = TempDir()
        let path = dir.path + "/out.pcapng"
        let frames = [
            frame(1, t: base + 123_456_789, lt: 1, name: "eth0", data: Synth.payload(1, 60)),
            frame(2, t: base + 123_456_790, lt: 113, name: "any", data: Synth.payload(2, 33), orig: 1500),
            frame(3, t: base + 2_000_000_001, lt: 1, name: "eth0", data: []),
            frame(4, t: base + 2_000_000_002, lt: 1, name: nil, data: Synth.payload(4, 1)),
            frame(5, t: base + 9_999_999_999, lt: 101, name: "utun3", data: Synth.payload(5, 1502)),
            frame(6, t: base + 10_000_000_000, lt: 113, name: "any", data: Synth.payload(6, 2)),
        ]
        let w = try PcapngWriter(path: path)
        // Write from a slice of a bigger buffer, as the reader hands them out.
        let big = Bytes([0xEE] + Synth.payload(9, 100) + [0xEE])
        var sliced = frame(7, t: base + 10_000_000_001, lt: 1, name: "eth0", data: [])
        sliced.data = try XCTUnwrap(big.slice(1, 100))
        sliced.info.capturedLength = 100
        sliced.info.originalLength = 100
        for f in frames + [sliced] { try w.write(f) }
        XCTAssertEqual(w.framesWritten, 7)
        try w.close()
        XCTAssertThrowsError(try w.write(frames[0]))

        let r = try CaptureFileReader(path: path, input: 0)
        var got: [RawFrame] = []
        while let f = r.next() { got.append(f) }
        XCTAssertNil(r.problem)
        XCTAssertEqual(got.count, 7)
        for (g, f) in zip(got, frames + [sliced]) {
            XCTAssertEqual(g.info, f.info)
            XCTAssertEqual(g.data, f.data)
        }
        // One interface per (link type, name), in first-use order.
        XCTAssertEqual(r.interfaces, [
            CaptureInterface(linkType: 1, name: "eth0", snapLength: 262_144),
            CaptureInterface(linkType: 113, name: "any", snapLength: 262_144),
            CaptureInterface(linkType: 1, name: nil, snapLength: 262_144),
            CaptureInterface(linkType: 101, name: "utun3", snapLength: 262_144),
        ])
    }

    func testOutputIsReadableByLibpcapWithNanoseconds() throws {
        let dir = TempDir()
        let path = dir.path + "/lp.pcapng"
        let w = try PcapngWriter(path: path)
        let times: [Int64] = [base + 1, base + 999_999_999, base + 1_000_000_000]
        for (i, t) in times.enumerated() {
            try w.write(frame(UInt64(i + 1), t: t, lt: 1, name: "lo", data: Synth.payload(i, 40 + i)))
        }
        try w.flush()
        // Until close the frames are in a temporary file beside the target (readable while capturing);
        // the target appears, complete, only at close.
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        let temp = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix(".lp.pcapng.peerscope-") })
        XCTAssertGreaterThan(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: dir.path + "/" + temp)[.size] as? Int), 100)
        try w.close()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["lp.pcapng"])
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
        let p = try XCTUnwrap(pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errbuf))
        defer { pcap_close(p) }
        var hdr: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        var got: [Int64] = []
        while pcap_next_ex(p, &hdr, &data) == 1, let h = hdr?.pointee {
            got.append(Int64(h.ts.tv_sec) * 1_000_000_000 + Int64(h.ts.tv_usec))
        }
        XCTAssertEqual(got, times)
    }

    func testUnwritablePathIsAClearError() {
        let dir = TempDir()
        XCTAssertThrowsError(try PcapngWriter(path: dir.path)) { e in
            guard case .writeFailed(let p, _)? = e as? CaptureError else { return XCTFail("\(e)") }
            XCTAssertEqual(p, dir.path)
            XCTAssertTrue("\(e)".hasPrefix("\(dir.path): cannot write capture: "), "\(e)")
        }
    }
}
