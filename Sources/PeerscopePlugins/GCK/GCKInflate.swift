import CZlib
import PeerscopeCore

/// Bodies of GCK DD/LSA packets with flag bit 0 set. The spec (§1.3) reads the bit as "zlib-compressed
/// body", unconfirmed: real DD/LSA packets carry flags 0, and the decompiled log line
/// "%s compressed body %u => %u+2" hints at a 2-byte length before the compressed data. So every
/// reading is tried, plain first (see `GCKDDPlugin`): zlib or raw deflate, with or without a u16
/// big-endian uncompressed-length prefix.
enum GCKInflate {
    /// No DD/LSA body is anywhere near this; a bigger output is not taken as a reading.
    static let maxOutput = 64 * 1024

    /// The readings of `body` as compressed data, most likely first: (bytes, how it was read).
    static func readings(_ body: Bytes) -> [(Bytes, String)] {
        var out: [(Bytes, String)] = []
        let prefixed = body.u16be(0).map { (Int($0), body.suffix(from: 2)) }
        for (windowBits, name) in [(Int32(15), "zlib"), (Int32(-15), "deflate")] {
            if let (expected, rest) = prefixed, let b = inflate(rest, windowBits: windowBits), b.count == expected {
                out.append((Bytes(b), "\(name)+length"))
            }
            if let b = inflate(body, windowBits: windowBits) { out.append((Bytes(b), name)) }
        }
        return out
    }

    /// Inflates all of `input` (a complete stream that ends exactly at its end); nil otherwise.
    static func inflate(_ input: Bytes, windowBits: Int32) -> [UInt8]? {
        guard !input.isEmpty, input.count < Int(UInt32.max) else { return nil }
        var source = input.array
        var stream = z_stream()
        guard inflateInit2_(&stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let status: Int32 = source.withUnsafeMutableBufferPointer { src in
            stream.next_in = src.baseAddress
            stream.avail_in = UInt32(src.count)
            while true {
                let (code, produced) = chunk.withUnsafeMutableBufferPointer { dst -> (Int32, Int) in
                    stream.next_out = dst.baseAddress
                    stream.avail_out = UInt32(dst.count)
                    let code = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (code, dst.count - Int(stream.avail_out))
                }
                output.append(contentsOf: chunk.prefix(produced))
                if output.count > maxOutput { return Z_BUF_ERROR }
                if code == Z_STREAM_END { return stream.avail_in == 0 ? Z_STREAM_END : Z_DATA_ERROR }
                if code != Z_OK { return code }
                if stream.avail_in == 0 && produced == 0 { return Z_BUF_ERROR }
            }
        }
        return status == Z_STREAM_END ? output : nil
    }
}
