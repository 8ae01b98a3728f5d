import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports

enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, sarif, junit, html
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

    @Option(help: ArgumentHelp("A YAML file of your own log patterns (regular expressions with named captures mapped to peer events).", valueName: "file"))
    var patterns: String?

    @Flag(name: .customLong("show-unknown"), help: "List the log lines no log plugin understood (they are always counted).")
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

    func validate() throws {
        if let f = logFormat, LogFormat(name: f) == nil {
            throw ValidationError("unknown log format '\(f)'; one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let d = date, LogDate(parsing: d) == nil { throw ValidationError("--date wants YYYY-MM-DD, got '\(d)'") }
        for t in thresholds {
            let parts = t.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, DetectorConfig.number(parts[1]) != nil else {
                throw ValidationError("--threshold wants NAME=SECONDS, got '\(t)'")
            }
            guard DetectorSuite.threshold(named: parts[0]) != nil else {
                throw ValidationError("unknown threshold '\(parts[0])'; known: \(DetectorSuite.thresholds.map(\.name).joined(separator: ", "))")
            }
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
        }
        for t in thresholds {
            let parts = t.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2, let v = DetectorConfig.number(parts[1]) { c.values[parts[0]] = v }
        }
        if !only.isEmpty { c.only = Set(only) }
        c.ignore.formUnion(ignore)
        return c
    }

    func requireInputs(_ files: [String]) throws {
        if files.isEmpty && logs.isEmpty { throw ValidationError("give at least one capture file or --log file") }
    }

    /// Runs the analysis of `files` (and --log files); unreadable input becomes exit status 3. When no
    /// input at all can be read and `emptyReportOnFailure`, the result is an empty report that says
    /// so (`complete` false, the problem in `inputProblems`), for the caller to write before exiting 3.
    func analyze(_ files: [String], emptyReportOnFailure: Bool = false) throws -> Analysis {
        let options = try analysisOptions(files: files)
        do {
            return try PeerscopeAnalysis.analyze(options)
        } catch {
            guard emptyReportOnFailure else { throw CommandFailure(message: error.description, status: ExitStatus.input) }
            var o = options
            o.captures = options.captures + options.logs
            o.logs = []
            let engine = Engine(options: PeerscopeAnalysis.engineOptions(o))
            engine.finish()
            let run = RunResult(inputs: o.captures,
                                diagnostics: [Diagnostic(id: "input.unreadable", severity: .error, message: error.description)],
                                complete: false, inputProblems: [error.description], directory: engine.directory,
                                diagnosticCounts: ["input.unreadable": 1])
            do {
                return try PeerscopeAnalysis.finish(engine: engine, run: run, options: o)
            } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.input)
            }
        }
    }

    /// File name endings that say "capture": such a file is read as a capture whatever its bytes, so
    /// a text file named `x.pcapng` is "not a capture file" (exit 3), never a log.
    static let captureExtensions = [".pcap", ".pcapng", ".cap", ".gz"]

    static func hasCaptureExtension(_ path: String) -> Bool {
        let p = path.lowercased()
        return captureExtensions.contains { p.hasSuffix($0) }
    }

    /// Options for `files` given on the command line: files named like captures are captures; text
    /// files among the others are taken as logs.
    func analysisOptions(files: [String]) throws -> AnalysisOptions {
        let (classified, autoLogs) = PeerscopeAnalysis.classify(files.filter { !Self.hasCaptureExtension($0) })
        let classifiedCaptures = Set(classified)
        let captures = files.filter { Self.hasCaptureExtension($0) || classifiedCaptures.contains($0) }
        var o = try analysisOptions(captures: captures)
        o.logs = autoLogs + o.logs
        return o
    }

    func analysisOptions(captures: [String]) throws -> AnalysisOptions {
        var logOptions = LogOptions()
        logOptions.format = logFormat.flatMap { LogFormat(name: $0) }
        logOptions.baseDate = date.flatMap { LogDate(parsing: $0) }
        logOptions.patternsFile = patterns
        logOptions.collectUnknown = showUnknown
        return AnalysisOptions(
            captures: captures, logs: logs,
            engine: EngineOptions(decode: DecodeOptions(showPayloads: showPayloads, wantsMessages: false)),
            logOptions: logOptions, detectors: try detectorConfig())
    }
}

/// Options for where and how the report goes.
struct ReportArguments: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("Report format: text, json, sarif, junit or html.", valueName: "format"))
    var format: ReportFormat = .text

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("Colour in the text report: auto (only on a terminal), always, never.", valueName: "when"))
    var colour: ColourChoice = .auto

    @Flag(name: .customLong("full-timeline"), help: "In the text report, list every timeline entry instead of a summary per peer.")
    var fullTimeline = false

    func render(_ report: Report) -> String {
        switch format {
        case .text:
            let useColour = colour == .always || (colour == .auto && output == nil && standardOutputIsTerminal)
            return TextReportWriter.render(report, colour: useColour, showAllTimeline: fullTimeline)
        case .json: return JSONReportWriter.render(report)
        case .sarif: return SARIFWriter.render(report)
        case .junit: return JUnitWriter.render(report)
        case .html: return HTMLReportWriter.render(report)
        }
    }

    func write(_ report: Report) throws {
        let out = try OutputSink(path: output)
        if format == .json {
            // Streamed: the JSON of a large capture is never one string in memory.
            JSONReportWriter.write(report) { out.write(bytes: $0) }
        } else {
            out.write(render(report))
        }
        out.finish()
    }
}

/// Problems and unknown log lines, on standard error, after the report.
func reportSideNotes(_ analysis: Analysis, showUnknown: Bool) {
    for p in analysis.report.inputProblems { printError(p) }
    if let logs = analysis.logs {
        let unknown = logs.unknownCounts.values.reduce(0, +)
        if unknown > 0 {
            let byFormat = logs.unknownCounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            printError("\(unknown) log line(s) matched no log plugin (\(byFormat))" + (showUnknown ? ":" : "; --show-unknown lists them"))
            if showUnknown { for l in logs.unknownLines { FileHandle.standardError.write(Data("  \(l)\n".utf8)) } }
        }
    }
}
