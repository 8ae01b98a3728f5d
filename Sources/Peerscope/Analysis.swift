import Foundation
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports

/// Everything `peerscope analyze` / `check` can be asked for.
public struct AnalysisOptions {
    /// Capture files, merged by time. Their input indexes come first.
    public var captures: [String]
    /// Log files; their input indexes follow the captures'.
    public var logs: [String]
    public var engine: EngineOptions
    public var logOptions: LogOptions
    public var detectors: DetectorConfig

    public init(captures: [String] = [], logs: [String] = [], engine: EngineOptions = EngineOptions(),
                logOptions: LogOptions = LogOptions(), detectors: DetectorConfig = .defaults) {
        self.captures = captures
        self.logs = logs
        self.engine = engine
        self.logOptions = logOptions
        self.detectors = detectors
    }
}

/// The outcome: the report, plus what the run saw on the way (for unknown-line listings etc.).
public struct Analysis {
    public var report: Report
    public var run: RunResult
    public var logs: LogReadResult?
}

public enum PeerscopeAnalysis {
    /// Splits files given without `--log` into captures and logs by their first bytes: pcap, pcapng
    /// and gzip magics are captures; readable text (and an empty file: a log with no lines) is a log.
    /// Anything else stays a capture, so the capture reader reports it ("not a capture file").
    public static func classify(_ paths: [String]) -> (captures: [String], logs: [String]) {
        var captures: [String] = [], logs: [String] = []
        for p in paths {
            // Directories, unreadable and missing paths stay captures: the capture reader names the problem.
            guard let head = head(p) else { captures.append(p); continue }
            if head.isEmpty { logs.append(p); continue }
            if signature(head) != nil {
                captures.append(p)
                continue
            }
            let text = head.filter { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || ($0 >= 0x20 && $0 != 0x7F) }.count
            if text * 100 >= head.count * 95, !head.contains(0) { logs.append(p) } else { captures.append(p) }
        }
        return (captures, logs)
    }

    /// The first 512 bytes of a readable regular file; nil for directories, missing or unreadable paths.
    static func head(_ p: String) -> [UInt8]? {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir), !isDir.boolValue,
              let h = FileHandle(forReadingAtPath: p) else { return nil }
        // `read(upToCount:)` throws where `readData(ofLength:)` would trap.
        let head = [UInt8]((try? h.read(upToCount: 512)) ?? Data())
        try? h.close()
        return head
    }

    /// "pcap", "pcapng" or "gzip" when the bytes start with that file signature.
    static func signature(_ head: [UInt8]) -> String? {
        let magics: [([UInt8], String)] = [([0xD4, 0xC3, 0xB2, 0xA1], "pcap"), ([0xA1, 0xB2, 0xC3, 0xD4], "pcap"),
                                           ([0x4D, 0x3C, 0xB2, 0xA1], "pcap"), ([0xA1, 0xB2, 0x3C, 0x4D], "pcap"),
                                           ([0x0A, 0x0D, 0x0D, 0x0A], "pcapng"), ([0x1F, 0x8B], "gzip")]
        return magics.first { head.starts(with: $0.0) }?.1
    }

    /// The capture format of a file by its first bytes (pcap, pcapng, gzip), nil for anything else:
    /// a file given as a log that is really a capture.
    public static func captureSignature(_ path: String) -> String? {
        head(path).flatMap(signature)
    }

    /// The engine settings for an analysis: steady traffic is coalesced only within gaps shorter than
    /// any silence the keep-alive detector is configured to find.
    public static func engineOptions(_ options: AnalysisOptions) -> EngineOptions {
        var e = options.engine
        let app = options.detectors.nanos("keepalive-timeout.app")
        let session = options.detectors.nanos("keepalive-timeout.session")
        for (kind, gap) in e.coalesceGaps {
            // App keep-alives are judged on both clocks; session traffic on the session one.
            let limit = kind == .appKeepAlive ? min(app, session) : session
            e.coalesceGaps[kind] = min(gap, max(0, limit))
        }
        return e
    }

    /// When a log's span, read as UTC, sits a whole number of hours (within 5 s, start or end) off a
    /// capture's span, the hours (log minus capture): the mark of local times taken for UTC.
    public static func wholeHoursOff(log: ClosedRange<Nanos>, capture: ClosedRange<Nanos>) -> Int? {
        let hour = 3600 * CaptureTime.second, slack = 5 * CaptureTime.second
        for d in [log.lowerBound &- capture.lowerBound, log.upperBound &- capture.upperBound] {
            let h = (d + (d >= 0 ? hour / 2 : -hour / 2)) / hour
            if h != 0, abs(h) <= 26, abs(d - h * hour) <= slack { return Int(h) }
        }
        return nil
    }

    /// Captures and logs through the whole pipeline into one report. Inputs that cannot be read are
    /// reported (`report.inputProblems`, `complete == false`) and the rest still analysed; it throws
    /// only when no input at all can be read.
    public static func analyze(_ options: AnalysisOptions) throws(InputError) -> Analysis {
        let engine = Engine(options: engineOptions(options))
        var run: RunResult
        if options.captures.isEmpty {
            engine.finish()
            run = RunResult(inputs: [], directory: engine.directory)
        } else {
            do {
                run = try PeerscopeRun.run(paths: options.captures, engine: engine)
            } catch {
                if options.logs.isEmpty { throw error }
                // Logs may still tell the story: carry on with them.
                engine.finish()
                run = RunResult(inputs: options.captures, complete: false, inputProblems: [error.description],
                                directory: engine.directory)
            }
        }
        return try finish(engine: engine, run: consume run, options: options)
    }

    /// Adds the logs of `options` to a finished capture run (file or live) and builds the report.
    /// The events of `capture` move into the report (`report.timelines.events`); the returned
    /// `run.events` is empty, so a large capture's events are held once.
    public static func finish(engine: Engine, run capture: consuming RunResult, options: AnalysisOptions) throws(InputError) -> Analysis {
        var run = capture
        run.inputs = options.captures + options.logs
        var events = run.events
        run.events = []     // one reference: the timeline builder adopts the list without copying it
        var logResult: LogReadResult?
        var logPaths: [(Int, String)] = []
        for (i, p) in options.logs.enumerated() {
            if FileManager.default.isReadableFile(atPath: p) {
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: p, isDirectory: &isDir), isDir.boolValue {
                    run.inputProblems.append("\(p): is a directory, not a log file")
                    run.complete = false
                    continue
                }
                logPaths.append((options.captures.count + i, p))
            } else {
                let why = FileManager.default.fileExists(atPath: p) ? "cannot read the file (permission denied)" : "no such file"
                run.inputProblems.append("\(p): \(why)")
                run.complete = false
            }
        }
        if options.captures.isEmpty && logPaths.isEmpty && !options.logs.isEmpty {
            throw InputError(path: options.logs[0], message: run.inputProblems.first ?? "\(options.logs[0]): cannot read")
        }
        // Read the readable logs together (dates are shared between them), keeping their input indexes.
        var logOptions = options.logOptions
        // Time-only and untimed log lines are anchored on the capture when there is one.
        if logOptions.referenceTime == nil { logOptions.referenceTime = run.stats.firstT }
        if !logPaths.isEmpty {
            do {
                var all = LogReadResult()
                // Contiguous runs of indexes read together; a gap (unreadable file) splits the run.
                var group: [(Int, String)] = []
                func flush() throws(LogInputError) {
                    guard let first = group.first else { return }
                    let r = try LogAnalyzer.read(paths: group.map(\.1), firstInput: first.0, options: logOptions,
                                                 directory: run.directory)
                    all.merge(r)
                    group = []
                }
                for entry in logPaths {
                    if let last = group.last, last.0 + 1 != entry.0 { try flush() }
                    group.append(entry)
                }
                try flush()
                run.stats.logLines &+= UInt64(max(0, all.lines))
                run.stats.logInputs &+= UInt64(all.formats.count)
                run.stats.logEntries &+= UInt64(max(0, all.entries))
                for (format, n) in all.unknownCounts { run.stats.logUnknown[format, default: 0] &+= UInt64(max(0, n)) }
                for (plugin, n) in all.recognized { run.stats.logRecognized[plugin, default: 0] &+= UInt64(max(0, n)) }
                if let cf = run.stats.firstT, let cl = run.stats.lastT, !all.zonelessInputs.isEmpty {
                    for (input, _) in all.zonelessInputs {
                        let path = input < run.inputs.count ? run.inputs[input] : ""
                        let ts = all.events.lazy.filter { if case .logLine(let i, _) = $0.evidence { i == input } else { false } }.map(\.t)
                        guard let lf = ts.min(), let ll = ts.max(),
                              let hours = PeerscopeAnalysis.wholeHoursOff(log: lf...ll, capture: cf...cl) else { continue }
                        let tz = (hours > 0 ? "+" : "-") + (abs(hours) < 10 ? "0" : "") + "\(abs(hours)):00"
                        for k in all.problems.indices where all.problems[k].id == "log.time.no_zone" && all.problems[k].message.hasPrefix(path + ":") {
                            all.problems[k].message += "; read as UTC its times are \(abs(hours)) h \(hours > 0 ? "after" : "before") the capture's "
                                + "(a whole number of hours: most likely local time; try --tz \(tz))"
                        }
                    }
                }
                // Only the first few problems of each id are listed per log: counts are the true totals.
                var listed: [String: Int] = [:]
                for d in all.problems {
                    run.diagnostics.append(d)
                    listed[d.id, default: 0] += 1
                }
                for (id, n) in listed { run.diagnosticCounts[id, default: 0] += max(n, all.problemTotals[id] ?? 0) }
                logResult = all
                events += all.events
                events.sort { a, b in a.t != b.t ? a.t < b.t : a.evidence < b.evidence }
            } catch {
                throw InputError(path: error.path, message: error.description)
            }
        }
        let end = max(run.stats.lastT ?? Int64.min, events.last?.t ?? Int64.min)
        var report = Report.analyze(inputs: run.inputs, events: consume events, directory: run.directory, stats: run.stats,
                                    diagnostics: run.diagnostics, complete: run.complete, inputProblems: run.inputProblems,
                                    config: options.detectors, end: end == Int64.min ? nil : end)
        report.diagnosticTotals = run.diagnosticCounts
        return Analysis(report: report, run: run, logs: logResult)
    }
}
