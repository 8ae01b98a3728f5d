/// A read-only, zero-based view into shared byte storage.
///
/// Slicing never copies. Every read that depends on wire data returns an optional instead of
/// trapping, so decoders handed hostile input report "too short" rather than crash.
public struct Bytes: Sendable, Equatable, CustomStringConvertible {
    public let storage: [UInt8]
    public let lower: Int
    public let count: Int

    public init(_ array: [UInt8]) {
        storage = array
        lower = 0
        count = array.count
    }

    /// A view of `count` bytes of `storage` starting at `lower`; clamped to the storage.
    public init(storage: [UInt8], lower: Int, count: Int) {
        let lo = max(0, min(lower, storage.count))
        let n = max(0, min(count, storage.count - lo))
        self.storage = storage
        self.lower = lo
        self.count = n
    }

    public static let empty = Bytes([])

    public var isEmpty: Bool { count == 0 }

    /// Byte at `i`, or nil when out of range.
    @inlinable public func byte(_ i: Int) -> UInt8? {
        guard i >= 0, i < count else { return nil }
        return storage[lower &+ i]
    }

    @inlinable public func u16be(_ i: Int) -> UInt16? {
        guard i >= 0, i <= count &- 2 else { return nil }
        let p = lower &+ i
        return UInt16(storage[p]) << 8 | UInt16(storage[p &+ 1])
    }

    @inlinable public func u16le(_ i: Int) -> UInt16? {
        guard i >= 0, i <= count &- 2 else { return nil }
        let p = lower &+ i
        return UInt16(storage[p &+ 1]) << 8 | UInt16(storage[p])
    }

    @inlinable public func u32be(_ i: Int) -> UInt32? {
        guard i >= 0, i <= count &- 4 else { return nil }
        let p = lower &+ i
        return UInt32(storage[p]) << 24 | UInt32(storage[p &+ 1]) << 16 | UInt32(storage[p &+ 2]) << 8 | UInt32(storage[p &+ 3])
    }

    @inlinable public func u32le(_ i: Int) -> UInt32? {
        guard i >= 0, i <= count &- 4 else { return nil }
        let p = lower &+ i
        return UInt32(storage[p &+ 3]) << 24 | UInt32(storage[p &+ 2]) << 16 | UInt32(storage[p &+ 1]) << 8 | UInt32(storage[p])
    }

    @inlinable public func u64be(_ i: Int) -> UInt64? {
        guard let hi = u32be(i), let lo = u32be(i &+ 4) else { return nil }
        return UInt64(hi) << 32 | UInt64(lo)
    }

    @inlinable public func u64le(_ i: Int) -> UInt64? {
        guard let lo = u32le(i), let hi = u32le(i &+ 4) else { return nil }
        return UInt64(hi) << 32 | UInt64(lo)
    }

    /// `length` bytes from `offset`, or nil if that runs past the end.
    public func slice(_ offset: Int, _ length: Int) -> Bytes? {
        guard offset >= 0, length >= 0, offset <= count, length <= count - offset else { return nil }
        return Bytes(storage: storage, lower: lower + offset, count: length)
    }

    /// Everything from `offset` on (empty when past the end).
    public func suffix(from offset: Int) -> Bytes {
        let o = max(0, min(offset, count))
        return Bytes(storage: storage, lower: lower + o, count: count - o)
    }

    /// The first `n` bytes (all when shorter).
    public func prefix(_ n: Int) -> Bytes {
        Bytes(storage: storage, lower: lower, count: max(0, min(n, count)))
    }

    /// A fresh array with these bytes.
    public var array: [UInt8] { Array(storage[lower ..< lower + count]) }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[lower ..< lower + count]))
        }
    }

    public func starts(with prefix: [UInt8]) -> Bool {
        guard prefix.count <= count else { return false }
        for (i, b) in prefix.enumerated() where storage[lower + i] != b { return false }
        return true
    }

    /// Lowercase hex, two digits a byte (written straight into the string's storage: STUN names every
    /// message by its transaction ID in hex).
    public var hex: String {
        guard count > 0 else { return "" }
        return storage.withUnsafeBufferPointer { src in
            String(unsafeUninitializedCapacity: count * 2) { out in
                var o = 0
                for i in lower ..< lower + count {
                    let b = src[i]
                    out[o] = Bytes.hexDigit(b >> 4)
                    out[o + 1] = Bytes.hexDigit(b & 0xF)
                    o += 2
                }
                return o
            }
        }
    }

    /// The lowercase hex digit of `v` (0-15): `hex`, JSON's `\u00XX` escapes and IPv6 groups write with it.
    @inline(__always) static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 &+ v : 0x57 &+ v }

    public init?(hex: String) {
        var out: [UInt8] = []
        var hi: UInt8? = nil
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case 0x30 ... 0x39: v = c - 0x30
            case 0x61 ... 0x66: v = c - 0x61 + 10
            case 0x41 ... 0x46: v = c - 0x41 + 10
            case 0x20, 0x0A, 0x0D, 0x09, 0x3A: continue
            default: return nil
            }
            if let h = hi { out.append(h << 4 | v); hi = nil } else { hi = v }
        }
        guard hi == nil else { return nil }
        self.init(out)
    }

    public var description: String { "Bytes(\(count): \(prefix(32).hex)\(count > 32 ? "…" : ""))" }

    public static func == (a: Bytes, b: Bytes) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0 ..< a.count where a.storage[a.lower + i] != b.storage[b.lower + i] { return false }
        return true
    }
}

/// A forward reader over `Bytes` that tracks its offset. Reads return nil past the end and do not move.
public struct ByteCursor: Sendable {
    public let bytes: Bytes
    public private(set) var offset: Int

    public init(_ bytes: Bytes, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { max(0, bytes.count - offset) }
    public var atEnd: Bool { remaining == 0 }

    public mutating func u8() -> UInt8? {
        guard let v = bytes.byte(offset) else { return nil }
        offset += 1
        return v
    }

    public mutating func u16be() -> UInt16? {
        guard let v = bytes.u16be(offset) else { return nil }
        offset += 2
        return v
    }

    public mutating func u16le() -> UInt16? {
        guard let v = bytes.u16le(offset) else { return nil }
        offset += 2
        return v
    }

    public mutating func u32be() -> UInt32? {
        guard let v = bytes.u32be(offset) else { return nil }
        offset += 4
        return v
    }

    public mutating func u32le() -> UInt32? {
        guard let v = bytes.u32le(offset) else { return nil }
        offset += 4
        return v
    }

    public mutating func u64be() -> UInt64? {
        guard let v = bytes.u64be(offset) else { return nil }
        offset += 8
        return v
    }

    public mutating func take(_ n: Int) -> Bytes? {
        guard let v = bytes.slice(offset, n) else { return nil }
        offset += n
        return v
    }

    public mutating func skip(_ n: Int) -> Bool {
        guard n >= 0, n <= remaining else { return false }
        offset += n
        return true
    }

    public mutating func seek(_ to: Int) -> Bool {
        guard to >= 0, to <= bytes.count else { return false }
        offset = to
        return true
    }
}

/// Unsigned LEB128: 7 bits a byte, low bits first, the high bit set while more follow. The varint of
/// the packed attribute entries (`EventAttrs`), of query-run members (`QueryRuns`) and of parked TCP
/// connections (`TCPParking`).
public enum LEB128 {
    @inlinable public static func append(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// The value at `p` in `bytes` (`p` moved past it; a value cut short by the end is what was read).
    @inlinable public static func read(_ bytes: [UInt8], _ p: inout Int) -> UInt64 {
        var v: UInt64 = 0, shift: UInt64 = 0
        while p < bytes.count {
            let b = bytes[p]
            p += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { break }
            shift += 7
        }
        return v
    }
}
