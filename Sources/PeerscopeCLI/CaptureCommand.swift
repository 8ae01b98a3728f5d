import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Read by the SIGINT/SIGTERM handlers only; written once before the handlers are installed.
nonisolated(unsafe) var liveStopHandle: LiveGroupStopHandle?

struct Capture: ParsableCommand {
    static let gckPorts = "\(MPCPorts.gck.lowerBound)-\(MPCPorts.gck.upperBound)"
    static let defaultFilter = "udp port 5353 or udp portrange \(gckPorts) or (tcp and not port 80 and not port 443) or icmp or icmp6"
        + " or (ip[6:2] & 0x1fff != 0) or (ip6 and ip6[6] == 44)"

    static let configuration = CommandConfiguration(
        abstract: "Capture live on one or more interfaces and analyse as packets arrive.",
        discussion: """
        Opens each IFACE with libpcap (one handle and one reader thread each: -i en0 -i awdl0; -i any \
        on Linux; on macOS -i pktap,en0,awdl0 where PKTAP is available) and runs the same pipeline as \
        `analyze` on the packets of all interfaces merged by capture time. Stops after --duration \
        seconds, --count packets, Ctrl-C (SIGINT), SIGTERM, or when every interface has gone away (link \
        down, interface deleted), then prints the final report (to standard output, or to --output) and \
        one line on standard error with, per interface, the packets received, dropped by the kernel \
        buffer, dropped by the interface, and dropped at the queue to the analysis. The same counts are \
        in the report (JSON stats.capture; the capture-time window of each loss is in captureLosses); \
        when anything was lost the report says complete: false.
        --write saves everything captured as one pcapng (nanosecond timestamps; one interface block per \
        interface with its link type, name and snap length; statistics blocks with the drop counts at \
        the end) for later `analyze`; an existing file is refused unless --force (replace it) or --append \
        (add a pcapng section) is given, and the file appears complete when the capture ends (meanwhile \
        the frames are in a temporary .NAME.peerscope-XXXXXX file beside it; one left by a run that was \
        killed outright is removed by the next run onto that file); --ring FILES:MEGABYTES rotates it like dumpcap -b \
        files:FILES -b filesize:... (names BASE_NNNNN_YYYYMMDDhhmmss.EXT, the newest FILES kept). \
        --follow prints each finding when it is raised and each peer appearing or leaving (text lines; \
        JSON Lines with --format json), then the final report. \
        --decode prints each decoded message as a JSON line on standard output while capturing; standard \
        output then stays pure JSON Lines and the final report goes to standard error (or to --output).

        Defaults, measured on a veth pair with every bundled sample replayed (PeerscopeBench --live): \
        kernel buffer 32 MiB (-B), snap length 65535 (the largest IP datagram; MPC sends nothing \
        larger), immediate mode off. With the reader stopped during a 207,400-packet burst the kernel \
        kept 152,558 packets at 32 MiB, 38,702 at 8 MiB and 9,766 at libpcap's default 2 MiB. On Linux \
        immediate mode gives each packet a fixed-size ring slot (buffer / snaplen: 512 slots at 32 MiB) \
        and lost 14,648 of a 20,740-packet burst at full speed (1,943 at 100,000 packets/s), where \
        buffered delivery lost none, adding at most 100 ms of delay. Each interface's queue to the \
        analysis holds 200,000 packets or 64 MiB (--queue-packets); beyond that packets are dropped and \
        counted, never the kernel stalled.

        Exit status: 0 when stopped by --duration, --count, SIGINT or SIGTERM (report written; drops, if \
        any, are in it); 3 when the capture could not start, when every interface went away (report \
        written, capture incomplete), or when --write failed; 2 for a usage error.

        The default filter keeps what MultipeerConnectivity uses:
          \(defaultFilter)
        mDNS discovery (UDP 5353), the GCK session ports (UDP \(gckPorts)), the TCP invitation channel \
        (its port is ephemeral, announced in mDNS, so TCP is kept apart from web ports), ICMP errors, and \
        IP fragments after the first (they carry no ports; without them a large mDNS answer or GCK packet \
        could not be reassembled). \
        --filter replaces it with any BPF expression (tcpdump syntax).

        Permissions: capturing needs root or CAP_NET_RAW on Linux (`sudo setcap \
        cap_net_raw,cap_net_admin=eip /path/to/peerscope`; the error message names this binary's own path), and sudo or access to /dev/bpf* on macOS. \
        On a Mac capture en0 and awdl0 (peer-to-peer Wi-Fi); for an iPhone use `rvictl -s UDID` and rvi0.

        Examples:
          sudo peerscope capture -i en0 -i awdl0 --duration 120 --write mpc.pcapng
          sudo peerscope capture -i awdl0 --follow --format json > live.jsonl
          sudo peerscope capture -i en0 --write long.pcapng --ring 10:100
          sudo peerscope capture -i en0 --count 5000 --format json -o report.json
          sudo peerscope capture -i rvi0 --decode --filter 'udp portrange \(gckPorts)'
        """
    )

    @Option(name: [.customShort("i"), .customLong("interface")],
            help: ArgumentHelp("Interface to capture on (en0, awdl0, rvi0, eth0, lo, any); repeat for several.", valueName: "iface"))
    var interfaces: [String]

    @Option(help: ArgumentHelp("BPF capture filter (tcpdump syntax). Default: the MPC filter above.", valueName: "bpf"))
    var filter: String?

    @Option(name: .customLong("snaplen"), help: ArgumentHelp("Bytes kept per packet (default 65535).", valueName: "bytes"))
    var snapLength: Int32 = LiveCaptureOptions.defaultSnapLength

    @Option(name: [.customShort("B"), .customLong("buffer-size")],
            help: ArgumentHelp("Kernel buffer per interface in MiB (as dumpcap -B), or with a K suffix in KiB (default 32).", valueName: "size"))
    var bufferSize: String = "32"

    @Flag(inversion: .prefixedNo, help: "Put the interfaces in promiscuous mode.")
    var promiscuous = true

    @Flag(inversion: .prefixedNo, help: "Immediate mode: deliver each packet at once (default off: loses bursts on Linux, see above).")
    var immediate = false

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: UInt64?

    @Option(help: ArgumentHelp("Also save what was captured to this pcapng file (an existing file needs --force or --append).", valueName: "file"))
    var write: String?

    @Option(help: ArgumentHelp("With --write: rotate through FILES files of MEGABYTES each, keeping the newest.", valueName: "files:megabytes"))
    var ring: String?

    @Flag(help: "Print each finding when raised and each peer appearing or leaving (JSON Lines with --format json), then the final report.")
    var follow = false

    @Option(name: .customLong("queue-packets"), help: ArgumentHelp("Packets each interface may queue for the analysis before dropping (default 200000).", valueName: "n"))
    var queuePackets: Int = LiveGroupOptions.defaultQueuePackets

    @Flag(help: "With --write: replace an existing file (the old one stays until the capture ends and the new file is complete).")
    var force = false

    @Flag(help: "With --write: add this capture as a new section at the end of an existing pcapng file (not with --ring).")
    var append = false

    @Flag(help: "Print each decoded message as a JSON line while capturing (the final report then goes to standard error unless --output is given).")
    var decode = false

    @OptionGroup var analysis: AnalysisArguments
    @OptionGroup var report: ReportArguments

    /// `-B` in bytes: MiB, or KiB with a K suffix; nil when malformed or out of range.
    static func bufferBytes(_ s: String) -> Int32? {
        let t = s.trimmingCharacters(in: .whitespaces).uppercased()
        let kib = t.hasSuffix("K") || t.hasSuffix("KIB")
        let digits = t.filter(\.isNumber)
        guard !digits.isEmpty, let v = Int64(digits), v > 0,
              t.allSatisfy({ $0.isNumber || "KMIB".contains($0) }) else { return nil }
        let bytes = kib ? v * 1024 : v * 1024 * 1024
        return bytes <= Int64(Int32.max) ? Int32(bytes) : nil
    }

    func validate() throws {
        if analysis.eventTrace != nil { throw ValidationError("--events is for `analyze` and `check`, not a live capture") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if count == 0 { throw ValidationError("--count must be positive") }
        if snapLength < 64 || snapLength > 262_144 { throw ValidationError("--snaplen must be between 64 and 262144") }
        if Self.bufferBytes(bufferSize) == nil { throw ValidationError("--buffer-size must be a positive size in MiB (32) or KiB (512K), below 2 GiB; got '\(bufferSize)'") }
        if queuePackets < 1 { throw ValidationError("--queue-packets must be at least 1") }
        if interfaces.isEmpty { throw ValidationError("give at least one interface with -i") }
        if Set(interfaces).count != interfaces.count { throw ValidationError("an interface is given twice with -i") }
        if interfaces.count > 1, interfaces.contains("any") {
            throw ValidationError("-i any already captures every interface; give it alone")
        }
        #if !os(macOS)
        if let p = interfaces.first(where: { $0.hasPrefix("pktap") }) {
            throw ValidationError("-i \(p): PKTAP exists only on macOS; here give each interface with its own -i (or -i any)")
        }
        #endif
        if ring != nil && write == nil { throw ValidationError("--ring needs --write (the base name of the ring files)") }
        if let ring, LiveCaptureWriter.Ring(argument: ring) == nil {
            throw ValidationError("--ring must be FILES:MEGABYTES with both positive whole numbers (10:100); got '\(ring)'")
        }
        if follow && decode && report.output == nil {
            throw ValidationError("--follow and --decode both print to standard output; give one of them")
        }
        if force && append { throw ValidationError("--force and --append exclude each other") }
        if (force || append) && write == nil { throw ValidationError("--force and --append apply to --write FILE") }
        if append && ring != nil { throw ValidationError("--append and --ring exclude each other (ring files always get new names)") }
    }

    func run() throws {
        // Before opening anything: a capture given as a log cannot join a live capture.
        for l in analysis.logs {
            if let kind = PeerscopeAnalysis.captureSignature(l) {
                throw CommandFailure(message: "\(l): given with --log but it is a \(kind) capture; analyse it with `peerscope analyze`",
                                     status: ExitStatus.usage)
            }
        }
        try guardOutputs([("--write", write), ("--output", report.output)], inputs: analysis.inputPaths([]))
        // The --write file is opened (a temporary file beside it) before the interfaces: a refusal
        // (an existing file without --force or --append) comes before anything is captured.
        var writer: LiveCaptureWriter?
        if let write {
            if append, let size = (try? FileManager.default.attributesOfItem(atPath: write))?[.size] as? Int, size > 0,
               let problem = PcapngWriter.appendProblem(write) {
                throw CommandFailure(message: OutputError.cannotAppend(path: write, reason: problem).description, status: ExitStatus.usage)
            }
            do {
                writer = try LiveCaptureWriter(path: write, ring: ring.flatMap(LiveCaptureWriter.Ring.init(argument:)),
                                               mode: append ? .append : force ? .replace : .createNew)
            } catch {
                throw CommandFailure(message: error.description, status: error.isRefusal ? ExitStatus.usage : ExitStatus.input)
            }
            // A killed run's frames were renamed to a visible name (a report's temporary removed): say so
            // before anything else can fail.
            for s in writer?.newStaleTemporaries() ?? [] { printError(s.message) }
        }
        // Any failure before the capture is closed leaves no temporary file behind (exit() skips deinit).
        defer { writer?.discard() }
        let buffer = Self.bufferBytes(bufferSize) ?? LiveCaptureOptions.defaultBufferSize
        let options = LiveGroupOptions(
            interfaces: interfaces.map { name in
                LiveCaptureOptions(interface: name, filter: filter ?? Self.defaultFilter, snapLength: snapLength,
                                   promiscuous: promiscuous, immediate: immediate, bufferSize: buffer)
            },
            duration: duration.map { CaptureTime.nanos(seconds: $0) }, count: count, queuePackets: queuePackets)
        let group: LiveCaptureGroup
        do { group = try LiveCaptureGroup(options) } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        for c in group.captures { if let w = c.warning { printError("\(c.options.interface): \(w)") } }
        do {
            try writer?.declare(group.captures.map { .init(linkType: $0.linkType, name: $0.options.interface, snapLength: Int(snapLength)) })
        } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        var configuration = try analysis.configuration()
        let liveOut = try OutputSink(path: nil, lineBuffered: true)
        configuration.engine.decode.wantsMessages = decode
        let session = AnalysisSession(configuration) { m in liveOut.jsonLine(m.json(includeInput: false)) }
        // One input for all interfaces: the frames are merged by time and numbered in that order.
        session.onNote = { printError($0) }
        _ = session.addLiveInput("live:" + interfaces.joined(separator: ","))
        session.addLogs(analysis.logs)   // captures given with --log were refused above
        let follower = follow ? LiveFollow() : nil
        var nextLook = Int64.min
        func look() {
            guard let follower else { return }
            let started = DispatchTime.now().uptimeNanoseconds
            for n in follower.look(session) {
                if report.format == .json { liveOut.jsonLine(n.json) } else { liveOut.line(n.text) }
            }
            // Looks take at most about a fifth of the time, and come at most once a second.
            let spent = Int64(DispatchTime.now().uptimeNanoseconds &- started)
            nextLook = Int64(started) &+ max(1_000_000_000, 5 &* spent)
        }

        liveStopHandle = group.stopHandle
        signal(SIGINT) { _ in liveStopHandle?.requestStop(.interrupt) }
        signal(SIGTERM) { _ in liveStopHandle?.requestStop(.terminate) }
        defer {
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        printError("capturing on \(interfaces.joined(separator: ", ")) (filter: \(filter ?? Self.defaultFilter)); Ctrl-C stops")
        var writeError: String?
        var lastFlush = DispatchTime.now().uptimeNanoseconds
        let summary = group.run(onIdle: {
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- lastFlush >= 1_000_000_000, let w = writer, writeError == nil {
                lastFlush = now
                do { try w.flush() } catch { writeError = "\(error)" }
            }
            if Int64(now) >= nextLook { look() }
        }) { frame in
            session.feed(frame)
            if let w = writer, writeError == nil {
                do { try w.write(frame) } catch { writeError = "\(error)" }
                // A ring's next file was started and found earlier runs' temporary files: said as the first file's were.
                if w.hasNewStaleTemporaries {
                    for s in w.newStaleTemporaries() { printError(s.message) }
                }
            }
        }
        look()
        do { try writer?.close(stats: summary.stats, at: session.liveLastT ?? 0) } catch { writeError = writeError ?? error.description }
        try liveOut.finish()
        printError(summary.line)
        // Counts, loss windows (the verdicts judge findings resting on silence inside one) and why it stopped.
        session.noteLiveCapture(summary.stats)
        // Each lossy (or ended) interface is an input problem of the report; on standard error the
        // final line above already gave its counts, so the side notes do not print it again.
        let liveProblems = summary.stats.interfaces.filter { $0.lost > 0 || $0.ended != nil }.map(\.inputProblem)
        for p in liveProblems { session.noteInputProblem(p) }
        if let writeError { session.noteInputProblem(writeError) }
        let result: Analysis
        do { result = try session.finish() } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        if decode && report.output == nil {
            // Standard output carries the JSON Lines: the report goes to standard error.
            report.writeToStandardError(result.report)
        } else {
            try report.write(result.report)
        }
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads, alreadyPrinted: Set(liveProblems))
        if writeError != nil || summary.stopReason == .interfaceGone { throw ExitCode(ExitStatus.input) }
    }
}
