import Foundation
import PeerscopeCore
import XCTest

@testable import PeerscopeCapture
import PeerscopeSimulator

final class FileReaderTests: XCTestCase {
    let base: Int64 = 1_763_800_000 * 1_000_000_000  // 2025-11-22

    func readAll(_ path: String, input: Int = 0) throws -> (CaptureFileReader, [RawFrame]) {
        let r = try CaptureFileReader(path: path, input: input)
        var frames: [RawFrame] = []
        while let f = r.next() { frames.append(f) }
        return (r, frames)
    }

    // MARK: classic pcap

    func testClassicPcapBothByteOrdersAndResolutions() throws {
        let dir = TempDir()
        for bigEndian in [false, true] {
            for nanos in [false, true] {
                // µs files can only carry whole microseconds.
                let step: Int64 = nanos ? 1 : 1000
                let frames = [
                    SynthFrame(t: base + 123_456_789 / step * step, data: Synth.payload(1, 60), origLen: 60),
                    SynthFrame(t: base + 1_000_000_000 + 7 * step, data: Synth.payload(2, 1514), origLen: 1514),
                    SynthFrame(t: base + 2_999_999_999 / step * step, data: Synth.payload(3, 68), origLen: 1200),  // snap-cut
                    SynthFrame(t: base + 3_000_000_000, data: [], origLen: 0),
                ]
                let path = dir.write("c-\(bigEndian)-\(nanos).cap",
                                     Synth.pcap(frames: frames, bigEndian: bigEndian, nanos: nanos, linkType: 113))
                let (r, got) = try readAll(path, input: 3)
                XCTAssertNil(r.problem)
                XCTAssertEqual(got.count, frames.count)
                for (i, (g, f)) in zip(got, frames).enumerated() {
                    XCTAssertEqual(g.info.t, f.t, "frame \(i + 1) be=\(bigEndian) ns=\(nanos)")
                    XCTAssertEqual(g.data.array, f.data)
                    XCTAssertEqual(g.info.capturedLength, f.data.count)
                    XCTAssertEqual(g.info.originalLength, f.origLen)
                    XCTAssertEqual(g.info.number, UInt64(i + 1))
                    XCTAssertEqual(g.info.input, 3)
                    XCTAssertEqual(g.info.linkType, 113)
                    XCTAssertNil(g.info.interfaceName)
                }
                XCTAssertTrue(r.formatDescription.contains(bigEndian ? "big-endian" : "little-endian"), r.formatDescription)
                XCTAssertTrue(r.formatDescription.contains(nanos ? "nanosecond" : "microsecond"), r.formatDescription)
            }
        }
    }

    // MARK: pcapng

    /// Two interfaces with different link types and resolutions, skipped blocks, EPB/PB/SPB, and a
    /// second section in the other byte order.
    func makePcapng(bigEndian: Bool) -> (bytes: [UInt8], expected: [(t: Int64, data: [UInt8], orig: Int, lt: UInt32, name: String?)]) {
        var w = ByteWriter(bigEndian: bigEndian)
        let if0 = Synth.Iface(linkType: 1, name: "en0", tsresol: 9)
        // 2^-10 s units with a +100 s offset; times are multiples of 1e9/512 ns so they are exact.
        let if1 = Synth.Iface(linkType: 101, name: nil, tsresol: 0x80 | 10, tsoffset: 100)
        let unit: Int64 = 1_953_125
        Synth.shb(&w)
        Synth.idb(&w, if0)
        Synth.noise(&w)
        Synth.idb(&w, if1)
        var expected: [(t: Int64, data: [UInt8], orig: Int, lt: UInt32, name: String?)] = []
        let f1 = SynthFrame(t: base + 1, data: Synth.payload(1, 42), origLen: 42, iface: 0)
        Synth.epb(&w, f1, if0); expected.append((f1.t, f1.data, 42, 1, "en0"))
        let f2 = SynthFrame(t: base + 5 * unit, data: Synth.payload(2, 33), origLen: 40, iface: 1)
        Synth.epb(&w, f2, if1, comment: true); expected.append((f2.t, f2.data, 40, 101, nil))
        let f3 = SynthFrame(t: base + 5 * unit + 999_999_999, data: Synth.payload(3, 1), origLen: 1, iface: 0)
        Synth.obsoletePB(&w, f3, if0); expected.append((f3.t, f3.data, 1, 1, "en0"))
        let spbData = Synth.payload(4, 7)
        Synth.spb(&w, data: spbData); expected.append((f3.t, spbData, 7, 1, "en0"))  // SPB: no time, previous kept
        Synth.noise(&w)
        let f5 = SynthFrame(t: base + 2_000_000_000 + 77 * unit, data: Synth.payload(5, 100), origLen: 100, iface: 1)
        Synth.epb(&w, f5, if1); expected.append((f5.t, f5.data, 100, 101, nil))

        // Second section, other byte order, millisecond interface (if_tsresol 3) with SLL.
        var w2 = ByteWriter(bigEndian: !bigEndian)
        let if2 = Synth.Iface(linkType: 113, name: "any", tsresol: 3)
        Synth.shb(&w2)
        Synth.idb(&w2, if2)
        let f6 = SynthFrame(t: base + 3_000_000_000 + 5_000_000, data: Synth.payload(6, 64), origLen: 64, iface: 0)
        Synth.epb(&w2, f6, if2); expected.append((f6.t, f6.data, 64, 113, "any"))
        return (w.bytes + w2.bytes, expected)
    }

    func testPcapngBothByteOrdersTwoInterfacesSections() throws {
        let dir = TempDir()
        for bigEndian in [false, true] {
            let (bytes, expected) = makePcapng(bigEndian: bigEndian)
            let path = dir.write("n-\(bigEndian).pcap", bytes)  // name says pcap: detection is by magic
            let (r, got) = try readAll(path, input: 1)
            XCTAssertNil(r.problem, "\(r.problem?.description ?? "")")
            XCTAssertEqual(got.count, expected.count)
            for (i, (g, e)) in zip(got, expected).enumerated() {
                XCTAssertEqual(g.info.t, e.t, "frame \(i + 1) be=\(bigEndian)")
                XCTAssertEqual(g.data.array, e.data, "frame \(i + 1)")
                XCTAssertEqual(g.info.originalLength, e.orig, "frame \(i + 1)")
                XCTAssertEqual(g.info.linkType, e.lt, "frame \(i + 1)")
                XCTAssertEqual(g.info.interfaceName, e.name, "frame \(i + 1)")
                XCTAssertEqual(g.info.number, UInt64(i + 1))
                XCTAssertEqual(g.info.input, 1)
            }
            XCTAssertEqual(r.interfaces.map(\.linkType), [1, 101, 113])
            XCTAssertTrue(r.formatDescription.hasPrefix("pcapng"), r.formatDescription)
            XCTAssertTrue(r.formatDescription.contains("2 sections"), r.formatDescription)
        }
    }

    func testGzipCompressedCapturesReadTransparently() throws {
        let dir = TempDir()
        let (bytes, expected) = makePcapng(bigEndian: true)
        let path = dir.write("n.pcapng.gz", Synth.gzipStored(bytes))
        let (r, got) = try readAll(path)
        XCTAssertNil(r.problem)
        XCTAssertTrue(r.isCompressed)
        XCTAssertTrue(r.formatDescription.hasPrefix("gzip-compressed pcapng"), r.formatDescription)
        XCTAssertEqual(got.map(\.info.t), expected.map(\.t))
        XCTAssertEqual(got.map(\.data.array), expected.map(\.data))

        // A real deflate stream too, when the gzip tool is around.
        let gzipTool = "/usr/bin/gzip"
        guard FileManager.default.isExecutableFile(atPath: gzipTool) else { return }
        let frames = (0 ..< 3000).map { SynthFrame(t: base + Int64($0) * 1000, data: Synth.payload($0, 200), origLen: 200) }
        let plain = dir.write("big.pcap", Synth.pcap(frames: frames, bigEndian: false, nanos: true))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: gzipTool)
        p.arguments = ["-k", "-9", plain]
        try p.run()
        p.waitUntilExit()
        let (r2, got2) = try readAll(plain + ".gz")
        XCTAssertNil(r2.problem)
        XCTAssertTrue(r2.isCompressed)
        XCTAssertEqual(got2.count, frames.count)
        XCTAssertEqual(got2.map(\.info.t), frames.map(\.t))
        XCTAssertEqual(got2.last?.data.array, frames.last?.data)
    }

    /// Many frames across several 1 MiB refills; frames kept across refills must not change.
    func testStreamingAcrossBufferRefillsKeepsEarlierFramesIntact() throws {
        let dir = TempDir()
        var frames: [SynthFrame] = []
        for i in 0 ..< 5000 {
            let n = 1 + (i * 131) % 1400  // odd sizes, so records straddle buffer boundaries
            frames.append(SynthFrame(t: base + Int64(i) * 1_000_000, data: Synth.payload(i, n), origLen: n))
        }
        var w = ByteWriter(bigEndian: false)
        let ifc = Synth.Iface(linkType: 1, name: nil, tsresol: 9)
        Synth.shb(&w); Synth.idb(&w, ifc)
        for f in frames { Synth.epb(&w, f, ifc) }
        for (name, bytes) in [("s.pcap", Synth.pcap(frames: frames, bigEndian: true, nanos: true)), ("s.pcapng", w.bytes)] {
            XCTAssertGreaterThan(bytes.count, 3 << 20)
            let (r, got) = try readAll(dir.write(name, bytes))
            XCTAssertNil(r.problem)
            XCTAssertEqual(got.count, frames.count, name)
            // All frames were retained while reading went on: their bytes must still be the originals.
            var bad = 0
            for (g, f) in zip(got, frames) where g.data.array != f.data || g.info.t != f.t { bad += 1 }
            XCTAssertEqual(bad, 0, name)
        }
    }

    /// Peak resident memory in bytes.
    func peakRSS() -> Int {
        var u = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
        return u.ru_maxrss * 1024
        #else
        getrusage(RUSAGE_SELF, &u)
        return u.ru_maxrss
        #endif
    }

    /// Reading a 96 MiB file without keeping frames must not grow memory with the file.
    func testMemoryDoesNotGrowWithFileSize() throws {
        let dir = TempDir()
        // 1 MiB of fixed-size records, written 96 times after one header.
        let record = 16 + 1008
        var chunk = ByteWriter(bigEndian: false)
        for i in 0 ..< (1 << 20) / record {
            chunk.u32(1_763_800_000); chunk.u32(UInt32(i)); chunk.u32(1008); chunk.u32(1008)
            chunk.raw(Synth.payload(i, 1008))
        }
        let path = dir.path + "/big.pcap"
        let header = Synth.pcap(frames: [], bigEndian: false, nanos: false)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(header)))
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seekToEnd()
        let block = Data(chunk.bytes)
        for _ in 0 ..< 96 { try h.write(contentsOf: block) }
        try h.close()

        let before = peakRSS()
        let r = try CaptureFileReader(path: path)
        var n = 0
        var last: RawFrame?
        while let f = r.next() {
            n += 1
            if n % 1000 == 0 { last = f }  // keeping a few frames alive is fine too
        }
        XCTAssertNil(r.problem)
        XCTAssertEqual(n, 96 * ((1 << 20) / record))
        XCTAssertNotNil(last)
        let grown = peakRSS() - before
        XCTAssertLessThan(grown, 32 << 20, "peak memory grew by \(grown >> 20) MiB reading a 96 MiB file")
    }

    /// A 3 MiB block of an unknown type is skipped across several buffer refills.
    func testSkipsBlocksLargerThanTheBuffer() throws {
        let dir = TempDir()
        var w = ByteWriter(bigEndian: false)
        let ifc = Synth.Iface(linkType: 1, name: "x", tsresol: 9)
        Synth.shb(&w); Synth.idb(&w, ifc)
        let f1 = SynthFrame(t: base + 1, data: Synth.payload(1, 99), origLen: 99)
        let f2 = SynthFrame(t: base + 2, data: Synth.payload(2, 77), origLen: 77)
        Synth.epb(&w, f1, ifc)
        Synth.block(&w, type: 0x0000_0BAD, body: [UInt8](repeating: 0xAB, count: 3 << 20))
        Synth.epb(&w, f2, ifc)
        let path = dir.write("big-skip.pcapng", w.bytes)
        let (r, got) = try readAll(path)
        XCTAssertNil(r.problem)
        XCTAssertEqual(got.map(\.data.array), [f1.data, f2.data])
        // Cut inside the big block: truncated, reported at the block's start.
        let (r2, got2) = try readAll(dir.write("cut.pcapng", Array(w.bytes.prefix(2 << 20))))
        XCTAssertEqual(got2.count, 1)
        XCTAssertEqual(r2.problem?.kind, .truncated)
    }

    /// A FIFO cannot seek: the reader must stream it (as it does standard input, `-`).
    func testReadsFromAFifo() throws {
        let dir = TempDir()
        let (bytes, expected) = makePcapng(bigEndian: false)
        let gz = Synth.gzipStored(bytes)
        for (name, data) in [("plain", bytes), ("gz", gz)] {
            let fifo = dir.path + "/fifo-" + name
            XCTAssertEqual(mkfifo(fifo, 0o600), 0)
            let writer = Thread {
                let fd = open(fifo, O_WRONLY)
                guard fd >= 0 else { return }
                // Dribble it in small pieces so reads come back short.
                var i = 0
                while i < data.count {
                    let n = min(37, data.count - i)
                    _ = data[i ..< i + n].withUnsafeBytes { write(fd, $0.baseAddress, n) }
                    i += n
                }
                close(fd)
            }
            writer.start()
            let (r, got) = try readAll(fifo)
            XCTAssertNil(r.problem, name)
            XCTAssertEqual(got.map(\.info.t), expected.map(\.t), name)
            XCTAssertEqual(got.map(\.data.array), expected.map(\.data), name)
        }
    }

    // MARK: errors

    func testMissingDirectoryUnreadableNotCapture() throws {
        let dir = TempDir()
        let missing = dir.path + "/nope.pcap"
        XCTAssertThrowsError(try CaptureFileReader(path: missing)) { e in
            XCTAssertEqual(e as? CaptureError, .missing(path: missing))
            XCTAssertTrue("\(e)".hasPrefix(missing), "\(e)")
        }
        XCTAssertThrowsError(try CaptureFileReader(path: dir.path)) { e in
            XCTAssertEqual("\(e)", "\(dir.path): cannot read: is a directory")
        }
        let text = dir.write("notes.pcap", Array("hello, this is text\n".utf8))
        XCTAssertThrowsError(try CaptureFileReader(path: text)) { e in
            guard case .notCapture(let p, let detail)? = e as? CaptureError else { return XCTFail("\(e)") }
            XCTAssertEqual(p, text)
            XCTAssertTrue(detail.contains("68 65 6c 6c"), detail)  // the first bytes, in hex
            XCTAssertTrue(detail.contains("hello, t"), detail)
        }
        let empty = dir.write("empty.pcap", [])
        XCTAssertThrowsError(try CaptureFileReader(path: empty)) { e in
            XCTAssertTrue("\(e)".contains("empty"), "\(e)")
        }
        let kuznetzov = dir.write("k.pcap", [0x34, 0xCD, 0xB2, 0xA1] + [UInt8](repeating: 0, count: 20))
        XCTAssertThrowsError(try CaptureFileReader(path: kuznetzov)) { e in
            XCTAssertTrue("\(e)".contains("a1b2cd34"), "\(e)")
        }
        let shortHeader = dir.write("short.pcap", Array(Synth.pcap(frames: [], bigEndian: false, nanos: false).prefix(10)))
        XCTAssertThrowsError(try CaptureFileReader(path: shortHeader)) { e in
            guard case .badHeader? = e as? CaptureError else { return XCTFail("\(e)") }
        }

        let locked = dir.write("locked.pcap", Synth.pcap(frames: [], bigEndian: false, nanos: false))
        chmod(locked, 0)
        if geteuid() == 0 {
            // Root reads it anyway (CI runs as root): the file must simply open.
            XCTAssertNoThrow(try CaptureFileReader(path: locked))
        } else {
            XCTAssertThrowsError(try CaptureFileReader(path: locked)) { e in
                XCTAssertEqual("\(e)", "\(locked): cannot read: permission denied")
            }
        }
    }

    func testTruncatedMidPacketDeliversEarlierFrames() throws {
        let dir = TempDir()
        let frames = (0 ..< 5).map { SynthFrame(t: base + Int64($0), data: Synth.payload($0, 100), origLen: 100) }
        let bytes = Synth.pcap(frames: frames, bigEndian: false, nanos: true)
        let frame4At = 24 + 3 * (16 + 100)
        for cut in [frame4At + 10, frame4At + 16 + 50] {  // inside the record header, inside the data
            let path = dir.write("t\(cut).pcap", Array(bytes.prefix(cut)))
            let (r, got) = try readAll(path)
            XCTAssertEqual(got.map(\.data.array), frames.prefix(3).map(\.data))
            let p = try XCTUnwrap(r.problem)
            XCTAssertEqual(p.kind, .truncated)
            XCTAssertEqual(p.frame, 4)
            XCTAssertEqual(p.framesRead, 3)
            XCTAssertEqual(p.byteOffset, Int64(frame4At))
            XCTAssertTrue(p.description.hasPrefix("\(path): truncated in frame 4 at byte \(frame4At)"), p.description)
            XCTAssertTrue(p.description.hasSuffix("(frames 1-3 read)"), p.description)
            XCTAssertNil(r.next(), "stays finished")
        }
        // Cut exactly at a record boundary: complete, no problem.
        let (r, got) = try readAll(dir.write("b.pcap", Array(bytes.prefix(frame4At))))
        XCTAssertEqual(got.count, 3)
        XCTAssertNil(r.problem)
    }

    func testTruncatedAndCorruptPcapng() throws {
        let dir = TempDir()
        let (bytes, expected) = makePcapng(bigEndian: false)
        // Cut the last block in half: every frame before it is delivered.
        let cut = Array(bytes.prefix(bytes.count - 40))
        let (r, got) = try readAll(dir.write("cut.pcapng", cut))
        XCTAssertEqual(got.count, expected.count - 1)
        XCTAssertEqual(r.problem?.kind, .truncated)
        XCTAssertEqual(r.problem?.frame, UInt64(expected.count))

        // Truncated gzip stream of the same file.
        let gz = Synth.gzipStored(bytes)
        let (rg, gotg) = try readAll(dir.write("cut.pcapng.gz", Array(gz.prefix(gz.count - 60))))
        XCTAssertEqual(gotg.count, expected.count - 1)
        XCTAssertNotNil(rg.problem)

        // Corrupt block length (not a multiple of 4) right after the first SHB + IDB.
        var w = ByteWriter(bigEndian: false)
        let ifc = Synth.Iface(linkType: 1, name: nil, tsresol: nil)
        Synth.shb(&w); Synth.idb(&w, ifc)
        let good = SynthFrame(t: base, data: [1, 2, 3], origLen: 3)
        Synth.epb(&w, good, ifc)
        let badAt = w.bytes.count
        w.u32(6); w.u32(37); w.raw([UInt8](repeating: 0, count: 40))
        let (rc, gotc) = try readAll(dir.write("bad.pcapng", w.bytes))
        XCTAssertEqual(gotc.count, 1)
        let pc = try XCTUnwrap(rc.problem)
        XCTAssertEqual(pc.kind, .corrupt)
        XCTAssertEqual(pc.byteOffset, Int64(badAt))
        XCTAssertTrue(pc.description.contains("block length 37"), pc.description)

        // Packet on an interface the section never described.
        var w2 = ByteWriter(bigEndian: true)
        Synth.shb(&w2); Synth.idb(&w2, ifc)
        Synth.epb(&w2, SynthFrame(t: base, data: [1], origLen: 1, iface: 1), ifc)
        let (ri, goti) = try readAll(dir.write("if.pcapng", w2.bytes))
        XCTAssertEqual(goti.count, 0)
        XCTAssertTrue(ri.problem?.description.contains("interface 1") ?? false, "\(String(describing: ri.problem))")
    }

    func testAbsurdCapturedLengthStopsTheFile() throws {
        let dir = TempDir()
        var bytes = Synth.pcap(frames: [SynthFrame(t: base, data: [1, 2, 3, 4], origLen: 4)], bigEndian: false, nanos: false)
        let at = bytes.count
        var w = ByteWriter(bigEndian: false)
        w.u32(1); w.u32(0); w.u32(300_000); w.u32(300_000); w.raw([UInt8](repeating: 0, count: 64))
        bytes += w.bytes
        let (r, got) = try readAll(dir.write("absurd.pcap", bytes))
        XCTAssertEqual(got.count, 1)
        let p = try XCTUnwrap(r.problem)
        XCTAssertEqual(p.kind, .corrupt)
        XCTAssertEqual(p.byteOffset, Int64(at))
        XCTAssertTrue(p.description.contains("300000"), p.description)
        XCTAssertEqual(p.diagnostic.id, "capture.corrupt")
        XCTAssertEqual(p.diagnostic.evidence, .frame(input: 0, frame: 2))
    }

    // MARK: hostile input

    /// Every prefix of a pcapng file: never a crash, frames only grow with the prefix, and a problem
    /// unless the cut falls on a block boundary.
    func testEveryPrefixOfAPcapngFile() throws {
        let dir = TempDir()
        let (bytes, expected) = makePcapng(bigEndian: true)
        var lastCount = 0
        var clean = 0
        let shbLength = Int(bytes[4]) << 24 | Int(bytes[5]) << 16 | Int(bytes[6]) << 8 | Int(bytes[7])
        XCTAssertThrowsError(try CaptureFileReader(path: dir.write("h.pcapng", Array(bytes.prefix(shbLength - 1)))))
        for cut in Array(stride(from: shbLength, through: bytes.count, by: 5)) + [bytes.count] {
            let path = dir.write("p.pcapng", Array(bytes.prefix(cut)))
            let (r, got) = try readAll(path)
            XCTAssertGreaterThanOrEqual(got.count, lastCount, "cut \(cut)")
            XCTAssertEqual(got.map(\.data.array), expected.prefix(got.count).map(\.data), "cut \(cut)")
            lastCount = got.count
            if r.problem == nil { clean += 1 } else {
                XCTAssertEqual(r.problem?.kind, .truncated, "cut \(cut): \(String(describing: r.problem))")
            }
        }
        XCTAssertEqual(lastCount, expected.count)
        XCTAssertLessThan(clean, 10, "only block boundaries read cleanly")
    }

    /// Random byte corruption (deterministic): the reader ends every file without trapping.
    func testRandomCorruptionNeverTraps() throws {
        let dir = TempDir()
        let (ng, _) = makePcapng(bigEndian: false)
        let classic = Synth.pcap(frames: (0 ..< 20).map { SynthFrame(t: base + Int64($0), data: Synth.payload($0, 50), origLen: 50) },
                                 bigEndian: true, nanos: false)
        var rng = SimRandom(seed: 42)
        for (name, original) in [("ng", ng), ("classic", classic)] {
            for round in 0 ..< 80 {
                var b = original
                for _ in 0 ..< 1 + Int(rng.next() % 6) {
                    let i = 4 + Int(rng.next() % UInt64(b.count - 4))  // keep the magic
                    b[i] = UInt8(truncatingIfNeeded: rng.next())
                }
                let path = dir.write("\(name)\(round)", b)
                guard let r = try? CaptureFileReader(path: path) else { continue }
                var n = 0
                while let f = r.next() {
                    n += 1
                    XCTAssertLessThanOrEqual(f.data.count, CaptureFileReader.maxCapturedLength)
                    XCTAssertLessThan(n, 1000, "\(name) round \(round): runaway")
                    if n >= 1000 { break }
                }
            }
        }
    }

    // MARK: merge

    func testMergeOrdersByTimeThenInputThenFrame() throws {
        let dir = TempDir()
        let a = [0, 10, 10, 30].map { SynthFrame(t: base + Int64($0), data: [UInt8($0)], origLen: 1) }
        let b = [5, 10, 40].map { SynthFrame(t: base + Int64($0), data: [UInt8($0) | 0x80], origLen: 1) }
        let pa = dir.write("a.pcap", Synth.pcap(frames: a, bigEndian: false, nanos: true))
        var w = ByteWriter(bigEndian: true)
        let ifc = Synth.Iface(linkType: 1, name: "b0", tsresol: 9)
        Synth.shb(&w); Synth.idb(&w, ifc)
        for f in b { Synth.epb(&w, f, ifc) }
        let pb = dir.write("b.pcapng", w.bytes)
        let m = try MergedCaptureReader(paths: [pa, pb])
        var order: [String] = []
        while let f = m.next() { order.append("\(f.info.input):\(f.info.number)@\(f.info.t - base)") }
        XCTAssertEqual(order, ["0:1@0", "1:1@5", "0:2@10", "0:3@10", "1:2@10", "0:4@30", "1:3@40"])
        XCTAssertTrue(m.problems.isEmpty)

        // A truncated file stops alone: the other file is read to its end, the problem is kept.
        let full = Synth.pcap(frames: a, bigEndian: false, nanos: true)
        let pc = dir.write("c.pcap", Array(full.prefix(full.count - 1)))
        let m2 = try MergedCaptureReader(paths: [pb, pc], firstInput: 5)
        var inputs: [Int] = []
        while let f = m2.next() { inputs.append(f.info.input) }
        XCTAssertEqual(inputs.filter { $0 == 5 }.count, 3)
        XCTAssertEqual(inputs.filter { $0 == 6 }.count, 3)
        XCTAssertEqual(m2.problems.map(\.input), [6])
        XCTAssertEqual(m2.problems.first?.frame, 4)

        XCTAssertThrowsError(try MergedCaptureReader(paths: [pa, dir.path + "/missing"])) { e in
            XCTAssertEqual(e as? CaptureError, .missing(path: dir.path + "/missing"))
        }
    }

    // MARK: timestamp units

    func testTimestampScales() {
        XCTAssertEqual(TimestampScale(resolution: 6, offsetSeconds: 0).nanos(1_500_000), 1_500_000_000)
        XCTAssertEqual(TimestampScale(resolution: 9, offsetSeconds: 0).nanos(7), 7)
        XCTAssertEqual(TimestampScale(resolution: 0, offsetSeconds: 0).nanos(3), 3_000_000_000)
        XCTAssertEqual(TimestampScale(resolution: 12, offsetSeconds: 0).nanos(5_999), 5)  // ps truncate to ns
        XCTAssertEqual(TimestampScale(resolution: 0x80 | 20, offsetSeconds: 0).nanos(1 << 20), 1_000_000_000)
        XCTAssertEqual(TimestampScale(resolution: 0x80 | 1, offsetSeconds: 0).nanos(3), 1_500_000_000)
        XCTAssertEqual(TimestampScale(resolution: 0x80 | 100, offsetSeconds: 0).nanos(UInt64.max), 0)
        XCTAssertEqual(TimestampScale(resolution: 9, offsetSeconds: -2).nanos(5_000_000_000), 3_000_000_000)
        // Saturation instead of overflow.
        XCTAssertEqual(TimestampScale(resolution: 0, offsetSeconds: 0).nanos(UInt64.max), Int64.max)
        XCTAssertEqual(TimestampScale(resolution: 9, offsetSeconds: 0).nanos(UInt64.max), Int64.max)
        XCTAssertEqual(TimestampScale(resolution: 9, offsetSeconds: Int64.max).nanos(1), Int64.max)
        XCTAssertEqual(TimestampScale(resolution: 9, offsetSeconds: Int64.min).nanos(1), Int64.min)
    }

    func testTimestampSplitIsExactWhereNanosSaturate() {
        func split(_ r: UInt8, _ off: Int64, _ ts: UInt64) -> [Int64]? {
            TimestampScale(resolution: r, offsetSeconds: off).split(ts).map { [$0.seconds, $0.nanos] }
        }
        XCTAssertEqual(split(6, 0, 4_734_231_571_822_539_464), [4_734_231_571_822, 539_464_000])
        XCTAssertEqual(split(9, 0, UInt64.max), [18_446_744_073, 709_551_615])
        XCTAssertEqual(split(0, 0, UInt64.max), nil, "seconds beyond Int64")
        XCTAssertEqual(split(0, -10, 12), [2, 0])
        XCTAssertEqual(split(0x80 | 1, 0, 7), [3, 500_000_000])
        XCTAssertEqual(split(12, 0, 5_000_000_001_999), [5, 1])  // ps truncate to ns
        XCTAssertEqual(split(0x80 | 100, 0, UInt64.max), [0, 0])
        XCTAssertEqual(split(9, Int64.max, 2_000_000_000), nil, "offset overflows")
    }
}

