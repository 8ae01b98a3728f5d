import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every decoded message as one JSON object per line (JSON Lines).",
        discussion: """
        Like `tshark -T json`, but flat: each line has `frame` (1-based, per input), `t` (capture time, \
        integer nanoseconds since the Unix epoch), `plugin` (the decoder plugin's id, see `peerscope \
        plugins`), `type` (the message type), `proto`/`src`/`dst` when the message came over UDP or TCP, \
        then the decoded fields. With several inputs, frames are merged by capture time and each line \
        also has `input` (0-based index of the file on the command line).

        Message contents (chat text) are replaced by their size unless --show-payloads is given.
        Problems reading an input (missing, not a capture, truncated) go to standard error. Malformed \
        packets are printed only with --diagnostics, as JSON lines on standard output with "plugin": \
        "diagnostic" (after the messages); decoding goes on where it can.

        With --events it writes the event stream instead: what analysis reads after decoding (a \
        `peerscope.events/2` header with inputs, counts and diagnostics, then one `event` line per \
        event, logs among the files included; identity facts are events too: `identity.learned` \
        and `identity.advertised`). Traces written as `peerscope.events/1` are still read. \
        `peerscope analyze --events FILE` gives the report analysing the inputs gives (with default \
        thresholds, which also decide how steady traffic is folded). The stream carries no message \
        contents unless --show-payloads is given, so it can be shared instead of a capture.

        Examples:
          peerscope decode Samples/healthy-pair.pcapng
          peerscope decode --events Samples/keepalive-timeout.pcapng Samples/logs/keepalive-timeout/*.log -o trace.events.jsonl
          peerscope decode Samples/healthy-pair.pcapng --plugin mdns --plugin stun
          peerscope decode a.pcapng b.pcapng.gz | jq -c 'select(.type == "heartbeat")'
        """
    )

    @Argument(help: ArgumentHelp("Capture files (pcap or pcapng, optionally gzip-compressed).", valueName: "file"))
    var files: [String]

    @Option(name: .customLong("plugin"), help: ArgumentHelp("Only print messages of this plugin id (repeatable).", valueName: "id"))
    var plugins: [String] = []

    @Flag(name: .customLong("show-payloads"), help: "Include message contents (chat text) in the output.")
    var showPayloads = false

    @Flag(name: .customLong("events"), help: "Write the event stream (identity facts and peer events, JSON Lines) that `analyze --events` reads, instead of the messages.")
    var events = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Flag(name: .customLong("diagnostics"), help: "Also print each diagnostic (malformed input) as a JSON line with \"plugin\": \"diagnostic\".")
    var printDiagnostics = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one capture file") }
        let known = Set(PeerscopeInfo.decoderPlugins.map(\.id))
        for p in plugins where !known.contains(p) {
            throw ValidationError("unknown plugin '\(p)'; `peerscope plugins` lists them")
        }
    }

    func run() throws {
        try guardOutputs([("--output", output)], inputs: files)
        if events { return try writeEvents() }
        if output != nil { throw ValidationError("--output goes with --events (messages go to standard output)") }
        let out = try OutputSink(path: nil)
        let only = Set(plugins)
        let multi = files.count > 1
        let result: RunResult
        // Progress on a terminal's standard error, unless the lines themselves go to that screen.
        let progress = ProgressLine.make(unlessStdoutIsTerminal: true)
        defer { progress?.finish() }
        // The lines are written on a thread of their own while decoding goes on (same bytes, same order).
        // Repeated messages' members are copied rather than written again; the fast-path switch turns that off too.
        let caching = DecodeOptions.fastPathsAllowedByEnvironment
        let writer = MessageLineWriter(sink: out, includeInput: multi, caching: caching)
        do {
            result = try PeerscopeRun.decode(
                paths: files, options: DecodeOptions(showPayloads: showPayloads, wantsMessages: true),
                collectEvents: false, progress: progress?.callback
            ) { m in
                if only.isEmpty || only.contains(m.plugin) { writer.add(m) }
            }
        } catch {
            writer.finish()
            try out.finish()
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        writer.finish()
        if printDiagnostics {
            for d in result.diagnostics {
                var o: [(String, JSONValue)] = []
                if case .frame(let input, let frame) = d.evidence {
                    if multi { o.append(("input", .int(Int64(input)))) }
                    o.append(("frame", .uint(frame)))
                }
                if let t = d.t { o.append(("t", .int(t))) }
                o.append(("plugin", "diagnostic"))
                o.append(("type", .string(d.id)))
                o.append(("severity", .string(d.severity.rawValue)))
                if let off = d.offset { o.append(("offset", .int(Int64(off)))) }
                o.append(("message", .string(d.message)))
                out.jsonLine(JSONValue.object(o))
            }
        }
        try out.finish()
        progress?.finish()
        for p in result.inputProblems { printError(p) }
        if !result.complete { throw ExitCode(ExitStatus.input) }
    }

    /// `--events`: the inputs decoded up to the event trace, written as JSON Lines.
    func writeEvents() throws {
        let session = AnalysisSession(AnalysisSession.Configuration(
            engine: EngineOptions(decode: DecodeOptions(showPayloads: showPayloads, wantsMessages: false))))
        session.add(files)
        let progress = ProgressLine.make(unlessStdoutIsTerminal: output == nil)
        session.progress = progress?.callback
        let decoded: AnalysisSession.Decoded
        defer { progress?.finish() }
        do { decoded = try session.decode(compactQueries: true) } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        let out = try OutputSink(path: output)
        decoded.trace.write(payloads: showPayloads) { out.jsonLine($0) }
        try out.finish()
        for p in decoded.trace.inputProblems { printError(p) }
        if !decoded.trace.complete { throw ExitCode(ExitStatus.input) }
    }
}
