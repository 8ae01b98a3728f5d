import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports

enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, sarif, junit, html, jsonl

    /// File name ending of a report in this format.
    var fileExtension: String {
        switch self {
        case .text: "txt"
        case .junit: "xml"
        default: rawValue
        }
    }
}

enum ColourChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never
}

/// Options shared by `analyze`, `check` and `capture`: logs, detectors, privacy.
struct AnalysisArguments: ParsableArguments {
    @Option(name: .customLong("log"), help: ArgumentHelp("A device or app log to analyse with the captures (repeatable): Xcode console, `log show`/`log stream` (default, compact, syslog, json, ndjson), or plain prints.", valueName: "file"))
    var logs: [String] = []

    @Option(name: .customLong("log-format"), help: ArgumentHelp("Force the log format instead of detecting it: \(LogFormat.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "format"))
    var logFormat: String?

    @Option(help: ArgumentHelp("Date (YYYY-MM-DD) for log lines that carry only a time of day.", valueName: "date"))
    var date: String?

    @Option(name: .customLong("tz"), help: ArgumentHelp("Time zone of log times that carry none (`log show --style compact`, app prints): +01:00, -0530, UTC or a name such as Europe/Paris. Without it such times are read as UTC (with a warning).", valueName: "zone"))
    var tz: String?

    @Option(help: ArgumentHelp("A YAML file of your own log patterns (regular expressions with named captures mapped to peer events).", valueName: "file"))
    var patterns: String?

    @Flag(name: .customLong("show-unknown"), help: "List the log lines no log plugin understood (they are always counted); message contents masked unless --show-payloads.")
    var showUnknown = false

    @Option(help: ArgumentHelp("A YAML file of detector settings (thresholds, only, ignore).", valueName: "file"))
    var config: String?

    @Option(name: .customLong("threshold"), help: ArgumentHelp("Override a detector threshold, e.g. keepalive-timeout.app=8 (seconds; repeatable). `peerscope plugins` lists them.", valueName: "name=value"))
    var thresholds: [String] = []

    @Option(name: .customLong("only"), help: ArgumentHelp("Run only these detector kinds (repeatable).", valueName: "kind"))
    var only: [String] = []

    @Option(name: .customLong("ignore"), help: ArgumentHelp("Skip these detector kinds (repeatable).", valueName: "kind"))
    var ignore: [String] = []

    @Flag(name: .customLong("show-payloads"), help: "Include message contents (chat text) where messages are shown. Off by default.")
    var showPayloads = false

    @Option(name: .customLong("events"), help: ArgumentHelp("Analyse an event trace written by `peerscope decode --events` instead of captures and logs (the same report as analysing them).", valueName: "file"))
    var eventTrace: String?

    func validate() throws {
        if let f = logFormat, LogFormat(name: f) == nil {
            throw ValidationError("unknown log format '\(f)'; one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let d = date, LogDate(parsing: d) == nil { throw ValidationError("--date wants YYYY-MM-DD, got '\(d)'") }
        if let z = tz, Self.timeZone(parsing: z) == nil {
            throw ValidationError("--tz wants an offset (+01:00, -0530), UTC or a zone name such as Europe/Paris, got '\(z)'")
        }
        for t in thresholds {
            let parts = t.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let v = DetectorConfig.number(parts[1]) else {
                throw ValidationError("--threshold wants NAME=SECONDS, got '\(t)'")
            }
            guard let d = DetectorSuite.threshold(named: parts[0]) else {
                throw ValidationError("unknown threshold '\(parts[0])'; known: \(DetectorSuite.thresholds.map(\.name).joined(separator: ", "))")
            }
            if let why = Self.rangeProblem(d, v) { throw ValidationError("--threshold \(t): \(why)") }
        }
        for k in only + ignore where !DetectorSuite.kinds.contains(k) {
            throw ValidationError("unknown detector kind '\(k)'; known: \(DetectorSuite.kinds.joined(separator: ", "))")
        }
    }

    /// The detector configuration: file first, then flags on top.
    func detectorConfig() throws -> DetectorConfig {
        var c = DetectorConfig.defaults
        if let config {
            do { c = try PeerscopeConfig.load(path: config) } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.usage)
            }
            for (name, v) in c.values.sorted(by: { $0.key < $1.key }) {
                if let d = DetectorSuite.threshold(named: name), let why = Self.rangeProblem(d, v) {
                    throw CommandFailure(message: "\(config): threshold \(name): \(why)", status: ExitStatus.usage)
                }
            }
        }
        for t in thresholds {
            let parts = t.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2, let v = DetectorConfig.number(parts[1]) { c.values[parts[0]] = v }
        }
        if !only.isEmpty { c.only = Set(only) }
        c.ignore.formUnion(ignore)
        return c
    }

    /// Thresholds where 0 is documented to turn the check off; every other duration must be positive.
    static let zeroMeansOff: Set<String> = ["keepalive-timeout.capture-gap"]

    /// Why `value` is not a sensible setting of `threshold`, or nil when it is.
    static func rangeProblem(_ threshold: ThresholdDescriptor, _ value: Double) -> String? {
        guard value.isFinite else { return "must be a finite number" }
        if threshold.unit == "count" {
            if value < 0 || value != value.rounded() { return "must be a whole number of at least 0, got \(Self.show(value))" }
            return nil
        }
        if zeroMeansOff.contains(threshold.name) {
            return value < 0 ? "must be at least 0 seconds (0 turns it off), got \(Self.show(value))" : nil
        }
        return value > 0 ? nil : "must be more than 0 seconds, got \(Self.show(value))"
    }

    static func show(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }

    /// `--tz`: `UTC`/`Z`/`GMT`, `+01:00`, `-0530`, `+1`, or an IANA name (`Europe/Paris`).
    static func timeZone(parsing s0: String) -> TimeZone? {
        let s = s0.trimmingCharacters(in: .whitespaces)
        if ["utc", "z", "gmt"].contains(s.lowercased()) { return TimeZone(secondsFromGMT: 0) }
        var body = Substring(s)
        if body.uppercased().hasPrefix("UTC") || body.uppercased().hasPrefix("GMT") { body = body.dropFirst(3) }
        if let sign = body.first, sign == "+" || sign == "-" {
            let digits = body.dropFirst().filter { $0 != ":" }
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
            let colon = body.contains(":")
            var h = 0, m = 0
            switch digits.count {
            case 1 where !colon, 2 where !colon: h = Int(digits)!
            case 3 where colon: h = Int(digits.prefix(1))!; m = Int(digits.suffix(2))!
            case 4: h = Int(digits.prefix(2))!; m = Int(digits.suffix(2))!
            default: return nil
            }
            guard h <= 14, m <= 59 else { return nil }
            return TimeZone(secondsFromGMT: (sign == "+" ? 1 : -1) * (h * 3600 + m * 60))
        }
        // Names only: Foundation also takes abbreviations such as "CET"; a bare number is not a zone.
        guard s.contains("/") || s.count >= 3, !s.allSatisfy(\.isNumber) else { return nil }
        return TimeZone(identifier: s) ?? TimeZone(abbreviation: s)
    }

    /// A patterns file is configuration: missing, unreadable or with any bad entry (bad regex, bad
    /// kind) it is a usage error (exit 2) naming the file and the entry, before any input is read.
    static func checkPatterns(_ path: String) throws {
        let problems: [String]
        do { problems = try PeerscopePatterns.problems(path: path) } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.usage)
        }
        if let first = problems.first {
            let more = problems.count > 1 ? " (and \(problems.count - 1) more problem(s) in the file)" : ""
            throw CommandFailure(message: first + more, status: ExitStatus.usage)
        }
    }

    /// Every file this run reads: captures, logs, the config and patterns files.
    func inputPaths(_ files: [String]) -> [String] {
        files + logs + [config, patterns, eventTrace].compactMap { $0 }
    }

    func requireInputs(_ files: [String]) throws {
        if eventTrace != nil {
            if !files.isEmpty || !logs.isEmpty { throw ValidationError("--events analyses an event trace alone, without captures or logs") }
            return
        }
        if files.isEmpty && logs.isEmpty { throw ValidationError("give at least one capture file, --log file or --events trace") }
    }

    /// Runs the analysis of `files` (and --log files); unreadable input becomes exit status 3. When no
    /// input at all can be read and `emptyReportOnFailure`, the result is an empty report that says
    /// so (`complete` false, the problem in `inputProblems`), for the caller to write before exiting 3.
    func analyze(_ files: [String], emptyReportOnFailure: Bool = false) throws -> Analysis {
        try Self.finish(try session(files: files), emptyReportOnFailure: emptyReportOnFailure)
    }

    /// Finishes `session` (each capture of a fleet has its own); unreadable input becomes exit
    /// status 3 (or, with `emptyReportOnFailure`, an empty report that says so).
    static func finish(_ session: AnalysisSession, emptyReportOnFailure: Bool) throws -> Analysis {
        // Bytes read, rate and time left on a terminal's standard error (erased before the report).
        let progress = ProgressLine.make()
        session.progress = progress?.callback
        // Notes that change nothing in the report (events kept in memory: no temporary file) go to standard error.
        if session.onNote == nil { session.onNote = { printError($0) } }
        defer { progress?.finish() }
        do {
            return try session.finish()
        } catch {
            guard emptyReportOnFailure else { throw CommandFailure(message: error.description, status: ExitStatus.input) }
            do {
                return try session.unreadableAnalysis(error)
            } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.input)
            }
        }
    }

    /// A session over `files` given on the command line (named like captures, or sorted by their
    /// bytes into captures and logs) and the `--log` files; notes go to standard error.
    func session(files: [String]) throws -> AnalysisSession {
        let session = AnalysisSession(try configuration())
        session.add(files)
        if let eventTrace { session.addEventTrace(eventTrace) }
        // A capture given with --log is read as the capture it is (reading its bytes as text lines would
        // skip nearly all of them as binary and find nothing).
        for note in session.addLogs(logs) { printError(note) }
        return session
    }

    /// The analysis settings these options ask for (a bad patterns file or threshold: exit 2).
    func configuration() throws -> AnalysisSession.Configuration {
        var logOptions = LogOptions()
        logOptions.format = logFormat.flatMap { LogFormat(name: $0) }
        logOptions.baseDate = date.flatMap { LogDate(parsing: $0) }
        logOptions.patternsFile = patterns
        logOptions.timeZone = tz.flatMap { Self.timeZone(parsing: $0) }
        if let patterns { try Self.checkPatterns(patterns) }
        logOptions.collectUnknown = showUnknown
        return AnalysisSession.Configuration(
            engine: EngineOptions(decode: DecodeOptions(showPayloads: showPayloads, wantsMessages: false)),
            logOptions: logOptions, detectors: try detectorConfig())
    }
}

/// Options for where and how the report goes.
struct ReportArguments: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("Report format: text, json, jsonl (JSON Lines: one record per session, timeline entry and finding), sarif, junit or html.", valueName: "format"))
    var format: ReportFormat = .text

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("Colour in the text report: auto (only on a terminal), always, never.", valueName: "when"))
    var colour: ColourChoice = .auto

    @Flag(name: .customLong("full-timeline"), help: "In the text report, list every timeline entry instead of a summary per peer.")
    var fullTimeline = false

    /// The severity at which a JUnit test case fails (`check` sets its --fail-on).
    var failAt: Severity = .warning
    /// Uncertain findings fail JUnit test cases too (`check --strict`).
    var strict = false

    func render(_ report: Report, marks: FindingMarks? = nil) -> String {
        switch format {
        case .text:
            let useColour = colour == .always || (colour == .auto && output == nil && standardOutputIsTerminal)
            return TextReportWriter.render(report, colour: useColour, showAllTimeline: fullTimeline, marks: marks)
        case .json: return JSONReportWriter.render(report, marks: marks)
        case .jsonl: return JSONLinesWriter.render(report, marks: marks)
        case .sarif: return SARIFWriter.render(report, marks: marks)
        case .junit: return JUnitWriter.render(report, failAt: failAt, strict: strict, marks: marks)
        case .html: return HTMLReportWriter.render(report)
        }
    }

    func write(_ report: Report, marks: FindingMarks? = nil) throws {
        let out = try OutputSink(path: output)
        switch format {
        case .json:
            // Streamed: the JSON of a large capture is never one string in memory.
            JSONReportWriter.write(report, marks: marks) { out.write(bytes: $0) }
        case .jsonl:
            JSONLinesWriter.write(report, marks: marks) { out.write(bytes: $0) }
        default:
            out.write(render(report, marks: marks))
        }
        try out.finish()
    }

    /// The report on standard error (live capture with `--decode`, whose standard output is JSON Lines).
    func writeToStandardError(_ report: Report) {
        var a = self
        a.output = nil
        let text: String
        if format == .text {
            let useColour = colour == .always || (colour == .auto && isatty(STDERR_FILENO) != 0)
            text = TextReportWriter.render(report, colour: useColour, showAllTimeline: fullTimeline)
        } else {
            text = a.render(report)
        }
        FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }
}

/// Refuses (exit 2, naming both paths) outputs that resolve to an input or to each other, before
/// anything is read or written.
func guardOutputs(_ outputs: [(option: String, path: String?)], inputs: [String]) throws {
    do {
        try OutputGuard.check(outputs: outputs.compactMap { o in o.path.map { (o.option, $0) } }, inputs: inputs)
    } catch {
        throw CommandFailure(message: error.description, status: ExitStatus.usage)
    }
}

/// Problems and unknown log lines, on standard error, after the report. `alreadyPrinted`: input
/// problems the command has already put on standard error (a live capture's lossy interfaces, on its
/// final line), not repeated.
func reportSideNotes(_ analysis: Analysis, showUnknown: Bool, showPayloads: Bool, alreadyPrinted: Set<String> = []) {
    FileHandle.standardError.write(Data(sideNotes(analysis, showUnknown: showUnknown, showPayloads: showPayloads,
                                                  alreadyPrinted: alreadyPrinted).utf8))
}

/// The text `reportSideNotes` prints (each line ends in a newline).
func sideNotes(_ analysis: Analysis, showUnknown: Bool, showPayloads: Bool, alreadyPrinted: Set<String> = []) -> String {
    var out = ""
    func note(_ line: String) { out += "peerscope: \(line)\n" }
    for p in analysis.report.inputProblems where !alreadyPrinted.contains(p) { note(p) }
    if let logs = analysis.logs {
        // Notes a reader of the report alone might miss: an empty log, times taken as UTC.
        for d in logs.problems where d.id == "log.empty" || d.id == "log.time.no_zone" { note(d.message) }
        let unknown = logs.unknownCounts.values.reduce(0, +)
        if unknown > 0 {
            let byFormat = logs.unknownCounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            note("\(unknown) log line(s) matched no log plugin (\(byFormat))" + (showUnknown ? ":" : "; --show-unknown lists them"))
            if showUnknown {
                for l in logs.unknownLines {
                    var line = l
                    if !showPayloads { line.text = maskContents(l.text) }
                    out += "  \(line)\n"
                }
            }
        }
    }
    return out
}

/// An unknown log line with what may be message contents (chat text) masked, as reports do without
/// `--show-payloads`: quoted strings become their length, and after a word such as `message`, `chat`,
/// `text`, `content`, `said` or `received` the rest of the line after its `:` or `=` does.
func maskContents(_ text: String) -> String {
    var out = ""
    var quote: Character? = nil
    var inner = 0
    var previous: Character = " "
    for c in text {
        defer { previous = c }
        if let q = quote {
            if c == q {
                out += "<\(inner) chars>\(q)"
                quote = nil
            } else {
                inner += 1
            }
            continue
        }
        out.append(c)
        // An apostrophe inside a word (`Bob's iPad`) opens no quote.
        if c == "\"" || c == "“" || (c == "'" && !previous.isLetter && !previous.isNumber) {
            quote = c == "“" ? "”" : c
            inner = 0
        }
    }
    if quote != nil { out += "<\(inner) chars>" }
    let lower = out.lowercased()
    let words = ["message", "chat", "text", "content", "said", "says", "received", "payload", "body"]
    guard let w = words.compactMap({ lower.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) else { return out }
    let tail = out[w.upperBound...]
    guard let sep = tail.firstIndex(where: { $0 == ":" || $0 == "=" }) else { return out }
    let rest = out[out.index(after: sep)...]
    let trimmed = rest.drop { $0 == " " }
    if trimmed.isEmpty || trimmed.hasPrefix("\"") && trimmed.contains("chars>") { return out }
    return String(out[...sep]) + " <\(trimmed.count) chars hidden; --show-payloads shows them>"
}
