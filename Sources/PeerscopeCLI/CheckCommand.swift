import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeReports

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Analyse for CI: exit 1 when a finding at or above --fail-on exists (with --baseline: a new one).",
        discussion: """
        Runs the same analysis as `analyze` and exits with a status a CI job can trust:
          0  no finding at or above --fail-on (not counting suppressed findings and, with \
             --baseline, findings the baseline already has)
          1  at least one such finding (an uncertain one, judged on silence where the capture is \
             known to have lost packets, only with --strict)
          2  usage error (bad option, unknown or out-of-range threshold or detector, missing or bad \
             --config, --patterns, --suppress or --baseline file)
          3  an input is missing, unreadable, not a capture, or truncated (files named *.pcap, \
             *.pcapng, *.cap or *.gz are always read as captures; other text files as logs)
        The report is still written (JSON by default; --format sarif or junit for code-hosting CI and \
        test dashboards, jsonl for log shippers) to --output or standard output, whatever the status.

        Baselines: --baseline OLD.json (a JSON report of an earlier run) compares findings by \
        fingerprint; only new findings fail. SARIF results then carry baselineState (new, unchanged, \
        absent) and JUnit shows known findings as passed test cases.

        Suppressions: the `suppressions` section of --config, or --suppress FILE, lists fingerprints \
        or kind/peer patterns, each with a reason and an optional `expires` day. Suppressed findings \
        stay in the report, marked; an expired or unused suppression is a warning. Expiry is judged \
        against --today, else $PEERSCOPE_TODAY, else today's UTC date (the only use of the wall clock).

        Fleets: a folder among the inputs analyses every capture in it (--recursive: and below), each \
        with the logs of the same base name beside it (run-3.pcapng: run-3.log, run-3.alice.log), \
        --jobs at a time; a summary table goes to standard output and, with --output-dir, one report \
        per capture (and summary.json). With --baseline DIR, each capture is compared with the report \
        of the same name in DIR.

        Severities, lowest first: info, warning, error, critical.

        Examples:
          peerscope check session.pcapng --fail-on error --output peerscope.json
          peerscope check session.pcapng --log device.log --format sarif -o peerscope.sarif
          peerscope check session.pcapng --format junit -o junit.xml --fail-on warning
          peerscope check session.pcapng --baseline main.json --suppress peerscope-suppressions.yml
          peerscope check runs/ --recursive --jobs 4 --output-dir reports --format jsonl
        """
    )

    @Argument(help: ArgumentHelp("Capture files (pcap or pcapng, optionally gzip-compressed); text files among them are read as logs; folders are fleets of captures.", valueName: "file"))
    var files: [String] = []

    @Option(name: .customLong("fail-on"), help: ArgumentHelp("Lowest severity that fails the check: info, warning, error, critical.", valueName: "severity"))
    var failOn: Severity = .error

    @Flag(name: .customLong("strict"), help: "Fail on uncertain findings too (judged on silence where the capture lost packets).")
    var strict = false

    @OptionGroup var analysis: AnalysisArguments

    @Option(name: .shortAndLong, help: ArgumentHelp("Report format: json (default), jsonl, sarif, junit, text or html.", valueName: "format"))
    var format: ReportFormat = .json

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("A JSON report of an earlier run (or, for a folder, the --output-dir of one): only findings it does not have fail.", valueName: "file"))
    var baseline: String?

    @Option(name: .customLong("suppress"), help: ArgumentHelp("A YAML suppression list (repeatable): fingerprints or kind/peer patterns with a reason and an optional expires day.", valueName: "file"))
    var suppress: [String] = []

    @Option(help: ArgumentHelp("The day (YYYY-MM-DD) suppression expiry is judged against; default $PEERSCOPE_TODAY, else today (UTC).", valueName: "date"))
    var today: String?

    @Flag(help: "With a folder: also analyse the captures in its subfolders.")
    var recursive = false

    @Option(help: ArgumentHelp("With a folder: captures analysed at once.", valueName: "n"))
    var jobs: Int = 1

    @Option(name: .customLong("output-dir"), help: ArgumentHelp("With a folder: write one report per capture here (named after the capture's path) and summary.json.", valueName: "dir"))
    var outputDir: String?

    func validate() throws {
        try analysis.requireInputs(files)
        if let today, !SuppressionList.isDate(today) { throw ValidationError("--today wants YYYY-MM-DD, got '\(today)'") }
        if jobs < 1 { throw ValidationError("--jobs must be at least 1, got \(jobs)") }
    }

    /// The suppression lists of --config and --suppress (usage errors name the file and entry).
    func suppressions() throws -> [Suppression]? {
        var rules: [Suppression] = []
        do {
            if let c = analysis.config { rules += try SuppressionList.load(path: c, optional: true) }
            for f in suppress { rules += try SuppressionList.load(path: f) }
        } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.usage)
        }
        return rules.isEmpty && suppress.isEmpty ? nil : rules
    }

    static func loadBaseline(_ path: String) throws -> SavedReport {
        do { return try SavedReport.load(path: path) } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.usage)
        }
    }

    static func marks(_ r: Report, baseline: SavedReport?, rules: [Suppression]?, today: String) -> FindingMarks {
        var m = FindingMarks(r)
        if let baseline { m.compare(with: baseline.findings, file: baseline.path, report: r) }
        if let rules { m.suppress(rules, today: today, report: r) }
        return m
    }

    /// Indexes of the findings that fail the check.
    static func failing(_ r: Report, _ m: FindingMarks, _ failOn: Severity, strict: Bool = false) -> [Int] {
        r.findings.indices.filter {
            r.findings[$0].severity >= failOn && m.counts($0) && (strict || r.findings[$0].confidence == .certain)
        }
    }

    func run() throws {
        var isDir: ObjCBool = false
        let folders = files.filter { FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && isDir.boolValue }
        if !folders.isEmpty { return try runFleet(folders) }
        if outputDir != nil || recursive { throw CommandFailure(message: "--recursive and --output-dir need a folder of captures", status: ExitStatus.usage) }
        try guardOutputs([("--output", output)], inputs: analysis.inputPaths(files) + [baseline].compactMap { $0 } + suppress)
        let rules = try suppressions()
        let base = try baseline.map(Self.loadBaseline)
        // The report is written whatever the status, even when no input could be read.
        let result = try analysis.analyze(files, emptyReportOnFailure: true)
        let m = Self.marks(result.report, baseline: base, rules: rules, today: SuppressionList.today(explicit: today))
        try reportArguments(output: output).write(result.report, marks: m)
        reportSideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
        for w in m.warnings { printError("warning: " + w) }
        if !result.report.complete { throw ExitCode(ExitStatus.input) }
        let failing = Self.failing(result.report, m, failOn, strict: strict)
        if !failing.isEmpty {
            let known = m.hasBaseline ? "new " : ""
            printError("\(failing.count) \(known)finding(s) at or above \(failOn.rawValue)")
            throw ExitCode(ExitStatus.findings)
        }
    }

    func reportArguments(output: String?) -> ReportArguments {
        var args = ReportArguments()
        args.format = format
        args.output = output
        args.colour = .never
        args.failAt = failOn
        args.strict = strict
        return args
    }

    // MARK: fleets

    struct Row: Sendable {
        var capture: String
        var findings = 0
        var failing = 0
        var new: Int?
        var suppressed = 0
        var worst: Severity?
        var complete = true
        var report: String?
        /// Side notes and warnings, printed in capture order after the run.
        var notes = ""

        var status: String { !complete ? "UNREADABLE" : failing > 0 ? "FAIL" : "ok" }
    }

    /// Options per capture, made before the workers start (they share nothing but these values).
    struct Job: Sendable {
        var item: FleetItem
        var configuration: AnalysisSession.Configuration
        var logs: [String]
    }

    func runFleet(_ folders: [String]) throws {
        if output != nil { throw CommandFailure(message: "with a folder of captures, reports go to --output-dir (one per capture), not --output", status: ExitStatus.usage) }
        let loose = files.filter { !folders.contains($0) }
        if let notCapture = loose.first(where: { Fleet.captureExtension($0) == nil }) {
            throw CommandFailure(message: "\(notCapture): with a folder of captures, other inputs must be captures too "
                                 + "(logs go beside their capture, with its base name: run-3.pcapng, run-3.log)", status: ExitStatus.usage)
        }
        var items: [FleetItem] = loose.map { FleetItem(capture: $0, relative: ($0 as NSString).lastPathComponent, logs: []) }
        for f in folders {
            do { items += try Fleet.discover(f, recursive: recursive) } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.input)
            }
        }
        if items.isEmpty { throw CommandFailure(message: "no captures (*.pcap, *.pcapng, *.cap, *.gz) in \(folders.joined(separator: ", "))", status: ExitStatus.input) }
        let rules = try suppressions()
        let day = SuppressionList.today(explicit: today)
        var isDir: ObjCBool = false
        let baselineDir = baseline.flatMap { FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && isDir.boolValue ? $0 : nil }
        let single = baselineDir == nil ? try baseline.map(Self.loadBaseline) : nil
        if let outputDir, let baselineDir, let a = FileIdentity(path: outputDir), a == FileIdentity(path: baselineDir) {
            throw CommandFailure(message: "--output-dir \(outputDir) is the --baseline folder \(baselineDir); refusing to overwrite the baseline reports",
                                 status: ExitStatus.usage)
        }
        if let outputDir {
            do { try FileManager.default.createDirectory(atPath: outputDir, withIntermediateDirectories: true) } catch {
                throw CommandFailure(message: "\(outputDir): cannot create the output folder", status: ExitStatus.input)
            }
        }
        var jobsList: [Job] = []
        for item in items {
            jobsList.append(Job(item: item, configuration: try analysis.configuration(), logs: analysis.logs + item.logs))
        }
        let jobsBox = jobsList
        let me = self
        let rows = Fleet.map(jobsBox.count, jobs: jobs) { i in me.runOne(jobsBox[i], baselineDir: baselineDir, single: single, rules: rules, today: day) }
        for r in rows { FileHandle.standardError.write(Data(r.notes.utf8)) }
        let table = Self.summaryTable(rows, hasBaseline: baseline != nil)
        print(table, terminator: "")
        if let outputDir {
            let summary = JSONValue.object([
                ("schema", .string("peerscope.fleet/1")),
                ("failOn", .string(failOn.rawValue)),
                ("captures", .array(rows.map { r in
                    .object([("capture", .string(r.capture)), ("status", .string(r.status)), ("findings", .int(Int64(r.findings))),
                             ("failing", .int(Int64(r.failing))), ("new", r.new.map { .int(Int64($0)) } ?? .null),
                             ("suppressed", .int(Int64(r.suppressed))), ("worstSeverity", r.worst.map { .string($0.rawValue) } ?? .null),
                             ("complete", .bool(r.complete)), ("report", r.report.map { .string($0) } ?? .null)])
                })),
            ])
            let out = try OutputSink(path: outputDir + "/summary.json")
            out.write(summary.prettyText + "\n")
            try out.finish()
        }
        if rows.contains(where: { !$0.complete }) { throw ExitCode(ExitStatus.input) }
        let failed = rows.filter { $0.failing > 0 }.count
        if failed > 0 {
            printError("\(failed) of \(rows.count) capture(s) with \(baseline != nil ? "new " : "")finding(s) at or above \(failOn.rawValue)")
            throw ExitCode(ExitStatus.findings)
        }
    }

    /// One capture of a fleet: analysis, marks, its report file; never throws (problems go in the row).
    func runOne(_ job: Job, baselineDir: String?, single: SavedReport?, rules: [Suppression]?, today: String) -> Row {
        var row = Row(capture: job.item.capture)
        let reportName = Self.reportName(job.item.relative, format)
        do {
            let session = AnalysisSession(job.configuration)
            session.addCaptures([job.item.capture])
            _ = session.addLogs(job.logs)
            let result = try AnalysisArguments.finish(session, emptyReportOnFailure: true)
            var base = single
            if let baselineDir {
                let p = baselineDir + "/" + Self.reportName(job.item.relative, .json)
                if FileManager.default.fileExists(atPath: p) { base = try Self.loadBaseline(p) } else { base = SavedReport(path: p, findings: [], peers: [], sessions: []) }
            }
            let r = result.report
            let m = Self.marks(r, baseline: base, rules: rules, today: today)
            if let outputDir {
                let path = outputDir + "/" + reportName
                let dir = (path as NSString).deletingLastPathComponent
                try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                try guardOutputs([("--output-dir", path)], inputs: analysis.inputPaths([job.item.capture]) + job.item.logs + suppress)
                try reportArguments(output: path).write(r, marks: m)
                row.report = reportName
            }
            row.notes = sideNotes(result, showUnknown: analysis.showUnknown, showPayloads: analysis.showPayloads)
                + m.warnings.map { "peerscope: warning: \(job.item.capture): \($0)\n" }.joined()
            row.findings = r.findings.count
            row.failing = Self.failing(r, m, failOn, strict: strict).count
            row.new = m.baselineStates.map { $0.filter { $0 == .new }.count }
            row.suppressed = m.suppressedBy.count
            row.worst = r.worstSeverity
            row.complete = r.complete
        } catch let f as CommandFailure {
            row.complete = false
            row.notes = "peerscope: \(f.message)\n"
        } catch {
            row.complete = false
            row.notes = "peerscope: \(job.item.capture): \(error)\n"
        }
        return row
    }

    /// `ios17/run-3.pcapng` -> `ios17/run-3.json`.
    static func reportName(_ relative: String, _ format: ReportFormat) -> String {
        let stem = Fleet.captureExtension(relative).map { String(relative.dropLast($0.count)) } ?? relative
        return stem + "." + format.fileExtension
    }

    static func summaryTable(_ rows: [Row], hasBaseline: Bool) -> String {
        let width = max(7, rows.map(\.capture.count).max() ?? 0)
        func pad(_ s: String, _ n: Int, right: Bool = false) -> String {
            let fill = String(repeating: " ", count: max(0, n - s.count))
            return right ? fill + s : s + fill
        }
        var out = pad("capture", width) + "  findings  failing" + (hasBaseline ? "  new" : "") + "  suppressed  worst     status\n"
        for r in rows {
            out += pad(r.capture, width) + "  " + pad(String(r.findings), 8, right: true) + "  " + pad(String(r.failing), 7, right: true)
            if hasBaseline { out += "  " + pad(r.new.map(String.init) ?? "-", 3, right: true) }
            out += "  " + pad(String(r.suppressed), 10, right: true) + "  " + pad(r.worst?.rawValue ?? "-", 8) + "  " + r.status + "\n"
        }
        let failed = rows.filter { $0.status == "FAIL" }.count, unreadable = rows.filter { !$0.complete }.count
        out += "\(rows.count) capture(s): \(failed) failed, \(rows.count - failed - unreadable) passed, \(unreadable) unreadable\n"
        return out
    }
}

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two JSON reports: new, fixed and unchanged findings; peers and sessions that appeared or vanished.",
        discussion: """
        Findings are matched by fingerprint (kind, the peers' stable identities, phase or case; never \
        times or frame numbers), so the same problem in two captures is `unchanged`. A fingerprint that \
        is twice in NEW and once in OLD is one unchanged and one new finding. Peers and sessions are \
        matched by their stable identity (the `identity` member of the JSON report).

        Exit status: 0 nothing new, 1 a new finding at or above --fail-on (info by default: any new \
        finding), 2 usage error or a file that is not a peerscope JSON report.

        Examples:
          peerscope diff main.json branch.json
          peerscope diff main.json branch.json --format json -o diff.json --fail-on error
        """
    )

    @Argument(help: ArgumentHelp("The earlier JSON report (`peerscope analyze --format json`).", valueName: "old"))
    var old: String

    @Argument(help: ArgumentHelp("The later JSON report.", valueName: "new"))
    var new: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Output format: text (default) or json.", valueName: "format"))
    var format: DiffFormat = .text

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .customLong("fail-on"), help: ArgumentHelp("Lowest severity of a new finding that exits 1 (default info: any).", valueName: "severity"))
    var failOn: Severity = .info

    enum DiffFormat: String, ExpressibleByArgument { case text, json }

    func run() throws {
        try guardOutputs([("--output", output)], inputs: [old, new])
        let a = try Check.loadBaseline(old), b = try Check.loadBaseline(new)
        let d = ReportDiff(old: a, new: b)
        let out = try OutputSink(path: output)
        out.write(format == .json ? d.json.prettyText + "\n" : d.text)
        try out.finish()
        if !d.newFindings(atLeast: failOn).isEmpty { throw ExitCode(ExitStatus.findings) }
    }
}
