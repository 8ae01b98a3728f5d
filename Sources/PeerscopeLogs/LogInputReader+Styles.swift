import Foundation
import PeerscopeCore

/// The input styles: text lines (continuation lines joined into entries), and JSON
/// (`log show --style json`, `ndjson`).
extension InputReader {
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
