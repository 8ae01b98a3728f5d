import Foundation
import PeerscopeCore

/// Writers for synthetic captures, written from the format specs independently of the reader under test.
struct ByteWriter {
    var bytes: [UInt8] = []
    let bigEndian: Bool

    init(bigEndian: Bool) { self.bigEndian = bigEndian }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) {
        let b = [UInt8(v >> 8), UInt8(v & 0xFF)]
        bytes += bigEndian ? b : b.reversed()
    }
    mutating func u32(_ v: UInt32) {
        let b = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
        bytes += bigEndian ? b : b.reversed()
    }
    mutating func u64(_ v: UInt64) {
        if bigEndian { u32(UInt32(v >> 32)); u32(UInt32(v & 0xFFFF_FFFF)) } else { u32(UInt32(v & 0xFFFF_FFFF)); u32(UInt32(v >> 32)) }
    }
    mutating func raw(_ b: [UInt8]) { bytes += b }
    mutating func pad4() { while bytes.count % 4 != 0 { bytes.append(0) } }
}

struct SynthFrame: Equatable {
    var t: Int64  // ns since epoch
    var data: [UInt8]
    var origLen: Int
    var iface: Int = 0
}

enum Synth {
    /// Classic pcap; `nanos` picks magic a1b23c4d.
    static func pcap(frames: [SynthFrame], bigEndian: Bool, nanos: Bool, linkType: UInt32 = 1, snap: UInt32 = 65535) -> [UInt8] {
        var w = ByteWriter(bigEndian: bigEndian)
        w.u32(nanos ? 0xA1B2_3C4D : 0xA1B2_C3D4)
        w.u16(2); w.u16(4); w.u32(0); w.u32(0); w.u32(snap); w.u32(linkType)
        for f in frames {
            let sec = f.t / 1_000_000_000, sub = f.t % 1_000_000_000
            w.u32(UInt32(sec)); w.u32(UInt32(nanos ? sub : sub / 1000))
            w.u32(UInt32(f.data.count)); w.u32(UInt32(f.origLen))
            w.raw(f.data)
        }
        return w.bytes
    }

    struct Iface {
        var linkType: UInt16
        var name: String?
        var tsresol: UInt8?  // nil = default (µs)
        var tsoffset: Int64? = nil
        var snap: UInt32 = 0
    }

    /// Raw timestamp units for `t` ns under `tsresol` (exactly representable in the tests' values).
    static func units(_ t: Int64, resol: UInt8?, offset: Int64?) -> UInt64 {
        let base = UInt64(t - (offset ?? 0) * 1_000_000_000)
        let r = resol ?? 6
        if r & 0x80 == 0 {
            let k = Int(r)
            if k <= 9 { return base / pow10(9 - k) }
            return base * pow10(k - 9)
        }
        let k = Int(r & 0x7f)  // units = ns * 2^k / 1e9 (tests pick exact values)
        return UInt64((Double(base) * pow(2.0, Double(k)) / 1e9).rounded())
    }

    static func pow10(_ n: Int) -> UInt64 { (0 ..< n).reduce(1) { acc, _ in acc * 10 } }

    static func block(_ w: inout ByteWriter, type: UInt32, body: [UInt8]) {
        let len = UInt32(12 + body.count)
        w.u32(type); w.u32(len); w.raw(body); w.u32(len)
    }

    static func option(_ w: inout ByteWriter, code: UInt16, value: [UInt8]) {
        w.u16(code); w.u16(UInt16(value.count)); w.raw(value); w.pad4()
    }

    static func shb(_ w: inout ByteWriter) {
        var b = ByteWriter(bigEndian: w.bigEndian)
        b.u32(0x1A2B_3C4D); b.u16(1); b.u16(0); b.u64(UInt64.max)  // section length unknown
        option(&b, code: 4, value: Array("synth".utf8))  // shb_userappl
        b.u32(0)
        block(&w, type: 0x0A0D_0D0A, body: b.bytes)
    }

    static func idb(_ w: inout ByteWriter, _ i: Iface) {
        var b = ByteWriter(bigEndian: w.bigEndian)
        b.u16(i.linkType); b.u16(0); b.u32(i.snap)
        if let n = i.name { option(&b, code: 2, value: Array(n.utf8)) }
        if let r = i.tsresol { option(&b, code: 9, value: [r]) }
        if let o = i.tsoffset {
            var ob = ByteWriter(bigEndian: w.bigEndian); ob.u64(UInt64(bitPattern: o))
            option(&b, code: 14, value: ob.bytes)
        }
        b.u16(0); b.u16(0)
        block(&w, type: 1, body: b.bytes)
    }

    static func epb(_ w: inout ByteWriter, _ f: SynthFrame, _ i: Iface, comment: Bool = false) {
        var b = ByteWriter(bigEndian: w.bigEndian)
        let u = units(f.t, resol: i.tsresol, offset: i.tsoffset)
        b.u32(UInt32(f.iface)); b.u32(UInt32(u >> 32)); b.u32(UInt32(u & 0xFFFF_FFFF))
        b.u32(UInt32(f.data.count)); b.u32(UInt32(f.origLen)); b.raw(f.data); b.pad4()
        if comment { option(&b, code: 1, value: Array("a comment".utf8)); b.u32(0) }
        block(&w, type: 6, body: b.bytes)
    }

    static func obsoletePB(_ w: inout ByteWriter, _ f: SynthFrame, _ i: Iface) {
        var b = ByteWriter(bigEndian: w.bigEndian)
        let u = units(f.t, resol: i.tsresol, offset: i.tsoffset)
        b.u16(UInt16(f.iface)); b.u16(0); b.u32(UInt32(u >> 32)); b.u32(UInt32(u & 0xFFFF_FFFF))
        b.u32(UInt32(f.data.count)); b.u32(UInt32(f.origLen)); b.raw(f.data); b.pad4()
        block(&w, type: 2, body: b.bytes)
    }

    static func spb(_ w: inout ByteWriter, data: [UInt8]) {
        var b = ByteWriter(bigEndian: w.bigEndian)
        b.u32(UInt32(data.count)); b.raw(data); b.pad4()
        block(&w, type: 3, body: b.bytes)
    }

    /// Name resolution, interface statistics and an unknown block: all must be skipped.
    static func noise(_ w: inout ByteWriter) {
        var nrb = ByteWriter(bigEndian: w.bigEndian)
        nrb.u16(1); nrb.u16(8); nrb.raw([127, 0, 0, 1]); nrb.raw(Array("lo\0\0".utf8)); nrb.u16(0); nrb.u16(0)
        block(&w, type: 4, body: nrb.bytes)
        var isb = ByteWriter(bigEndian: w.bigEndian)
        isb.u32(0); isb.u32(0); isb.u32(0); isb.u32(0)
        block(&w, type: 5, body: isb.bytes)
        block(&w, type: 0x0000_0BAD, body: [1, 2, 3, 4, 5, 6, 7, 8])
        block(&w, type: 0x4000_0BAD, body: [9, 9, 9, 9])
    }

    /// gzip (RFC 1952) with deflate stored blocks (RFC 1951 §3.2.4): no compressor needed.
    static func gzipStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]
        var i = 0
        repeat {
            let n = min(65535, data.count - i)
            let last: UInt8 = i + n >= data.count ? 1 : 0
            out.append(last)
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[i ..< i + n]
            i += n
        } while i < data.count
        let crc = Checksum.crc32(data)
        for v in [crc, UInt32(truncatingIfNeeded: data.count)] {
            out += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)]
        }
        return out
    }

    static func payload(_ seed: Int, _ n: Int) -> [UInt8] {
        (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ 1) }
    }
}

/// A temporary directory removed at deinit.
final class TempDir {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "peerscope-capture-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit {
        // Restore permissions so removal works after chmod tests.
        if let items = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for i in items { chmod(path + "/" + i, 0o700) }
        }
        try? FileManager.default.removeItem(atPath: path)
    }
    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let p = path + "/" + name
        _ = FileManager.default.createFile(atPath: p, contents: Data(bytes))
        return p
    }
}
