// `PeerscopeBench --live [--rates 10000,50000,100000] [--copies 10]` (Linux, as root, with ip and
// tcpreplay): packets sent, seen and dropped by `tcpdump -w`, `dumpcap -w` (when installed) and
// `peerscope capture`, one after another in the same run, on a veth pair between two network
// namespaces, with every `Samples/` capture (as Ethernet) concatenated `copies` times replayed at
// each rate and at full speed. Also peerscope with libpcap's old defaults (immediate mode, 2 MiB
// buffer) to show why they changed. Build in release: `swift build -c release`.
import Foundation
import PeerscopeCapture
import PeerscopeCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum LiveBench {
    struct Row {
        var tool: String
        var rate: String
        var sent: Int
        var achieved: Double
        var seen: Int
        var dropped: String
    }

    @discardableResult
    static func sh(_ args: [String]) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: which(args[0]) ?? args[0])
        p.arguments = Array(args.dropFirst())
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Starts `args` in namespace `ns`, its standard error in `errPath`.
    static func start(ns: String, _ args: [String], errPath: String) -> Process? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: which("ip") ?? "/usr/sbin/ip")
        p.arguments = ["netns", "exec", ns] + args
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: errPath)
        p.standardOutput = FileHandle.nullDevice
        do { try p.run() } catch { return nil }
        return p
    }

    static func frames(in path: String) -> Int {
        guard let r = try? CaptureFileReader(path: path) else { return 0 }
        var n = 0
        while r.next() != nil { n += 1 }
        return n
    }

    static func run(rates: [Int], copies: Int, peerscope: String, samples: String) -> Int32 {
        guard geteuid() == 0, which("ip") != nil, which("tcpreplay") != nil else {
            print("live bench: needs root, ip and tcpreplay")
            return 2
        }
        let dir = NSTemporaryDirectory() + "peerscope-livebench-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let inputs = ((try? FileManager.default.contentsOfDirectory(atPath: samples)) ?? []).filter { $0.hasSuffix(".pcapng") }.sorted()
            .map { "\(samples)/\($0)" }
        let replay = "\(dir)/replay.pcap"
        guard let total = try? ReplayFile.write(paths: inputs, copies: copies, to: replay) else {
            print("live bench: cannot build the replay file from \(samples)")
            return 2
        }
        let a = "psbench-a", b = "psbench-b"
        sh(["ip", "netns", "del", a]); sh(["ip", "netns", "del", b])
        for ns in [a, b] {
            sh(["ip", "netns", "add", ns])
            sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
            sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        }
        defer { sh(["ip", "netns", "del", a]); sh(["ip", "netns", "del", b]) }
        sh(["ip", "link", "add", "psbench0", "netns", a, "type", "veth", "peer", "name", "psbench1", "netns", b])
        sh(["ip", "-n", a, "link", "set", "psbench0", "up"])
        sh(["ip", "-n", b, "link", "set", "psbench1", "up"])

        var tools: [(String, (String) -> [String])] = [
            ("tcpdump -w", { out in ["tcpdump", "-i", "psbench1", "-w", out] }),
        ]
        if which("dumpcap") != nil { tools.append(("dumpcap -w", { out in ["dumpcap", "-q", "-i", "psbench1", "-w", out] })) }
        tools.append(("peerscope capture", { out in [peerscope, "capture", "-i", "psbench1", "--filter", "", "--write", out, "--format", "json", "-o", out + ".json"] }))
        // libpcap's defaults (immediate, 2 MiB) and each of the two changes alone.
        let variants: [(String, (String) -> [String])] = [["--immediate", "-B", "2"], ["--immediate"], ["-B", "2"]].map { extra in
            ("peerscope " + extra.joined(separator: " "), { out in
                [peerscope, "capture", "-i", "psbench1", "--filter", ""] + extra + ["--write", out, "--format", "json", "-o", out + ".json"]
            })
        }
        let load = sh(["uptime"]).1.trimmingCharacters(in: .whitespacesAndNewlines)
        print("live capture bench: \(total) packets per run (\(inputs.count) samples x \(copies)), veth pair between namespaces")
        print("load before: \(load)")
        var rows: [Row] = []
        var n = 0
        for rate in rates.map(Optional.some) + [nil] {
            for (name, command) in tools + (rate == nil || rate == rates.last ? variants : []) {
                n += 1
                let out = "\(dir)/run\(n).pcapng", err = "\(dir)/run\(n).err"
                guard let p = start(ns: b, command(out), errPath: err) else { continue }
                usleep(1_500_000)
                let speed = rate.map { ["--pps=\($0)"] } ?? ["--topspeed"]
                let (_, text) = sh(["ip", "netns", "exec", a, "tcpreplay", "-q", "--preload-pcap"] + speed + ["-i", "psbench0", replay])
                usleep(1_500_000)
                kill(p.processIdentifier, SIGINT)
                p.waitUntilExit()
                let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
                rows.append(Row(tool: name, rate: rate.map { "\($0)" } ?? "top speed", sent: sent(text), achieved: pps(text),
                                seen: frames(in: out), dropped: dropped(name, stderr: stderr, report: out + ".json")))
                try? FileManager.default.removeItem(atPath: out)
            }
        }
        print("")
        print("| tool | rate asked (pkt/s) | achieved (pkt/s) | sent | seen | dropped |")
        print("|---|---|---|---|---|---|")
        for r in rows {
            print("| \(r.tool) | \(r.rate) | \(Int(r.achieved)) | \(r.sent) | \(r.seen) | \(r.dropped) |")
        }
        capacity(peerscope: peerscope, inputs: inputs, dir: dir, a: a, b: b)
        memory(peerscope: peerscope, dir: dir, a: a, b: b)
        print("load after: \(sh(["uptime"]).1.trimmingCharacters(in: .whitespacesAndNewlines))")
        return 0
    }

    /// What each kernel buffer size holds while the reader is not running (stopped with SIGSTOP
    /// during a burst of every sample 100 times at full speed): the packets it kept, the rest dropped.
    static func capacity(peerscope: String, inputs: [String], dir: String, a: String, b: String) {
        let burst = "\(dir)/burst.pcap"
        guard let total = try? ReplayFile.write(paths: inputs, copies: 100, to: burst) else { return }
        print("")
        print("buffer capacity: \(total)-packet burst at full speed while the reader is stopped")
        print("| peerscope | kept | dropped by the kernel |")
        print("|---|---|---|")
        for args in [["-B", "2"], ["-B", "8"], ["-B", "32"], ["--immediate"]] {
            let json = "\(dir)/cap.json"
            guard let p = start(ns: b, [peerscope, "capture", "-i", "psbench1", "--filter", ""] + args + ["--format", "json", "-o", json],
                                errPath: "\(dir)/cap.err") else { continue }
            usleep(1_500_000)
            kill(p.processIdentifier, SIGSTOP)
            sh(["ip", "netns", "exec", a, "tcpreplay", "-q", "--preload-pcap", "--topspeed", "-i", "psbench0", burst])
            kill(p.processIdentifier, SIGCONT)
            usleep(1_500_000)
            kill(p.processIdentifier, SIGINT)
            p.waitUntilExit()
            let i = ((try? String(contentsOfFile: json, encoding: .utf8)).flatMap { try? JSONParser.parse($0) })?["stats"]?["capture"]?["interfaces"]?.arrayValue?.first
            print("| \(args.joined(separator: " ")) | \(i?["received"]?.int64Value ?? -1) | \(i?["kernelDropped"]?.int64Value ?? -1) |")
        }
    }

    /// Peak resident memory of `pid` (VmHWM) and now (VmRSS), MiB.
    static func rss(_ pid: Int32) -> (peak: Double, now: Double)? {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Double? {
            guard let line = s.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
            return line.split(separator: " ").dropFirst().first.flatMap { Double($0) }.map { $0 / 1024 }
        }
        guard let p = field("VmHWM:"), let n = field("VmRSS:") else { return nil }
        return (p, n)
    }

    /// Memory of `peerscope capture` while a healthy pair's 29-hour steady session (simulated) is
    /// replayed at 50,000 packets/s: it should stay flat as the packets add up.
    static func memory(peerscope: String, dir: String, a: String, b: String) {
        let sim = "\(dir)/steady.pcapng", replay = "\(dir)/steady.pcap"
        guard sh([peerscope, "simulate", "healthy-pair", "--steady", "104400", "--output", sim]).0 == 0,
              let total = try? ReplayFile.write(paths: [sim], copies: 1, to: replay),
              let p = start(ns: b, [peerscope, "capture", "-i", "psbench1", "--filter", "", "--format", "json", "-o", "\(dir)/steady.json"],
                            errPath: "\(dir)/steady.err") else {
            print("memory: could not prepare the steady capture")
            return
        }
        usleep(1_500_000)
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: which("ip") ?? "/usr/sbin/ip")
        sender.arguments = ["netns", "exec", a, "tcpreplay", "-q", "--preload-pcap", "--pps=50000", "-i", "psbench0", replay]
        sender.standardOutput = FileHandle.nullDevice
        sender.standardError = FileHandle.nullDevice
        let started = Date()
        try? sender.run()
        var samples: [String] = []
        while sender.isRunning {
            usleep(1_000_000)
            if let m = rss(p.processIdentifier) {
                samples.append(String(format: "%.0fs %.1f", Date().timeIntervalSince(started), m.now))
            }
        }
        usleep(1_500_000)
        let peak = rss(p.processIdentifier)?.peak ?? 0
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let err = (try? String(contentsOfFile: "\(dir)/steady.err", encoding: .utf8)) ?? ""
        print("")
        print("memory: healthy pair, 29 h steady session, \(total) packets at 50,000 packets/s; peerscope capture RSS (MiB) each second:")
        print("  " + samples.joined(separator: ", "))
        print(String(format: "  peak %.1f MiB; ", peak) + (err.split(separator: "\n").last { $0.contains("stopped") }.map(String.init) ?? ""))
    }

    static func sent(_ text: String) -> Int {
        guard let r = text.range(of: "Successful packets:") else { return -1 }
        return Int(text[r.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }) ?? -1
    }

    static func pps(_ text: String) -> Double {
        guard let line = text.split(separator: "\n").first(where: { $0.contains("Rated:") }),
              let v = line.split(separator: ",").last?.split(separator: " ").first else { return 0 }
        return Double(v) ?? 0
    }

    /// The drop count each tool reports: tcpdump's "N packets dropped by kernel", dumpcap's
    /// "Packets received/dropped on interface 'X': R/D", peerscope's stats.capture.lost.
    static func dropped(_ tool: String, stderr: String, report: String) -> String {
        if tool.hasPrefix("tcpdump") {
            let line = stderr.split(separator: "\n").first { $0.contains("dropped by kernel") } ?? ""
            return String(line.prefix { $0.isNumber })
        }
        if tool.hasPrefix("dumpcap") {
            guard let r = stderr.range(of: "Packets received/dropped on interface") else { return "?" }
            let rest = stderr[r.upperBound...]
            guard let colon = rest.firstIndex(of: ":") else { return "?" }
            let v = rest[rest.index(after: colon)...].drop { $0 == " " }.prefix { !$0.isWhitespace }
            return String(v.split(separator: "/").last ?? "?")
        }
        guard let text = try? String(contentsOfFile: report, encoding: .utf8), let json = try? JSONParser.parse(text),
              let c = json["stats"]?["capture"] else { return "?" }
        let i = c["interfaces"]?.arrayValue?.first
        return "\(c["lost"]?.int64Value ?? -1) (kernel \(i?["kernelDropped"]?.int64Value ?? -1), queue \(i?["queueDropped"]?.int64Value ?? -1))"
    }
}
