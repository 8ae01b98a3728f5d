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
    /// The identity facts the lines taught (`identity.learned`, at the line that taught each), in
    /// order: part of the event stream (`allEvents`), kept apart for callers that look at the steps.
    public var identityFacts: [PeerEvent] = []
    /// `events` and `identityFacts` in one list, ordered by capture time then line.
    public var allEvents: [PeerEvent] {
        (events + identityFacts).sorted { ($0.t, $0.evidence) < ($1.t, $1.evidence) }
    }
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

    /// Adds problems each counted once (a pattern file's bad entries).
    mutating func add(problems more: [Diagnostic]) {
        problems += more
        for d in more { problemTotals[d.id, default: 0] += 1 }
    }

    public mutating func merge(_ o: LogReadResult) {
        events += o.events
        identityFacts += o.identityFacts
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
        var result = LogReadResult()
        let (engine, p) = try LogEngine.standard(patternsFile: options.patternsFile)
        result.add(problems: p)
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
        result.identityFacts.sort { ($0.t, $0.evidence) < ($1.t, $1.evidence) }
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
        let (engine, pre) = try LogEngine.standard(patternsFile: options.patternsFile)
        var r = LogReadResult()
        r.add(problems: pre)
        r.merge(read(bytes: Array(text.utf8), path: path, input: input, options: options, directory: directory, engine: engine))
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
        // The log's identity facts are events this reader makes itself (the directory's own hook
        // belongs to the capture's decoding): stand it aside while reading.
        let hook = directory.onFact
        directory.onFact = nil
        defer { directory.onFact = hook }
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
        var facts = IdentityFacts()
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
                facts.learn(l.peerID, l.displayName, e, source)
                if let n = l.displayName { names.insert(n) }
            }
            // Any line naming both an idString and a display name teaches the directory.
            for h in [m.from, m.to] {
                if let id = h.peerID, let n = h.displayName {
                    directory.learn(peerID: id, displayName: n)
                    facts.learn(id, n, e, source)
                }
                if let n = h.displayName { names.insert(n) }
            }
            if let kind = m.kind { builder.add(kind: kind, match: m, entry: e, source: source) }
            builder.observe(m, entry: e)
        }
        result.events = builder.events.sorted { ($0.t, $0.evidence) < ($1.t, $1.evidence) }
        result.identityFacts = facts.events
        return (result, unknown, names)
    }

    /// The identity facts one pass over a log teaches, as `identity.learned` events at the line that
    /// taught each: a peer ID the first time, then each change of its display name (what the
    /// directory keeps is what folding the events gives).
    private struct IdentityFacts {
        var events: [PeerEvent] = []
        private var names: [UInt64: String] = [:]

        mutating func learn(_ id: UInt64, _ name: String?, _ e: LogEntry, _ source: String) {
            let known = names[id]
            let named = name.flatMap { $0.isEmpty ? nil : $0 }
            guard known == nil || (named != nil && named != known) else { return }
            names[id] = named ?? known ?? ""
            events.append(PeerEvent(kind: .identityLearned, t: e.t, evidence: e.evidence,
                                    from: PeerHint(peerID: id, displayName: named), source: source))
        }
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
