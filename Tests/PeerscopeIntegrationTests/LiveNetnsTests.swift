import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Two network namespaces joined by veth pairs: traffic replayed into one side with tcpreplay is
/// captured on the far side. IPv6 is off in both so the kernel adds nothing of its own; no addresses
/// are configured, so nothing answers. Removed (with its veth pairs) when the test ends.
final class NetnsLab: @unchecked Sendable {
    let a: String
    let b: String
    let pairs: Int

    /// Skips unless this is Linux, as root, with `ip` and `tcpreplay`.
    static func require() throws {
        #if !os(Linux)
        throw XCTSkip("network namespaces are Linux only")
        #else
        guard geteuid() == 0 else { throw XCTSkip("network namespaces need root (CI runs as root)") }
        for tool in ["ip", "tcpreplay"] where which(tool) == nil {
            throw XCTSkip("\(tool) is not installed (Scripts/setup installs it)")
        }
        #endif
    }

    static func which(_ tool: String) -> String? {
        for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"] {
            let p = dir + "/" + tool
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs a tool to completion; returns (status, stdout + stderr).
    @discardableResult
    static func sh(_ args: [String]) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: which(args[0]) ?? args[0])
        p.arguments = Array(args.dropFirst())
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Interface `i` on the sending (A) and capturing (B) side.
    func sender(_ i: Int) -> String { "psa\(i)" }
    func receiver(_ i: Int) -> String { "psb\(i)" }

    init(pairs: Int = 1) throws {
        try NetnsLab.require()
        let tag = "\(getpid() % 100_000)-\(UInt32.random(in: 0 ..< 100_000))"
        a = "ps-a-\(tag)"
        b = "ps-b-\(tag)"
        self.pairs = pairs
        for ns in [a, b] {
            let (rc, out) = try NetnsLab.sh(["ip", "netns", "add", ns])
            guard rc == 0 else { throw XCTSkip("cannot create a network namespace here: \(out)") }
            try NetnsLab.sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
            try NetnsLab.sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        }
        for i in 0 ..< pairs {
            for cmd in [["ip", "link", "add", sender(i), "netns", a, "type", "veth", "peer", "name", receiver(i), "netns", b],
                        ["ip", "-n", a, "link", "set", sender(i), "up"], ["ip", "-n", b, "link", "set", receiver(i), "up"]] {
                let (rc, out) = try NetnsLab.sh(cmd)
                guard rc == 0 else {
                    cleanup()
                    throw XCTSkip("cannot set up veth pairs here (\(cmd.joined(separator: " "))): \(out)")
                }
            }
        }
    }

    deinit { cleanup() }

    func cleanup() {
        _ = try? NetnsLab.sh(["ip", "netns", "del", a])
        _ = try? NetnsLab.sh(["ip", "netns", "del", b])
    }

    /// Replays `file` into pair `i` at full speed (or `pps` packets/s, or at the pace it was
    /// captured); returns packets sent and
    /// the rate tcpreplay reports.
    func replay(_ file: String, pair i: Int = 0, pps: Int? = nil, asCaptured: Bool = false) throws -> (sent: Int, pps: Double) {
        let speed = asCaptured ? [] : pps.map { ["--pps=\($0)"] } ?? ["--topspeed"]
        let (rc, out) = try NetnsLab.sh(["ip", "netns", "exec", a, "tcpreplay", "-q", "--preload-pcap"] + speed + ["-i", sender(i), file])
        XCTAssertEqual(rc, 0, out)
        return (NetnsLab.number(after: "Successful packets:", in: out), NetnsLab.rate(out))
    }

    static func number(after label: String, in text: String) -> Int {
        guard let r = text.range(of: label) else { return -1 }
        return Int(text[r.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }) ?? -1
    }

    /// `Rated: 1234.5 Bps, 0.01 Mbps, 56789.01 pps` -> 56789.01
    static func rate(_ text: String) -> Double {
        guard let line = text.split(separator: "\n").first(where: { $0.contains("Rated:") }),
              let pps = line.split(separator: ",").last?.split(separator: " ").first else { return 0 }
        return Double(pps) ?? 0
    }
}

/// A `peerscope capture` running in a namespace, its outputs in a temporary folder.
final class LiveRun {
    let process = Process()
    let dir: URL
    let report: URL
    let pcapng: URL
    let errURL: URL
    let outURL: URL

    init(lab: NetnsLab, interfaces: [String], extra: [String], write: String? = nil) throws {
        let bin = try CLI.requireBinary()
        dir = try CLI.tempDir()
        report = dir.appendingPathComponent("live.json")
        pcapng = dir.appendingPathComponent("live.pcapng")
        errURL = dir.appendingPathComponent("stderr")
        outURL = dir.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: NetnsLab.which("ip") ?? "/usr/sbin/ip")
        process.arguments = ["netns", "exec", lab.b, bin.path, "capture"] + interfaces.flatMap { ["-i", $0] }
            + ["--filter", "", "--format", "json", "--output", report.path, "--write", write ?? pcapng.path] + extra
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let ready = Date().addingTimeInterval(20)
        while Date() < ready, process.isRunning, !stderr.contains("capturing on") { usleep(20_000) }
        usleep(200_000)
    }

    var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// Waits for the capture to end (killing it after `timeout` s); returns its exit status.
    func wait(timeout: TimeInterval = 120) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            XCTFail("capture did not stop within \(timeout) s: \(stderr)")
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends `signal` to peerscope itself (the child of `ip netns exec`, which execs it: same pid).
    func signal(_ s: Int32) { kill(process.processIdentifier, s) }

    func json() throws -> JSONValue { try JSONParser.parse(String(contentsOf: report, encoding: .utf8)) }

    deinit { try? FileManager.default.removeItem(at: dir) }
}

final class LiveNetnsTests: XCTestCase {
    var samples: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: Place.samples.path)) ?? [])
            .filter { $0.hasSuffix(".pcapng") }.sorted().map { Place.samples.appendingPathComponent($0).path }
    }

    /// Every sample capture, as Ethernet, concatenated `copies` times.
    func replayFile(_ paths: [String], copies: Int, in dir: URL, name: String = "replay") throws -> (String, Int) {
        let f = dir.appendingPathComponent("\(name)-\(copies).pcap").path
        let n = try ReplayFile.write(paths: paths, copies: copies, to: f)
        return (f, n)
    }

    /// The frames of a capture file, bytes only, in order.
    func frameBytes(_ path: String) throws -> [[UInt8]] {
        let r = try CaptureFileReader(path: path)
        var out: [[UInt8]] = []
        while let f = r.next() { out.append(f.data.array) }
        return out
    }

    /// Asserts the live report tells what `peerscope analyze` tells of the file the capture wrote.
    func assertLiveMatchesAnalyze(_ run: LiveRun, file: StaticString = #filePath, line: UInt = #line) throws {
        let live = try run.json()
        let offline = try CLI.run(["analyze", "--format", "json", run.pcapng.path])
        XCTAssertEqual(offline.status, 0, offline.stderr, file: file, line: line)
        let analyzed = try JSONParser.parse(offline.stdout)
        for key in ["peers", "sessions", "findings", "discovery"] {
            XCTAssertEqual(live[key], analyzed[key], "live \(key) differ from analyze of the written file", file: file, line: line)
        }
        XCTAssertEqual(live["stats"]?["frames"], analyzed["stats"]?["frames"], file: file, line: line)
    }

    func interfaces(_ report: JSONValue) -> [JSONValue] { report["stats"]?["capture"]?["interfaces"]?.arrayValue ?? [] }

    /// The loss windows of the capture itself (drops), from `captureLosses`; the other kinds (TCP data
    /// never seen, one-sided flows) come from the analysis of what was captured.
    /// A loss window's members that schema 1's copy (`stats.capture.losses`) repeats.
    func windowMembers(_ windows: [JSONValue]) -> [[JSONValue?]] {
        windows.map { w in ["reason", "startT", "endT", "count", "source"].map { w[$0] } }
    }

    func liveLosses(_ report: JSONValue) -> [JSONValue] {
        (report["captureLosses"]?.arrayValue ?? []).filter { ["kernel-drop", "interface-drop", "queue-drop"].contains($0["reason"]?.stringValue ?? "") }
    }

    func testEverySampleTenTimesAtFullSpeedIsCapturedWithoutLoss() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, frames) = try replayFile(samples, copies: 10, in: dir)
        XCTAssertGreaterThan(frames, 10_000)
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--count", "\(frames)", "--duration", "90"])
        let (sent, pps) = try lab.replay(file)
        XCTAssertEqual(sent, frames)
        // A burst, not a trickle: tcpreplay --topspeed reaches 50k-100k packets/s here when the machine is idle, and
        // fell to 48.7k once under a load of 14 (its own send rate, not the capture's), so the floor leaves room for load.
        XCTAssertGreaterThanOrEqual(pps, 25_000, "tcpreplay --topspeed reached only \(pps) packets/s")
        XCTAssertEqual(run.wait(), 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("stopped (count) after \(frames) packet(s); \(lab.receiver(0)): \(frames) received, 0 dropped by the kernel, 0 by the interface, 0 at the queue"), run.stderr)

        let report = try run.json()
        XCTAssertEqual(report["complete"], .bool(true))
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, Int64(frames))
        XCTAssertEqual(report["stats"]?["capture"]?["lost"]?.int64Value, 0)
        XCTAssertEqual(liveLosses(report).count, 0)
        XCTAssertEqual(interfaces(report).first?["received"]?.int64Value, Int64(frames))
        // The capture holds exactly the bytes sent, in order, and the live analysis equals the offline one.
        XCTAssertEqual(try frameBytes(run.pcapng.path), try frameBytes(file))
        try assertLiveMatchesAnalyze(run)
        let peers = try run.json()["peers"]?.arrayValue?.count ?? 0
        XCTAssertGreaterThan(peers, 10, "the samples' peers are in the live report")
    }

    /// Every sample 10 times, sent while the capture (256 KiB buffer) is stopped: most is dropped.
    func burst(_ lab: NetnsLab) throws -> (run: LiveRun, sent: Int) {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, frames) = try replayFile(samples, copies: 10, in: dir)
        // A 256 KiB buffer and a reader that is not running while a ~3 MB burst arrives.
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["-B", "256K", "--duration", "60"])
        run.signal(SIGSTOP)
        let (sent, _) = try lab.replay(file)
        run.signal(SIGCONT)
        usleep(1_500_000)
        run.signal(SIGINT)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        XCTAssertEqual(sent, frames)
        return (run, sent)
    }

    func testBurstLargerThanTheBufferIsReportedAsLoss() throws {
        let lab = try NetnsLab()
        let (run, sent) = try burst(lab)
        let report = try run.json()
        XCTAssertEqual(report["complete"], .bool(false))
        XCTAssertEqual(report["stats"]?["capture"]?["complete"], .bool(false))
        XCTAssertEqual(report["stats"]?["capture"]?["stopReason"], .string("interrupt"))
        let i = try XCTUnwrap(interfaces(report).first)
        let received = i["received"]?.int64Value ?? -1, dropped = i["kernelDropped"]?.int64Value ?? -1
        XCTAssertGreaterThan(dropped, 0)
        // Every packet sent is accounted for: received or dropped by the kernel.
        XCTAssertEqual(received + dropped, Int64(sent), "\(i)")
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, received)
        // The loss windows are in `captureLosses`, with the capture's own reasons.
        let losses = liveLosses(report)
        // `stats.capture.losses` (schema 1's copy) repeats exactly those windows.
        XCTAssertEqual(windowMembers(report["stats"]?["capture"]?["losses"]?.arrayValue ?? []), windowMembers(losses))
        XCTAssertEqual(losses.compactMap { $0["count"]?.int64Value }.reduce(0, +), dropped)
        XCTAssertTrue(losses.allSatisfy { $0["reason"] == .string("kernel-drop") && $0["source"] == .string(lab.receiver(0)) }, "\(losses)")
        XCTAssertTrue(run.stderr.contains("\(dropped) dropped by the kernel"), run.stderr)
        XCTAssertTrue((report["inputProblems"]?.arrayValue ?? []).contains { $0.stringValue?.contains("dropped by the kernel") == true })
        // The lossy interface is printed once on standard error (the final line), not again as a note.
        XCTAssertEqual(run.stderr.components(separatedBy: "\(lab.receiver(0)): \(received) received").count - 1, 1, run.stderr)
    }

    func testFullQueueDropsAreCountedAndLocated() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, frames) = try replayFile(samples, copies: 2, in: dir)
        // The analysis can take one packet at a time: a burst overflows the queue, not the kernel.
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--queue-packets", "1", "--duration", "60"])
        run.signal(SIGSTOP)
        _ = try lab.replay(file)
        run.signal(SIGCONT)
        usleep(1_500_000)
        run.signal(SIGTERM)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let report = try run.json()
        let i = try XCTUnwrap(interfaces(report).first)
        let received = i["received"]?.int64Value ?? -1, queued = i["queueDropped"]?.int64Value ?? -1
        XCTAssertEqual(i["kernelDropped"]?.int64Value, 0)
        XCTAssertEqual(received, Int64(frames))
        XCTAssertGreaterThan(queued, 0)
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, received - queued)
        XCTAssertEqual(report["complete"], .bool(false))
        let losses = liveLosses(report)
        // `stats.capture.losses` (schema 1's copy) repeats exactly those windows.
        XCTAssertEqual(windowMembers(report["stats"]?["capture"]?["losses"]?.arrayValue ?? []), windowMembers(losses))
        XCTAssertFalse(losses.isEmpty)
        XCTAssertEqual(losses.compactMap { $0["count"]?.int64Value }.reduce(0, +), queued)
        XCTAssertTrue(losses.allSatisfy { $0["reason"] == .string("queue-drop") })
        XCTAssertEqual(run.stderr.components(separatedBy: "\(queued) at the queue").count - 1, 1, run.stderr)
    }

    func testFindingsDuringALossAreUncertain() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Bob's keep-alives stop at about 12.5 s and the 6 s monitor fires at 18.6 s. At 14 s, with
        // the capture stopped, a burst of other traffic overflows its 256 KiB buffer: packets are
        // lost inside the silence, so the timeout rests on silence the capture may not have seen.
        let (quiet, _) = try replayFile([Place.samples.appendingPathComponent("keepalive-timeout.pcapng").path], copies: 1, in: dir, name: "quiet")
        let (noise, _) = try replayFile([Place.samples.appendingPathComponent("group-8.pcapng").path], copies: 10, in: dir, name: "noise")
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["-B", "256K", "--duration", "60"])
        let paced = Thread { _ = try? lab.replay(quiet, asCaptured: true) }
        paced.start()
        usleep(14_000_000)
        run.signal(SIGSTOP)
        _ = try lab.replay(noise)
        run.signal(SIGCONT)
        while !paced.isFinished { usleep(50_000) }
        usleep(500_000)
        run.signal(SIGINT)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let report = try run.json()
        XCTAssertEqual(report["complete"], .bool(false))
        XCTAssertGreaterThan(interfaces(report).first?["kernelDropped"]?.int64Value ?? 0, 0)
        let findings = report["findings"]?.arrayValue ?? []
        let timeout = try XCTUnwrap(findings.first { $0["kind"] == .string("keepalive-timeout") && $0["peer"] == .string("Bob's iPad") },
                                    "\(findings.map { "\($0["kind"] ?? .null) \($0["peer"] ?? .null)" })")
        XCTAssertEqual(timeout["confidence"], .string("uncertain"), "\(timeout)")
        let caveats = (timeout["caveats"]?.arrayValue ?? []).compactMap(\.stringValue)
        XCTAssertFalse(caveats.isEmpty)
        XCTAssertTrue(caveats.contains { $0.contains(lab.receiver(0)) }, "\(caveats)")
        // Findings that rest on what was seen, not on silence, stay certain.
        XCTAssertTrue(findings.filter { $0["kind"] == .string("duplicate-connection") }.allSatisfy { $0["confidence"] != .string("uncertain") })
    }

    func testTwoInterfacesInOneRunMergeIntoOneReportAndOnePcapng() throws {
        let lab = try NetnsLab(pairs: 2)
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // group-8 has the Wi-Fi LAN (Linux cooked) and AWDL (Ethernet): one on each pair.
        let group = Place.samples.appendingPathComponent("group-8.pcapng").path
        let r = try CaptureFileReader(path: group)
        var lan: [RawFrame] = [], awdl: [RawFrame] = []
        while let f = r.next() { if f.info.linkType == LinkType.linuxSLL { lan.append(f) } else { awdl.append(f) } }
        XCTAssertFalse(lan.isEmpty)
        XCTAssertFalse(awdl.isEmpty)
        var files: [String] = []
        for (name, part) in [("lan", lan), ("awdl", awdl)] {
            let w = try PcapngWriter(path: dir.appendingPathComponent("\(name).pcapng").path)
            for f in part { try w.write(f) }
            try w.close()
            let (f, _) = try replayFile([w.path], copies: 1, in: dir, name: name)
            files.append(f)
        }
        let total = lan.count + awdl.count
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0), lab.receiver(1)], extra: ["--count", "\(total)", "--duration", "60"])
        // Both at once, 2,000 packets/s each.
        let second = files[1]
        let other = Thread { _ = try? lab.replay(second, pair: 1, pps: 2000) }
        other.start()
        _ = try lab.replay(files[0], pair: 0, pps: 2000)
        while !other.isFinished { usleep(10_000) }
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let report = try run.json()
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, Int64(total))
        XCTAssertEqual(interfaces(report).map { $0["interface"]?.stringValue ?? "" }, [lab.receiver(0), lab.receiver(1)])
        XCTAssertEqual(interfaces(report).map { $0["received"]?.int64Value ?? -1 }, [Int64(lan.count), Int64(awdl.count)])
        XCTAssertEqual(report["complete"], .bool(true))
        // One pcapng, two interface blocks, frames in time order; tshark reads it.
        let written = try CaptureFileReader(path: run.pcapng.path)
        var times: [Nanos] = [], names: Set<String> = []
        while let f = written.next() {
            times.append(f.info.t)
            names.insert(f.info.interfaceName ?? "")
        }
        XCTAssertEqual(times.count, total)
        XCTAssertEqual(times, times.sorted(), "frames merged by capture time")
        XCTAssertEqual(names, [lab.receiver(0), lab.receiver(1)])
        if let tshark = NetnsLab.which("tshark") {
            let (rc, out) = try NetnsLab.sh([tshark, "-r", run.pcapng.path, "-T", "fields", "-e", "frame.interface_name"])
            XCTAssertEqual(rc, 0, out)
            let lines = out.split(separator: "\n").filter { !$0.contains("Running as user") }
            XCTAssertEqual(lines.count, total)
            XCTAssertEqual(Set(lines.map(String.init)), [lab.receiver(0), lab.receiver(1)])
            if let capinfos = NetnsLab.which("capinfos") {
                let (_, info) = try NetnsLab.sh([capinfos, run.pcapng.path])
                XCTAssertTrue(info.contains("Number of interfaces in file: 2"), info)
            }
        }
        try assertLiveMatchesAnalyze(run)
        XCTAssertGreaterThanOrEqual(report["peers"]?.arrayValue?.count ?? 0, 8)
    }

    /// Starts a capture, sends a little traffic, ends it with `stop`; returns the run for checks.
    func stopped(by stop: (NetnsLab, LiveRun) throws -> Void) throws -> (LiveRun, Int32, NetnsLab) {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, _) = try replayFile([Place.samples.appendingPathComponent("healthy-pair.pcapng").path], copies: 1, in: dir)
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--duration", "60"])
        _ = try lab.replay(file)
        usleep(500_000)
        try stop(lab, run)
        return (run, run.wait(timeout: 30), lab)
    }

    /// The report is written and the pcapng is whole: tshark reads every frame the report counts.
    func assertCleanStop(_ run: LiveRun, reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(run.stderr.contains("stopped (\(reason)) after"), run.stderr, file: file, line: line)
        let report = try run.json()
        XCTAssertEqual(report["stats"]?["capture"]?["stopReason"], .string(reason), file: file, line: line)
        let frames = report["stats"]?["frames"]?.int64Value ?? -1
        XCTAssertGreaterThan(frames, 50, file: file, line: line)
        XCTAssertEqual(Int64(try frameBytes(run.pcapng.path).count), frames, file: file, line: line)
        if let tshark = NetnsLab.which("tshark") {
            let (rc, out) = try NetnsLab.sh([tshark, "-r", run.pcapng.path, "-T", "fields", "-e", "frame.number"])
            XCTAssertEqual(rc, 0, out, file: file, line: line)
            XCTAssertFalse(out.contains("appears to have been cut short"), out, file: file, line: line)
            XCTAssertEqual(out.split(separator: "\n").filter { !$0.contains("Running as user") }.count, Int(frames), file: file, line: line)
        }
    }

    func testSIGINTStopsCleanly() throws {
        let (run, status, _) = try stopped { _, run in run.signal(SIGINT) }
        XCTAssertEqual(status, 0, run.stderr)
        try assertCleanStop(run, reason: "interrupt")
        XCTAssertEqual(try run.json()["complete"], .bool(true))
    }

    func testSIGTERMStopsCleanly() throws {
        let (run, status, _) = try stopped { _, run in run.signal(SIGTERM) }
        XCTAssertEqual(status, 0, run.stderr)
        try assertCleanStop(run, reason: "terminate")
    }

    func testDeletingTheInterfaceStopsCleanly() throws {
        let (run, status, _) = try stopped { lab, _ in
            let (rc, out) = try NetnsLab.sh(["ip", "-n", lab.b, "link", "del", lab.receiver(0)])
            XCTAssertEqual(rc, 0, out)
        }
        XCTAssertEqual(status, 3, run.stderr)
        try assertCleanStop(run, reason: "interface-gone")
        let report = try run.json()
        XCTAssertEqual(report["complete"], .bool(false))
        XCTAssertEqual(interfaces(report).first?["ended"]?.stringValue?.hasPrefix("interface deleted"), true, "\(interfaces(report))")
    }

    func testLinkDownStopsCleanly() throws {
        let (run, status, _) = try stopped { lab, _ in
            let (rc, out) = try NetnsLab.sh(["ip", "-n", lab.b, "link", "set", lab.receiver(0), "down"])
            XCTAssertEqual(rc, 0, out)
        }
        XCTAssertEqual(status, 3, run.stderr)
        try assertCleanStop(run, reason: "interface-gone")
        XCTAssertEqual(interfaces(try run.json()).first?["ended"]?.stringValue?.hasPrefix("interface went down"), true, run.stderr)
    }

    /// SIGKILL cannot be caught: a capture killed mid-write leaves its `.NAME.peerscope-XXXXXX` file,
    /// the only copy of its frames. The next run onto the same output (even one that then fails) keeps
    /// it under a visible name, `STEM.recovered-XXXXXX.pcapng`, readable up to its last complete
    /// block, says so on standard error, and leaves the user's files alone.
    func testTheNextRunKeepsTheFramesOfASIGKILLedCaptureUnderAVisibleName() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, _) = try replayFile([Place.samples.appendingPathComponent("healthy-pair.pcapng").path], copies: 1, in: dir)
        let killed = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--duration", "60"])
        // The user's own files beside the output, including one whose name only resembles a temporary file.
        let userFiles = ["notes.txt", "live.pcapng.bak", ".live.pcapng.peerscope-old.txt", ".other.pcapng.peerscope-Ab12Cd"]
        for (i, name) in userFiles.enumerated() {
            try Data("user file \(i)\n".utf8).write(to: killed.dir.appendingPathComponent(name))
        }
        func temporaries() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: killed.dir.path)) ?? []).filter { $0.hasPrefix(".live.pcapng.peerscope-") && $0.count == 29 }
        }
        _ = try lab.replay(file)
        // Mid-write: frames are in the temporary file (flushed about every second).
        let until = Date().addingTimeInterval(10)
        var size = 0
        while Date() < until, size < 1000 {
            usleep(100_000)
            size = temporaries().first.flatMap { try? FileManager.default.attributesOfItem(atPath: killed.dir.appendingPathComponent($0).path)[.size] as? Int } ?? 0
        }
        XCTAssertGreaterThan(size, 1000, "frames reached the temporary file")
        killed.signal(SIGKILL)
        XCTAssertEqual(killed.wait(timeout: 30), SIGKILL, killed.stderr)
        XCTAssertEqual(temporaries().count, 1, "a SIGKILLed run leaves its temporary file")
        XCTAssertFalse(FileManager.default.fileExists(atPath: killed.pcapng.path))
        let temporary = try XCTUnwrap(temporaries().first)
        let frozen = try Data(contentsOf: killed.dir.appendingPathComponent(temporary))
        let recovered = killed.dir.appendingPathComponent("live.recovered-\(temporary.suffix(6)).pcapng")

        // The next run onto the same output, which then fails (no such interface): the frames are kept.
        let failing = try CLI.run(["capture", "-i", "peerscope-nosuch0", "--write", killed.pcapng.path, "--duration", "1"])
        XCTAssertNotEqual(failing.status, 0, failing.stderr)
        XCTAssertTrue(failing.stderr.contains("recovered \(recovered.path)") && failing.stderr.contains("ended without finishing"), failing.stderr)
        XCTAssertEqual(temporaries(), [], "the dead run's temporary file was renamed")
        XCTAssertEqual(try Data(contentsOf: recovered), frozen, "the recovered file is the temporary file, byte for byte")
        // Readable up to its last complete block: by peerscope, and by Wireshark's tools when installed.
        let frames = try frameBytes(recovered.path)
        XCTAssertGreaterThan(frames.count, 0)
        let analyzed = try CLI.run(["analyze", "--format", "json", recovered.path])
        XCTAssertEqual(analyzed.status, 0, analyzed.stderr)
        XCTAssertEqual(try JSONParser.parse(analyzed.stdout)["stats"]?["frames"]?.int64Value, Int64(frames.count))
        for tool in ["/usr/bin/capinfos", "/usr/bin/tshark"] where FileManager.default.isExecutableFile(atPath: tool) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: tool)
            p.arguments = tool.hasSuffix("capinfos") ? ["-c", "-M", recovered.path] : ["-r", recovered.path, "-T", "fields", "-e", "frame.number"]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if tool.hasSuffix("capinfos") {
                XCTAssertTrue(text.contains("Number of packets:") && text.contains("\(frames.count)"), text)
            } else {
                XCTAssertEqual(text.split(separator: "\n").count, frames.count, text)
            }
        }

        // The run after that (nothing left to recover) captures normally.
        let next = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--duration", "1"], write: killed.pcapng.path)
        XCTAssertEqual(next.wait(timeout: 30), 0, next.stderr)
        XCTAssertFalse(next.stderr.contains("recovered"), next.stderr)
        XCTAssertEqual(temporaries(), [])
        XCTAssertEqual(try Data(contentsOf: recovered), frozen)
        XCTAssertTrue(FileManager.default.fileExists(atPath: killed.pcapng.path), "the next run's capture is in place")
        for (i, name) in userFiles.enumerated() {
            XCTAssertEqual(try String(contentsOf: killed.dir.appendingPathComponent(name), encoding: .utf8), "user file \(i)\n", name)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: killed.dir.path).sorted()
        XCTAssertEqual(left, (userFiles + ["live.pcapng", recovered.lastPathComponent, "stderr", "stdout"]).sorted())
    }

    func testAnyInterfaceOnLinux() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, frames) = try replayFile([Place.samples.appendingPathComponent("healthy-pair.pcapng").path], copies: 1, in: dir)
        let run = try LiveRun(lab: lab, interfaces: ["any"], extra: ["--count", "\(frames)", "--duration", "30"])
        _ = try lab.replay(file)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let report = try run.json()
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, Int64(frames))
        let linkTypes = (report["stats"]?["linkTypes"]?.objectValue ?? []).map(\.0)
        XCTAssertTrue(linkTypes.allSatisfy { $0.hasPrefix("LINUX_SLL") }, "\(linkTypes)")
        // The same peers as when the interface itself is captured.
        let offline = try CLI.run(["analyze", "--format", "json", file])
        let names = { (r: JSONValue) in Set((r["peers"]?.arrayValue ?? []).compactMap { $0["displayName"]?.stringValue }) }
        XCTAssertEqual(names(report), names(try JSONParser.parse(offline.stdout)))
        XCTAssertFalse(names(report).isEmpty)
    }

    func testFollowPrintsFindingsAndPeersWhileCapturing() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, _) = try replayFile([Place.samples.appendingPathComponent("channel-error-reset.pcapng").path], copies: 1, in: dir)
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)], extra: ["--follow", "--duration", "60"])
        _ = try lab.replay(file)
        // The finding is printed while the capture still runs, not only in the final report.
        var lines: [JSONValue] = []
        let until = Date().addingTimeInterval(15)
        while Date() < until, !lines.contains(where: { $0["type"] == .string("finding") }) {
            usleep(100_000)
            let text = (try? String(contentsOf: run.outURL, encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
        }
        XCTAssertTrue(run.process.isRunning, "still capturing")
        let followed = lines.filter { $0["type"] == .string("finding") }
        XCTAssertFalse(followed.isEmpty, "no finding printed while capturing: \(lines)")
        run.signal(SIGINT)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let all = try String(contentsOf: run.outURL, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
        XCTAssertTrue(all.allSatisfy { ["finding", "peer-appeared", "peer-left"].contains($0["type"]?.stringValue ?? "") }, "\(all)")
        let report = try run.json()
        let keys = Set((report["findings"]?.arrayValue ?? []).compactMap { $0["key"]?.stringValue })
        let followedKeys = all.filter { $0["type"] == .string("finding") }.compactMap { $0["key"]?.stringValue }
        XCTAssertEqual(Set(followedKeys).count, followedKeys.count, "each finding printed once")
        XCTAssertTrue(Set(followedKeys).isSubset(of: keys), "\(followedKeys) vs \(keys)")
        XCTAssertTrue(followedKeys.contains { $0.hasPrefix("channel-error") }, "\(followedKeys)")
        let appeared = all.filter { $0["type"] == .string("peer-appeared") }.count
        XCTAssertEqual(appeared, report["peers"]?.arrayValue?.count)
    }

    func testRingRotatesTheWrittenCapture() throws {
        let lab = try NetnsLab()
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, frames) = try replayFile(samples, copies: 10, in: dir)
        let base = dir.appendingPathComponent("ring.pcapng").path
        let run = try LiveRun(lab: lab, interfaces: [lab.receiver(0)],
                              extra: ["--count", "\(frames)", "--duration", "60", "--ring", "2:1"], write: base)
        _ = try lab.replay(file)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        // ~3.5 MB through 1 MiB files: only the newest two are kept, each whole, with later frames.
        let kept = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("ring_") }.sorted()
        XCTAssertEqual(kept.count, 2, "\(kept)")
        let all = try frameBytes(file)
        var seen: [[UInt8]] = []
        for name in kept {
            XCTAssertNotNil(name.range(of: #"^ring_\d{5}_\d{14}\.pcapng$"#, options: .regularExpression), name)
            seen += try frameBytes(dir.appendingPathComponent(name).path)
            if let tshark = NetnsLab.which("tshark") {
                let (rc, out) = try NetnsLab.sh([tshark, "-r", dir.appendingPathComponent(name).path, "-T", "fields", "-e", "frame.number"])
                XCTAssertEqual(rc, 0, out)
            }
        }
        XCTAssertGreaterThan(seen.count, 1000)
        XCTAssertLessThan(seen.count, frames)
        XCTAssertEqual(seen, Array(all.suffix(seen.count)), "the kept files hold the last frames, in order")
    }
}
