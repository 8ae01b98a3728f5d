#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeerscopeCore

/// Turns captures into one Ethernet pcap that `tcpreplay` can send onto an interface: every frame
/// rewritten as Ethernet (Linux cooked frames get an Ethernet header with the same protocol; frames
/// of other link types are left out), the inputs concatenated `copies` times. Used by the live-capture
/// tests and benchmark to put real sample traffic on a veth pair.
public enum ReplayFile {
    /// Destination MAC of rewritten frames: locally administered, no host's, so the receiving stack
    /// drops them (`PACKET_OTHERHOST`) and only a capture sees them.
    static let otherHost: [UInt8] = [0x02, 0x00, 0x5E, 0x10, 0x00, 0x01]
    static let defaultSource: [UInt8] = [0x02, 0x00, 0x5E, 0x10, 0x00, 0x02]

    /// `frame` as an Ethernet frame, nil for link types it cannot rewrite.
    public static func ethernet(_ frame: RawFrame) -> [UInt8]? {
        let d = frame.data
        switch frame.info.linkType {
        case LinkType.ethernet:
            return d.count >= 14 ? d.array : nil
        case LinkType.linuxSLL:
            // pkttype(2) arphrd(2) halen(2) addr(8) protocol(2)
            guard d.count >= 16, let halen = d.u16be(4), let proto = d.u16be(14), let body = d.slice(16, d.count - 16) else { return nil }
            var src = defaultSource
            if halen == 6, let a = d.slice(6, 6) { src = a.array }
            let dst = d.u16be(0) == 4 ? defaultSource : otherHost
            return dst + src + [UInt8(proto >> 8), UInt8(proto & 0xFF)] + body.array
        default:
            return nil
        }
    }

    /// Writes `paths` (read in order, each whole) `copies` times into a microsecond pcap at `output`,
    /// keeping each frame's time; returns the number of frames written. Throws when an input cannot be
    /// read or the output cannot be written.
    @discardableResult
    public static func write(paths: [String], copies: Int, to output: String) throws(CaptureError) -> Int {
        var frames: [(Nanos, [UInt8])] = []
        for p in paths {
            let r = try CaptureFileReader(path: p)
            while let f = r.next() {
                if let e = ethernet(f) { frames.append((f.info.t, e)) }
            }
        }
        var out: [UInt8] = []
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        u32(0xA1B2_C3D4); u16(2); u16(4); u32(0); u32(0); u32(65_535); u32(1)
        var n = 0
        for _ in 0 ..< max(0, copies) {
            for (t, bytes) in frames {
                let us = max(0, t) / 1000
                u32(UInt32(truncatingIfNeeded: us / 1_000_000))
                u32(UInt32(truncatingIfNeeded: us % 1_000_000))
                u32(UInt32(bytes.count))
                u32(UInt32(bytes.count))
                out += bytes
                n += 1
            }
        }
        do { try OutputFile.writeWhole(path: output, option: "replay file", bytes: out) } catch {
            throw .writeFailed(path: output, reason: error.reason)
        }
        return n
    }
}
