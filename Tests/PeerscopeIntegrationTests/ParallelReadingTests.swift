import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopePlugins
import PeerscopeReports
import PeerscopeSimulator

/// Several capture files are read each on its own thread, decoded on one in capture-time order: the
/// results are byte-identical to a serial read (reports as text with full timelines and as JSON,
/// `peerscope decode` lines, diagnostics), on samples cut in two (by time: a rotated capture whose TCP
/// streams and sessions span both files; alternately: two captures of the same traffic interleaved),
/// on several samples together, on a generated crowded capture cut in three, and on corpus captures.
final class ParallelReadingTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-parallel-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// Writes the frames of `path` into `parts` pcapng files, frame `i` going to `part(i, count)`.
    func split(_ path: String, parts: Int, _ part: (Int, Int) -> Int) throws -> [String] {
        var frames: [RawFrame] = []
        let reader = try CaptureFileReader(path: path)
        while let f = reader.next() { frames.append(f) }
        XCTAssertNil(reader.problem, path)
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let outs = (0 ..< parts).map { dir.appendingPathComponent("\(name)-\(parts)-\(UUID().uuidString.prefix(6))-\($0).pcapng").path }
        let writers = try outs.map { try PcapngWriter(output: try OutputFile(path: $0)) }
        for (i, f) in frames.enumerated() { try writers[part(i, frames.count)].write(f) }
        for w in writers { try w.close() }
        return outs
    }

    struct Outcome: Equatable {
        var text: String
        var json: String
        var decode: [String]
        var diagnostics: [String]
    }

    func run(_ paths: [String], parallel: Bool) throws -> Outcome {
        var options = AnalysisOptions(captures: paths)
        options.engine.parallelReading = parallel
        let a = try AnalysisSession(options).finish()
        var engineOptions = EngineOptions(decode: DecodeOptions(wantsMessages: true))
        engineOptions.collectEvents = false
        engineOptions.parallelReading = parallel
        var lines: [String] = []
        let engine = Engine(options: engineOptions) { m in
            var b = JSONBytes()
            m.writeJSONLine(to: &b, includeInput: paths.count > 1)
            lines.append(String(decoding: b.bytes, as: UTF8.self))
        }
        let decoded = try PeerscopeRun.run(paths: paths, engine: engine)
        return Outcome(text: TextReportWriter.render(a.report, colour: false, showAllTimeline: true),
                       json: JSONReportWriter.render(a.report), decode: lines,
                       diagnostics: decoded.diagnostics.map { "\($0.id) \($0.evidence.map { "\($0)" } ?? "-") \($0.message)" }
                           + decoded.inputProblems)
    }

    /// Parallel and serial runs of `paths` agree; returns the parallel outcome.
    @discardableResult
    func assertSame(_ paths: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Outcome {
        let serial = try run(paths, parallel: false), parallel = try run(paths, parallel: true)
        let names = paths.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: " ")
        for (what, x, y) in [("text", serial.text, parallel.text), ("json", serial.json, parallel.json),
                             ("decode", serial.decode.joined(), parallel.decode.joined()),
                             ("diagnostics", serial.diagnostics.joined(separator: "\n"), parallel.diagnostics.joined(separator: "\n"))] where x != y {
            XCTFail("\(names): \(what) differs at \(firstDifferingLine(x, y, ("serial", "parallel")))", file: file, line: line)
        }
        return parallel
    }

    func samples() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: Place.samples.path).filter { $0.hasSuffix(".pcapng") }.sorted()
            .map { Place.samples.appendingPathComponent($0).path }
    }

    func testSamplesCutInTwoByTimeAndAlternatelyReadInParallelAsSerially() throws {
        let all = try samples()
        XCTAssertGreaterThan(all.count, 10)
        var sessions = 0
        for p in all {
            let halves = try split(p, parts: 2) { i, n in i < n / 2 ? 0 : 1 }
            let o = try assertSame(halves)
            XCTAssertFalse(o.decode.isEmpty, p)
            sessions += o.json.components(separatedBy: "\"history\"").count - 1
            try assertSame(try split(p, parts: 2) { i, _ in i % 2 })
        }
        XCTAssertGreaterThan(sessions, 10, "sessions span the two halves")
    }

    func testSeveralSamplesTogetherAndATruncatedFileReadInParallelAsSerially() throws {
        let all = try samples()
        let o = try assertSame(Array(all.prefix(6)))
        XCTAssertTrue(o.decode.contains { $0.hasPrefix("{\"input\":5,") }, "lines of the sixth file")
        // A file cut short in the middle of a record, and a missing one, among good ones: the same problems.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: all[0]))
        let cut = dir.appendingPathComponent("cut.pcapng").path
        try bytes.prefix(bytes.count * 2 / 3 + 5).write(to: URL(fileURLWithPath: cut))
        let withCut = try assertSame([all[1], cut, dir.appendingPathComponent("missing.pcap").path, all[2]])
        XCTAssertTrue(withCut.diagnostics.contains { $0.contains("cut.pcapng") && $0.contains("truncated") }, withCut.diagnostics.joined(separator: "\n"))
        XCTAssertTrue(withCut.diagnostics.contains { $0.contains("missing.pcap") })
    }

    func testACrowdedCaptureCutInThreeReadInParallelAsSerially() throws {
        let path = dir.appendingPathComponent("crowd.pcap").path
        _ = try CrowdedMDNS.write(path: path, packets: 9_000, hostCount: 300)
        let thirds = try split(path, parts: 3) { i, n in min(2, i * 3 / n) }
        let o = try assertSame(thirds)
        XCTAssertGreaterThan(o.decode.count, 3_000)
        // Read ahead in batches: the parallel merge hands out every frame in the serial order.
        let serial = MergedCaptureReader(readers: try thirds.enumerated().map { try CaptureFileReader(path: $1, input: $0) })
        let parallel = MergedCaptureReader(readers: try thirds.enumerated().map { try CaptureFileReader(path: $1, input: $0) }, parallel: true)
        XCTAssertTrue(parallel.readsInParallel)
        XCTAssertFalse(serial.readsInParallel)
        var n = 0
        while true {
            let a = serial.next(), b = parallel.next()
            XCTAssertEqual(a?.info, b?.info)
            XCTAssertEqual(a?.data, b?.data)
            guard a != nil, b != nil else { break }
            n += 1
        }
        XCTAssertEqual(n, 9_000)
        XCTAssertEqual(parallel.bytesRead, serial.bytesRead)
        // `peerscope decode` as shipped (files read in parallel, lines written on their own thread, refreshes
        // parsed only there) prints the bytes of the previous way: serial reading, no fast path, each
        // message's JSON tree written on the decoding thread.
        var reference = ""
        var options = EngineOptions(decode: DecodeOptions(wantsMessages: true, fastPaths: false))
        options.collectEvents = false
        options.parallelReading = false
        let engine = Engine(options: options) { m in reference += m.json(includeInput: true).jsonText + "\n" }
        _ = try PeerscopeRun.run(paths: thirds, engine: engine)
        let cli = try CLI.run(["decode"] + thirds)
        XCTAssertEqual(cli.status, 0, cli.stderr)
        XCTAssertGreaterThan(reference.count, 1_000_000)
        XCTAssertTrue(cli.stdout == reference, "decode's lines differ from the serial tree writer's")
    }

    func testCorpusCapturesTogetherReadInParallelAsSerially() throws {
        let shared = try Place.requireShared()
        let names = ["zeek-mdns-linux-vm.pcap", "nfstream-mdns-sll.pcap", "ndpi-stun-dtls-rtp.pcapng", "zeek-webrtc-stun-dtls.pcap",
                     "sanders-tcp-retransmissions.pcapng"]
        let paths = names.map { shared.appendingPathComponent("corpus/\($0)").path }.filter { FileManager.default.fileExists(atPath: $0) }
        guard paths.count >= 2 else { throw XCTSkip("the corpus captures are not there") }
        let o = try assertSame(paths)
        XCTAssertFalse(o.decode.isEmpty)
        // One real capture cut in two by time.
        try assertSame(try split(paths[0], parts: 2) { i, n in i < n / 2 ? 0 : 1 })
    }
}
