import PeerscopeCore
import PeerscopePlugins

/// Builds DNS messages byte by byte for tests (its own encoder: shares nothing with the decoder).
struct DNSBuilder {
    var bytes: [UInt8] = []
    /// Offsets of names written, for compression pointers.
    var offsets: [String: Int] = [:]

    init(id: UInt16 = 0, flags: UInt16 = 0x8400, qd: Int = 0, an: Int = 0, ns: Int = 0, ar: Int = 0) {
        u16(id); u16(flags); u16(UInt16(qd)); u16(UInt16(an)); u16(UInt16(ns)); u16(UInt16(ar))
    }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }
    mutating func raw(_ b: [UInt8]) { bytes += b }

    /// Writes `labels`, using a pointer for the longest suffix written before (when `compress`).
    mutating func name(_ labels: [String], compress: Bool = true) {
        var i = 0
        while i < labels.count {
            let suffix = labels[i...].joined(separator: ".").lowercased()
            if compress, let off = offsets[suffix] {
                u16(0xC000 | UInt16(off))
                return
            }
            if offsets[suffix] == nil { offsets[suffix] = bytes.count }
            let l = Array(labels[i].utf8)
            u8(UInt8(l.count))
            raw(l)
            i += 1
        }
        u8(0)
    }

    mutating func name(_ dotted: String) { name(dotted.split(separator: ".").map(String.init)) }

    mutating func question(_ n: String, type: UInt16, qu: Bool = false) {
        name(n)
        u16(type)
        u16(qu ? 0x8001 : 1)
    }

    /// A record header; `rdata` writes the rdata (length filled in after).
    mutating func record(_ n: [String], type: UInt16, ttl: UInt32, flush: Bool = false, rdata: (inout DNSBuilder) -> Void) {
        name(n)
        u16(type)
        u16(flush ? 0x8001 : 1)
        u32(ttl)
        let lenAt = bytes.count
        u16(0)
        let start = bytes.count
        rdata(&self)
        let len = bytes.count - start
        bytes[lenAt] = UInt8(len >> 8)
        bytes[lenAt + 1] = UInt8(len & 0xFF)
    }

    mutating func ptr(_ owner: String, _ target: [String], ttl: UInt32) {
        record(owner.split(separator: ".").map(String.init), type: 12, ttl: ttl) { $0.name(target) }
    }

    mutating func srv(_ owner: [String], target: String, port: UInt16, ttl: UInt32, flush: Bool = true) {
        record(owner, type: 33, ttl: ttl, flush: flush) { b in
            b.u16(0); b.u16(0); b.u16(port); b.name(target)
        }
    }

    mutating func txt(_ owner: [String], _ strings: [String], ttl: UInt32, flush: Bool = true) {
        record(owner, type: 16, ttl: ttl, flush: flush) { b in
            for s in strings {
                let u = Array(s.utf8)
                b.u8(UInt8(u.count))
                b.raw(u)
            }
        }
    }

    mutating func a(_ owner: String, _ addr: [UInt8], ttl: UInt32, flush: Bool = true) {
        record(owner.split(separator: ".").map(String.init), type: 1, ttl: ttl, flush: flush) { $0.raw(addr) }
    }

    var payload: Bytes { Bytes(bytes) }
}
