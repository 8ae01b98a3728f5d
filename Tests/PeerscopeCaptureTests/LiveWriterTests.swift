import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest

/// The live capture's pcapng output: interfaces declared up front, statistics at the end, rings.
final class LiveWriterTests: XCTestCase {
    let base: Int64 = 1_763_800_000 * 1_000_000_000
    let interfaces = [LiveCaptureWriter.Interface(linkType: 1, name: "en0", snapLength: 65_535),
                      LiveCaptureWriter.Interface(linkType: 1, name: "awdl0", snapLength: 65_535)]

    func frame(_ i: Int, on name: String, size: Int = 1000) -> RawFrame {
        let data = (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &+ i) }
        return RawFrame(info: FrameInfo(input: 0, number: UInt64(i), t: base + Int64(i) * 1_000_000, capturedLength: size,
                                        originalLength: size, linkType: 1, interfaceName: name), data: Bytes(data))
    }

    /// (block type, body) of every block in a little-endian pcapng file; fails on a cut block.
    func blocks(_ path: String) throws -> [(UInt32, [UInt8])] {
        let d = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ at: Int) -> UInt32 { UInt32(d[at]) | UInt32(d[at + 1]) << 8 | UInt32(d[at + 2]) << 16 | UInt32(d[at + 3]) << 24 }
        var out: [(UInt32, [UInt8])] = []
        var at = 0
        while at < d.count {
            XCTAssertLessThanOrEqual(at + 12, d.count, "cut block header")
            let type = u32(at), len = Int(u32(at + 4))
            XCTAssertLessThanOrEqual(at + len, d.count, "cut block body")
            XCTAssertEqual(u32(at + len - 4), UInt32(len), "trailing length")
            out.append((type, Array(d[(at + 8) ..< (at + len - 4)])))
            at += len
        }
        return out
    }

    func testEveryInterfaceIsDeclaredEvenWithoutFramesAndStatisticsCloseTheFile() throws {
        let dir = TempDir()
        let path = dir.path + "/live.pcapng"
        let w = try LiveCaptureWriter(path: path, interfaces: interfaces)
        for i in 1 ... 3 { try w.write(frame(i, on: "awdl0")) }
        let stats = LiveCaptureStats(interfaces: [
            InterfaceCaptureStats(interface: "en0", linkType: 1, received: 0, kernelDropped: 0, pcapReceived: 0),
            InterfaceCaptureStats(interface: "awdl0", linkType: 1, received: 5, kernelDropped: 7, interfaceDropped: 1, queueDropped: 2, pcapReceived: 12),
        ], stopReason: "interrupt")
        try w.close(stats: stats, at: base + 9_000_000)

        let b = try blocks(path)
        XCTAssertEqual(b.map(\.0), [0x0A0D_0D0A, 1, 1, 6, 6, 6, 5, 5])
        // Interface 1 is awdl0 (declared second), and every packet names it.
        for (type, body) in b where type == 6 { XCTAssertEqual(Array(body.prefix(4)), [1, 0, 0, 0]) }
        // awdl0's statistics: ifrecv 12, ifdrop 1, osdrop 7, usrdeliv 3 (received - queue drops).
        let isb = b[7].1
        XCTAssertEqual(isb[0], 1)
        var options: [UInt16: UInt64] = [:]
        var at = 12
        while at + 4 <= isb.count {
            let code = UInt16(isb[at]) | UInt16(isb[at + 1]) << 8, len = Int(UInt16(isb[at + 2]) | UInt16(isb[at + 3]) << 8)
            if code == 0 { break }
            options[code] = isb[(at + 4) ..< (at + 4 + len)].reversed().reduce(0) { $0 << 8 | UInt64($1) }
            at += 4 + (len + 3) / 4 * 4
        }
        XCTAssertEqual(options, [4: 12, 5: 1, 7: 7, 8: 3])

        let r = try CaptureFileReader(path: path)
        var names: [String?] = []
        while let f = r.next() { names.append(f.info.interfaceName) }
        XCTAssertEqual(names, ["awdl0", "awdl0", "awdl0"])
        XCTAssertNil(r.problem)
    }

    func testRingKeepsTheNewestFilesEachWholeAndReadable() throws {
        let dir = TempDir()
        let ring = try XCTUnwrap(LiveCaptureWriter.Ring(argument: "3:1"))
        XCTAssertEqual(ring, LiveCaptureWriter.Ring(files: 3, bytesPerFile: 1 << 20))
        for bad in ["3", "0:1", "3:0", "a:1", "3:1:1", "-1:5", ""] { XCTAssertNil(LiveCaptureWriter.Ring(argument: bad), bad) }

        let w = try LiveCaptureWriter(path: dir.path + "/ring.pcapng", ring: ring, interfaces: interfaces)
        // 6,000 frames of 1,000 bytes (~6.2 MB) through 1 MiB files: 6 or 7 files, the newest 3 kept.
        for i in 1 ... 6000 { try w.write(frame(i, on: i % 2 == 0 ? "en0" : "awdl0")) }
        try w.close(stats: nil, at: base)
        XCTAssertEqual(w.framesWritten, 6000)
        XCTAssertEqual(w.files.count, 3)
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        XCTAssertEqual(onDisk.map { dir.path + "/" + $0 }, w.files.sorted())
        let numbers = w.files.compactMap { Int($0.split(separator: "_").dropFirst().first ?? "") }
        XCTAssertEqual(numbers.count, 3)
        XCTAssertGreaterThanOrEqual(numbers.first ?? 0, 4, "the oldest files were removed")
        if let n0 = numbers.first { XCTAssertEqual(numbers, [n0, n0 + 1, n0 + 2]) }
        var last: UInt64 = 0
        for f in w.files {
            XCTAssertTrue(f.hasSuffix(".pcapng") && f.contains("/ring_"), f)
            let b = try blocks(f)
            XCTAssertEqual(Array(b.map(\.0).prefix(3)), [0x0A0D_0D0A, 1, 1], "every file declares both interfaces")
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: f)[.size] as? Int)
            XCTAssertLessThan(size, (1 << 20) + 2000)
            // Frames continue across files, none lost or repeated.
            let r = try CaptureFileReader(path: f)
            while let fr = r.next() {
                let first = UInt64(fr.data.byte(0) ?? 0)
                let i = UInt64((fr.info.t - base) / 1_000_000)
                XCTAssertEqual(first, i & 0xFF)
                if last > 0 { XCTAssertEqual(i, last + 1) }
                last = i
            }
        }
        XCTAssertEqual(last, 6000)
    }

    func testRingFileNamesFollowDumpcap() {
        let t: Nanos = 1_764_058_500 * 1_000_000_000  // 2025-11-25T08:15:00Z
        XCTAssertEqual(LiveCaptureWriter.ringName(base: "/tmp/x/cap.pcapng", number: 7, at: t), "/tmp/x/cap_00007_20251125081500.pcapng")
        XCTAssertEqual(LiveCaptureWriter.ringName(base: "/tmp/x.d/cap", number: 12, at: t), "/tmp/x.d/cap_00012_20251125081500.pcapng")
    }
}
