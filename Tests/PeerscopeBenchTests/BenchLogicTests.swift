import XCTest
@testable import PeerscopeBench

final class BenchOptionsTests: XCTestCase {
    private func parse(_ s: String) -> BenchOptions? {
        try? BenchOptions.parse(s.split(separator: " ").map(String.init)).get()
    }

    private func error(_ s: String) -> String? {
        if case .failure(let e) = BenchOptions.parse(s.split(separator: " ").map(String.init)) { return e.message }
        return nil
    }

    /// `--write-mdns` used to write at once, with whatever `--mdns-frames`/`--mdns-hosts` had been read
    /// before it: the ones after it were ignored.
    func testFlagsAfterWriteMDNSAreRead() {
        let after = parse("--write-mdns /tmp/x.pcap --mdns-frames 5000 --mdns-hosts 30")
        let before = parse("--mdns-frames 5000 --mdns-hosts 30 --write-mdns /tmp/x.pcap")
        XCTAssertEqual(after?.writeMDNS, "/tmp/x.pcap")
        XCTAssertEqual(after?.mdnsFrames, 5000)
        XCTAssertEqual(after?.mdnsHosts, 30)
        XCTAssertEqual(after, before)
    }

    func testFramesAfterWriteGroupAndLiveOptionsAreRead() {
        XCTAssertEqual(parse("--write-group /tmp/g.pcap --frames 2000")?.groupFrames, 2000)
        let live = parse("--copies 3 --live --rates 1000,2000")
        XCTAssertEqual(live?.live, true)
        XCTAssertEqual(live?.rates, [1000, 2000])
        XCTAssertEqual(live?.copies, 3)
    }

    /// 1M by default (the group memory targets' size); the issue's 2M / 250k with `--only linear`, unless
    /// `--frames` says otherwise.
    func testGroupFrames() {
        XCTAssertEqual(parse("")?.groupFrames, 1_000_000)
        XCTAssertEqual(parse("--only group")?.groupFrames, 1_000_000)
        XCTAssertEqual(parse("--only linear")?.groupFrames, 2_000_000)
        XCTAssertEqual(parse("--frames 400000 --only linear")?.groupFrames, 400_000)
        XCTAssertEqual(parse("--only group --frames 2000000")?.groupFrames, 2_000_000)
    }

    /// A mistake is said (it used to be ignored: a bad number kept the default, a missing value ate the
    /// next flag).
    func testMistakesAreSaid() {
        XCTAssertEqual(error("--frames lots"), "--frames needs a positive whole number, not lots")
        XCTAssertEqual(error("--frames 0"), "--frames needs a positive whole number, not 0")
        XCTAssertEqual(error("--frames --only group"), "--frames needs a value")
        XCTAssertEqual(error("--mdns-frames"), "--mdns-frames needs a value")
        XCTAssertEqual(error("--only tshark"), "--only takes mdns, group or linear, not tshark")
        XCTAssertEqual(error("--linear"), "unknown option --linear")
        XCTAssertEqual(error("--stages a.pcap --write-mdns b.pcap"), "--stages and --write-mdns cannot be combined: choose one")
        XCTAssertEqual(error("--copies 3"), "--copies only go with --live")
        XCTAssertEqual(error("--live --rates 10,x"), "--rates takes rates like 10000,50000, not 10,x")
        XCTAssertNil(error("--only mdns --mdns-gb --long --keep /tmp/k --mdns-hosts 3000"))
    }
}

final class LinearityTests: XCTestCase {
    func testMedian() {
        XCTAssertNil(median([]))
        XCTAssertEqual(median([3]), 3)
        XCTAssertEqual(median([5, 1, 3]), 3)
        XCTAssertEqual(median([4, 1, 3, 2]), 2.5)
        XCTAssertEqual(median([6.1, 5.9, 9.0, 6.0, 6.2]), 6.1)
    }

    /// One slow run of the eighth (other work on the machine) does not decide the verdict: with the
    /// median it is met, where that run alone would fail it; the spread still shows it.
    func testOneSlowRunOfTheEighthDoesNotDecide() {
        let l = Linearity(frames: 2_000_000, smallFrames: 250_000, cpu: 48.0, smallCPU: [5.90, 5.80, 7.10, 5.85, 5.95])
        XCTAssertEqual(l.frameRatio, 8)
        XCTAssertEqual(l.limit, 8.5)
        XCTAssertEqual(l.smallMedian, 5.90)
        XCTAssertEqual(l.ratio ?? 0, 48.0 / 5.90, accuracy: 1e-12)
        XCTAssertEqual(l.met, true)
        XCTAssertEqual(l.spread?.low ?? 0, 48.0 / 7.10, accuracy: 1e-12)
        XCTAssertEqual(l.spread?.high ?? 0, 48.0 / 5.80, accuracy: 1e-12)
        // The same runs, but the eighth typically faster: not met.
        let slow = Linearity(frames: 2_000_000, smallFrames: 250_000, cpu: 48.0, smallCPU: [5.50, 5.60, 7.10, 5.55, 5.65])
        XCTAssertEqual(slow.met, false)
        XCTAssertEqual(slow.ratio ?? 0, 48.0 / 5.60, accuracy: 1e-12)
    }

    /// The files have whole copies of the scenario, so the frames are not exactly 8x: the limit keeps
    /// the issue's slack (8.5 for 8) for the frames actually written.
    func testLimitFollowsTheFramesWritten() {
        let l = Linearity(frames: 1_000_623, smallFrames: 125_079, cpu: 20, smallCPU: [2.5])
        XCTAssertEqual(l.limit, 1_000_623.0 / 125_079.0 * 8.5 / 8, accuracy: 1e-12)
        XCTAssertEqual(l.met, true)  // x8.0 <= x8.50...
        XCTAssertNil(Linearity(frames: 8, smallFrames: 1, cpu: 1, smallCPU: []).met)
        XCTAssertNil(Linearity(frames: 8, smallFrames: 1, cpu: 1, smallCPU: [0]).ratio)
    }

    /// The file written for `--frames 2000000` holds 2,000,490 frames: the note reads the frames asked for.
    func testTheTargetsNoteSaysWhenTheIssuesSizesWereRun() {
        let l = Linearity(frames: 2_000_490, smallFrames: 250_177, cpu: 50, smallCPU: [6, 7, 6.5])
        XCTAssertEqual(l.how(requestedFrames: 2_000_000), "2M / 250k, the issue's figure; CPU s, eighth's median of 3")
        XCTAssertEqual(l.how(requestedFrames: 1_000_000), "the issue's figure: --frames 2000000 or --only linear; CPU s, eighth's median of 3")
    }

    func testLinesShowEveryRunAndTheSpread() {
        let lines = Linearity(frames: 2_000_000, smallFrames: 250_000, cpu: 48.0, smallCPU: [6, 5, 7], wholeAfter: 2).lines
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines[0].contains("2000000 frames 48.00 s once (after the eighth's run 2); 250000 frames 6.00 / 5.00 / 7.00 s (3 runs, median 6.00 s)"),
                      lines[0])
        XCTAssertTrue(lines[1].contains("x8.00 the time for x8.00 the frames (limit x8.50)"), lines[1])
        XCTAssertTrue(lines[1].contains("x6.86 / x9.60"), lines[1])
    }
}

final class StageFiguresTests: XCTestCase {
    /// The added figure is relative (a smaller decoding state raises it); the absolute ones are not.
    func testPerEntryFigures() {
        let f = StageFigures(entries: 1_048_576, rssBeforeTimelines: 268, rssAfterTimelines: 416, heapAfterTimelines: 300)
        XCTAssertEqual(f.addedPerEntry, 148)
        XCTAssertEqual(f.rssPerEntry, 416)
        XCTAssertEqual(f.heapPerEntry, 300)
        var smaller = f
        smaller.rssBeforeTimelines = 261
        XCTAssertEqual(smaller.addedPerEntry, 155)
        XCTAssertEqual(smaller.rssPerEntry, f.rssPerEntry)
        XCTAssertNil(StageFigures().addedPerEntry)
        XCTAssertEqual(StageFigures(entries: 10, rssBeforeTimelines: 5, rssAfterTimelines: 4).addedPerEntry, 0)
    }

    /// What a `--stages` child prints, the parent reads back whole (the old parse read one printed word).
    func testTheChildsLinesReadBack() {
        let f = StageFigures(entries: 1_082_221, rssBeforeTimelines: 268.2, rssAfterTimelines: 421.6, heapAfterTimelines: nil)
        let out = (["stages of analyze on x", "  timelines: 10624 peers, 24385 sessions, 1082221 entries"] + f.lines).joined(separator: "\n")
        XCTAssertEqual(StageFigures.parse(out), f)
        XCTAssertTrue(f.lines[0].contains("(1082221 entries): 149 B resident added by the timeline stage (the target reads this); after it 408 B resident, - B heap in use"),
                      f.lines[0])
        XCTAssertEqual(StageFigures.parse("cannot read x"), StageFigures())
    }
}

final class AnonPeakTests: XCTestCase {
    /// The peak keeps the highest sample; the heap is measured at the first sample and then only when the
    /// peak has risen by `heapStep` since, so it is the heap within that step of the peak.
    func testThePeakAndTheHeapAtIt() {
        var p = AnonPeak()
        var calls = 0
        func heap(_ h: Double) -> () -> Double? { { calls += 1; return h } }
        p.offer(anon: 70, heap: heap(22))
        XCTAssertEqual(p, AnonPeak(anon: 70, heap: 22, heapAt: 70))
        p.offer(anon: 69, heap: heap(99))           // not a new peak: nothing measured
        p.offer(anon: 70.5, heap: heap(99))         // a new peak, less than a step up: the heap is not measured
        XCTAssertEqual(p, AnonPeak(anon: 70.5, heap: 22, heapAt: 70))
        XCTAssertEqual(calls, 1)
        p.offer(anon: 71, heap: heap(60))           // a step above the last measure
        XCTAssertEqual(p, AnonPeak(anon: 71, heap: 60, heapAt: 71))
        p.offer(anon: 150, heap: { nil })           // no heap figure (not glibc): the last one stays
        XCTAssertEqual(p, AnonPeak(anon: 150, heap: 60, heapAt: 71))
        XCTAssertEqual(calls, 2)
    }

    func testRssAnonIsReadFromAStatusText() {
        func read(_ s: String) -> Int? { Array(s.utf8).withUnsafeBufferPointer { AnonSampler.rssAnonKiB($0) } }
        let status = "Name:\tpeerscope\nVmRSS:\t  184220 kB\nRssAnon:\t  152300 kB\nRssFile:\t   23980 kB\n"
        XCTAssertEqual(read(status), 152_300)
        XCTAssertNil(read("VmRSS:\t 1 kB\nXRssAnon:\t 5 kB\n"))
        XCTAssertNil(read("RssAnon:\t kB\n"))
        XCTAssertEqual(read("RssAnon: 7"), 7)
        #if os(Linux)
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 14)
        defer { buffer.deallocate() }
        XCTAssertGreaterThan(AnonSampler.anonNow(buffer) ?? 0, 0)
        #endif
    }
}

final class RuntimeLinkingTests: XCTestCase {
    func testRuntimeLinkingIsReadFromTheBinary() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bench-linking-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let url = dir.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            return url.path
        }
        let name = Array("libswiftCore.so".utf8)
        // The name split across the reader's 1 MiB chunks is still found.
        let split = [UInt8](repeating: 0x41, count: (1 << 20) - 6) + name + [0, 1, 2]
        XCTAssertEqual(RuntimeLinking.of(path: try file("split", split)), .shared)
        XCTAssertEqual(RuntimeLinking.of(path: try file("start", name)), .shared)
        // Most of the name is not the name; an empty file names nothing.
        let partial = [UInt8](repeating: 0x42, count: 3000) + Array("libswiftCore.s".utf8) + [0] + Array("ibswiftCore.so".utf8)
        XCTAssertEqual(RuntimeLinking.of(path: try file("partial", partial)), .embedded)
        XCTAssertEqual(RuntimeLinking.of(path: try file("empty", [])), .embedded)
        XCTAssertNil(RuntimeLinking.of(path: dir.appendingPathComponent("absent").path))
        #if os(Linux)
        // This test process is a debug build: it loads the shared runtime.
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            XCTAssertEqual(RuntimeLinking.of(path: exe), .shared)
        }
        #endif
    }
}
