import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest

/// Reads every capture of `../shared/corpus` and checks it against MANIFEST.md (parsed at run time).
final class CorpusTests: XCTestCase {
    struct Entry {
        var file: String
        var linkTypeText: String
        var packets: Int
    }

    static func sharedDir() -> String? {
        // Package root is three levels up from Tests/<Target>/<File>.swift.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var shared = root.appendingPathComponent("../shared").standardized.path
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"], !env.isEmpty { shared = env }
        return FileManager.default.fileExists(atPath: shared + "/corpus/MANIFEST.md") ? shared : nil
    }

    static func manifest(_ corpus: String) throws -> [Entry] {
        let text = try String(contentsOfFile: corpus + "/MANIFEST.md", encoding: .utf8)
        var header: [String]?
        var entries: [Entry] = []
        for line in text.split(separator: "\n") where line.hasPrefix("|") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if header == nil { header = cells; continue }
            if cells.allSatisfy({ $0.allSatisfy { $0 == "-" } }) { continue }
            guard let h = header, let fi = h.firstIndex(of: "file"), let pi = h.firstIndex(of: "packets"),
                  let li = h.firstIndex(where: { $0.hasPrefix("link type") }), cells.count == h.count,
                  let n = Int(cells[pi]) else { continue }
            entries.append(Entry(file: cells[fi].trimmingCharacters(in: CharacterSet(charactersIn: "`")),
                                 linkTypeText: cells[li], packets: n))
        }
        return entries
    }

    /// LINKTYPE for the manifest's wording ("Ethernet (pcap LE µs)").
    static func linkType(_ text: String) -> UInt32? {
        let table: [(String, UInt32)] = [
            ("Ethernet", 1), ("Linux cooked-mode capture v1", 113), ("NULL/Loopback", 0),
            ("Apple PKTAP", 258), ("IEEE 802.11 Wireless LAN", 105),
        ]
        return table.first { text.hasPrefix($0.0) }?.1
    }

    func testEveryCorpusFileMatchesTheManifest() throws {
        guard let shared = Self.sharedDir() else { throw XCTSkip("../shared/corpus not found (set PEERSCOPE_SHARED)") }
        let corpus = shared + "/corpus"
        let entries = try Self.manifest(corpus)
        XCTAssertGreaterThan(entries.count, 20, "manifest table parsed")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus)
            .filter { $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }
        XCTAssertEqual(Set(files), Set(entries.map(\.file)), "every capture is in the manifest")
        for e in entries {
            let path = corpus + "/" + e.file
            let r = try CaptureFileReader(path: path, input: 2)
            var n = 0
            var last: Int64 = .min
            var outOfOrder = 0
            var linkTypes = Set<UInt32>()
            var cutFrames = 0
            while let f = r.next() {
                n += 1
                XCTAssertEqual(f.info.number, UInt64(n))
                XCTAssertEqual(f.info.input, 2)
                XCTAssertEqual(f.data.count, f.info.capturedLength)
                if f.info.t < last { outOfOrder += 1 }
                last = f.info.t
                linkTypes.insert(f.info.linkType)
                if f.info.capturedLength < f.info.originalLength { cutFrames += 1 }
            }
            XCTAssertNil(r.problem, "\(e.file): \(r.problem?.description ?? "")")
            XCTAssertEqual(n, e.packets, e.file)
            XCTAssertEqual(outOfOrder, 0, "\(e.file): timestamps go backwards")  // all corpus files are ordered (tshark)
            if let lt = Self.linkType(e.linkTypeText) {
                XCTAssertEqual(linkTypes, [lt], e.file)
            } else {
                XCTFail("\(e.file): unknown link type wording \(e.linkTypeText)")
            }
            let isNg = e.linkTypeText.contains("pcapng")
            XCTAssertEqual(r.formatDescription.hasPrefix("pcapng"), isNg, "\(e.file): \(r.formatDescription)")
            XCTAssertEqual(r.formatDescription.contains("big-endian"), e.linkTypeText.contains(" BE"), e.file)
            if isNg, let idbs = e.linkTypeText.split(separator: ",").last?.split(separator: " ").first(where: { Int($0) != nil }) {
                XCTAssertEqual(r.interfaces.count, Int(idbs), "\(e.file): interfaces")
            }
            if e.file == "zeek-truncated-snap68.pcap" { XCTAssertEqual(cutFrames, e.packets) }
            if e.file == "nfstream-dhcp-big-endian.pcapng" {
                // tshark dates it to the year ~152000: beyond Nanos, so shifted with a warning
                // (testOutOfRangeTimesKeepTsharksSpacing).
                XCTAssertEqual(r.clampedTimestamps, UInt64(e.packets))
                XCTAssertEqual(r.diagnostics.map(\.id), ["capture.timestamp.shifted"])
                XCTAssertLessThan(last, 71 * CaptureTime.second)
            } else {
                XCTAssertEqual(r.clampedTimestamps, 0, e.file)
                XCTAssertTrue(r.diagnostics.isEmpty, e.file)
            }
        }
    }

    /// The big-endian pcapng's timestamps are beyond what `Nanos` holds: shifted by whole seconds, they
    /// must equal tshark's once the shift is added back.
    func testOutOfRangeTimesKeepTsharksSpacing() throws {
        guard let shared = Self.sharedDir() else { throw XCTSkip("../shared/corpus not found") }
        // Reference: `tshark -r nfstream-dhcp-big-endian.pcapng -T fields -e frame.time_epoch` (tshark 4,
        // read 2026-11-24), as (seconds, nanoseconds).
        let tshark: [(Int64, Int64)] = [(4_734_231_571_822, 539_464_000), (4_734_231_571_822, 834_464_000),
                                        (4_734_231_571_892, 570_464_000), (4_734_231_571_892, 884_464_000)]
        let r = try CaptureFileReader(path: shared + "/corpus/nfstream-dhcp-big-endian.pcapng")
        var times: [Nanos] = []
        while let f = r.next() { times.append(f.info.t) }
        let shift = try XCTUnwrap(r.timestampShift)
        let ours = times.map { (shift + $0 / CaptureTime.second, $0 % CaptureTime.second) }
        XCTAssertEqual(ours.map(\.0), tshark.map(\.0))
        XCTAssertEqual(ours.map(\.1), tshark.map(\.1))
        XCTAssertEqual((times.last ?? 0) - (times.first ?? 0), 70_345_000_000, "70.345 s, as tshark")
        let d = try XCTUnwrap(r.diagnostics.first)
        XCTAssertEqual(d.id, "capture.timestamp.shifted")
        XCTAssertEqual(d.evidence, .frame(input: 0, frame: 1))
        XCTAssertEqual(d.offset, 84, "the first Enhanced Packet Block")
        XCTAssertTrue(d.message.contains("-\(shift) s"), d.message)
    }

    /// The nanosecond corpus file gives exact nanoseconds; the µs ones whole microseconds.
    func testNanosecondFileKeepsNanoseconds() throws {
        guard let shared = Self.sharedDir() else { throw XCTSkip("../shared/corpus not found") }
        let r = try CaptureFileReader(path: shared + "/corpus/tcpdump-tcp-handshake-nano-sll.pcap")
        var ts: [Int64] = []
        while let f = r.next() { ts.append(f.info.t) }
        XCTAssertEqual(ts.count, 3)
        XCTAssertTrue(ts.contains { $0 % 1000 != 0 }, "sub-microsecond digits survive: \(ts)")
        XCTAssertTrue(r.formatDescription.contains("nanosecond"))
    }
}

import CPcap

/// Cross-check with libpcap: same frames, nanosecond timestamps, lengths and bytes, for every corpus
/// file libpcap can open (it refuses pcapng with mixed link types; ours must still read those).
final class LibpcapCrossCheckTests: XCTestCase {
    func testFramesMatchLibpcap() throws {
        guard let shared = CorpusTests.sharedDir() else { throw XCTSkip("../shared/corpus not found") }
        let corpus = shared + "/corpus"
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus)
            .filter { $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }.sorted()
        var compared = 0
        for file in files {
            let path = corpus + "/" + file
            var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
            guard let p = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errbuf) else {
                continue
            }
            defer { pcap_close(p) }
            let r = try CaptureFileReader(path: path)
            var hdr: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            var n = 0
            var mismatches: [String] = []
            while pcap_next_ex(p, &hdr, &data) == 1 {
                n += 1
                guard let h = hdr?.pointee, let d = data else { break }
                guard let f = r.next() else { mismatches.append("frame \(n): ours ended"); break }
                let t = Int64(h.ts.tv_sec) &* 1_000_000_000 &+ Int64(h.ts.tv_usec)
                let bytes = Array(UnsafeBufferPointer(start: d, count: Int(h.caplen)))
                if f.info.t != t && r.clampedTimestamps == 0 { mismatches.append("frame \(n): t \(f.info.t) vs \(t)") }
                if f.info.capturedLength != Int(h.caplen) || f.info.originalLength != Int(h.len) {
                    mismatches.append("frame \(n): lengths")
                }
                if f.data.array != bytes { mismatches.append("frame \(n): bytes") }
                if f.info.linkType != UInt32(pcap_datalink(p)) { mismatches.append("frame \(n): link type") }
            }
            XCTAssertNil(r.next(), "\(file): ours has more frames than libpcap")
            XCTAssertEqual(Array(mismatches.prefix(5)), [], file)
            compared += 1
        }
        XCTAssertGreaterThan(compared, 20)
    }
}
