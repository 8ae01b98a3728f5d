import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore
import PeerscopeReports

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain one finding: the rule that fired, the threshold, the timeline around it, what would have cleared it.",
        discussion: """
        Runs the same analysis as `analyze` on FILE... and explains the findings KEY names: a \
        fingerprint (or its first 6+ characters, as the JSON report and `check` print it), a finding \
        key, `#N` (the Nth finding of the report, from 1) or a detector kind (every finding of it).

        Exit status: 0 when KEY named a finding, 1 when it named none (the report's findings are \
        listed), 2 usage error, 3 unreadable input.

        Examples:
          peerscope explain keepalive-timeout Samples/keepalive-timeout.pcapng
          peerscope explain '#1' Samples/reconnect-same-ports.pcapng
          peerscope explain 52f0ab80 Samples/keepalive-lossy-capture.pcapng
        """
    )

    @Argument(help: ArgumentHelp("The finding: fingerprint, key, #N or kind.", valueName: "key"))
    var key: String

    @Argument(help: ArgumentHelp("Capture files and logs, as for analyze.", valueName: "file"))
    var files: [String] = []

    @OptionGroup var analysis: AnalysisArguments

    @Option(name: .customLong("window"), help: ArgumentHelp("Seconds of timeline shown either side of the finding and its evidence (default 5).", valueName: "seconds"))
    var window: Double = 5

    func validate() throws {
        try analysis.requireInputs(files)
        guard window.isFinite, window > 0, window <= 86_400 else { throw ValidationError("--window must be more than 0 and at most 86400 seconds") }
    }

    func run() throws {
        let result = try analysis.analyze(files, emptyReportOnFailure: false)
        let r = result.report
        let picked = ExplainWriter.select(key, in: r)
        if picked.isEmpty {
            let marks = FindingMarks(r)
            var text = "no finding matches \(key); the report's findings:\n"
            for (i, f) in r.findings.enumerated() {
                text += "  #\(i + 1) \(marks.fingerprints.indices.contains(i) ? marks.fingerprints[i] : "") \(f.kind) \(f.peer) \(r.relative(f.t))\n"
            }
            printError(text.trimmingCharacters(in: .newlines))
            throw ExitCode(1)
        }
        print(ExplainWriter.render(r, indexes: picked, window: CaptureTime.nanos(seconds: window), config: try analysis.detectorConfig()), terminator: "")
        if !r.complete { throw ExitCode(ExitStatus.input) }
    }
}
