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

/// Read by the SIGINT handler only; written once before the handler is installed.
nonisolated(unsafe) var liveStopHandle: LiveCaptureStopHandle?

struct Capture: ParsableCommand {
    static let defaultFilter = "udp port 5353 or udp portrange 16384-16402 or (tcp and not port 80 and not port 443) or icmp or icmp6"
        + " or (ip[6:2] & 0x1fff != 0) or (ip6 and ip6[6] == 44)"

    static let configuration = CommandConfiguration(
        abstract: "Capture live on an interface and analyse as packets arrive.",
        discussion: """
        Opens IFACE with libpcap and runs the same pipeline as `analyze` on each packet as it arrives. \
        Stops after --duration seconds, --count packets, or Ctrl-C, then prints the final report \
        (to standard output, or to --output). \
        --write saves everything captured as pcapng (nanosecond timestamps) for later `analyze`; an \
        existing file is refused unless --force (replace it) or --append (add a pcapng section) is given, \
        and the file appears complete when the capture ends (meanwhile the frames are in a temporary \
        .NAME.peerscope-XXXXXX file beside it). \
        --decode prints each decoded message as a JSON line on standard output while capturing; standard \
        output then stays pure JSON Lines and the final report goes to standard error (or to --output).

        The default filter keeps what MultipeerConnectivity uses:
          \(defaultFilter)
        mDNS discovery (UDP 5353), the GCK session ports (UDP 16384-16402), the TCP invitation channel \
        (its port is ephemeral, announced in mDNS, so TCP is kept apart from web ports), ICMP errors, and \
        IP fragments after the first (they carry no ports; without them a large mDNS answer or GCK packet \
        could not be reassembled). \
        --filter replaces it with any BPF expression (tcpdump syntax).

        Permissions: capturing needs root or CAP_NET_RAW on Linux (`sudo setcap \
        cap_net_raw,cap_net_admin=eip /path/to/peerscope`; the error message names this binary's own path), and sudo or access to /dev/bpf* on macOS. \
        On a Mac capture en0 and awdl0 (peer-to-peer Wi-Fi); for an iPhone use `rvictl -s UDID` and rvi0.

        Examples:
          sudo peerscope capture -i awdl0 --duration 120 --write awdl0.pcapng
          sudo peerscope capture -i en0 --count 5000 --format json -o report.json
          sudo peerscope capture -i rvi0 --decode --filter 'udp portrange 16384-16402'
          sudo peerscope capture -i lo --filter 'udp port 9999' --count 10
        """
    )

    @Option(name: [.customShort("i"), .customLong("interface")], help: ArgumentHelp("Interface to capture on (en0, awdl0, rvi0, eth0, lo, any).", valueName: "iface"))
    var interface: String

    @Option(help: ArgumentHelp("BPF capture filter (tcpdump syntax). Default: the MPC filter above.", valueName: "bpf"))
    var filter: String?

    @Option(name: .customLong("snaplen"), help: ArgumentHelp("Bytes kept per packet.", valueName: "bytes"))
    var snapLength: Int32 = 262_144

    @Flag(inversion: .prefixedNo, help: "Put the interface in promiscuous mode.")
    var promiscuous = true

    @Flag(inversion: .prefixedNo, help: "Immediate mode: deliver packets as they arrive instead of in kernel-buffered batches.")
    var immediate = true

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: UInt64?

    @Option(help: ArgumentHelp("Also save what was captured to this pcapng file (an existing file needs --force or --append).", valueName: "file"))
    var write: String?

    @Flag(help: "With --write: replace an existing file (the old one stays until the capture ends and the new file is complete).")
    var force = false

    @Flag(help: "With --write: add this capture as a new section at the end of an existing pcapng file.")
    var append = false

    @Flag(help: "Print each decoded message as a JSON line while capturing (the final report then goes to standard error unless --output is given).")
    var decode = false

    @OptionGroup var analysis: AnalysisArguments
    @OptionGroup var report: ReportArguments

    func validate() throws {
        if analysis.eventTrace != nil { throw ValidationError("--events is for `analyze` and `check`, not a live capture") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if count == 0 { throw ValidationError("--count must be positive") }
        if snapLength < 64 { throw ValidationError("--snaplen must be at least 64") }
        if force && append { throw ValidationError("--force and --append exclude each other") }
        if (force || append) && write == nil { throw ValidationError("--force and --append apply to --write FILE") }
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
        // The --write file is opened (a temporary file beside it) before the interface: a refusal
        // (an existing file without --force or --append) comes before anything is captured.
        var writer: PcapngWriter?
        if let write {
            if append, let size = (try? FileManager.default.attributesOfItem(atPath: write))?[.size] as? Int, size > 0,
               let problem = PcapngWriter.appendProblem(write) {
                throw CommandFailure(message: OutputError.cannotAppend(path: write, reason: problem).description, status: ExitStatus.usage)
            }
            let file: OutputFile
            do { file = try OutputFile(path: write, option: "--write", mode: append ? .append : force ? .replace : .createNew) } catch {
                throw CommandFailure(message: error.description, status: error.isRefusal ? ExitStatus.usage : ExitStatus.input)
            }
            do { writer = try PcapngWriter(output: file) } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.input)
            }
        }
        // Any failure before the capture is closed leaves no temporary file behind (exit() skips deinit).
        defer { writer?.discard() }
        let options = LiveCaptureOptions(
            interface: interface, filter: filter ?? Self.defaultFilter, snapLength: snapLength, promiscuous: promiscuous,
            immediate: immediate, duration: duration.map { CaptureTime.nanos(seconds: $0) }, count: count)
        let live: LiveCapture
        do { live = try LiveCapture(options) } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        if let w = live.warning { printError("\(interface): \(w)") }
        var configuration = try analysis.configuration()
        let live_out = try OutputSink(path: nil, lineBuffered: true)
        configuration.engine.decode.wantsMessages = decode
        let session = AnalysisSession(configuration) { m in live_out.jsonLine(m.json(includeInput: false)) }
        _ = session.addLiveInput("live:\(interface)")
        session.addLogs(analysis.logs)   // captures given with --log were refused above

        liveStopHandle = live.stopHandle
        signal(SIGINT) { _ in liveStopHandle?.requestStop() }
        signal(SIGTERM) { _ in liveStopHandle?.requestStop() }
        defer {
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        printError("capturing on \(interface) (filter: \(filter ?? Self.defaultFilter)); Ctrl-C stops")
        var writeError: String?
        let summary: LiveCaptureSummary
        do {
            summary = try live.run { frame in
                session.feed(frame)
                if let w = writer, writeError == nil {
                    do { try w.write(frame) } catch { writeError = "\(error)" }
                }
            }
        } catch {
            throw CommandFailure(message: "\(error)", status: ExitStatus.input)
        }
        do { try writer?.close() } catch { writeError = writeError ?? error.description }
        try live_out.finish()
        var stopped = "stopped (\(summary.stopReason.rawValue)) after \(summary.frames) packet(s)"
        if let d = summary.dropped, d > 0 { stopped += "; \(d) dropped by the kernel buffer" }
        printError(stopped)
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
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
        if writeError != nil { throw ExitCode(ExitStatus.input) }
    }
}
