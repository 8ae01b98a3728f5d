import PeerscopeCore

/// A civil date for lines that carry only a time of day (`--date YYYY-MM-DD`).
public struct LogDate: Sendable, Hashable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// `2026-11-22`; nil when malformed or out of range.
    public init?(parsing s: String) {
        let p = s.split(separator: "-", omittingEmptySubsequences: false)
        guard p.count == 3, p[0].count == 4, p[1].count == 2, p[2].count == 2,
              let y = Int(p[0]), let m = Int(p[1]), let d = Int(p[2]),
              LogDate.valid(year: y, month: m, day: d) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    public var description: String {
        func pad(_ v: Int, _ w: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    var daysSinceEpoch: Int64 { CaptureTime.days(year: Int64(year), month: Int64(month), day: Int64(day)) }

    init(daysSinceEpoch d: Int64) {
        let (y, m, dd) = CaptureTime.civil(fromDays: d)
        self.init(year: Int(y), month: Int(m), day: Int(dd))
    }

    /// The UTC day of a capture time.
    public init(utcDayOf t: Nanos) {
        let secs = t >= 0 ? t / CaptureTime.second : (t - CaptureTime.second + 1) / CaptureTime.second
        let days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400
        self.init(daysSinceEpoch: days)
    }

    static func valid(year: Int, month: Int, day: Int) -> Bool {
        guard (1900...2999).contains(year), (1...12).contains(month), day >= 1 else { return false }
        let dim = [31, (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= dim[month - 1]
    }
}

/// A timestamp read from the front of a line.
struct Stamp: Sendable, Equatable {
    /// Days since 1970-01-01 of the local date, nil for a time of day only.
    var days: Int64?
    /// Nanoseconds since local midnight.
    var nanosOfDay: Int64
    /// Seconds east of UTC when the stamp says so.
    var offset: Int?
    /// Bytes consumed.
    var length: Int
    /// False when the shape is a timestamp but a field is out of range (month 13, hour 25).
    var valid: Bool
    /// Month and day without a year (`Sep 15 19:02:55`, syslog's style): the year comes from context.
    var monthDay: (month: Int, day: Int)? = nil

    static func == (a: Stamp, b: Stamp) -> Bool {
        a.days == b.days && a.nanosOfDay == b.nanosOfDay && a.offset == b.offset && a.length == b.length && a.valid == b.valid
            && a.monthDay?.month == b.monthDay?.month && a.monthDay?.day == b.monthDay?.day
    }
}

enum StampParser {
    @inline(__always) static func digit(_ c: UInt8) -> Int? { c >= 48 && c <= 57 ? Int(c - 48) : nil }

    static func number(_ b: UnsafeBufferPointer<UInt8>, _ p: Int, _ n: Int) -> Int? {
        guard p + n <= b.count else { return nil }
        var v = 0
        for i in 0..<n {
            guard let d = digit(b[p + i]) else { return nil }
            v = v * 10 + d
        }
        return v
    }

    /// `YYYY-MM-DD[ T]HH:MM:SS[.frac][zone]` or, when `allowTimeOnly`, `HH:MM:SS[.frac][zone]`, at `p`.
    static func parse(_ b: UnsafeBufferPointer<UInt8>, at p0: Int = 0, allowTimeOnly: Bool = false) -> Stamp? {
        var p = p0
        var days: Int64? = nil
        var valid = true
        if let y = number(b, p, 4), p + 10 <= b.count, b[p + 4] == UInt8(ascii: "-"),
           let m = number(b, p + 5, 2), b[p + 7] == UInt8(ascii: "-"), let d = number(b, p + 8, 2) {
            p += 10
            guard p < b.count, b[p] == 32 || b[p] == UInt8(ascii: "T") else { return nil }
            p += 1
            if LogDate.valid(year: y, month: m, day: d) {
                days = CaptureTime.days(year: Int64(y), month: Int64(m), day: Int64(d))
            } else {
                valid = false
            }
        } else if !allowTimeOnly {
            return nil
        }
        // HH:MM:SS (H may be one digit for time-only stamps)
        var hh: Int
        if let h2 = number(b, p, 2) { hh = h2; p += 2 } else if days == nil, valid, let h1 = number(b, p, 1) { hh = h1; p += 1 } else { return nil }
        guard p + 6 <= b.count, b[p] == UInt8(ascii: ":"), let mm = number(b, p + 1, 2),
              b[p + 3] == UInt8(ascii: ":"), let ss = number(b, p + 4, 2) else { return nil }
        p += 6
        var nanos: Int64 = 0
        if p < b.count, b[p] == UInt8(ascii: ".") || b[p] == UInt8(ascii: ","), p + 1 < b.count, digit(b[p + 1]) != nil {
            p += 1
            var scale: Int64 = 100_000_000
            while p < b.count, let d = digit(b[p]) {
                if scale > 0 { nanos += Int64(d) * scale; scale /= 10 }
                p += 1
            }
        }
        if hh > 23 || mm > 59 || ss > 60 { valid = false }
        var offset: Int? = nil
        if p < b.count {
            if b[p] == UInt8(ascii: "Z") {
                offset = 0
                p += 1
            } else if b[p] == UInt8(ascii: "+") || b[p] == UInt8(ascii: "-") {
                let sign = b[p] == UInt8(ascii: "+") ? 1 : -1
                if let oh = number(b, p + 1, 2) {
                    var q = p + 3
                    var om = 0
                    if q < b.count, b[q] == UInt8(ascii: ":"), let m2 = number(b, q + 1, 2) { om = m2; q += 3 }
                    else if let m2 = number(b, q, 2) { om = m2; q += 2 }
                    if oh <= 14, om <= 59 {
                        offset = sign * (oh * 3600 + om * 60)
                        p = q
                    }
                }
            }
        }
        // The stamp must end at a boundary.
        if p < b.count, b[p] != 32, b[p] != 9, b[p] != UInt8(ascii: "]"), b[p] != UInt8(ascii: ":"), b[p] != UInt8(ascii: "|") {
            return nil
        }
        let nod = Int64(hh) * 3_600_000_000_000 + Int64(mm) * 60_000_000_000 + Int64(ss) * 1_000_000_000 + nanos
        return Stamp(days: days, nanosOfDay: nod, offset: offset, length: p - p0, valid: valid)
    }

    static let months: [String: Int] = ["Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
                                        "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12]

    /// BSD syslog's `Sep 15 19:02:55[.frac]` (day space-padded or not), at the start of `b`.
    static func parseMonthDay(_ b: UnsafeBufferPointer<UInt8>) -> Stamp? {
        guard b.count >= 15, b[3] == 32 else { return nil }
        let name = String(decoding: UnsafeBufferPointer(rebasing: b[0..<3]), as: UTF8.self)
        guard let month = months[name] else { return nil }
        var p = 4
        if b[p] == 32 { p += 1 }
        var day = 0
        let ds = p
        while p < b.count, let d = digit(b[p]), p - ds < 2 { day = day * 10 + d; p += 1 }
        guard p > ds, p < b.count, b[p] == 32 else { return nil }
        p += 1
        guard var st = parse(UnsafeBufferPointer(rebasing: b[p...]), allowTimeOnly: true), st.days == nil else { return nil }
        st.length += p
        st.monthDay = (month, day)
        if day < 1 || day > 31 { st.valid = false }
        return st
    }

    static func parse(_ s: Substring, allowTimeOnly: Bool = false) -> Stamp? {
        var s = s
        return s.withUTF8 { parse($0, allowTimeOnly: allowTimeOnly) }
    }
}
