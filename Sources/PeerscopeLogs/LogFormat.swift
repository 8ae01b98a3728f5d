import PeerscopeCore

/// The shape of a text log. Detected from the first lines unless the run names it (`--log-format`).
public enum LogFormat: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// Xcode's console and NSLog: `2018-09-15 19:02:55.002888+0100 App[25100:3633729] [GCKSession] message`.
    case xcode
    /// `log show|stream` default style: `STAMP 0xTID Type 0xACT PID TTL process: (Lib) [sub:cat] message`.
    case logDefault = "log-default"
    /// `log show --style compact`: `2026-09-24 06:52:11.936 Df App[4211:1604] [sub:cat] message` (no zone).
    case logCompact = "log-compact"
    /// `log show --style syslog`: `STAMP localhost App[4211]: (Lib) [sub:cat] message`.
    case logSyslog = "log-syslog"
    /// `log show --style json`: one JSON array of objects.
    case logJSON = "log-json"
    /// `log show|stream --style ndjson`: one JSON object per line.
    case logNDJSON = "log-ndjson"
    /// A device's syslog relayed by `idevicesyslog` (libimobiledevice) or old syslog files:
    /// `Sep 15 19:02:55 iPhone App(MultipeerConnectivity)[25100] <Notice>: message` (no year, no zone).
    case deviceSyslog = "device-syslog"
    /// Console.app's copied rows: tab-separated columns (type, time, process, [subsystem, category,] message)
    /// in whatever order and subset the window showed; the message is the last column.
    case consoleApp = "console-app"
    /// App prints (`print`), with or without a leading timestamp.
    case plain

    public var description: String { rawValue }

    /// Accepts the raw values and a few spellings (`console`, `default`, `compact`, `syslog`, `json`, `ndjson`).
    public init?(name: String) {
        switch name.lowercased() {
        case "xcode", "console", "nslog": self = .xcode
        case "log-default", "default", "log": self = .logDefault
        case "log-compact", "compact": self = .logCompact
        case "log-syslog", "syslog": self = .logSyslog
        case "log-json", "json": self = .logJSON
        case "log-ndjson", "ndjson", "jsonl": self = .logNDJSON
        case "device-syslog", "idevicesyslog", "bsd-syslog": self = .deviceSyslog
        case "console-app", "consoleapp", "console.app", "tsv": self = .consoleApp
        case "plain", "print", "text": self = .plain
        default: return nil
        }
    }
}

/// What the front of a line says about its entry.
struct LineHeader {
    var stamp: Stamp?
    var process: String?
    var pid: Int?
    var subsystem: String?
    var category: String?
    var level: String?
    /// Byte offset of the message within the line.
    var messageStart: Int
}

enum LineParsers {
    typealias Buf = UnsafeBufferPointer<UInt8>

    static func isSpace(_ c: UInt8) -> Bool { c == 32 || c == 9 }
    static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
    static func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102) }

    static func skipSpaces(_ b: Buf, _ p: inout Int) { while p < b.count, isSpace(b[p]) { p += 1 } }

    static func token(_ b: Buf, _ p: inout Int) -> Range<Int>? {
        skipSpaces(b, &p)
        let s = p
        while p < b.count, !isSpace(b[p]) { p += 1 }
        return p > s ? s..<p : nil
    }

    static func str(_ b: Buf, _ r: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self) }

    static func parse(_ format: LogFormat, _ b: Buf) -> LineHeader? {
        switch format {
        case .xcode: xcode(b)
        case .logDefault: logDefault(b)
        case .logCompact: compact(b)
        case .logSyslog: syslog(b)
        case .consoleApp: consoleApp(b)
        case .deviceSyslog: deviceSyslog(b)
        case .plain, .logJSON, .logNDJSON: plainStamp(b)
        }
    }

    /// `Process[pid:tid]` or `Process[pid]` ending at a space or `:`; the name may contain spaces.
    static func processBracket(_ b: Buf, from p0: Int, needTID: Bool) -> (name: Range<Int>, pid: Int, end: Int)? {
        var p = p0
        let limit = min(b.count, p0 + 256)
        while p < limit {
            if b[p] == UInt8(ascii: "["), p > p0 {
                var q = p + 1
                var pid = 0
                let ds = q
                while q < b.count, isDigit(b[q]), q - ds < 10 { pid = pid * 10 + Int(b[q] - 48); q += 1 }
                if q > ds, q < b.count {
                    if b[q] == UInt8(ascii: ":") {
                        q += 1
                        let hs = q
                        while q < b.count, isHex(b[q]) || b[q] == UInt8(ascii: "x") { q += 1 }
                        if q > hs, q < b.count, b[q] == UInt8(ascii: "]") { return (p0..<p, pid, q + 1) }
                    } else if !needTID, b[q] == UInt8(ascii: "]") {
                        return (p0..<p, pid, q + 1)
                    }
                }
            }
            p += 1
        }
        return nil
    }

    /// `(Library) [subsystem:category] ` / `[category] ` / `[] ` before the message.
    static func subsystemPrefix(_ b: Buf, _ p: inout Int, into h: inout LineHeader) {
        skipSpaces(b, &p)
        if p < b.count, b[p] == UInt8(ascii: "(") {
            var q = p + 1
            while q < b.count, q - p < 128, b[q] != UInt8(ascii: ")"), b[q] != UInt8(ascii: "(") { q += 1 }
            if q < b.count, b[q] == UInt8(ascii: ")"), q + 1 >= b.count || isSpace(b[q + 1]) {
                p = q + 1
                skipSpaces(b, &p)
            }
        }
        if p < b.count, b[p] == UInt8(ascii: "[") {
            var q = p + 1
            var colon: Int? = nil
            while q < b.count, q - p < 160, b[q] != UInt8(ascii: "]"), !isSpace(b[q]) {
                if b[q] == UInt8(ascii: ":"), colon == nil { colon = q }
                q += 1
            }
            if q < b.count, b[q] == UInt8(ascii: "]"), q + 1 >= b.count || isSpace(b[q + 1]) {
                if let colon {
                    h.subsystem = str(b, (p + 1)..<colon)
                    h.category = str(b, (colon + 1)..<q)
                } else if q > p + 1 {
                    h.category = str(b, (p + 1)..<q)
                }
                p = q + 1
                skipSpaces(b, &p)
            }
        }
    }

    static func xcode(_ b: Buf) -> LineHeader? {
        guard let st = StampParser.parse(b), st.length < b.count, isSpace(b[st.length]) else { return nil }
        var p = st.length
        skipSpaces(b, &p)
        guard let pr = processBracket(b, from: p, needTID: true) else { return nil }
        var h = LineHeader(stamp: st, process: str(b, pr.name), pid: pr.pid, messageStart: pr.end)
        p = pr.end
        subsystemPrefix(b, &p, into: &h)
        h.messageStart = p
        return h
    }

    static let defaultTypes: Set<String> = ["Default", "Info", "Debug", "Error", "Fault", "Activity", "Signpost", "Notice", "State", "Trace", "Loss", "Timesync"]

    static func logDefault(_ b: Buf) -> LineHeader? {
        guard let st = StampParser.parse(b), st.offset != nil else { return nil }
        var p = st.length
        guard let tid = token(b, &p), b[tid.lowerBound] == 48, tid.count > 2, b[tid.lowerBound + 1] == UInt8(ascii: "x") else { return nil }
        guard let ty = token(b, &p), defaultTypes.contains(str(b, ty)) else { return nil }
        let level = str(b, ty)
        var save = p
        // activity id (0x…), pid, ttl (the ttl column is absent in old releases)
        if let act = token(b, &p), b[act.lowerBound] == 48 { save = p } else { p = save }
        var pid: Int? = nil
        if let pt = token(b, &p), pt.allSatisfy({ isDigit(b[$0]) }) { pid = Int(str(b, pt)); save = p } else { p = save }
        if let tt = token(b, &p), tt.allSatisfy({ isDigit(b[$0]) }) { save = p } else { p = save }
        skipSpaces(b, &p)
        // Signpost lines carry `[spid …]` before the process.
        if p < b.count, b[p] == UInt8(ascii: "["), let close = find(Array("] ".utf8), in: b, from: p, end: b.count) {
            p = close + 2
        }
        // process: …
        let ps = p
        guard let colon = find(Array(": ".utf8), in: b, from: p, end: b.count) ?? (b.last == UInt8(ascii: ":") ? b.count - 1 : nil),
              colon - ps < 256 else { return nil }
        var h = LineHeader(stamp: st, process: str(b, ps..<colon), pid: pid, level: level, messageStart: colon + 1)
        p = min(b.count, colon + 2)
        subsystemPrefix(b, &p, into: &h)
        h.messageStart = p
        return h
    }

    static let compactTypes: [String: String] = ["Df": "Default", "I": "Info", "Db": "Debug", "E": "Error", "F": "Fault",
                                                "A": "Activity", "S": "Signpost", "Sp": "Signpost", "N": "Notice"]

    static func compact(_ b: Buf) -> LineHeader? {
        guard let st = StampParser.parse(b) else { return nil }
        var p = st.length
        guard let ty = token(b, &p), let level = compactTypes[str(b, ty)] else { return nil }
        skipSpaces(b, &p)
        guard let pr = processBracket(b, from: p, needTID: false) else { return nil }
        var h = LineHeader(stamp: st, process: str(b, pr.name), pid: pr.pid, level: level, messageStart: pr.end)
        p = pr.end
        subsystemPrefix(b, &p, into: &h)
        h.messageStart = p
        return h
    }

    static func syslog(_ b: Buf) -> LineHeader? {
        guard let st = StampParser.parse(b) else { return nil }
        var p = st.length
        guard token(b, &p) != nil else { return nil }  // host
        skipSpaces(b, &p)
        guard let pr = processBracket(b, from: p, needTID: false), pr.end < b.count, b[pr.end] == UInt8(ascii: ":") else { return nil }
        var h = LineHeader(stamp: st, process: str(b, pr.name), pid: pr.pid, messageStart: pr.end + 1)
        p = pr.end + 1
        // `<Notice>:` style levels
        skipSpaces(b, &p)
        if p < b.count, b[p] == UInt8(ascii: "<"), let close = find(Array(">:".utf8), in: b, from: p, end: min(b.count, p + 16)) {
            h.level = str(b, (p + 1)..<close)
            p = close + 2
        }
        subsystemPrefix(b, &p, into: &h)
        h.messageStart = p
        return h
    }

    /// `Sep 15 19:02:55 host process(Library)[pid] <Level>: message`; `(Library)` and `<Level>` optional.
    static func deviceSyslog(_ b: Buf) -> LineHeader? {
        guard let st = StampParser.parseMonthDay(b) else { return nil }
        var p = st.length
        guard token(b, &p) != nil else { return nil }  // device name
        skipSpaces(b, &p)
        let ps = p
        // process, optional (Library), [pid]
        while p < b.count, b[p] != UInt8(ascii: "["), b[p] != UInt8(ascii: "("), !isSpace(b[p]), p - ps < 128 { p += 1 }
        guard p > ps, p < b.count else { return nil }
        var h = LineHeader(stamp: st, process: str(b, ps..<p), messageStart: p)
        if b[p] == UInt8(ascii: "(") {  // the sender library, e.g. (MultipeerConnectivity)
            while p < b.count, b[p] != UInt8(ascii: ")") { p += 1 }
            guard p < b.count else { return nil }
            p += 1
        }
        guard p < b.count, b[p] == UInt8(ascii: "[") else { return nil }
        var q = p + 1
        var pid = 0
        while q < b.count, isDigit(b[q]), q - p < 11 { pid = pid * 10 + Int(b[q] - 48); q += 1 }
        guard q > p + 1, q < b.count, b[q] == UInt8(ascii: "]") else { return nil }
        h.pid = pid
        p = q + 1
        skipSpaces(b, &p)
        if p < b.count, b[p] == UInt8(ascii: "<"), let close = find(Array(">".utf8), in: b, from: p, end: min(b.count, p + 16)) {
            h.level = str(b, (p + 1)..<close)
            p = close + 1
        }
        if p < b.count, b[p] == UInt8(ascii: ":") { p += 1 }
        subsystemPrefix(b, &p, into: &h)
        h.messageStart = p
        return h
    }

    static let levelWords: Set<String> = ["default", "info", "debug", "error", "fault", "notice", "activity", "signpost",
                                           "Default", "Info", "Debug", "Error", "Fault", "Notice", "Activity", "Signpost"]

    /// A Console.app row: at least three tab-separated columns, one of the first four a timestamp.
    static func consoleApp(_ b: Buf) -> LineHeader? {
        var cols: [Range<Int>] = []
        var s = 0
        for i in 0..<b.count where b[i] == 9 {
            cols.append(s..<i)
            s = i + 1
        }
        cols.append(s..<b.count)
        guard cols.count >= 3, let last = cols.last else { return nil }
        var h = LineHeader(messageStart: last.lowerBound)
        var stampCol: Int? = nil
        for (i, c) in cols.prefix(4).enumerated() where !c.isEmpty {
            let col = UnsafeBufferPointer(rebasing: b[c])
            if let st = StampParser.parse(col, allowTimeOnly: true), st.length == c.count {
                h.stamp = st
                stampCol = i
                break
            }
        }
        guard let stampCol else { return nil }
        for (i, c) in cols.dropLast().enumerated() where i != stampCol && !c.isEmpty {
            let v = str(b, c)
            if levelWords.contains(v), h.level == nil {
                h.level = v.prefix(1).uppercased() + v.dropFirst()
            } else if v.contains("."), !v.contains(" "), h.subsystem == nil, v.split(separator: ".").count >= 2 {
                h.subsystem = v
            } else if h.subsystem != nil, h.category == nil {
                h.category = v
            } else if h.process == nil {
                h.process = v
            }
        }
        return h
    }

    /// An app print's own timestamp: `2024-05-01 12:00:00.123[zone] msg`, `12:00:00.123 msg`,
    /// `[2024-05-01T12:00:00Z] msg`, `[12:00:00.123] msg`.
    static func plainStamp(_ b: Buf) -> LineHeader? {
        var p = 0
        var bracket = false
        if p < b.count, b[p] == UInt8(ascii: "[") { p += 1; bracket = true }
        guard let st = StampParser.parse(b, at: p, allowTimeOnly: true) else { return nil }
        p += st.length
        if bracket {
            guard p < b.count, b[p] == UInt8(ascii: "]") else { return nil }
            p += 1
        }
        if p < b.count, b[p] == UInt8(ascii: ":") || b[p] == UInt8(ascii: "|") { p += 1 }
        skipSpaces(b, &p)
        var h = LineHeader(stamp: st, messageStart: p)
        if p < b.count, b[p] == UInt8(ascii: "-"), p + 1 < b.count, isSpace(b[p + 1]) { p += 2; h.messageStart = p }
        return h
    }

    /// Lines `log` prints around the entries (headers, notes, statistics).
    static func isMeta(_ line: Substring) -> Bool {
        if line.hasPrefix("Timestamp "), line.contains("Thread") || line.contains(" Ty ") || line.contains("(process)") || line.contains("Process[") {
            return true
        }
        if line.hasPrefix("Filtering the log data") || line.hasPrefix("Skipping info and debug")
            || line.hasPrefix("Log      -") || line.hasPrefix("Activity -") || line.hasPrefix("Signpost -")
            || line.hasPrefix("Boundary -") || line.hasPrefix("Ttl      -") || line.hasPrefix("---") && line.allSatisfy({ $0 == "-" }) {
            return true
        }
        return false
    }
}

enum FormatDetector {
    static let textFormats: [LogFormat] = [.logDefault, .logCompact, .logSyslog, .xcode, .consoleApp, .deviceSyslog]

    /// Picks the format that explains most of the first lines; `plain` when none does.
    static func detect(_ lines: [Substring]) -> LogFormat {
        var firstNonSpace: Character? = nil
        for l in lines {
            if let c = l.first(where: { !$0.isWhitespace }) { firstNonSpace = c; break }
        }
        if firstNonSpace == "[" {
            // `[{` opens log's JSON style; `[12:00:00] …` is a print with a bracketed time.
            let joined = lines.prefix(3).joined(separator: "\n").filter { !$0.isWhitespace }
            if joined.hasPrefix("[{") || joined == "[" || joined.hasPrefix("[]") { return .logJSON }
        }
        var counts: [LogFormat: Int] = [:]
        var objects = 0
        var sample = 0
        for l in lines.prefix(200) {
            let t = l.drop(while: { $0 == " " || $0 == "\t" })
            if t.isEmpty || LineParsers.isMeta(t) { continue }
            sample += 1
            if t.hasPrefix("{") && (t.hasSuffix("}") || t.hasSuffix("},")) { objects += 1 }
            var s = l
            s.withUTF8 { b in
                for f in textFormats where LineParsers.parse(f, b) != nil { counts[f, default: 0] += 1 }
            }
        }
        if sample > 0, objects * 2 >= sample { return .logNDJSON }
        var best: LogFormat = .plain
        var bestCount = 0
        for f in textFormats {
            let c = counts[f] ?? 0
            if c > bestCount { best = f; bestCount = c }
        }
        return best
    }
}
