/// A fast hash and comparison of raw bytes, eight at a time: the key of tables that remember byte
/// strings seen before (`MessageBodyCache`, the mDNS refresh fast path). A hash only finds candidates;
/// a match is confirmed with `same`, so collisions cost a comparison, never a wrong answer.
public enum ByteHash {
    @inlinable
    public static func hash(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(raw.count)
        var i = 0
        let n = raw.count
        while i &+ 8 <= n {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 29
            i &+= 8
        }
        while i < n {
            h = (h ^ UInt64(raw[i])) &* 0x0100_0000_01B3
            i &+= 1
        }
        return h ^ (h >> 31)
    }

    /// Whether `a` and `b` hold the same bytes.
    @inlinable
    public static func same(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return b.withUnsafeBytes { b in
            var i = 0
            let n = a.count
            while i &+ 8 <= n {
                if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
                i &+= 8
            }
            while i < n {
                if a[i] != b[i] { return false }
                i &+= 1
            }
            return true
        }
    }
}

extension Bytes {
    /// `ByteHash.hash` of these bytes.
    @inlinable public var byteHash: UInt64 { withUnsafeBytes { ByteHash.hash($0) } }

    /// Whether these bytes are `other`'s (`ByteHash.same`).
    @inlinable public func same(as other: [UInt8]) -> Bool { withUnsafeBytes { ByteHash.same($0, other) } }
}
