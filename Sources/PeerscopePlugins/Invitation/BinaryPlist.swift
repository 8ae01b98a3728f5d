import PeerscopeCore

/// A value read from a binary property list (`bplist00`).
public indirect enum PlistValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// Integers that fit a signed 64-bit value (1-, 2-, 4-byte ints are unsigned on the wire, 8-byte signed).
    case int(Int64)
    /// 16-byte integers above `Int64.max`.
    case uint(UInt64)
    case real(Double)
    /// Seconds since 2001-01-01 00:00:00 UTC (the Core Foundation epoch).
    case date(Double)
    case data(Bytes)
    case string(String)
    /// Keyed-archiver object references (marker 0x8n).
    case uid(UInt64)
    case array([PlistValue])
    case set([PlistValue])
    /// Entries in file order; keys are strings.
    case dict([(String, PlistValue)])

    public static func == (a: PlistValue, b: PlistValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.uint(let x), .uint(let y)): return x == y
        case (.real(let x), .real(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.date(let x), .date(let y)): return x == y
        case (.data(let x), .data(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.uid(let x), .uid(let y)): return x == y
        case (.array(let x), .array(let y)), (.set(let x), .set(let y)): return x == y
        case (.dict(let x), .dict(let y)):
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) where p.0 != q.0 || p.1 != q.1 { return false }
            return true
        default: return false
        }
    }

    /// The value for `key` when this is a dictionary.
    public subscript(key: String) -> PlistValue? {
        if case .dict(let entries) = self { return entries.first(where: { $0.0 == key })?.1 }
        return nil
    }

    public var intValue: Int64? {
        switch self {
        case .int(let v): return v
        case .uint(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        default: return nil
        }
    }

    /// Booleans, and the integers 0 and 1 (an NSNumber BOOL may be archived either way).
    public var boolValue: Bool? {
        switch self {
        case .bool(let b): return b
        case .int(0): return false
        case .int(1): return true
        default: return nil
        }
    }

    public var dataValue: Bytes? { if case .data(let d) = self { return d } else { return nil } }
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }

    /// A short type name for diagnostics.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int, .uint: "integer"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .string: "string"
        case .uid: "uid"
        case .array: "array"
        case .set: "set"
        case .dict: "dict"
        }
    }

    public var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return "\(b)"
        case .int(let v): return "\(v)"
        case .uint(let v): return "\(v)"
        case .real(let d): return "\(d)"
        case .date(let d): return "date(\(d))"
        case .data(let b): return "<\(b.count) bytes>"
        case .string(let s): return "\"\(s)\""
        case .uid(let u): return "uid(\(u))"
        case .array(let a): return "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .set(let a): return "set[" + a.map(\.description).joined(separator: ", ") + "]"
        case .dict(let d): return "{" + d.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
        }
    }
}

/// Why a binary property list could not be read, and where (byte offset from the start of the plist).
public struct BinaryPlistError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case badMagic = "bad_magic"
        case truncated
        case badTrailer = "bad_trailer"
        case offsetTableOutOfRange = "offset_table_out_of_range"
        case objectOffsetOutOfRange = "object_offset_out_of_range"
        case badReference = "bad_reference"
        case cycle
        case tooDeep = "too_deep"
        case countTooLarge = "count_too_large"
        case unknownMarker = "unknown_marker"
        case badInteger = "bad_integer"
        case badKey = "bad_key"
    }

    public var kind: Kind
    public var offset: Int
    public var message: String

    public init(_ kind: Kind, at offset: Int, _ message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(kind.rawValue) at offset \(offset): \(message)" }
}

/// A reader for Apple's binary property list format, version `00`, safe on hostile input: every
/// offset, count and reference is checked against the input, references that loop back onto the
/// decode path are reported as cycles, nesting is bounded, and errors carry byte offsets.
public struct BinaryPlist: Sendable {
    public static let magic: [UInt8] = Array("bplist00".utf8)
    /// Header (8) + one object (1) + trailer (32).
    public static let minimumSize = 41

    public var maxDepth: Int

    public init(maxDepth: Int = 32) {
        self.maxDepth = maxDepth
    }

    /// Whether `bytes` starts like a binary plist.
    public static func looksLikePlist(_ bytes: Bytes) -> Bool { bytes.starts(with: magic) }

    /// Decodes the top object of `bytes`.
    public static func decode(_ bytes: Bytes, maxDepth: Int = 32) throws(BinaryPlistError) -> PlistValue {
        try BinaryPlist(maxDepth: maxDepth).decode(bytes)
    }

    public func decode(_ bytes: Bytes) throws(BinaryPlistError) -> PlistValue {
        var reader = try Reader(bytes, maxDepth: maxDepth)
        return try reader.object(reader.topObject, depth: 0)
    }

    /// The state of one decode: trailer fields, the decode path (for cycles) and decoded objects.
    private struct Reader {
        let b: Bytes
        let offsetIntSize: Int
        let refSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        let maxDepth: Int
        var onPath: Set<Int> = []
        var done: [Int: PlistValue] = [:]

        init(_ b: Bytes, maxDepth: Int) throws(BinaryPlistError) {
            self.b = b
            self.maxDepth = maxDepth
            guard b.count >= 8, b.starts(with: BinaryPlist.magic) else {
                throw BinaryPlistError(.badMagic, at: 0, "does not start with bplist00")
            }
            guard b.count >= BinaryPlist.minimumSize else {
                throw BinaryPlistError(.truncated, at: b.count, "\(b.count) bytes is shorter than header plus trailer")
            }
            let t = b.count - 32
            guard let oSize = b.byte(t + 6), let rSize = b.byte(t + 7),
                  let nObj = b.u64be(t + 8), let top = b.u64be(t + 16), let table = b.u64be(t + 24) else {
                throw BinaryPlistError(.truncated, at: t, "trailer cut short")
            }
            guard (1 ... 8).contains(oSize) else {
                throw BinaryPlistError(.badTrailer, at: t + 6, "offset size \(oSize) not in 1...8")
            }
            guard (1 ... 8).contains(rSize) else {
                throw BinaryPlistError(.badTrailer, at: t + 7, "object reference size \(rSize) not in 1...8")
            }
            // Every object takes at least one byte between the header and the offset table.
            guard nObj >= 1, nObj <= UInt64(t) else {
                throw BinaryPlistError(.countTooLarge, at: t + 8, "object count \(nObj) impossible in \(b.count) bytes")
            }
            guard top < nObj else {
                throw BinaryPlistError(.badReference, at: t + 16, "top object \(top) not below object count \(nObj)")
            }
            let n = Int(nObj)
            let tableBytes = n.multipliedReportingOverflow(by: Int(oSize))
            guard table >= 8, table <= UInt64(t), !tableBytes.overflow, tableBytes.partialValue <= t - Int(table) else {
                throw BinaryPlistError(.offsetTableOutOfRange, at: t + 24,
                                       "offset table at \(table) with \(n) entries of \(oSize) bytes runs past \(t)")
            }
            offsetIntSize = Int(oSize)
            refSize = Int(rSize)
            objectCount = n
            topObject = Int(top)
            offsetTable = Int(table)
        }

        /// Unsigned big-endian integer of `size` (1...8) bytes at `at`.
        func uint(at: Int, size: Int) -> UInt64? {
            guard size >= 1, size <= 8, let s = b.slice(at, size) else { return nil }
            var v: UInt64 = 0
            for i in 0 ..< size { v = v << 8 | UInt64(s.byte(i) ?? 0) }
            return v
        }

        func objectOffset(_ ref: Int) throws(BinaryPlistError) -> Int {
            let entry = offsetTable + ref * offsetIntSize  // ref < objectCount: checked by the trailer bounds
            guard let o = uint(at: entry, size: offsetIntSize) else {
                throw BinaryPlistError(.offsetTableOutOfRange, at: entry, "offset table entry \(ref) unreadable")
            }
            guard o >= 8, o < UInt64(offsetTable) else {
                throw BinaryPlistError(.objectOffsetOutOfRange, at: entry,
                                       "object \(ref) at offset \(o) outside 8..<\(offsetTable)")
            }
            return Int(o)
        }

        /// The byte count that follows a marker with low nibble `nibble` at `at`, and where the content starts.
        func count(nibble: UInt8, after at: Int) throws(BinaryPlistError) -> (Int, Int) {
            if nibble != 0xF { return (Int(nibble), at + 1) }
            guard let m = b.byte(at + 1) else { throw BinaryPlistError(.truncated, at: at + 1, "count marker missing") }
            guard m & 0xF0 == 0x10, m & 0x0F <= 3 else {
                throw BinaryPlistError(.badInteger, at: at + 1, String(format2x: m) + " is not an integer count marker")
            }
            let size = 1 << Int(m & 0x0F)
            guard let v = uint(at: at + 2, size: size) else {
                throw BinaryPlistError(.truncated, at: at + 2, "count of \(size) bytes cut short")
            }
            // Nothing in the file can be longer than the file.
            guard v <= UInt64(b.count) else {
                throw BinaryPlistError(.countTooLarge, at: at + 2, "count \(v) larger than the \(b.count)-byte plist")
            }
            return (Int(v), at + 2 + size)
        }

        /// Reads `n` object references starting at `at`, each below the object count.
        func refs(_ n: Int, at: Int) throws(BinaryPlistError) -> [Int] {
            let bytes = n.multipliedReportingOverflow(by: refSize)
            guard !bytes.overflow, at <= offsetTable, bytes.partialValue <= offsetTable - at else {
                throw BinaryPlistError(.countTooLarge, at: at, "\(n) references of \(refSize) bytes run past the object area")
            }
            var out: [Int] = []
            out.reserveCapacity(n)
            for i in 0 ..< n {
                let p = at + i * refSize
                guard let r = uint(at: p, size: refSize) else { throw BinaryPlistError(.truncated, at: p, "reference cut short") }
                guard r < UInt64(objectCount) else {
                    throw BinaryPlistError(.badReference, at: p, "reference \(r) not below object count \(objectCount)")
                }
                out.append(Int(r))
            }
            return out
        }

        mutating func object(_ ref: Int, depth: Int) throws(BinaryPlistError) -> PlistValue {
            if let v = done[ref] { return v }
            let at = try objectOffset(ref)
            guard depth <= maxDepth else {
                throw BinaryPlistError(.tooDeep, at: at, "nesting deeper than \(maxDepth)")
            }
            guard !onPath.contains(ref) else {
                throw BinaryPlistError(.cycle, at: at, "object \(ref) contains itself")
            }
            guard let marker = b.byte(at) else { throw BinaryPlistError(.truncated, at: at, "object marker missing") }
            let hi = marker >> 4
            let lo = marker & 0x0F
            let value: PlistValue
            switch hi {
            case 0x0:
                switch lo {
                case 0x0: value = .null
                case 0x8: value = .bool(false)
                case 0x9: value = .bool(true)
                case 0xF: value = .null  // fill byte
                default: throw BinaryPlistError(.unknownMarker, at: at, "marker " + String(format2x: marker))
                }
            case 0x1:
                value = try integer(lo, at: at)
            case 0x2:
                guard lo == 2 || lo == 3 else { throw BinaryPlistError(.unknownMarker, at: at, "real of 2^\(lo) bytes") }
                guard let bits = uint(at: at + 1, size: 1 << Int(lo)) else {
                    throw BinaryPlistError(.truncated, at: at + 1, "real cut short")
                }
                value = .real(lo == 2 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))) : Double(bitPattern: bits))
            case 0x3:
                guard lo == 3 else { throw BinaryPlistError(.unknownMarker, at: at, "marker " + String(format2x: marker)) }
                guard let bits = uint(at: at + 1, size: 8) else { throw BinaryPlistError(.truncated, at: at + 1, "date cut short") }
                value = .date(Double(bitPattern: bits))
            case 0x4:
                let (n, start) = try count(nibble: lo, after: at)
                guard let d = content(start, n) else {
                    throw BinaryPlistError(.countTooLarge, at: at, "data of \(n) bytes runs past the object area")
                }
                value = .data(d)
            case 0x5:
                let (n, start) = try count(nibble: lo, after: at)
                guard let d = content(start, n) else {
                    throw BinaryPlistError(.countTooLarge, at: at, "string of \(n) bytes runs past the object area")
                }
                var s = String.UnicodeScalarView()
                for i in 0 ..< d.count { s.append(Unicode.Scalar(d.byte(i) ?? 0)) }
                value = .string(String(s))
            case 0x6:
                let (n, start) = try count(nibble: lo, after: at)
                let len = n.multipliedReportingOverflow(by: 2)
                guard !len.overflow, let d = content(start, len.partialValue) else {
                    throw BinaryPlistError(.countTooLarge, at: at, "UTF-16 string of \(n) units runs past the object area")
                }
                var units: [UInt16] = []
                units.reserveCapacity(n)
                for i in 0 ..< n { units.append(d.u16be(2 * i) ?? 0) }
                value = .string(String(decoding: units, as: UTF16.self))
            case 0x8:
                guard let u = uint(at: at + 1, size: Int(lo) + 1) else {
                    throw BinaryPlistError(lo > 7 ? .badInteger : .truncated, at: at + 1, "UID of \(Int(lo) + 1) bytes unreadable")
                }
                value = .uid(u)
            case 0xA, 0xC:
                let (n, start) = try count(nibble: lo, after: at)
                let members = try refs(n, at: start)
                onPath.insert(ref)
                var out: [PlistValue] = []
                out.reserveCapacity(n)
                for r in members { out.append(try object(r, depth: depth + 1)) }
                onPath.remove(ref)
                value = hi == 0xA ? .array(out) : .set(out)
            case 0xD:
                let (n, start) = try count(nibble: lo, after: at)
                let keyRefs = try refs(n, at: start)
                let valueRefs = try refs(n, at: start + n * refSize)
                onPath.insert(ref)
                var out: [(String, PlistValue)] = []
                out.reserveCapacity(n)
                for (i, (k, v)) in zip(keyRefs, valueRefs).enumerated() {
                    let key = try object(k, depth: depth + 1)
                    guard case .string(let name) = key else {
                        throw BinaryPlistError(.badKey, at: start + i * refSize, "dictionary key is a \(key.typeName), not a string")
                    }
                    out.append((name, try object(v, depth: depth + 1)))
                }
                onPath.remove(ref)
                value = .dict(out)
            default:
                throw BinaryPlistError(.unknownMarker, at: at, "marker " + String(format2x: marker))
            }
            done[ref] = value
            return value
        }

        /// `n` content bytes at `start`, which must end before the offset table.
        func content(_ start: Int, _ n: Int) -> Bytes? {
            guard start <= offsetTable, n <= offsetTable - start else { return nil }
            return b.slice(start, n)
        }

        func integer(_ lo: UInt8, at: Int) throws(BinaryPlistError) -> PlistValue {
            switch lo {
            case 0, 1, 2:
                guard let v = uint(at: at + 1, size: 1 << Int(lo)) else {
                    throw BinaryPlistError(.truncated, at: at + 1, "integer cut short")
                }
                return .int(Int64(v))
            case 3:
                guard let v = uint(at: at + 1, size: 8) else { throw BinaryPlistError(.truncated, at: at + 1, "integer cut short") }
                return .int(Int64(bitPattern: v))
            case 4:
                guard let high = uint(at: at + 1, size: 8), let low = uint(at: at + 9, size: 8) else {
                    throw BinaryPlistError(.truncated, at: at + 1, "16-byte integer cut short")
                }
                if high == 0 { return low <= UInt64(Int64.max) ? .int(Int64(low)) : .uint(low) }
                if high == UInt64.max, low >> 63 == 1 { return .int(Int64(bitPattern: low)) }
                throw BinaryPlistError(.badInteger, at: at + 1, "16-byte integer does not fit 64 bits")
            default:
                throw BinaryPlistError(.badInteger, at: at, "integer of 2^\(lo) bytes")
            }
        }
    }
}

fileprivate extension String {
    /// `0x`-prefixed two-digit hex of a byte.
    init(format2x b: UInt8) {
        let s = String(b, radix: 16)
        self = "0x" + (s.count < 2 ? "0" + s : s)
    }
}
