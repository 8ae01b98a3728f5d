import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopePlugins
import PeerscopeReports
import PeerscopeSimulator

/// Issue 13: the fast paths (byte-identical mDNS refreshes) change nothing. Every sample, the corpus's
/// real mDNS captures and a large generated crowded-network capture give byte-identical text (full
/// timelines) and JSON reports with the fast paths on and off, and the fast path was really taken.
final class FastPathTests: XCTestCase {
    struct Outcome {
        var text: String
        var json: String
        var fastRefreshes: UInt64
    }

    func analyze(_ path: String, fast: Bool) throws -> Outcome {
        var options = AnalysisOptions(captures: [path])
        options.engine.decode.fastPaths = fast
        let a = try AnalysisSession(options).finish()
        // The same decoding once more, alone, to count the refreshes the fast path took.
        let engine = Engine(options: AnalysisSession.engineOptions(AnalysisSession.Configuration(engine: options.engine)))
        _ = try PeerscopeRun.run(paths: [path], engine: engine)
        let mdns = engine.pipeline.plugins.compactMap { $0 as? MDNSPlugin }.first
        return Outcome(text: TextReportWriter.render(a.report, colour: false, showAllTimeline: true),
                       json: JSONReportWriter.render(a.report), fastRefreshes: mdns?.fastRefreshes ?? 0)
    }

    /// Compares the two runs of `path`; returns how often the fast path was taken.
    func compare(_ path: String, _ problems: inout [String]) throws -> UInt64 {
        let fast = try analyze(path, fast: true), slow = try analyze(path, fast: false)
        XCTAssertEqual(slow.fastRefreshes, 0, "\(path): the switch turns the fast path off")
        for (what, a, b) in [("text", fast.text, slow.text), ("json", fast.json, slow.json)] where a != b {
            problems.append("\(path) \(what) differs at \(firstDifferingLine(a, b, ("fast", "slow")))")
        }
        return fast.fastRefreshes
    }

    /// Every sample, and the corpus's real captures with mDNS when ../shared is present.
    static func samplesAndCorpus() throws -> [String] {
        var paths = try FileManager.default.contentsOfDirectory(atPath: Place.samples.path)
            .filter { $0.hasSuffix(".pcapng") || $0.hasSuffix(".pcap") }.sorted().map { Place.samples.appendingPathComponent($0).path }
        XCTAssertGreaterThan(paths.count, 10)
        // Real bytes: the corpus's captures with mDNS (skipped when ../shared is absent).
        if let shared = Place.shared {
            for name in ["zeek-mdns-linux-vm.pcap", "nfstream-mdns-sll.pcap", "zeek-wlanmon-ipad-mdns.pcap", "ndpi-iphone.pcap",
                         "tcpdump-pktap-macos.pcap"] {
                let p = shared.appendingPathComponent("corpus/\(name)").path
                if FileManager.default.fileExists(atPath: p) { paths.append(p) }
            }
        }
        return paths
    }

    func testFastPathsChangeNoReportOnAnySampleOrCorpusCapture() throws {
        let paths = try Self.samplesAndCorpus()
        var problems: [String] = []
        var taken: UInt64 = 0
        for p in paths { taken += try compare(p, &problems) }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        XCTAssertGreaterThan(taken, 0, "some refresh in these captures repeats byte for byte")
    }

    func testFastPathsChangeNoReportOnALargeCrowdedCapture() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-fastpath-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("crowd.pcap").path
        // 600 hosts over about 40 minutes: refreshes, TXT changes, new addresses, goodbyes, silent expiries.
        let written = try CrowdedMDNS.write(path: path, packets: 24_000, hostCount: 600)
        XCTAssertEqual(written.frames, 24_000)
        var problems: [String] = []
        let taken = try compare(path, &problems)
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        // About two thirds of the mDNS packets are responses, most of them byte-identical refreshes.
        XCTAssertGreaterThan(taken, UInt64(written.mdns / 3), "most announcements are byte-identical refreshes")
    }

    // MARK: - `peerscope decode` (JSON Lines) takes the refresh fast path too

    /// What `peerscope decode --diagnostics` prints: every message line, then every diagnostic; and how
    /// often the fast path was taken.
    func decodeLines(_ path: String, fast: Bool) throws -> (lines: [String], diagnostics: [String], fastRefreshes: UInt64) {
        var options = EngineOptions(decode: DecodeOptions(wantsMessages: true, fastPaths: fast))
        options.collectEvents = false
        var lines: [String] = []
        var mismatches = 0
        let engine = Engine(options: options) { m in
            // The bytes decode writes, straight from the message; they must be the message's JSON object's.
            var line: [UInt8] = [], withInput: [UInt8] = []
            m.writeJSONLine(to: &line, includeInput: false)
            m.writeJSONLine(to: &withInput, includeInput: true)
            if line != Array((m.json(includeInput: false).jsonText + "\n").utf8) { mismatches += 1 }
            if withInput != Array((m.json(includeInput: true).jsonText + "\n").utf8) { mismatches += 1 }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        let result = try PeerscopeRun.run(paths: [path], engine: engine)
        XCTAssertEqual(mismatches, 0, "\(path): writeJSONLine writes json(includeInput:)'s bytes")
        let mdns = engine.pipeline.plugins.compactMap { $0 as? MDNSPlugin }.first
        return (lines, result.diagnostics.map { "\($0.id) \($0.t.map(String.init) ?? "-") \($0.evidence) \($0.message)" },
                mdns?.fastRefreshes ?? 0)
    }

    func compareDecode(_ path: String, _ problems: inout [String]) throws -> UInt64 {
        let fast = try decodeLines(path, fast: true), slow = try decodeLines(path, fast: false)
        XCTAssertEqual(slow.fastRefreshes, 0, "\(path): the switch turns the fast path off")
        for (what, x, y) in [("messages", fast.lines, slow.lines), ("diagnostics", fast.diagnostics, slow.diagnostics)] where x != y {
            problems.append("\(path) decode \(what) differ (\(x.count) vs \(y.count) lines) at \(firstDifferingLine(x, y, ("fast", "slow")))")
        }
        return fast.fastRefreshes
    }

    func testDecodeOutputIsByteIdenticalWithAndWithoutFastPathsOnEverySampleAndCorpusCapture() throws {
        var problems: [String] = []
        var taken: UInt64 = 0
        for p in try Self.samplesAndCorpus() { taken += try compareDecode(p, &problems) }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        XCTAssertGreaterThan(taken, 0, "decode takes the fast path on some repeated refresh")
    }

    func testDecodeOutputIsByteIdenticalWithAndWithoutFastPathsOnALargeCrowdedCapture() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-fastdecode-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("crowd.pcap").path
        let written = try CrowdedMDNS.write(path: path, packets: 24_000, hostCount: 600)
        var problems: [String] = []
        let taken = try compareDecode(path, &problems)
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        XCTAssertGreaterThan(taken, UInt64(written.mdns / 3), "decode prints most byte-identical refreshes without the tracker's full path")
    }
}
