import PeerscopeCore

/// The unit of a pcapng interface's timestamps (`if_tsresol`) plus its `if_tsoffset`, converting raw
/// 64-bit timestamps to nanoseconds since the epoch. Results saturate instead of overflowing.
struct TimestampScale: Sendable, Equatable {
    /// Raw `if_tsresol` byte: high bit clear = 10^-v seconds, set = 2^-(v & 0x7f) seconds.
    let resolution: UInt8
    /// `if_tsoffset`, seconds added to every timestamp.
    let offsetSeconds: Int64

    static let microseconds = TimestampScale(resolution: 6, offsetSeconds: 0)

    init(resolution: UInt8, offsetSeconds: Int64) {
        self.resolution = resolution
        self.offsetSeconds = offsetSeconds
    }

    /// Units per second as text, for messages.
    var unitDescription: String {
        if resolution & 0x80 == 0 { return "10^-\(resolution) s" }
        return "2^-\(resolution & 0x7f) s"
    }

    func nanos(_ ts: UInt64) -> Nanos { convert(ts).t }

    /// Nanoseconds for `ts`, and whether the value had to be clamped to fit `Nanos`.
    func convert(_ ts: UInt64) -> (t: Nanos, clamped: Bool) {
        let base = TimestampScale.unsignedNanos(ts, resolution: resolution)
        var clamped = base > UInt64(Int64.max)
        var t: Int64 = clamped ? .max : Int64(base)
        if offsetSeconds != 0 {
            let (off, o1) = offsetSeconds.multipliedReportingOverflow(by: CaptureTime.second)
            if o1 {
                t = offsetSeconds > 0 ? .max : .min
                clamped = true
            } else {
                let (sum, o2) = t.addingReportingOverflow(off)
                if o2 { clamped = true }
                t = o2 ? (off > 0 ? .max : .min) : sum
            }
        }
        return (t, clamped)
    }

    /// `ts` as whole seconds since the epoch (`if_tsoffset` included) and nanoseconds into that
    /// second, exact where `convert` would saturate; nil when the seconds do not fit an `Int64`.
    func split(_ ts: UInt64) -> (seconds: Int64, nanos: Int64)? {
        var seconds: UInt64 = 0
        var fraction = ts
        if resolution & 0x80 == 0 {
            let k = Int(resolution)
            if k <= 19 {  // 10^20 > UInt64.max: finer units never make a whole second
                var perSecond: UInt64 = 1
                for _ in 0 ..< k { perSecond &*= 10 }
                seconds = ts / perSecond
                fraction = ts % perSecond
            }
        } else {
            let k = Int(resolution & 0x7f)
            if k < 64 {
                seconds = ts >> UInt64(k)
                fraction = ts & ((UInt64(1) << UInt64(k)) &- 1)
            }
        }
        // A fraction of a second: below 10^9 nanoseconds, so no saturation.
        let nanos = TimestampScale.unsignedNanos(fraction, resolution: resolution)
        guard seconds <= UInt64(Int64.max), nanos < 1_000_000_000 else { return nil }
        let (s, o) = Int64(seconds).addingReportingOverflow(offsetSeconds)
        return o ? nil : (s, Int64(nanos))
    }

    /// `ts` units to nanoseconds, saturating at `UInt64.max`.
    static func unsignedNanos(_ ts: UInt64, resolution: UInt8) -> UInt64 {
        let billion: UInt64 = 1_000_000_000
        if resolution & 0x80 == 0 {
            let k = Int(resolution)
            if k <= 9 {
                var m: UInt64 = 1
                for _ in 0 ..< (9 - k) { m &*= 10 }
                let (v, o) = ts.multipliedReportingOverflow(by: m)
                return o ? .max : v
            }
            // Finer than nanoseconds: divide, truncating toward zero.
            var v = ts
            var steps = k - 9
            while steps > 0, v > 0 {
                v /= 10
                steps -= 1
            }
            return v
        }
        let k = Int(resolution & 0x7f)
        let (hi, lo) = ts.multipliedFullWidth(by: billion)
        if k == 0 { return hi != 0 ? .max : lo }
        if k >= 64 { return hi >> UInt64(k - 64) }
        if hi >> UInt64(k) != 0 { return .max }
        return (hi << UInt64(64 - k)) | (lo >> UInt64(k))
    }
}
