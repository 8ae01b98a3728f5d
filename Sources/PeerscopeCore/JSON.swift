/// A JSON value whose objects keep their key order, so output is stable and reads like the wire.
public indirect enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.uint(let x), .uint(let y)): return x == y
        case (.int(let x), .uint(let y)), (.uint(let y), .int(let x)): return x >= 0 && UInt64(x) == y
        case (.double(let x), .double(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .null: h.combine(0)
        case .bool(let v): h.combine(v)
        case .int(let v): h.combine(v)
        case .uint(let v): h.combine(v)
        case .double(let v): h.combine(v)
        case .string(let v): h.combine(v)
        case .array(let v): h.combine(v)
        case .object(let v): for (k, x) in v { h.combine(k); h.combine(x) }
        }
    }

    /// Member lookup on objects (first match).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first(where: { $0.0 == key })?.1 }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var int64Value: Int64? {
        switch self {
        case .int(let v): return v
        case .uint(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        case .double(let d): return d.rounded() == d && abs(d) < 9e18 ? Int64(d) : nil
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: [(String, JSONValue)]? { if case .object(let o) = self { return o } else { return nil } }

    /// Compact JSON text.
    public var jsonText: String {
        var out: [UInt8] = []
        write(to: &out, indent: nil, level: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// Indented JSON text (two spaces).
    public var prettyText: String {
        var out: [UInt8] = []
        write(to: &out, indent: "  ", level: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// In indented text, an array or object of scalars that fits this many bytes stays on one line
    /// (`{"input": 0, "frame": 42}`), as people write JSON by hand.
    public static let inlineWidth = 100

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    public func write(to out: inout String, indent: String?, level: Int) {
        var bytes: [UInt8] = []
        write(to: &bytes, indent: indent, level: level)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the JSON text as UTF-8 (the writers' fast path: no intermediate strings).
    public func write(to out: inout [UInt8], indent: String?, level: Int) {
        if indent != nil, !isScalar, writeInline(to: &out) { return }
        switch self {
        case .null: out.append(contentsOf: JSONValue.nullBytes)
        case .bool(let b): out.append(contentsOf: b ? JSONValue.trueBytes : JSONValue.falseBytes)
        case .int(let v):
            if v < 0 { out.append(0x2D) }
            JSONValue.appendDecimal(v < 0 ? UInt64(bitPattern: 0 &- v) : UInt64(v), to: &out)
        case .uint(let v): JSONValue.appendDecimal(v, to: &out)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: "\(d)".utf8)  // Swift prints integral doubles as "150.0": they stay doubles when read back
            } else { out.append(contentsOf: JSONValue.nullBytes) }
        case .string(let s): JSONValue.escape(s, into: &out)
        case .array(let a):
            if a.isEmpty { out.append(0x5B); out.append(0x5D); return }
            out.append(0x5B)
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(0x2C) }
                if let indent { JSONValue.newline(&out, indent, level + 1) }
                v.write(to: &out, indent: indent, level: level + 1)
            }
            if let indent { JSONValue.newline(&out, indent, level) }
            out.append(0x5D)
        case .object(let o):
            if o.isEmpty { out.append(0x7B); out.append(0x7D); return }
            out.append(0x7B)
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { out.append(0x2C) }
                if let indent { JSONValue.newline(&out, indent, level + 1) }
                JSONValue.escape(k, into: &out)
                out.append(0x3A)
                if indent != nil { out.append(0x20) }
                v.write(to: &out, indent: indent, level: level + 1)
            }
            if let indent { JSONValue.newline(&out, indent, level) }
            out.append(0x7D)
        }
    }

    /// `[1, 2]` or `{"a": 1, "b": 2}` when every member is a scalar and the line is short; false
    /// (and nothing written) otherwise.
    private func writeInline(to out: inout [UInt8]) -> Bool {
        let start = out.count
        switch self {
        case .array(let a):
            guard a.count <= 16, a.allSatisfy(\.isScalar) else { return false }
            out.append(0x5B)
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(0x2C); out.append(0x20) }
                v.write(to: &out, indent: nil, level: 0)
            }
            out.append(0x5D)
        case .object(let o):
            guard o.count <= 16, o.allSatisfy({ $0.1.isScalar }) else { return false }
            out.append(0x7B)
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { out.append(0x2C); out.append(0x20) }
                JSONValue.escape(k, into: &out)
                out.append(0x3A); out.append(0x20)
                v.write(to: &out, indent: nil, level: 0)
            }
            out.append(0x7D)
        default: return false
        }
        if out.count - start <= JSONValue.inlineWidth { return true }
        out.removeSubrange(start...)
        return false
    }

    private static let nullBytes: [UInt8] = Array("null".utf8)
    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)

    private static func newline(_ out: inout [UInt8], _ indent: String, _ level: Int) {
        out.append(0x0A)
        for _ in 0 ..< max(0, level) { out.append(contentsOf: indent.utf8) }
    }

    /// Decimal digits of `v`, without building a string (the one digit writer of the JSON writers).
    public static func appendDecimal(_ v: UInt64, to out: inout [UInt8]) {
        if v < 10 { out.append(0x30 &+ UInt8(truncatingIfNeeded: v)); return }
        var buf: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for 20 digits
        var n = v, i = 24
        withUnsafeMutableBytes(of: &buf) { d in
            while n > 0 {
                i -= 1
                d[i] = 0x30 &+ UInt8(truncatingIfNeeded: n % 10)
                n /= 10
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: d[i...]))
        }
    }

    /// A signed integer's decimal digits, `-` first when negative.
    public static func appendInt(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(0x2D) }
        appendDecimal(v.magnitude, to: &out)
    }

    public static func escape(_ s: String, into out: inout String) {
        var bytes: [UInt8] = []
        escape(s, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// A JSON string literal for `s`: quotes, backslashes and control characters escaped; other
    /// characters (UTF-8) as they are.
    public static func escape(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { escape(utf8: $0, into: &out) }
    }

    /// A JSON string literal for the UTF-8 text in `buf` (which must be valid UTF-8, as a `String`'s is).
    public static func escape(utf8 buf: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(0x22)
        var clean = true
        for b in buf where b < 0x20 || b == 0x22 || b == 0x5C {
            clean = false
            break
        }
        if clean {
            // Fast path: most strings need no escaping and are appended whole.
            out.append(contentsOf: buf)
        } else {
            for b in buf {
                switch b {
                case 0x22: out.append(0x5C); out.append(0x22)
                case 0x5C: out.append(0x5C); out.append(0x5C)
                case 0x0A: out.append(0x5C); out.append(0x6E)
                case 0x0D: out.append(0x5C); out.append(0x72)
                case 0x09: out.append(0x5C); out.append(0x74)
                case ..<0x20:
                    out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, Bytes.hexDigit(b >> 4), Bytes.hexDigit(b & 0x0F)])
                default: out.append(b)
                }
            }
        }
        out.append(0x22)
    }
}

/// A minimal, strict JSON parser (RFC 8259) that keeps object key order and never traps.
/// Depth is limited so hostile nesting cannot exhaust the stack.
public struct JSONParser {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case syntax(offset: Int, expected: String)
        case tooDeep(offset: Int)
        public var description: String {
            switch self {
            case .syntax(let o, let e): "invalid JSON at byte \(o): expected \(e)"
            case .tooDeep(let o): "JSON nested too deeply at byte \(o)"
            }
        }
    }

    private let b: Bytes
    private var i = 0
    private let maxDepth: Int

    public static func parse(_ bytes: Bytes, maxDepth: Int = 64) throws(Failure) -> JSONValue {
        var p = JSONParser(b: bytes, maxDepth: maxDepth)
        p.ws()
        let v = try p.value(depth: 0)
        p.ws()
        guard p.i == bytes.count else { throw .syntax(offset: p.i, expected: "end of input") }
        return v
    }

    public static func parse(_ text: String, maxDepth: Int = 64) throws(Failure) -> JSONValue {
        try parse(Bytes(Array(text.utf8)), maxDepth: maxDepth)
    }

    private init(b: Bytes, maxDepth: Int) {
        self.b = b
        self.maxDepth = maxDepth
    }

    private mutating func ws() {
        while let c = b.byte(i), c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard depth < maxDepth else { throw .tooDeep(offset: i) }
        guard let c = b.byte(i) else { throw .syntax(offset: i, expected: "a value") }
        switch c {
        case UInt8(ascii: "{"):
            i += 1
            var members: [(String, JSONValue)] = []
            ws()
            if b.byte(i) == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                ws()
                guard b.byte(i) == UInt8(ascii: "\"") else { throw .syntax(offset: i, expected: "a string key") }
                let k = try string()
                ws()
                guard b.byte(i) == UInt8(ascii: ":") else { throw .syntax(offset: i, expected: "':'") }
                i += 1
                ws()
                let v = try value(depth: depth + 1)
                members.append((k, v))
                ws()
                if b.byte(i) == UInt8(ascii: ",") { i += 1; continue }
                if b.byte(i) == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw .syntax(offset: i, expected: "',' or '}'")
            }
        case UInt8(ascii: "["):
            i += 1
            var items: [JSONValue] = []
            ws()
            if b.byte(i) == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                ws()
                items.append(try value(depth: depth + 1))
                ws()
                if b.byte(i) == UInt8(ascii: ",") { i += 1; continue }
                if b.byte(i) == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw .syntax(offset: i, expected: "',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true"); return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false"); return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null"); return .null
        default:
            return try number()
        }
    }

    private mutating func literal(_ word: String) throws(Failure) {
        for ch in word.utf8 {
            guard b.byte(i) == ch else { throw .syntax(offset: i, expected: word) }
            i += 1
        }
    }

    private mutating func number() throws(Failure) -> JSONValue {
        let start = i
        var isInt = true
        if b.byte(i) == UInt8(ascii: "-") { i += 1 }
        var digits = 0
        while let c = b.byte(i), c >= 0x30, c <= 0x39 { i += 1; digits += 1 }
        guard digits > 0 else { throw .syntax(offset: start, expected: "a value") }
        if b.byte(i) == UInt8(ascii: ".") {
            isInt = false
            i += 1
            var fd = 0
            while let c = b.byte(i), c >= 0x30, c <= 0x39 { i += 1; fd += 1 }
            guard fd > 0 else { throw .syntax(offset: i, expected: "a digit") }
        }
        if let e = b.byte(i), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            isInt = false
            i += 1
            if let s = b.byte(i), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { i += 1 }
            var ed = 0
            while let c = b.byte(i), c >= 0x30, c <= 0x39 { i += 1; ed += 1 }
            guard ed > 0 else { throw .syntax(offset: i, expected: "a digit") }
        }
        let text = String(decoding: b.slice(start, i - start)?.array ?? [], as: UTF8.self)
        if isInt, let v = Int64(text) { return .int(v) }
        if isInt, let v = UInt64(text) { return .uint(v) }
        guard let d = Double(text) else { throw .syntax(offset: start, expected: "a number") }
        return .double(d)
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0 ..< 4 {
            guard let c = b.byte(i) else { throw .syntax(offset: i, expected: "4 hex digits") }
            let d: UInt32
            switch c {
            case 0x30 ... 0x39: d = UInt32(c - 0x30)
            case 0x61 ... 0x66: d = UInt32(c - 0x61 + 10)
            case 0x41 ... 0x46: d = UInt32(c - 0x41 + 10)
            default: throw .syntax(offset: i, expected: "a hex digit")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func string() throws(Failure) -> String {
        i += 1  // opening quote
        var bytes: [UInt8] = []
        while true {
            guard let c = b.byte(i) else { throw .syntax(offset: i, expected: "closing '\"'") }
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw .syntax(offset: i, expected: "an escaped control character") }
            if c == UInt8(ascii: "\\") {
                i += 1
                guard let e = b.byte(i) else { throw .syntax(offset: i, expected: "an escape") }
                i += 1
                switch e {
                case UInt8(ascii: "\""): bytes.append(0x22)
                case UInt8(ascii: "\\"): bytes.append(0x5C)
                case UInt8(ascii: "/"): bytes.append(0x2F)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800 ..< 0xDC00).contains(scalar), b.byte(i) == UInt8(ascii: "\\"), b.byte(i + 1) == UInt8(ascii: "u") {
                        i += 2
                        let low = try hex4()
                        if (0xDC00 ..< 0xE000).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                    }
                    let u = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                    bytes.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw .syntax(offset: i - 1, expected: "a valid escape")
                }
                continue
            }
            bytes.append(c)
            i += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
