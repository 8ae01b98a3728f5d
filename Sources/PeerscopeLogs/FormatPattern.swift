/// A printf-style format string (`Not in connected state, so giving up for participant [%08X] on channel [%d].`)
/// compiled into a matcher over UTF-8 bytes. Log plugins are declared with the framework's verbatim format
/// strings (spec §2.2); matching them needs no regular expression and runs in one pass for typical lines.
///
/// Conversions: `%d %i %u %ld %lu %lld` (signed decimal), `%X %x %08X %lX` (hex digits), `%f %.3lf` (decimal
/// number), `%p` (`0x…` or `(null)`), `%@ %s` (any text, shortest that lets the rest match), `%c` (one
/// character), `%%` (a percent sign). A final `.` in the format is optional in the line.
public struct FormatPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Arg: Sendable, Hashable { case int, hex, float, pointer, text, char }
    enum Segment: Sendable, Hashable {
        case literal([UInt8])
        case arg(Arg)
    }

    public let format: String
    let segments: [Segment]
    /// The conversions in order (what `match` returns values for).
    public let args: [Arg]

    public var description: String { format }

    public init(_ format: String) {
        self.format = format
        var segs: [Segment] = []
        var lit: [UInt8] = []
        var args: [Arg] = []
        let b = Array(format.utf8)
        var i = 0
        func flush() { if !lit.isEmpty { segs.append(.literal(lit)); lit = [] } }
        while i < b.count {
            let c = b[i]
            guard c == UInt8(ascii: "%"), i + 1 < b.count else { lit.append(c); i += 1; continue }
            var j = i + 1
            if b[j] == UInt8(ascii: "%") { lit.append(c); i = j + 1; continue }
            // flags, width, precision, length
            while j < b.count, "-+ 0#".utf8.contains(b[j]) { j += 1 }
            while j < b.count, b[j] >= 48, b[j] <= 57 { j += 1 }
            if j < b.count, b[j] == UInt8(ascii: ".") {
                j += 1
                while j < b.count, b[j] >= 48, b[j] <= 57 { j += 1 }
            }
            while j < b.count, "hlqjzt".utf8.contains(b[j]) { j += 1 }
            guard j < b.count else { lit.append(contentsOf: b[i...]); break }
            let arg: Arg
            switch b[j] {
            case UInt8(ascii: "d"), UInt8(ascii: "i"), UInt8(ascii: "u"): arg = .int
            case UInt8(ascii: "x"), UInt8(ascii: "X"), UInt8(ascii: "o"): arg = .hex
            case UInt8(ascii: "f"), UInt8(ascii: "e"), UInt8(ascii: "g"), UInt8(ascii: "F"): arg = .float
            case UInt8(ascii: "p"): arg = .pointer
            case UInt8(ascii: "c"): arg = .char
            default: arg = .text
            }
            flush()
            segs.append(.arg(arg))
            args.append(arg)
            i = j + 1
        }
        flush()
        segments = segs
        self.args = args
    }

    /// The literal text most useful for a cheap substring prefilter: the first literal when it is
    /// distinctive (8 bytes or more), else the longest one.
    public var needle: [UInt8] {
        var first: [UInt8]? = nil
        var longest: [UInt8] = []
        for case .literal(let l) in segments {
            if first == nil { first = l }
            if l.count > longest.count { longest = l }
        }
        if let first, first.count >= 8 { return first }
        return longest
    }

    /// Matches the whole message (leading text before the format's first literal is tolerated when an
    /// exact match from the start fails). Returns the converted values as text, or nil.
    public func match(_ text: String) -> [String]? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { match($0) }
    }

    func match(_ b: UnsafeBufferPointer<UInt8>) -> [String]? {
        var end = b.count
        while end > 0, b[end - 1] == 32 || b[end - 1] == 9 || b[end - 1] == 10 || b[end - 1] == 13 { end -= 1 }
        var caps = [(Int, Int)](repeating: (0, 0), count: args.count)
        // Cheap necessary condition: the literals occur in order (the last one may lack its final dot).
        var p0 = 0
        for (i, seg) in segments.enumerated() {
            guard case .literal(var l) = seg else { continue }
            if i == segments.count - 1, l.count > 1, l.last == UInt8(ascii: ".") { l.removeLast() }
            guard let q = find(l, in: b, from: p0, end: end) else { return nil }
            p0 = q + l.count
        }
        // One step budget for the whole line, so a hostile line (thousands of `[`) cannot make matching slow.
        var budget = 10_000
        if run(b, end, 0, 0, 0, &caps, &budget) { return strings(b, caps) }
        // Tolerate a prefix (an app's own tag, a repeated timestamp) before a format that starts with text.
        if case .literal(let first)? = segments.first, first.count >= 4 {
            var p = 1
            while budget > 0, let q = find(first, in: b, from: p, end: end) {
                if run(b, end, q, 0, 0, &caps, &budget) { return strings(b, caps) }
                p = q + 1
            }
        }
        return nil
    }

    private func strings(_ b: UnsafeBufferPointer<UInt8>, _ caps: [(Int, Int)]) -> [String] {
        caps.map { String(decoding: UnsafeBufferPointer(rebasing: b[$0.0..<$0.1]), as: UTF8.self) }
    }

    private func run(_ b: UnsafeBufferPointer<UInt8>, _ end: Int, _ pos: Int, _ si: Int, _ ai: Int,
                     _ caps: inout [(Int, Int)], _ budget: inout Int) -> Bool {
        budget -= 1
        if budget <= 0 { return false }
        if si == segments.count { return pos == end }
        switch segments[si] {
        case .literal(let l):
            if starts(l, in: b, at: pos, end: end) {
                if run(b, end, pos + l.count, si + 1, ai, &caps, &budget) { return true }
            }
            // A final "." may be missing from the line.
            if si == segments.count - 1, l.count > 1, l.last == UInt8(ascii: ".") {
                let short = Array(l.dropLast())
                if pos + short.count == end, starts(short, in: b, at: pos, end: end) { return true }
            }
            return false
        case .arg(let a):
            if a == .text {
                // Shortest text that lets the rest match.
                if si + 1 == segments.count {
                    caps[ai] = (pos, end)
                    return true
                }
                if case .literal(let next) = segments[si + 1] {
                    var p = pos
                    while let q = find(next, in: b, from: p, end: end) {
                        budget -= (q - p) >> 4   // scanning costs too
                        caps[ai] = (pos, q)
                        if run(b, end, q, si + 1, ai + 1, &caps, &budget) { return true }
                        if budget <= 0 { return false }
                        p = q + 1
                    }
                    // The last literal may be missing its final dot.
                    if si + 2 == segments.count, next.count > 1, next.last == UInt8(ascii: ".") {
                        let short = Array(next.dropLast())
                        let s = end - short.count
                        if s >= pos, starts(short, in: b, at: s, end: end) {
                            caps[ai] = (pos, s)
                            return true
                        }
                    }
                    return false
                }
                var q = pos
                while q <= end {
                    caps[ai] = (pos, q)
                    if run(b, end, q, si + 1, ai + 1, &caps, &budget) { return true }
                    if budget <= 0 { return false }
                    q += 1
                }
                return false
            }
            let q = scan(a, b, pos, end)
            guard q > pos else { return false }
            caps[ai] = (pos, q)
            return run(b, end, q, si + 1, ai + 1, &caps, &budget)
        }
    }

    private func scan(_ a: Arg, _ b: UnsafeBufferPointer<UInt8>, _ pos: Int, _ end: Int) -> Int {
        var p = pos
        func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
        func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102) }
        switch a {
        case .int:
            if p < end, b[p] == UInt8(ascii: "-") || b[p] == UInt8(ascii: "+") { p += 1 }
            let s = p
            while p < end, isDigit(b[p]) { p += 1 }
            return p > s ? p : pos
        case .hex:
            while p < end, isHex(b[p]) { p += 1 }
            return p
        case .float:
            if p < end, b[p] == UInt8(ascii: "-") { p += 1 }
            let s = p
            while p < end, isDigit(b[p]) { p += 1 }
            if p < end, b[p] == UInt8(ascii: "."), p + 1 < end, isDigit(b[p + 1]) {
                p += 1
                while p < end, isDigit(b[p]) { p += 1 }
            }
            if p == s, starts(FormatPattern.nan, in: b, at: p, end: end) || starts(FormatPattern.inf, in: b, at: p, end: end) {
                return p + 3
            }
            return p > s ? p : pos
        case .pointer:
            if starts(FormatPattern.null, in: b, at: p, end: end) { return p + 6 }
            if p + 1 < end, b[p] == 48, b[p + 1] == UInt8(ascii: "x") || b[p + 1] == UInt8(ascii: "X") {
                p += 2
                while p < end, isHex(b[p]) { p += 1 }
                return p
            }
            while p < end, isHex(b[p]) { p += 1 }
            return p
        case .char:
            return p < end ? p + 1 : pos
        case .text:
            return end
        }
    }

    private static let nan = Array("nan".utf8)
    private static let inf = Array("inf".utf8)
    private static let null = Array("(null)".utf8)
}

@inline(__always)
func starts(_ l: [UInt8], in b: UnsafeBufferPointer<UInt8>, at pos: Int, end: Int) -> Bool {
    guard pos >= 0, pos + l.count <= end else { return false }
    var i = 0
    while i < l.count {
        if b[pos + i] != l[i] { return false }
        i += 1
    }
    return true
}

/// First occurrence of `l` in `b[from..<end]`.
func find(_ l: [UInt8], in b: UnsafeBufferPointer<UInt8>, from: Int, end: Int) -> Int? {
    guard let f = l.first else { return from <= end ? from : nil }
    var p = max(0, from)
    let last = end - l.count
    while p <= last {
        if b[p] == f, starts(l, in: b, at: p, end: end) { return p }
        p += 1
    }
    return nil
}
