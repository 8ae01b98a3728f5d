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
        // With --output the report file is written even when no input could be read.
        let result = try analysis.analyze(files, emptyReportOnFailure: report.output != nil)
        try report.write(result.report)
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
        if !result.report.complete { throw ExitCode(ExitStatus.input) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Analyse for CI: exit 1 when a finding at or above --fail-on exists.",
        discussion: """
        Runs the same analysis as `analyze` and exits with a status a CI job can trust:
          0  no finding at or above --fail-on
          1  at least one finding at or above --fail-on (an uncertain finding, resting on silence where \
             the capture is known to have lost packets, counts only with --strict)
          2  usage error (bad option, unknown or out-of-range threshold or detector, missing or bad \
             --config or --patterns file)
          3  an input is missing, unreadable, not a capture, or truncated (files named *.pcap, \
             *.pcapng, *.cap or *.gz are always read as captures; other text files as logs)
        The report is still written (JSON by default; --format sarif or junit for code-hosting CI and \
        test dashboards) to --output or standard output, whatever the status.

        Severities, lowest first: info, warning, error, critical.

        Examples:
          peerscope check session.pcapng --fail-on error --output peerscope.json
          peerscope check session.pcapng --log device.log --format sarif -o peerscope.sarif
          peerscope check session.pcapng --format junit -o junit.xml --fail-on warning
        """
    )

    @Argument(help: ArgumentHelp("Capture files (pcap or pcapng, optionally gzip-compressed); text files among them are read as logs.", valueName: "file"))
    var files: [String] = []

    @Option(name: .customLong("fail-on"), help: ArgumentHelp("Lowest severity that fails the check: info, warning, error, critical.", valueName: "severity"))
    var failOn: Severity = .error

    @Flag(name: .customLong("strict"), help: "Fail on uncertain findings too (judged on silence where the capture lost packets).")
    var strict = false

    @OptionGroup var analysis: AnalysisArguments

    @Option(name: .shortAndLong, help: ArgumentHelp("Report format: json (default), sarif, junit, text or html.", valueName: "format"))
    var format: ReportFormat = .json

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"))
    var output: String?

    func validate() throws { try analysis.requireInputs(files) }

    func run() throws {
        // The report is written whatever the status, even when no input could be read.
        let result = try analysis.analyze(files, emptyReportOnFailure: true)
        var args = ReportArguments()
        args.format = format
        args.output = output
        args.colour = .never
        args.failAt = failOn
        args.strict = strict
        try args.write(result.report)
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
        if !result.report.complete { throw ExitCode(ExitStatus.input) }
        let failing = result.report.findings(atLeast: failOn, strict: strict)
        if !failing.isEmpty {
            printError("\(failing.count) finding(s) at or above \(failOn.rawValue)")
            throw ExitCode(ExitStatus.findings)
        }
    }
}

extension Severity: ExpressibleByArgument {}
