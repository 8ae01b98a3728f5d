import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore
import PeerscopeReports

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Analyse captures and logs: per-peer timelines and what went wrong, with evidence.",
        discussion: """
        Reads pcap/pcapng captures (gzip-compressed or not; several are merged by capture time) and, with \
        --log, device or app logs, and reports: a summary (peers, sessions, findings by kind), the \
        discovery section (services, peers with display name, peer ID, participant ID, addresses, port), \
        a timeline per peer, and findings with the frames and log lines behind them.

        Findings: handshake-timeout, keepalive-timeout, duplicate-connection, channel-error, \
        reconnect-storm, declined-invitation. Thresholds: --threshold, --config; `peerscope plugins` lists \
        them with their defaults. Times are capture times; the same input always gives the same report.

        Exit status: 0 when the inputs were read (findings or not; use `peerscope check` to fail a CI job \
        on findings), 2 on a usage error (including a missing or bad --config or --patterns file), 3 when an input is missing, unreadable, not a capture or \
        truncated (the report still covers what could be read; with --output it is written even when \
        nothing could be read). Files named *.pcap, *.pcapng, *.cap or *.gz are always read as captures, and so is a file given \
        with --log that starts with a pcap, pcapng or gzip signature (with a note). Log times without a \
        zone are read as UTC unless --tz names their zone.

        Examples:
          peerscope analyze Samples/keepalive-timeout.pcapng
          peerscope analyze en0.pcapng awdl0.pcapng.gz --log device.log --format html -o report.html
          peerscope analyze Samples/logs/keepalive-timeout/*.log
          peerscope analyze Samples/keepalive-timeout.pcapng Samples/logs/keepalive-timeout/*.log
          peerscope analyze session.pcapng --threshold keepalive-timeout.app=8 --ignore declined-invitation
        """
    )

    @Argument(help: ArgumentHelp("Capture files (pcap or pcapng, optionally gzip-compressed); text files among them are read as logs.", valueName: "file"))
    var files: [String] = []

    @OptionGroup var analysis: AnalysisArguments
    @OptionGroup var report: ReportArguments

    func validate() throws { try analysis.requireInputs(files) }

    func run() throws {
        try guardOutputs([("--output", report.output)], inputs: analysis.inputPaths(files))
        // With --output the report file is written even when no input could be read.
        let result = try analysis.analyze(files, emptyReportOnFailure: report.output != nil)
        try report.write(result.report)
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
        if !result.report.complete { throw ExitCode(ExitStatus.input) }
    }
}

extension Severity: ExpressibleByArgument {}
