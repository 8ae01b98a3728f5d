import Foundation
import PeerscopeCore

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
}
