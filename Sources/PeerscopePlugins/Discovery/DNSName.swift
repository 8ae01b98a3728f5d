import PeerscopeCore

/// A decoded domain name: its labels as display text (escaped the way tshark 4 prints them), and the
/// dotted form (`Luca’s iMac._smb._tcp.local`, the root as `<Root>`). Labels are kept apart because an
/// instance label may itself contain dots.
public struct DNSName: Sendable, Hashable, CustomStringConvertible {
    public var labels: [String]
    /// Dotted, no trailing dot; `<Root>` for the root name.
    public var text: String

    public init(labels: [String]) {
        self.labels = labels
        text = labels.isEmpty ? "<Root>" : labels.joined(separator: ".")
    }

    /// `text` must be `labels` joined with dots (the decoder builds both at once).
    init(labels: [String], text: String) {
        self.labels = labels
        self.text = labels.isEmpty ? "<Root>" : text
    }

    public static let root = DNSName(labels: [])

    public var isRoot: Bool { labels.isEmpty }
    public var description: String { text }

    /// Case-insensitive key (DNS names compare without regard to ASCII case): `text.lowercased()`, without
    /// building a new string when nothing changes (most names on the wire are lower case already).
    public var key: String { DNSName.lowercased(text) }

    /// `s.lowercased()`. The standard library lowercases scalar by scalar (each scalar's
    /// `lowercaseMapping`), so when no scalar changes `s` itself is the answer; ASCII is lowered here.
    static func lowercased(_ s: String) -> String {
        var ascii = true, upper = false
        for b in s.utf8 {
            if b >= 0x80 { ascii = false; break }
            if b &- 0x41 < 26 { upper = true }
        }
        if ascii {
            guard upper else { return s }
            return String(unsafeUninitializedCapacity: s.utf8.count) { buf in
                var n = 0
                for b in s.utf8 {
                    buf[n] = b &- 0x41 < 26 ? b | 0x20 : b
                    n &+= 1
                }
                return n
            }
        }
        // ASCII scalars by their value; only the others are looked up in the Unicode tables (names are
        // mostly ASCII around one ’ or é).
        for u in s.unicodeScalars {
            if u.value < 0x80 {
                if u.value &- 0x41 < 26 { return lowercasedScalars(s) }
            } else if u.properties.changesWhenLowercased {
                return lowercasedScalars(s)
            }
        }
        return s
    }

    /// `s.lowercased()` as the standard library builds it for a string that is not all ASCII (each
    /// scalar's `lowercaseMapping`, in order), with ASCII scalars lowered here instead of each looked up
    /// in the Unicode tables: a name like `Luca’s MacBook Pro` costs one lookup, not eighteen.
    static func lowercasedScalars(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count &+ 8)
        for u in s.unicodeScalars {
            if u.value < 0x80 {
                let b = UInt8(truncatingIfNeeded: u.value)
                out.append(b &- 0x41 < 26 ? b | 0x20 : b)
            } else {
                out.append(contentsOf: u.properties.lowercaseMapping.utf8)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `a < b`, as `String` orders them. Two strings of non-ASCII text compare through Unicode
    /// normalisation (NFC) in the standard library, every time. When both hold only scalars below
    /// U+0300 or in U+2010...U+2027 (dashes, quotes such as ’, bullets, the ellipsis), neither changes
    /// under NFC: no such scalar has a canonical decomposition, a combining class or a part in any
    /// composition. So both are in NFC already, and comparing their UTF-8 bytes gives the order of
    /// their scalars, which is `String`'s order. Anything else is left to `String`.
    static func keyLess(_ a: String, _ b: String) -> Bool {
        var byBytes: Bool?
        _ = a.utf8.withContiguousStorageIfAvailable { x in
            _ = b.utf8.withContiguousStorageIfAvailable { y in
                guard isNFCByItsScalars(x), isNFCByItsScalars(y) else { return }
                let n = Swift.min(x.count, y.count)
                var i = 0
                while i < n {
                    if x[i] != y[i] {
                        byBytes = x[i] < y[i]
                        return
                    }
                    i &+= 1
                }
                byBytes = x.count < y.count
            }
        }
        if let byBytes { return byBytes }
        return a < b
    }

    /// Whether the UTF-8 `u` holds only scalars below U+0300 (lead bytes below 0xCC) or in
    /// U+2010...U+2027 (E2 80 90...A7): see `keyLess`.
    @inline(__always) static func isNFCByItsScalars(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let n = u.count
        while i < n {
            let c = u[i]
            if c < 0xCC {
                i &+= 1
                continue
            }
            guard c == 0xE2, i &+ 2 < n, u[i &+ 1] == 0x80, u[i &+ 2] >= 0x90, u[i &+ 2] <= 0xA7 else { return false }
            i &+= 3
        }
        return true
    }

    /// The name without its first `n` labels.
    public func dropping(_ n: Int) -> DNSName { DNSName(labels: Array(labels.dropFirst(n))) }

    /// Whether the last labels equal `suffix` (ASCII case-insensitive).
    public func hasSuffix(_ suffix: [String]) -> Bool {
        guard suffix.count <= labels.count else { return false }
        let off = labels.count - suffix.count
        for (i, s) in suffix.enumerated() where !DNSName.foldedEqual(labels[off + i], s) { return false }
        return true
    }

    /// `a.lowercased() == b.lowercased()`, without building strings when both are ASCII (labels
    /// compared with the protocol's own `_tcp`, `_sub`, `local` nearly always are).
    static func foldedEqual(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        var i = x.startIndex, j = y.startIndex
        while i != x.endIndex, j != y.endIndex {
            let p = x[i], q = y[j]
            guard p < 0x80, q < 0x80 else { return a.lowercased() == b.lowercased() }
            guard (p &- 0x41 < 26 ? p | 0x20 : p) == (q &- 0x41 < 26 ? q | 0x20 : q) else { return false }
            x.formIndex(after: &i)
            y.formIndex(after: &j)
        }
        // One ended: equal only when both did (a non-ASCII tail could still lowercase to anything).
        if i == x.endIndex, j == y.endIndex { return true }
        for c in (i == x.endIndex ? y[j...] : x[i...]) where c >= 0x80 { return a.lowercased() == b.lowercased() }
        return false
    }
}

/// Turns raw label bytes into display text the way Wireshark 4.0's `format_text`
/// does: printable ASCII as is (backslash included); C escapes `\a \b \f \n \r \t \v` and 3-digit octal
/// for other ASCII controls and DEL; UTF-8 sequences decoded leniently (overlong forms accepted), shown
/// as is when printable, as `\uXXXX` / `\UXXXXXXXX` when a control, format or unassigned
/// scalar; invalid or truncated sequences, surrogates and values above U+10FFFF as U+FFFD.
public enum DNSText {
    /// A TXT character-string as tshark gives the `dns.txt` field value: the bytes up to the first NUL,
    /// decoded as UTF-8 with U+FFFD for invalid sequences, control characters kept as they are.
    public static func txtValue(_ b: Bytes) -> String {
        var n = b.count
        for i in 0 ..< b.count where b.storage[b.lower &+ i] == 0 { n = i; break }
        return b.prefix(n).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    public static func format(_ b: Bytes) -> String {
        var simple = true
        for i in 0 ..< b.count {
            let c = b.storage[b.lower &+ i]
            if c < 0x20 || c > 0x7E { simple = false; break }
        }
        if simple {
            return b.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
        return slowFormat(b)
    }

    /// What `format` gives for a label that is not plain printable ASCII, written as UTF-8 into one
    /// buffer and made a string once (the tests compare it with the former version, which appended
    /// scalar by scalar to a `String`: `RefreshMemoTests.referenceSlowFormat`).
    static func slowFormat(_ b: Bytes) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(b.count &+ 8)
        var i = 0
        let n = b.count
        func ascii(_ s: StaticString) { s.withUTF8Buffer { out.append(contentsOf: $0) } }
        func hexDigits(_ v: UInt32, _ width: Int) {
            // Uppercase hex, zero-padded to `width`, never cut.
            var digits = 1
            while digits < 8, v >> (4 &* UInt32(digits)) != 0 { digits &+= 1 }
            for _ in digits ..< max(digits, width) { out.append(0x30) }
            var k = digits
            while k > 0 {
                k &-= 1
                let d = UInt8(truncatingIfNeeded: (v >> (4 &* UInt32(k))) & 0xF)
                out.append(d < 10 ? 0x30 &+ d : 0x41 &+ d &- 10)
            }
        }
        func scalar(_ u: Unicode.Scalar) {
            // Its UTF-8 (a lenient decode may have read an overlong form: the scalar is written, not the bytes).
            let v = u.value
            if v < 0x80 {
                out.append(UInt8(truncatingIfNeeded: v))
            } else if v < 0x800 {
                out.append(0xC0 | UInt8(truncatingIfNeeded: v >> 6))
                out.append(0x80 | UInt8(truncatingIfNeeded: v & 0x3F))
            } else if v < 0x10000 {
                out.append(0xE0 | UInt8(truncatingIfNeeded: v >> 12))
                out.append(0x80 | UInt8(truncatingIfNeeded: (v >> 6) & 0x3F))
                out.append(0x80 | UInt8(truncatingIfNeeded: v & 0x3F))
            } else {
                out.append(0xF0 | UInt8(truncatingIfNeeded: v >> 18))
                out.append(0x80 | UInt8(truncatingIfNeeded: (v >> 12) & 0x3F))
                out.append(0x80 | UInt8(truncatingIfNeeded: (v >> 6) & 0x3F))
                out.append(0x80 | UInt8(truncatingIfNeeded: v & 0x3F))
            }
        }
        // U+FFFD
        func replacement() { out.append(0xEF); out.append(0xBF); out.append(0xBD) }
        while i < n {
            let c = b.storage[b.lower &+ i]
            i &+= 1
            if c < 0x80 {
                switch c {
                case 0x20 ... 0x7E: out.append(c)
                case 0x07: ascii("\\a")
                case 0x08: ascii("\\b")
                case 0x0C: ascii("\\f")
                case 0x0A: ascii("\\n")
                case 0x0D: ascii("\\r")
                case 0x09: ascii("\\t")
                case 0x0B: ascii("\\v")
                default:
                    out.append(0x5C)
                    out.append(0x30 &+ (c >> 6))
                    out.append(0x30 &+ ((c >> 3) & 7))
                    out.append(0x30 &+ (c & 7))
                }
                continue
            }
            var need: Int
            var value: UInt32
            switch c {
            case 0xC0 ... 0xDF: need = 1; value = UInt32(c & 0x1F)
            case 0xE0 ... 0xEF: need = 2; value = UInt32(c & 0x0F)
            case 0xF0 ... 0xF7: need = 3; value = UInt32(c & 0x07)
            case 0xF8 ... 0xFB: need = 4; value = UInt32(c & 0x03)
            case 0xFC ... 0xFD: need = 5; value = UInt32(c & 0x01)
            default:
                replacement()
                continue
            }
            var complete = true
            while need > 0 {
                guard i < n else { complete = false; break }
                let d = b.storage[b.lower &+ i]
                guard d & 0xC0 == 0x80 else { complete = false; break }
                value = value << 6 | UInt32(d & 0x3F)
                i &+= 1
                need -= 1
            }
            guard complete, let u = Unicode.Scalar(value) else {
                replacement()
                continue
            }
            switch u.properties.generalCategory {
            case .control, .format, .unassigned, .surrogate:
                if u.value > 0xFFFF { ascii("\\U"); hexDigits(u.value, 8) } else { ascii("\\u"); hexDigits(u.value, 4) }
            default:
                scalar(u)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
