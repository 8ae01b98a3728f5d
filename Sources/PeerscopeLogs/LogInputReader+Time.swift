import Foundation
import PeerscopeCore

/// Time anchoring: a line's stamp to capture time (dates, zones, lines without a time).
extension InputReader {
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
}
