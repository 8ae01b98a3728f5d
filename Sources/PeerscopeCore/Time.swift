/// Capture time: integer nanoseconds since the Unix epoch. Analysis never reads the wall clock.
public typealias Nanos = Int64

public enum CaptureTime {
    public static let second: Nanos = 1_000_000_000
    public static let millisecond: Nanos = 1_000_000

    /// Seconds (possibly fractional) to nanoseconds, saturating.
    public static func nanos(seconds: Double) -> Nanos {
        let v = seconds * 1e9
        if v >= Double(Int64.max) { return .max }
        if v <= Double(Int64.min) { return .min }
        return Nanos(v.rounded())
    }

    /// `2026-11-22T07:17:55.123456789Z` (UTC, always nine fractional digits).
    public static func iso8601(_ t: Nanos) -> String {
        let (secs, frac) = t.quotientAndRemainder(dividingBy: second)
        var s = secs
        var f = frac
        if f < 0 { f += second; s -= 1 }
        let days = s >= 0 ? s / 86400 : (s - 86399) / 86400
        let rem = s - days * 86400
        let (y, m, d) = civil(fromDays: days)
        let hh = rem / 3600, mm = (rem % 3600) / 60, ss = rem % 60
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(hh, 2)):\(pad(mm, 2)):\(pad(ss, 2)).\(pad(f, 9))Z"
    }

    /// Seconds with millisecond precision relative to `origin`, e.g. `+12.345s`.
    public static func relative(_ t: Nanos, to origin: Nanos) -> String {
        let d = t &- origin
        let sign = d < 0 ? "-" : "+"
        let a = d.magnitude
        let ms = a / 1_000_000
        return "\(sign)\(ms / 1000).\(pad(Int64(ms % 1000), 3))s"
    }

    /// A duration in seconds with millisecond precision, e.g. `6.004s`.
    public static func duration(_ d: Nanos) -> String {
        let a = d.magnitude / 1_000_000
        return "\(d < 0 ? "-" : "")\(a / 1000).\(pad(Int64(a % 1000), 3))s"
    }

    /// Days since 1970-01-01 for a civil date (proleptic Gregorian; Howard Hinnant's algorithm).
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v.magnitude)
        return (v < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
