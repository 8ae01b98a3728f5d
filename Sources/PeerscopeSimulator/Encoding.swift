// Byte building and checksums for the simulator. Written independently of PeerscopeCore's
// decoders on purpose: a shared bug could not hide in both the writer and the reader.

/// Appends big- and little-endian integers and byte runs to a growing buffer.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var count: Int { bytes.count }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF)) }
    public mutating func u24(_ v: UInt32) {
        bytes.append(UInt8((v >> 16) & 0xFF)); bytes.append(UInt8((v >> 8) & 0xFF)); bytes.append(UInt8(v & 0xFF))
    }
    public mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }
    public mutating func u48(_ v: UInt64) { u16(UInt16((v >> 32) & 0xFFFF)); u32(UInt32(v & 0xFFFF_FFFF)) }
    public mutating func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(v & 0xFFFF_FFFF)) }
    public mutating func u16le(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    public mutating func u32le(_ v: UInt32) { u16le(UInt16(v & 0xFFFF)); u16le(UInt16(v >> 16)) }
    public mutating func u64le(_ v: UInt64) { u32le(UInt32(v & 0xFFFF_FFFF)); u32le(UInt32(v >> 32)) }
    public mutating func append(_ b: [UInt8]) { bytes.append(contentsOf: b) }
    public mutating func append<S: Sequence>(contentsOf s: S) where S.Element == UInt8 { bytes.append(contentsOf: s) }
    public mutating func utf8(_ s: String) { bytes.append(contentsOf: Array(s.utf8)) }
    public mutating func zeros(_ n: Int) { if n > 0 { bytes.append(contentsOf: [UInt8](repeating: 0, count: n)) } }
    /// Pads with zeros to a multiple of `boundary`.
    public mutating func pad(to boundary: Int) {
        let r = bytes.count % boundary
        if r != 0 { zeros(boundary - r) }
    }

    public mutating func set16(_ v: UInt16, at offset: Int) {
        bytes[offset] = UInt8(v >> 8); bytes[offset + 1] = UInt8(v & 0xFF)
    }
    public mutating func set32(_ v: UInt32, at offset: Int) {
        set16(UInt16(v >> 16), at: offset); set16(UInt16(v & 0xFFFF), at: offset + 2)
    }
    public mutating func set32le(_ v: UInt32, at offset: Int) {
        bytes[offset] = UInt8(v & 0xFF); bytes[offset + 1] = UInt8((v >> 8) & 0xFF)
        bytes[offset + 2] = UInt8((v >> 16) & 0xFF); bytes[offset + 3] = UInt8(v >> 24)
    }
}

/// Checksums the simulated formats need.
public enum SimChecksum {
    private static let crc32Table: [UInt32] = (0 ..< 256).map { n in
        var c = UInt32(n)
        for _ in 0 ..< 8 { c = (c & 1) == 1 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        return c
    }

    /// zlib `crc32` (IEEE 802.3, reflected, init and final xor 0xFFFFFFFF).
    public static func crc32<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = crc32Table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }

    /// CRC-16/ARC: polynomial 0x8005 reflected (0xA001), init 0, no final xor. Bitwise on purpose.
    public static func crc16ARC<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var c: UInt16 = 0
        for b in bytes {
            c ^= UInt16(b)
            for _ in 0 ..< 8 { c = (c & 1) == 1 ? (c >> 1) ^ 0xA001 : c >> 1 }
        }
        return c
    }

    /// RFC 1071 ones'-complement sum (not yet complemented), folded to 16 bits.
    public static func onesComplementSum<C: Collection>(_ bytes: C, initial: UInt32 = 0) -> UInt32 where C.Element == UInt8 {
        var sum = initial
        var high = true
        var word: UInt32 = 0
        for b in bytes {
            if high { word = UInt32(b) << 8 } else { sum &+= word | UInt32(b); word = 0 }
            high.toggle()
        }
        if !high { sum &+= word }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) &+ (sum >> 16) }
        return sum
    }

    /// The Internet checksum (IP header, ICMP): complement of the ones'-complement sum.
    public static func internet<C: Collection>(_ bytes: C, initial: UInt32 = 0) -> UInt16 where C.Element == UInt8 {
        ~UInt16(onesComplementSum(bytes, initial: initial) & 0xFFFF)
    }
}

/// Deterministic pseudo-random numbers (SplitMix64). Same seed, same sequence, on every platform.
/// Also a `RandomNumberGenerator`, so tests draw with `Int.random(in:using:)` from the one generator.
public struct SimRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func u32() -> UInt32 { UInt32(truncatingIfNeeded: next() >> 32) }
    public mutating func u16() -> UInt16 { UInt16(truncatingIfNeeded: next() >> 48) }

    /// Uniform integer in `range` (closed).
    public mutating func int(_ range: ClosedRange<Int64>) -> Int64 {
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
        if span == 0 { return Int64(bitPattern: next()) }
        return range.lowerBound &+ Int64(bitPattern: next() % span)
    }

    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        Int(int(Int64(range.lowerBound) ... Int64(range.upperBound)))
    }

    public mutating func bytes(_ n: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(n)
        while out.count < n {
            var v = next()
            for _ in 0 ..< 8 where out.count < n { out.append(UInt8(v & 0xFF)); v >>= 8 }
        }
        return out
    }

    /// A random offset in microseconds, returned in nanoseconds.
    public mutating func jitterMicros(_ range: ClosedRange<Int64>) -> Int64 { int(range) * 1000 }

    /// FNV-1a of a string: mixes the scenario name into the seed.
    public static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return h
    }
}

enum Hex {
    static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(bytes.count * 2)
        for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 0xF)]) }
        return s
    }

    static func upper8(_ v: UInt32) -> String {
        let digits = Array("0123456789ABCDEF")
        var s = ""
        for shift in stride(from: 28, through: 0, by: -4) { s.append(digits[Int((v >> UInt32(shift)) & 0xF)]) }
        return s
    }

    static func lower8(_ v: UInt32) -> String { upper8(v).lowercased() }
}
