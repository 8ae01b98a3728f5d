import Foundation
import PeerscopeCore

/// How to read logs. Everything has a default; the CLI maps its flags onto these.
public struct LogOptions: Sendable {
    /// nil: detect from the first lines (`--log-format`).
    public var format: LogFormat?
    /// The date for lines that carry only a time of day (`--date YYYY-MM-DD`).
    public var baseDate: LogDate?
    /// A capture time from the run's other inputs (say the first packet): its UTC day dates lines that
    /// have only a time of day when `baseDate` is not given, and it anchors logs that carry no time at all.
    public var referenceTime: Nanos?
    /// Seconds east of UTC for stamps without a zone (compact style, app prints). nil: the zone of the
    /// nearest earlier zoned line of the same input, else UTC.
    public var utcOffsetSeconds: Int?
    /// The zone of stamps without one (`--tz`); its offset at each stamp's local time (summer time
    /// included). Takes precedence over `utcOffsetSeconds`.
    public var timeZone: TimeZone?
    /// A YAML file of user patterns (`--patterns FILE`).
    public var patternsFile: String?
    /// Keep the text of lines no plugin understands (`--show-unknown`).
    public var collectUnknown: Bool
    /// Lines for the same participant and message within this much log time become one event with a
    /// `channel` list ("0,1,2").
    public var coalesceWindow: Nanos
    /// Repeated prints of the same state change for the same peer within this window are one event.
    public var duplicateStateWindow: Nanos
    /// Longer lines are cut (with a diagnostic).
    public var maxLineBytes: Int
    /// An entry stops collecting continuation lines after this many.
    public var maxEntryLines: Int

    public init(format: LogFormat? = nil, baseDate: LogDate? = nil, referenceTime: Nanos? = nil, utcOffsetSeconds: Int? = nil,
                patternsFile: String? = nil, collectUnknown: Bool = false, coalesceWindow: Nanos = 100 * CaptureTime.millisecond,
                duplicateStateWindow: Nanos = CaptureTime.second, maxLineBytes: Int = 16 * 1024, maxEntryLines: Int = 200) {
        self.format = format
        self.baseDate = baseDate
        self.referenceTime = referenceTime
        self.utcOffsetSeconds = utcOffsetSeconds
        self.patternsFile = patternsFile
        self.collectUnknown = collectUnknown
        self.coalesceWindow = coalesceWindow
        self.duplicateStateWindow = duplicateStateWindow
        self.maxLineBytes = maxLineBytes
        self.maxEntryLines = maxEntryLines
    }
}

/// A line no plugin understood (kept when `collectUnknown`).
public struct UnknownLine: Sendable, Hashable, CustomStringConvertible {
    public var input: Int
    public var path: String
    public var line: Int
    public var format: LogFormat
    /// The entry's first line (cut to 300 characters).
    public var text: String
    public var description: String { "\(path):\(line): \(text)" }
}

/// What reading one or more logs produced.
public struct LogReadResult: Sendable {
    /// Peer events from every log plugin, ordered by capture time then line.
    public var events: [PeerEvent]
    /// Entries no plugin understood, per format (`xcode`, `log-ndjson`, ...).
    public var unknownCounts: [String: Int]
    /// Their text with file:line, when `collectUnknown`.
    public var unknownLines: [UnknownLine]
    /// The format of each input, in input order.
    public var formats: [LogFormat]
    /// The format of the first input (for the usual single-file case).
    public var format: LogFormat { formats.first ?? .plain }
    /// Lines read, entries built (multi-line entries count once), entries understood per plugin id.
    public var lines: Int
    public var entries: Int
    public var recognized: [String: Int]
    /// Malformed input (binary junk, long lines, bad dates, broken JSON) and bad user patterns.
    public var problems: [Diagnostic]
    /// Per input read with stamps that carry no zone and no `--tz`/zoned line to place them: how
    /// many such stamps were taken as UTC.
    public var zonelessInputs: [Int: Int] = [:]
    /// The true number of problems per id (`problems` lists only the first few of each per input).
    public var problemTotals: [String: Int] = [:]

    public init(events: [PeerEvent] = [], unknownCounts: [String: Int] = [:], unknownLines: [UnknownLine] = [],
                formats: [LogFormat] = [], lines: Int = 0, entries: Int = 0, recognized: [String: Int] = [:], problems: [Diagnostic] = []) {
        self.events = events
        self.unknownCounts = unknownCounts
        self.unknownLines = unknownLines
        self.formats = formats
        self.lines = lines
        self.entries = entries
        self.recognized = recognized
        self.problems = problems
    }

    /// `xcode: 12 lines not understood` lines, one per format, for reports.
    public var unknownSummary: [String] {
        unknownCounts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value) \($0.value == 1 ? "entry" : "entries") not understood" }
    }

    public mutating func merge(_ o: LogReadResult) {
        events += o.events
        for (k, v) in o.unknownCounts { unknownCounts[k, default: 0] += v }
        unknownLines += o.unknownLines
        formats += o.formats
        lines += o.lines
        entries += o.entries
        for (k, v) in o.recognized { recognized[k, default: 0] += v }
        problems += o.problems
        zonelessInputs.merge(o.zonelessInputs) { $0 + $1 }
        for (k, v) in o.problemTotals { problemTotals[k, default: 0] += v }
    }
}

/// An input that cannot be read at all.
public struct LogInputError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String { "\(path): \(reason)" }
}

/// Text logs to peer events: the same `PeerEvent`s the packet plugins produce, with `.logLine` evidence.
public enum LogAnalyzer {
    /// Lines a user pattern may give up on (step budget spent) before it is no longer tried on the log.
    public static let slowPatternLimit = 20

    /// Reads several logs; `firstInput` is the run's input index of the first path (events carry
    /// `input: firstInput + i`). Logs without dates take theirs from the logs that have them.
    public static func read(paths: [String], firstInput: Int = 0, options: LogOptions = LogOptions(),
                            directory: PeerDirectory) throws(LogInputError) -> LogReadResult {
        let engine: LogEngine
        var result = LogReadResult()
        do {
            let (e, p) = try LogEngine.standard(patternsFile: options.patternsFile)
            engine = e
            result.problems += p
        } catch {
            throw LogInputError(path: error.path, reason: error.reason)
        }
        var texts: [[UInt8]] = []
        var cuts: [[Int: Int]] = []
        for path in paths {
            guard let (bytes, cut) = loadCuttingLongLines(path: path, maxLineBytes: options.maxLineBytes) else {
                throw LogInputError(path: path, reason: "cannot read the file")
            }
            texts.append(bytes)
            cuts.append(cut)
        }
        var opts = options
        if opts.baseDate == nil {
            opts.baseDate = texts.lazy.compactMap { firstDate(in: $0) }.first
        }
        // Display names the logs name anchor bare-name prints in the logs after them too.
        var names = Set<String>()
        for (i, t) in texts.enumerated() {
            let r = read(bytes: t, path: paths[i], input: firstInput + i, options: opts, directory: directory, engine: engine,
                         cutLines: cuts[i], names: &names)
            result.merge(r)
        }
        result.events.sort { ($0.t, $0.evidence) < ($1.t, $1.evidence) }
        return result
    }

    /// Reads one log file.
    public static func read(path: String, input: Int = 0, options: LogOptions = LogOptions(),
                            directory: PeerDirectory) throws(LogInputError) -> LogReadResult {
        try read(paths: [path], firstInput: input, options: options, directory: directory)
    }

    /// Reads log text (tests, stdin). User patterns from `options.patternsFile` are loaded here too.
    public static func read(text: String, path: String = "<text>", input: Int = 0, options: LogOptions = LogOptions(),
                            directory: PeerDirectory) throws(LogInputError) -> LogReadResult {
        let engine: LogEngine
        var pre: [Diagnostic] = []
        do {
            let (e, p) = try LogEngine.standard(patternsFile: options.patternsFile)
            engine = e
            pre = p
        } catch {
            throw LogInputError(path: error.path, reason: error.reason)
        }
        var r = read(bytes: Array(text.utf8), path: path, input: input, options: options, directory: directory, engine: engine)
        r.problems = pre + r.problems
        return r
    }

    /// Reads log bytes with a compiled engine (reuse one engine across inputs).
    public static func read(bytes: [UInt8], path: String, input: Int, options: LogOptions, directory: PeerDirectory,
                            engine: LogEngine, cutLines: [Int: Int] = [:]) -> LogReadResult {
        var names = Set<String>()
        return read(bytes: bytes, path: path, input: input, options: options, directory: directory, engine: engine, cutLines: cutLines,
                    names: &names)
    }

    /// Reads log bytes; `names` holds the display names earlier inputs named and gets this input's.
    /// Display names the directory knows (from the capture) and `names` anchor bare-name app prints
    /// (`KnownNameAnchor`). When this input's own lines name a peer that a line left unknown would
    /// match, the input is read a second time with every name it taught, so the line is read whatever
    /// the order of the lines: same input, same events.
    static func read(bytes: [UInt8], path: String, input: Int, options: LogOptions, directory: PeerDirectory,
                     engine: LogEngine, cutLines: [Int: Int] = [:], names: inout Set<String>) -> LogReadResult {
        var reader = InputReader(path: path, input: input, options: options)
        reader.cutLines = cutLines
        let entries = reader.entries(bytes)
        // JSON styles spread one entry over many physical lines: count entries (evidence keeps line numbers).
        let lines = reader.format == .logJSON ? entries.count : reader.lineCount
        var base = LogReadResult(formats: [reader.format], lines: lines, entries: entries.count)
        if reader.zoneless > 0 { base.zonelessInputs[input] = reader.zoneless }
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) {
            reader.problems.add("log.empty", .warning, bytes.isEmpty ? "empty file: no log lines" : "no log lines (only blank lines)", nil)
        }
        let seed = names.union(directory.entries.values.compactMap(\.displayName))
        // A second pass starts from the reader as it was, so its diagnostics are not counted twice.
        let before = reader
        var pass = readEntries(entries, base: base, reader: &reader, path: path, input: input, options: options, directory: directory,
                               engine: engine, anchors: KnownNameAnchor.anchors(seed))
        let taught = seed.union(pass.names)
        if taught.count > seed.count {
            let anchors = KnownNameAnchor.anchors(taught)
            if pass.unknown.contains(where: { KnownNameAnchor.match(entries[$0].message, anchors: anchors) != nil }) {
                reader = before
                pass = readEntries(entries, base: base, reader: &reader, path: path, input: input, options: options, directory: directory,
                                   engine: engine, anchors: anchors)
            }
        }
        names.formUnion(pass.names)
        var result = pass.result
        result.problems += reader.problems.all
        result.problemTotals = reader.problems.limiter.totals
        return result
    }

    /// One pass over an input's entries: the events, the entries left unknown (indexes) and the display
    /// names the understood lines named.
    private static func readEntries(_ entries: [LogEntry], base: LogReadResult, reader: inout InputReader, path: String, input: Int,
                                    options: LogOptions, directory: PeerDirectory, engine: LogEngine,
                                    anchors: [String]) -> (result: LogReadResult, unknown: [Int], names: Set<String>) {
        var result = base
        var unknown: [Int] = []
        var names = Set<String>()
        var builder = EventBuilder(options: options)
        var hits = [Bool](repeating: false, count: engine.flat.count)
        // Patterns that spent their step budget: after `slowPatternLimit` lines they are not tried again.
        var slowLines: [Int: Int] = [:]
        var retired: Set<Int> = []
        var slow: [Int] = []
        for (index, e) in entries.enumerated() {
            slow.removeAll(keepingCapacity: true)
            let found = engine.match(e, hits: &hits, skip: retired, slow: &slow)
                ?? (anchors.isEmpty ? nil : KnownNameAnchor.match(e.message, anchors: anchors))
            for i in slow {
                let n = slowLines[i, default: 0] + 1
                slowLines[i] = n
                let id = engine.ids[engine.flat[i].plugin]
                reader.problems.add("log.pattern.gave_up", .warning,
                                    "pattern \(id) gave up on this line after \(SharedRegex.stepBudget * 10_000) matching steps "
                                    + "(nested repeats such as (a+)+ backtrack exponentially); the line was tried with the other patterns",
                                    e.evidence)
                if n == LogAnalyzer.slowPatternLimit {
                    retired.insert(i)
                    reader.problems.add("log.pattern.retired", .warning,
                                        "pattern \(id) gave up on \(n) lines: not tried on the rest of this log", e.evidence)
                }
            }
            guard let (source, m) = found else {
                unknown.append(index)
                result.unknownCounts[reader.format.rawValue, default: 0] += 1
                if options.collectUnknown {
                    let first = e.message.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                    result.unknownLines.append(UnknownLine(input: input, path: path, line: e.line, format: reader.format,
                                                           text: String(first.prefix(300))))
                }
                continue
            }
            result.recognized[source, default: 0] += 1
            for l in m.learn {
                directory.learn(peerID: l.peerID, displayName: l.displayName)
                if let n = l.displayName { names.insert(n) }
            }
            // Any line naming both an idString and a display name teaches the directory.
            for h in [m.from, m.to] {
                if let id = h.peerID, let n = h.displayName { directory.learn(peerID: id, displayName: n) }
                if let n = h.displayName { names.insert(n) }
            }
            if let kind = m.kind { builder.add(kind: kind, match: m, entry: e, source: source) }
            builder.observe(m, entry: e)
        }
        result.events = builder.events.sorted { ($0.t, $0.evidence) < ($1.t, $1.evidence) }
        return (result, unknown, names)
    }

    /// Reads a file in blocks, keeping of each line at most `maxLineBytes` and a few bytes more (enough
    /// for the line to be cut, with its diagnostic, where it is read), so one line of hundreds of
    /// megabytes with no newline costs no more memory than a normal line. Returns the bytes and, per
    /// 1-based line number, the length of each line cut here; nil when the file cannot be read.
    static func loadCuttingLongLines(path: String, maxLineBytes: Int) -> ([UInt8], [Int: Int])? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        let keep = maxLineBytes + 8
        var out: [UInt8] = []
        var cut: [Int: Int] = [:]
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var line = 1
        var lineLength = 0
        while true {
            let n = block.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n == 0 { break }
            block.withUnsafeBufferPointer { p in
                var i = 0
                while i < n {
                    var nl = i
                    if let base = p.baseAddress, let hit = memchr(base + i, 10, n - i) {
                        nl = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    } else {
                        nl = n
                    }
                    let segment = nl - i
                    let room = max(0, keep - lineLength)
                    if room > 0 { out.append(contentsOf: UnsafeBufferPointer(rebasing: p[i ..< i + min(segment, room)])) }
                    lineLength += segment
                    if lineLength > keep { cut[line] = lineLength }
                    if nl < n {
                        out.append(10)
                        line += 1
                        lineLength = 0
                    }
                    i = nl + 1
                }
            }
        }
        if ferror(f) != 0 { return nil }
        return (out, cut)
    }

    /// The date of the first dated line of a log (to date other logs' time-only lines).
    static func firstDate(in bytes: [UInt8]) -> LogDate? {
        var lineStart = 0
        var lines = 0
        return bytes.withUnsafeBufferPointer { b -> LogDate? in
            while lineStart < b.count, lines < 2000 {
                var end = lineStart
                while end < b.count, b[end] != 10 { end += 1 }
                let l = UnsafeBufferPointer(rebasing: b[lineStart..<end])
                // a stamp at the start, after `[`, or after `"timestamp":"`
                var starts = [0, 1]
                if let q = find(Array("\"timestamp\"".utf8), in: l, from: 0, end: l.count) {
                    var p = q + 11
                    while p < l.count, l[p] == 32 || l[p] == UInt8(ascii: ":") || l[p] == UInt8(ascii: "\"") { p += 1 }
                    starts.append(p)
                }
                for s in starts where s < l.count {
                    if let st = StampParser.parse(UnsafeBufferPointer(rebasing: l[s...])), st.valid, let d = st.days {
                        return LogDate(daysSinceEpoch: d)
                    }
                }
                lineStart = end + 1
                lines += 1
            }
            return nil
        }
    }
}

/// Diagnostics with a cap per id, so a binary file gives a few named lines and a count, not a flood.
struct DiagnosticSink {
    var list: [Diagnostic] = []
    var limiter = DiagnosticLimiter(keptPerID: 20)
    let path: String

    mutating func add(_ id: String, _ severity: Severity, _ message: String, _ evidence: Evidence?, offset: Int? = nil) {
        if limiter.admit(id) {
            list.append(Diagnostic(id: id, severity: severity, message: "\(path): \(message)", evidence: evidence, offset: offset))
        }
    }

    var all: [Diagnostic] {
        list + limiter.overflow.map { o in
            Diagnostic(id: o.id, severity: .info, message: "\(path): \(o.notKept) more \(o.id) not listed")
        }
    }
}

/// Splits one input into entries with capture times.
struct InputReader {
    let path: String
    let input: Int
    let options: LogOptions
    var format: LogFormat = .plain
    var lineCount = 0
    /// Lines cut while the file was loaded: 1-based line number -> length in the file.
    var cutLines: [Int: Int] = [:]
    var problems: DiagnosticSink

    // time context
    var lastT: Nanos? = nil
    var lastDays: Int64? = nil
    var lastNanosOfDay: Int64? = nil
    var lastOffset: Int? = nil
    var inferredRun: Int64 = 0
    var untimed = 0
    var missingDateReported = false
    /// Stamps without a zone read as UTC for want of `--tz` or an earlier zoned line.
    var zoneless = 0

    init(path: String, input: Int, options: LogOptions) {
        self.path = path
        self.input = input
        self.options = options
        problems = DiagnosticSink(path: path)
    }

    func ev(_ line: Int) -> Evidence { .logLine(input: input, line: line) }

    /// Lines of the input: byte ranges without the line break.
    static func lineRanges(_ b: [UInt8]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        out.reserveCapacity(b.count / 80 + 1)
        var s = 0
        var i = 0
        while i < b.count {
            if b[i] == 10 {
                var e = i
                if e > s, b[e - 1] == 13 { e -= 1 }
                out.append(s..<e)
                s = i + 1
            }
            i += 1
        }
        if s < b.count {
            var e = b.count
            if b[e - 1] == 13 { e -= 1 }
            out.append(s..<e)
        }
        return out
    }

    mutating func entries(_ bytes: [UInt8]) -> [LogEntry] {
        var b = bytes
        // A UTF-8 byte order mark.
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { b.removeFirst(3) }
        let ranges = InputReader.lineRanges(b)
        lineCount = ranges.count
        if let f = options.format {
            format = f
        } else {
            let sample: [Substring] = ranges.prefix(200).map { Substring(String(decoding: b[$0.clamped(to: $0.lowerBound..<min($0.upperBound, $0.lowerBound + 4096))], as: UTF8.self)) }
            format = FormatDetector.detect(sample)
        }
        var out: [LogEntry]
        switch format {
        case .logJSON: out = jsonArrayEntries(b, ranges)
        case .logNDJSON: out = ndjsonEntries(b, ranges)
        default: out = textEntries(b, ranges)
        }
        if zoneless > 0 {
            problems.add("log.time.no_zone", .warning,
                         "\(zoneless) log time(s) carry no time zone and were read as UTC; if the log was written elsewhere give its zone with --tz (e.g. --tz +01:00 or --tz Europe/Paris)", nil)
        }
        if untimed > 0 {
            problems.add("log.time.missing", .info, "\(untimed) entries carry no time; they take the time of the entry before them", nil)
        }
        return out
    }

    /// Decodes a line; nil (with a diagnostic) for binary junk.
    mutating func lineText(_ b: [UInt8], _ r: Range<Int>, _ lineNo: Int) -> [UInt8]? {
        var r = r
        if r.count > options.maxLineBytes {
            problems.add("log.line.too_long", .warning, "line of \(cutLines[lineNo] ?? r.count) bytes cut to \(options.maxLineBytes)", ev(lineNo))
            var e = r.lowerBound + options.maxLineBytes
            // do not cut inside a UTF-8 sequence
            while e > r.lowerBound, b[e] & 0xC0 == 0x80 { e -= 1 }
            r = r.lowerBound..<e
        }
        var controls = 0
        for i in r {
            let c = b[i]
            if c == 0 {
                problems.add("log.line.binary", .warning, "binary data (NUL byte), line skipped", ev(lineNo), offset: i - r.lowerBound)
                return nil
            }
            if c < 32, c != 9 { controls += 1 }
        }
        if controls > 0, controls * 10 > r.count {
            problems.add("log.line.binary", .warning, "binary data (\(controls) control bytes), line skipped", ev(lineNo))
            return nil
        }
        let slice = Array(b[r])
        if !InputReader.isValidUTF8(slice) {
            problems.add("log.line.encoding", .warning, "not UTF-8; invalid bytes replaced", ev(lineNo))
            return Array(String(decoding: slice, as: UTF8.self).utf8)
        }
        return slice
    }

    /// Strict UTF-8 check (no overlongs, no surrogates), without the macOS 15-only `String(validating:)`.
    static func isValidUTF8(_ b: [UInt8]) -> Bool {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 { i += 1; continue }
            let len: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: len = 2
            case 0xE0: len = 3; lo = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: len = 3
            case 0xED: len = 3; hi = 0x9F
            case 0xF0: len = 4; lo = 0x90
            case 0xF1...0xF3: len = 4
            case 0xF4: len = 4; hi = 0x8F
            default: return false
            }
            guard i + len <= n else { return false }
            guard b[i + 1] >= lo, b[i + 1] <= hi else { return false }
            var k = 2
            while k < len {
                guard b[i + k] & 0xC0 == 0x80 else { return false }
                k += 1
            }
            i += len
        }
        return true
    }

    // MARK: time

    /// Capture time of a stamp read on `lineNo`, or nil when the stamp is unusable.
    mutating func time(_ st: Stamp, _ lineNo: Int) -> Nanos? {
        guard st.valid else {
            problems.add("log.time.invalid", .warning, "timestamp out of range; time taken from the entry before", ev(lineNo))
            return nil
        }
        var days: Int64
        if let d = st.days {
            days = d
        } else if let md = st.monthDay {
            // The year: the date option's, the reference time's, else the year of the line before.
            let year = options.baseDate?.year ?? options.referenceTime.map { LogDate(utcDayOf: $0).year } ?? lastDays.map { LogDate(daysSinceEpoch: $0).year }
            guard let year else {
                if !missingDateReported {
                    problems.add("log.time.no_date", .warning, "dates without a year and no --date given: year 1970 assumed", ev(lineNo))
                    missingDateReported = true
                }
                guard LogDate.valid(year: 1970, month: md.month, day: md.day) else { return nil }
                days = LogDate(year: 1970, month: md.month, day: md.day).daysSinceEpoch
                return finish(days, st)
            }
            guard LogDate.valid(year: year, month: md.month, day: md.day) else {
                problems.add("log.time.invalid", .warning, "no such day \(md.month)/\(md.day) in \(year)", ev(lineNo))
                return nil
            }
            days = LogDate(year: year, month: md.month, day: md.day).daysSinceEpoch
        } else if let d = lastDays {
            days = d
            if let last = lastNanosOfDay, st.nanosOfDay + 12 * 3_600_000_000_000 < last { days += 1 }  // past midnight
        } else if let d = options.baseDate {
            days = d.daysSinceEpoch
        } else if let r = options.referenceTime {
            days = LogDate(utcDayOf: r).daysSinceEpoch
        } else {
            if !missingDateReported {
                problems.add("log.time.no_date", .warning, "times without a date and no --date given: dated 1970-01-01", ev(lineNo))
                missingDateReported = true
            }
            days = 0
        }
        return finish(days, st)
    }

    private mutating func finish(_ days: Int64, _ st: Stamp) -> Nanos {
        let offset: Int
        if let o = st.offset {
            offset = o
        } else if let tz = options.timeZone {
            offset = InputReader.offset(of: tz, localSeconds: days &* 86400 &+ st.nanosOfDay / CaptureTime.second)
        } else if let o = options.utcOffsetSeconds ?? lastOffset {
            offset = o
        } else {
            zoneless += 1
            offset = 0
        }
        if let o = st.offset { lastOffset = o }
        lastDays = days
        lastNanosOfDay = st.nanosOfDay
        let secs = days &* 86400 &- Int64(offset)
        return secs &* CaptureTime.second &+ st.nanosOfDay
    }

    /// Seconds east of UTC in `tz` at a local wall-clock time (seconds since the epoch as if UTC).
    static func offset(of tz: TimeZone, localSeconds: Int64) -> Int {
        let guess = tz.secondsFromGMT(for: Date(timeIntervalSince1970: Double(localSeconds)))
        return tz.secondsFromGMT(for: Date(timeIntervalSince1970: Double(localSeconds - Int64(guess))))
    }

    /// Time for an entry without a usable stamp: the entry before's, one nanosecond on, to keep order.
    mutating func inferredTime() -> Nanos {
        untimed += 1
        inferredRun += 1
        let base = lastT ?? options.referenceTime ?? options.baseDate.map { $0.daysSinceEpoch &* 86400 &* CaptureTime.second } ?? 0
        return base &+ inferredRun
    }

    mutating func stamped(_ t: Nanos) -> Nanos {
        lastT = t
        inferredRun = 0
        return t
    }

    // MARK: text styles

    static let closers: Set<UInt8> = [UInt8(ascii: "}"), UInt8(ascii: ")"), UInt8(ascii: "]")]

    /// The text so far ends in `{`, `[`, `(`, `,` or `=` (a structure printed over several lines).
    static func endsOpen(_ s: [UInt8]) -> Bool {
        guard let last = s.last(where: { $0 != 32 && $0 != 9 }) else { return false }
        return "{[(,=".utf8.contains(last)
    }

    static func opens(_ s: [UInt8]) -> Int {
        var depth = 0
        var inString = false
        var esc = false
        for c in s {
            if esc { esc = false; continue }
            if c == UInt8(ascii: "\\") { esc = true; continue }
            if c == UInt8(ascii: "\"") { inString.toggle(); continue }
            if inString { continue }
            if c == UInt8(ascii: "{") || c == UInt8(ascii: "(") || c == UInt8(ascii: "[") { depth += 1 }
            if c == UInt8(ascii: "}") || c == UInt8(ascii: ")") || c == UInt8(ascii: "]") { depth -= 1 }
        }
        return depth
    }

    mutating func textEntries(_ b: [UInt8], _ ranges: [Range<Int>]) -> [LogEntry] {
        var out: [LogEntry] = []
        var cur: LogEntry? = nil
        var curBytes: [UInt8] = []
        var depth = 0
        var joining = false
        func close(_ cur: inout LogEntry?, _ bytes: inout [UInt8]) {
            if var e = cur {
                e.message = String(decoding: bytes, as: UTF8.self)
                out.append(e)
            }
            cur = nil
            bytes = []
        }
        for (idx, r) in ranges.enumerated() {
            let lineNo = idx + 1
            guard let line = lineText(b, r, lineNo) else { continue }
            let trimmed = line.drop(while: { $0 == 32 || $0 == 9 })
            if trimmed.isEmpty { continue }
            if line.count < 200, LineParsers.isMeta(Substring(String(decoding: line, as: UTF8.self))) { continue }
            let header: LineHeader? = line.withUnsafeBufferPointer { LineParsers.parse(format, $0) }
            if let h = header {
                close(&cur, &curBytes)
                var t: Nanos
                var known = true
                if let st = h.stamp, let tt = time(st, lineNo) { t = stamped(tt) } else { t = inferredTime(); known = false }
                if h.stamp == nil { known = false }
                cur = LogEntry(input: input, line: lineNo, t: t, timeKnown: known, process: h.process, pid: h.pid,
                               subsystem: h.subsystem, category: h.category, level: h.level, message: "")
                curBytes = Array(line[min(h.messageStart, line.count)...])
                depth = InputReader.opens(curBytes)
                joining = false
                continue
            }
            // A continuation of the entry above: indented, closing a bracket, or inside an open one.
            // (An open bracket alone is not enough: a print such as "failed (code 3" must not swallow the next
            // lines; the entry must end in an opener, a comma or `=` for unindented lines to join it.)
            if var e = cur, e.lineCount < options.maxEntryLines,
               trimmed.count < line.count || InputReader.closers.contains(line[0]) || (depth > 0 && (joining || InputReader.endsOpen(curBytes))) {
                curBytes.append(10)
                curBytes.append(contentsOf: line)
                e.lineCount += 1
                cur = e
                joining = true
                depth += InputReader.opens(line)
                continue
            }
            // A line of its own without this format's header: an app print, maybe with its own stamp.
            close(&cur, &curBytes)
            let ph: LineHeader? = format == .plain ? nil : line.withUnsafeBufferPointer { LineParsers.plainStamp($0) }
            var t: Nanos
            var known = false
            var start = 0
            if let ph, let st = ph.stamp, let tt = time(st, lineNo) {
                t = stamped(tt)
                known = true
                start = ph.messageStart
            } else {
                if let ph { start = ph.messageStart }
                t = inferredTime()
            }
            cur = LogEntry(input: input, line: lineNo, t: t, timeKnown: known, message: "")
            curBytes = Array(line[min(start, line.count)...])
            depth = InputReader.opens(curBytes)
            joining = false
        }
        close(&cur, &curBytes)
        return out
    }

    // MARK: JSON styles

    mutating func entry(fromJSON v: JSONValue, lineNo: Int, lineCount: Int) -> LogEntry? {
        guard v.objectValue != nil else {
            problems.add("log.json.not_object", .warning, "JSON value is not an object", ev(lineNo))
            return nil
        }
        let message = v["eventMessage"]?.stringValue ?? v["composedMessage"]?.stringValue
        guard let message else {
            // `{"count":…,"finished":1}` closes log's ndjson output; other objects are not entries.
            if v["finished"] == nil {
                problems.add("log.json.no_message", .info, "JSON object without eventMessage skipped", ev(lineNo))
            }
            return nil
        }
        var t: Nanos
        var known = false
        if let ts = v["timestamp"]?.stringValue {
            if let st = StampParser.parse(Substring(ts)), let tt = time(st, lineNo) {
                t = stamped(tt)
                known = true
            } else {
                if StampParser.parse(Substring(ts)) == nil {
                    problems.add("log.time.invalid", .warning, "unreadable timestamp \"\(ts.prefix(40))\"", ev(lineNo))
                }
                t = inferredTime()
            }
        } else {
            t = inferredTime()
        }
        var process = v["process"]?.stringValue
        if process == nil, let p = v["processImagePath"]?.stringValue {
            process = p.split(separator: "/").last.map(String.init)
        }
        let pid = v["processID"]?.int64Value.map { Int(truncatingIfNeeded: $0) }
        var msg = message
        if msg.utf8.count > options.maxLineBytes {
            problems.add("log.line.too_long", .warning, "message of \(msg.utf8.count) bytes cut to \(options.maxLineBytes)", ev(lineNo))
            msg = String(decoding: Array(msg.utf8.prefix(options.maxLineBytes)), as: UTF8.self)
        }
        return LogEntry(input: input, line: lineNo, lineCount: lineCount, t: t, timeKnown: known, process: process, pid: pid,
                        subsystem: v["subsystem"]?.stringValue, category: v["category"]?.stringValue,
                        level: v["messageType"]?.stringValue, message: msg)
    }

    mutating func ndjsonEntries(_ b: [UInt8], _ ranges: [Range<Int>]) -> [LogEntry] {
        var out: [LogEntry] = []
        for (idx, r) in ranges.enumerated() {
            let lineNo = idx + 1
            guard let line = lineText(b, r, lineNo) else { continue }
            let text = String(decoding: line, as: UTF8.self)
            let t = text.trimmingSpaces
            if t.isEmpty || LineParsers.isMeta(Substring(t)) { continue }
            guard t.hasPrefix("{") else {
                problems.add("log.json.malformed", .warning, "not a JSON object line", ev(lineNo))
                continue
            }
            let body = t.hasSuffix(",") ? String(t.dropLast()) : t
            do {
                let v = try JSONParser.parse(body)
                if let e = entry(fromJSON: v, lineNo: lineNo, lineCount: 1) { out.append(e) }
            } catch {
                problems.add("log.json.malformed", .warning, "bad JSON: \(error)", ev(lineNo))
            }
        }
        return out
    }

    /// `log show --style json`: a pretty-printed array; each object starts on some line.
    mutating func jsonArrayEntries(_ b: [UInt8], _ ranges: [Range<Int>]) -> [LogEntry] {
        var out: [LogEntry] = []
        var depth = 0
        var inString = false
        var esc = false
        var objStart: Int? = nil
        var objLine = 0
        var line = 1
        let maxObject = 4 * 1024 * 1024
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == 10 { line += 1 }
            if inString {
                if esc { esc = false } else if c == UInt8(ascii: "\\") { esc = true } else if c == UInt8(ascii: "\"") { inString = false }
                i += 1
                continue
            }
            switch c {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"):
                if objStart == nil, depth <= 1 { objStart = i; objLine = line }
                depth += 1
            case UInt8(ascii: "}"):
                depth -= 1
                if let s = objStart, depth <= 1 {
                    let bytes = Array(b[s...i])
                    let lines = bytes.reduce(1) { $0 + ($1 == 10 ? 1 : 0) }
                    if bytes.contains(0) {
                        problems.add("log.line.binary", .warning, "binary data inside a JSON object, skipped", ev(objLine))
                    } else {
                        do {
                            let v = try JSONParser.parse(String(decoding: bytes, as: UTF8.self))
                            if let e = entry(fromJSON: v, lineNo: objLine, lineCount: lines) { out.append(e) }
                        } catch {
                            problems.add("log.json.malformed", .warning, "bad JSON object: \(error)", ev(objLine))
                        }
                    }
                    objStart = nil
                    depth = max(depth, 0)
                }
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "]"): depth = max(0, depth - 1)
            default: break
            }
            if let s = objStart, i - s > maxObject {
                problems.add("log.json.too_large", .warning, "JSON object over \(maxObject) bytes skipped", ev(objLine))
                objStart = nil
                depth = 1
                inString = false
                // resync at the next line
                while i < b.count, b[i] != 10 { i += 1 }
                continue
            }
            i += 1
        }
        if objStart != nil {
            problems.add("log.json.unterminated", .warning, "JSON object never closed", ev(objLine))
        }
        return out
    }
}

/// Turns matches into events: coalesces per-channel bursts and repeated state-change prints.
struct EventBuilder {
    let options: LogOptions
    var events: [PeerEvent] = []
    private var bursts: [String: Int] = [:]
    private var lastState: [String: Int] = [:]

    init(options: LogOptions) { self.options = options }

    static func peerKey(_ h: PeerHint) -> String {
        if let p = h.participantID { return "p:\(p)" }
        if let id = h.peerID { return "p:\(PeerIdentity.participantID(id))" }
        if let n = h.displayName { return "n:\(n)" }
        return ""
    }

    // Context from the lines around (see `LogContext`), per input.
    private var lastNamed: [Int: (t: Nanos, hint: PeerHint)] = [:]
    private var waiting: [(index: Int, input: Int, asTo: Bool)] = []
    private var invitation: [Int: (remote: PeerHint, local: PeerHint)] = [:]

    /// Lines whose peer is the device that wrote the log: never context for another line.
    static let ownLineKinds: Set<EventKind> = [.logAdvertising, .logPeerCreated, .logSessionInit]

    /// Takes what a line says about its surroundings: the participant it names (for peerless error
    /// lines before and after it) and the peers of the current invitation.
    mutating func observe(_ m: LogMatch, entry e: LogEntry) {
        for h in [m.from, m.to] where h.displayName != nil && (h.peerID != nil || h.participantID != nil) {
            if let n = h.displayName { identified[e.input, default: [:]][n] = (e.t, h) }
        }
        switch m.context {
        case .invitationRemoteIsFrom, .invitationRemoteIsTo:
            let (remote, local) = m.context == .invitationRemoteIsFrom ? (m.from, m.to) : (m.to, m.from)
            guard !remote.isEmpty else { break }
            // An app print naming only a display name does not replace MPC's line with the IDs.
            if let cur = invitation[e.input], remote.peerID == nil, remote.participantID == nil,
               cur.remote.displayName == remote.displayName {
                break
            }
            // A line naming only the remote keeps the local side an earlier line of the input named.
            let keep = local.isEmpty ? (invitation[e.input]?.local ?? .unknown) : local
            invitation[e.input] = (remote, keep)
        default: break
        }
        if m.context == .nearbyParticipantAsTo || m.context == .nearbyParticipantAsFrom { return }
        if let k = m.kind, EventBuilder.ownLineKinds.contains(k) { return }
        // A line naming both sides (`Got invite from peer[X] for peer[Y]`) may name the log's own
        // device on either: only lines naming one side (GCK's `participant [P]`) are context.
        guard m.from.isEmpty != m.to.isEmpty else { return }
        let named = m.to.isEmpty ? m.from : m.to
        guard named.participantID != nil else { return }
        lastNamed[e.input] = (e.t, named)
        var still: [(index: Int, input: Int, asTo: Bool)] = []
        for w in waiting {
            guard w.input == e.input else { still.append(w); continue }
            guard w.index < events.count, e.t &- events[w.index].t <= options.coalesceWindow else { continue }
            if w.asTo { events[w.index].to = named } else { events[w.index].from = named }
            events[w.index].attrs["peerFrom"] = "context"
        }
        waiting = still
    }

    /// Fills the hints a line left empty from its context; true when a nearby participant is still wanted.
    private func fill(_ m: LogMatch, _ e: LogEntry, from: inout PeerHint, to: inout PeerHint, attrs: inout [String: String]) -> Bool {
        switch m.context {
        case .none, .invitationRemoteIsFrom, .invitationRemoteIsTo:
            return false
        case .nearbyParticipantAsTo, .nearbyParticipantAsFrom:
            guard from.isEmpty, to.isEmpty else { return false }
            if let (t, h) = lastNamed[e.input], e.t >= t, e.t &- t <= options.coalesceWindow {
                if m.context == .nearbyParticipantAsTo { to = h } else { from = h }
                attrs["peerFrom"] = "context"
                return false
            }
            return true
        case .answersInvitation:
            guard let inv = invitation[e.input] else { return false }
            if to.isEmpty { to = inv.remote; attrs["peerFrom"] = "context" }
            if from.isEmpty, !inv.local.isEmpty { from = inv.local; attrs["peerFrom"] = "context" }
            return false
        case .invitationRemoteAsFrom:
            guard from.isEmpty, let inv = invitation[e.input] else { return false }
            from = inv.remote
            attrs["peerFrom"] = "context"
            return false
        }
    }

    /// Per input, the last hint with an ID seen for each display name, and when.
    private var identified: [Int: [String: (Nanos, PeerHint)]] = [:]

    /// An app's discovery print names only a display name; MPC's `Peer found: idString […]` line just
    /// before it (within a second, same input) says which peer ID it is, so that two devices sharing
    /// a name stay apart.
    private func identify(_ h: PeerHint, _ e: LogEntry) -> PeerHint {
        guard h.peerID == nil, h.participantID == nil, h.endpoint == nil, h.address == nil, let n = h.displayName,
              let (t, known) = identified[e.input]?[n], e.t >= t, e.t &- t <= CaptureTime.second else { return h }
        return known
    }

    mutating func add(kind: EventKind, match m0: LogMatch, entry e: LogEntry, source: String) {
        var m = m0
        if kind == .found || kind == .lost { m.from = identify(m.from, e) }
        if kind == .logInviting { m.to = identify(m.to, e) }
        let wantsNearby = fill(m0, e, from: &m.from, to: &m.to, attrs: &m.attrs)
        if wantsNearby {
            var attrs = m.attrs
            if !e.timeKnown { attrs["time"] = "inferred" }
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            waiting.append((events.count - 1, e.input, m0.context == .nearbyParticipantAsTo))
            return
        }
        var attrs = m.attrs
        if !e.timeKnown { attrs["time"] = "inferred" }
        let peer = EventBuilder.peerKey(m.from) + "|" + EventBuilder.peerKey(m.to)
        if let ch = m.channel {
            let rest = attrs.filter { $0.key != "state" && $0.key != "time" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            let key = "\(e.input)|\(source)|\(kind.rawValue)|\(peer)|\(rest)"
            if let i = bursts[key], e.t &- events[i].t <= options.coalesceWindow, e.t >= events[i].t {
                // One event for the burst: `channel` lists the channels ("0,1,2", a key the timeline
                // detail shows), the evidence is the first line and the last (`count`, `lastEvidence`).
                var chans = events[i].attrs["channel", default: ""].split(separator: ",").map(String.init)
                if !chans.contains(String(ch)) { chans.append(String(ch)) }
                events[i].attrs["channel"] = chans.joined(separator: ",")
                events[i].attrs["lines"] = String((Int(events[i].attrs["lines", default: "1"]) ?? 1) + 1)
                events[i].count &+= 1
                events[i].lastT = max(events[i].lastT, e.t)
                events[i].lastEvidence = e.evidence
                return
            }
            attrs["channel"] = String(ch)
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            bursts[key] = events.count - 1
            return
        }
        if kind == .stateChange, let to = attrs["to"] {
            let key = "\(e.input)|\(peer)|\(attrs["session", default: "mc"])"
            if let i = lastState[key], events[i].attrs["to"] == to, e.t &- events[i].t <= options.duplicateStateWindow, e.t >= events[i].t {
                // The same change printed again (MCSession prints two lines; apps print their own).
                if events[i].attrs["from"] == nil, let f = attrs["from"] { events[i].attrs["from"] = f }
                EventBuilder.mergeHint(&events[i].from, m.from)
                events[i].attrs["lines"] = String((Int(events[i].attrs["lines", default: "1"]) ?? 1) + 1)
                return
            }
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            lastState[key] = events.count - 1
            return
        }
        events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
    }

    static func mergeHint(_ a: inout PeerHint, _ b: PeerHint) {
        if a.peerID == nil { a.peerID = b.peerID }
        if a.participantID == nil { a.participantID = b.participantID }
        if a.displayName == nil { a.displayName = b.displayName }
    }
}
