// peerscope-bench: speed and memory of reading, decoding and analysing a large capture, with
// tcpdump and tshark on the same file for ratios measured in the same run. Build in release:
//   swift run -c release PeerscopeBench [--frames N] [--keep DIR]
import CPcap
import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeSimulator
import PeerscopeTimeline
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

var targetFrames = 2_000_000
var keepDir: String?
var stagesOf: String?
var args = CommandLine.arguments.dropFirst()
while let a = args.first {
    args = args.dropFirst()
    switch a {
    case "--frames": targetFrames = args.first.flatMap { Int($0) } ?? targetFrames; args = args.dropFirst()
    case "--keep": keepDir = args.first; args = args.dropFirst()
    case "--stages": stagesOf = args.first; args = args.dropFirst()
    case "--live":
        // Live capture: packets sent, seen and dropped per tool and rate (see LiveBench.swift).
        var rates = [10_000, 50_000, 100_000], copies = 10
        while let o = args.first, let v = args.dropFirst().first {
            if o == "--rates" { rates = v.split(separator: ",").compactMap { Int($0) } } else if o == "--copies" { copies = Int(v) ?? copies } else { break }
            args = args.dropFirst(2)
        }
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("peerscope").path
        exit(LiveBench.run(rates: rates, copies: copies, peerscope: bin, samples: FileManager.default.currentDirectoryPath + "/Samples"))
    default:
        print("usage: PeerscopeBench [--frames N] [--keep DIR] | --stages FILE | --live [--rates 10000,50000,100000] [--copies 10]")
        exit(2)
    }
}

/// Resident set size now, in MiB (Linux; nil elsewhere).
func currentRSS() -> Double? {
    #if os(Linux)
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let f = s.split(separator: " ")
    guard f.count > 1, let pages = Double(f[1]) else { return nil }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    #else
    return nil
    #endif
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Builds a classic pcap of at least `frames` frames from simulated 8-peer group sessions, each copy
/// with its own seed (its own peers) and shifted in time so the file is one long capture.
func makeCapture(path: String, frames: Int) throws -> (frames: Int, bytes: Int) {
    guard let out = FileHandle(forWritingAtPath: path) ?? {
        FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }() else { throw NSError(domain: "bench", code: 1) }
    var written = 0, bytes = 0, seed: UInt64 = 1
    var offset: Int64 = 0
    var header = true
    var buffer: [UInt8] = []
    while written < frames {
        let r = try Simulator.run("group-8", options: SimulationOptions(seed: seed, peers: 8, format: .pcap))
        let c = r.capture
        guard c.count > 24 else { break }
        if header { buffer.append(contentsOf: c[0 ..< 24]); header = false }
        var i = 24
        var lastT: Int64 = 0
        while i + 16 <= c.count {
            func u32(_ o: Int) -> UInt32 { UInt32(c[o]) | UInt32(c[o + 1]) << 8 | UInt32(c[o + 2]) << 16 | UInt32(c[o + 3]) << 24 }
            let sec = Int64(u32(i)), sub = Int64(u32(i + 4)), incl = Int(u32(i + 8))
            guard i + 16 + incl <= c.count else { break }
            // Classic pcap from the simulator is microsecond resolution.
            let t = sec * 1_000_000 + sub + offset
            lastT = max(lastT, t)
            let s = UInt32(truncatingIfNeeded: t / 1_000_000), us = UInt32(truncatingIfNeeded: t % 1_000_000)
            for v in [s, us] { buffer.append(contentsOf: [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]) }
            buffer.append(contentsOf: c[(i + 8) ..< (i + 16 + incl)])
            written += 1
            i += 16 + incl
        }
        // The next copy starts one second after this one ended (relative to the simulator's epoch).
        offset = lastT - Int64(simulationEpochNanos / 1000) + 1_000_000
        seed += 1
        if buffer.count > 8 << 20 { out.write(Data(buffer)); bytes += buffer.count; buffer.removeAll(keepingCapacity: true) }
    }
    out.write(Data(buffer)); bytes += buffer.count
    try out.close()
    return (written, bytes)
}

struct Measured {
    var seconds: Double
    var maxRSSKiB: Int
    var status: Int32
}

/// Runs a command with output to /dev/null and measures wall time and peak RSS of that child alone.
func measure(_ argv: [String], env: [String: String] = [:]) -> Measured? {
    var pid: pid_t = 0
    var fa = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fa)
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)
    var environment = ProcessInfo.processInfo.environment
    for (k, v) in env { environment[k] = v }
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    let cargs = argv.map { strdup($0) } + [nil]
    defer {
        for p in cargs { free(p) }
        for p in envp { free(p) }
        posix_spawn_file_actions_destroy(&fa)
    }
    let start = now()
    guard posix_spawnp(&pid, argv[0], &fa, nil, cargs, envp) == 0 else { return nil }
    var status: Int32 = 0
    var ru = rusage()
    #if os(Linux)
    // posix_spawn shares the parent's memory until exec, and Linux folds that into the child's
    // ru_maxrss: poll the child's own high-water mark (VmHWM, reset by exec) instead.
    var hwm = 0
    while true {
        if let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
            hwm = max(hwm, kib)
        }
        let r = wait4(pid, &status, WNOHANG, &ru)
        if r == pid { break }
        if r < 0 { return nil }
        usleep(5_000)
    }
    let elapsed = now() - start
    let rss = hwm                          // KiB
    #else
    guard wait4(pid, &status, 0, &ru) == pid else { return nil }
    let elapsed = now() - start
    let rss = Int(ru.ru_maxrss) / 1024     // bytes on macOS
    #endif
    return Measured(seconds: elapsed, maxRSSKiB: rss, status: (status >> 8) & 0xFF)
}

func which(_ tool: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(tool)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

func fmt(_ x: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", x) }

let dir = keepDir ?? (NSTemporaryDirectory() + "peerscope-bench-\(getpid())")
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
let big = dir + "/big.pcap", quarter = dir + "/quarter.pcap"
let peerscope = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("peerscope").path
guard FileManager.default.isExecutableFile(atPath: peerscope) else {
    print("build the peerscope binary first (swift build -c release --product peerscope)")
    exit(2)
}

/// In process, stage by stage: where an analysis spends its time and memory.
func stages(_ path: String) {
    func rss() -> String { currentRSS().map { fmt($0, 1) + " MiB" } ?? "-" }
    print("stages of analyze on \(path) (resident memory after each)")
    var t = now()
    let session = AnalysisSession(AnalysisOptions(captures: [path]))
    session.onStage = { stage in
        switch stage {
        case .decoded(let frames, let events, let folded):
            print("  engine: \(frames) frames -> \(events) events kept (\(folded) folded into runs) in \(fmt(now() - t, 2)) s; \(rss())")
        case .logsRead(let lines, let events):
            print("  logs: \(lines) lines -> \(events) events in \(fmt(now() - t, 2)) s; \(rss())")
        case .timelines(let peers, let sessions, let entries):
            print("  timelines: \(peers) peers, \(sessions) sessions, \(entries) entries in \(fmt(now() - t, 2)) s; \(rss())")
        case .findings(let n):
            print("  detectors: \(n) findings in \(fmt(now() - t, 2)) s; \(rss())")
        }
        t = now()
    }
    guard (try? session.finish()) != nil else { print("cannot read \(path)"); return }
}
if let stagesOf {
    stages(stagesOf)
    exit(0)
}

print("peerscope benchmark (\(ProcessInfo.processInfo.processorCount) cores)")
var t0 = now()
let (frames, bytes) = try makeCapture(path: big, frames: targetFrames)
let (qFrames, qBytes) = try makeCapture(path: quarter, frames: targetFrames / 4)
print("capture: \(frames) frames, \(fmt(Double(bytes) / 1e6, 1)) MB of simulated 8-peer sessions (made in \(fmt(now() - t0, 1)) s); quarter: \(qFrames) frames, \(fmt(Double(qBytes) / 1e6, 1)) MB")

// In-process: the bare reader.
t0 = now()
var n = 0
if let r = try? CaptureFileReader(path: big) { while r.next() != nil { n += 1 } }
let readSeconds = now() - t0
print("")
print(String(format: "%-34@ %9@ %12@ %10@ %12@", "step" as NSString, "seconds" as NSString, "frames/s" as NSString, "MB/s" as NSString, "peak RSS MiB" as NSString))
func row(_ name: String, _ s: Double, _ rss: Int?) {
    let fps = Double(frames) / s, mbs = Double(bytes) / 1e6 / s
    print(String(format: "%-34@ %9@ %12@ %10@ %12@", name as NSString, fmt(s, 3) as NSString, fmt(fps / 1e6, 2) + " M" as NSString,
                 fmt(mbs, 1) as NSString, (rss.map { fmt(Double($0) / 1024, 1) } ?? "-") as NSString))
}
row("read frames (in process)", readSeconds, nil)
// The same loop through libpcap, for a ratio that survives a busy machine.
do {
    var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
    let t1 = now()
    if let p = pcap_open_offline(big, &errbuf) {
        var hdr: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        var m = 0
        while pcap_next_ex(p, &hdr, &data) == 1 { m += 1 }
        pcap_close(p)
        let libpcapSeconds = now() - t1
        row("libpcap pcap_next_ex (in process)", libpcapSeconds, nil)
        print("  peerscope reader / libpcap (time): \(fmt(readSeconds / max(1e-9, libpcapSeconds))) (\(n) and \(m) frames)")
    }
}

var results: [String: Measured] = [:]
if let m = measure([peerscope, "decode", big]) { results["decode"] = m; row("peerscope decode (JSON Lines)", m.seconds, m.maxRSSKiB) }
if let m = measure([peerscope, "analyze", "--format", "json", "--output", "/dev/null", big]) {
    results["analyze"] = m
    row("peerscope analyze", m.seconds, m.maxRSSKiB)
}
if let tcpdump = which("tcpdump"), let m = measure([tcpdump, "-nr", big], env: ["TZ": "UTC"]) {
    results["tcpdump"] = m
    row("tcpdump -nr (text)", m.seconds, m.maxRSSKiB)
}
if let tshark = which("tshark"), let m = measure([tshark, "-r", quarter, "-T", "fields", "-e", "frame.number"]) {
    // tshark is slow: it reads the quarter file; scaled to the full file for the ratio.
    let scaled = Measured(seconds: m.seconds * Double(frames) / Double(max(1, qFrames)), maxRSSKiB: m.maxRSSKiB, status: m.status)
    results["tshark"] = scaled
    row("tshark -T fields (quarter, x\(fmt(Double(frames) / Double(max(1, qFrames)), 1)))", scaled.seconds, m.maxRSSKiB)
}
if let q = measure([peerscope, "analyze", "--format", "json", "--output", "/dev/null", quarter]), let full = results["analyze"] {
    print("")
    print("memory: analyze peak RSS \(fmt(Double(q.maxRSSKiB) / 1024, 1)) MiB on the quarter file, \(fmt(Double(full.maxRSSKiB) / 1024, 1)) MiB on the full one (x\(fmt(Double(full.maxRSSKiB) / Double(max(1, q.maxRSSKiB)), 2)) for x\(fmt(Double(frames) / Double(max(1, qFrames)), 1)) the frames)")
}
if let a = results["analyze"] {
    print("")
    print("ratios in this run (time):")
    if let t = results["tcpdump"] { print("  analyze / tcpdump -nr: \(fmt(a.seconds / t.seconds))") }
    if let t = results["tshark"] { print("  analyze / tshark -T fields: \(fmt(a.seconds / t.seconds, 3))") }
    if let d = results["decode"] { print("  decode / analyze: \(fmt(d.seconds / a.seconds))") }
}
// Memory over time: one healthy pair connected for days (the same two peers, one session), at a
// quarter and at the full frame count. Memory should follow the active peers and flows, not the
// length of the capture.
func makeLongSession(path: String, frames: Int) throws -> (frames: Int, hours: Double) {
    let probe = try Simulator.run("healthy-pair", options: SimulationOptions(seed: 1, format: .pcap, steadySeconds: 1000))
    let perSecond = Double(probe.frameCount) / 1000
    let seconds = max(1, Double(frames) / max(0.1, perSecond))
    let r = try Simulator.run("healthy-pair", options: SimulationOptions(seed: 1, format: .pcap, steadySeconds: seconds))
    try Data(r.capture).write(to: URL(fileURLWithPath: path))
    return (r.frameCount, seconds / 3600)
}
let longFull = dir + "/long.pcap", longQuarter = dir + "/long-quarter.pcap"
if let (lf, hours) = try? makeLongSession(path: longFull, frames: targetFrames),
   let (lq, qHours) = try? makeLongSession(path: longQuarter, frames: targetFrames / 4),
   let mq = measure([peerscope, "analyze", "--format", "json", "--output", "/dev/null", longQuarter]),
   let mf = measure([peerscope, "analyze", "--format", "json", "--output", "/dev/null", longFull]) {
    print("")
    print("long session (one healthy pair, keep-alives every 2 s):")
    print("  \(lq) frames (\(fmt(qHours, 1)) h): analyze \(fmt(mq.seconds, 2)) s, peak RSS \(fmt(Double(mq.maxRSSKiB) / 1024, 1)) MiB")
    print("  \(lf) frames (\(fmt(hours, 1)) h): analyze \(fmt(mf.seconds, 2)) s, peak RSS \(fmt(Double(mf.maxRSSKiB) / 1024, 1)) MiB")
    print("  memory x\(fmt(Double(mf.maxRSSKiB) / Double(max(1, mq.maxRSSKiB)), 2)) for x\(fmt(Double(lf) / Double(max(1, lq)), 1)) the frames")
}

if keepDir == nil { try? FileManager.default.removeItem(atPath: dir) }
