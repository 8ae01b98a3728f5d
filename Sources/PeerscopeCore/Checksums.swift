/// Checksums the MPC wire formats use.
public enum Checksum {
    private static let crc32Table: [UInt32] = (0 ..< 256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0 ..< 8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    private static let crc16ARCTable: [UInt16] = (0 ..< 256).map { n -> UInt16 in
        var c = UInt16(n)
        for _ in 0 ..< 8 { c = c & 1 != 0 ? 0xA001 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// zlib's CRC-32 (IEEE, reflected), continuing from `crc`.
    public static func crc32(_ bytes: Bytes, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        for i in 0 ..< bytes.count {
            let b = bytes.storage[bytes.lower + i]
            c = crc32Table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8)
        }
        return ~c
    }

    public static func crc32(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 { crc32(Bytes(bytes), continuing: crc) }

    /// CRC-16/ARC (poly 0x8005 reflected, init 0, no final xor).
    public static func crc16ARC(_ bytes: Bytes, continuing crc: UInt16 = 0) -> UInt16 {
        var c = crc
        for i in 0 ..< bytes.count {
            let b = bytes.storage[bytes.lower + i]
            c = crc16ARCTable[Int((c ^ UInt16(b)) & 0xFF)] ^ (c >> 8)
        }
        return c
    }

    public static func crc16ARC(_ bytes: [UInt8], continuing crc: UInt16 = 0) -> UInt16 { crc16ARC(Bytes(bytes), continuing: crc) }
}
