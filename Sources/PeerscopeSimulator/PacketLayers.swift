// Network and link layers: IPv4/IPv6, UDP, TCP, ICMP/ICMPv6 with valid checksums; Ethernet and
// Linux cooked (SLL) framing; pcapng and classic pcap file writers.

public enum IPFamily: Sendable { case v4, v6 }

public enum IPProto: UInt8, Sendable { case icmp = 1, tcp = 6, udp = 17, icmpv6 = 58 }

public enum IPLayer {
    /// Sum over the pseudo-header used by UDP, TCP and ICMPv6 checksums.
    static func pseudoHeaderSum(src: [UInt8], dst: [UInt8], proto: IPProto, length: Int) -> UInt32 {
        var w = ByteWriter()
        w.append(src); w.append(dst)
        if src.count == 16 {
            w.u32(UInt32(length)); w.zeros(3); w.u8(proto.rawValue)
        } else {
            w.u8(0); w.u8(proto.rawValue); w.u16(UInt16(length))
        }
        return SimChecksum.onesComplementSum(w.bytes)
    }

    static func transportChecksum(src: [UInt8], dst: [UInt8], proto: IPProto, segment: [UInt8]) -> UInt16 {
        let pseudo = pseudoHeaderSum(src: src, dst: dst, proto: proto, length: segment.count)
        let c = SimChecksum.internet(segment, initial: pseudo)
        return (proto == .udp && c == 0) ? 0xFFFF : c
    }

    public static func udp(src: [UInt8], dst: [UInt8], sport: UInt16, dport: UInt16, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u16(sport); w.u16(dport); w.u16(UInt16(8 + payload.count)); w.u16(0)
        w.append(payload)
        w.set16(transportChecksum(src: src, dst: dst, proto: .udp, segment: w.bytes), at: 6)
        return w.bytes
    }

    public struct TCPFlags: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let fin = TCPFlags(rawValue: 0x01)
        public static let syn = TCPFlags(rawValue: 0x02)
        public static let rst = TCPFlags(rawValue: 0x04)
        public static let psh = TCPFlags(rawValue: 0x08)
        public static let ack = TCPFlags(rawValue: 0x10)
    }

    public static func tcp(src: [UInt8], dst: [UInt8], sport: UInt16, dport: UInt16, seq: UInt32, ack: UInt32,
                           flags: TCPFlags, window: UInt16, mss: UInt16? = nil, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u16(sport); w.u16(dport); w.u32(seq); w.u32(flags.contains(.ack) ? ack : 0)
        let optionBytes = mss == nil ? 0 : 4
        w.u8(UInt8((20 + optionBytes) / 4) << 4)
        w.u8(flags.rawValue)
        w.u16(window); w.u16(0); w.u16(0)
        if let mss { w.u8(2); w.u8(4); w.u16(mss) }
        w.append(payload)
        w.set16(transportChecksum(src: src, dst: dst, proto: .tcp, segment: w.bytes), at: 16)
        return w.bytes
    }

    /// ICMP destination unreachable / port unreachable quoting `original` (the whole offending IP packet).
    public static func icmpPortUnreachable(family: IPFamily, src: [UInt8], dst: [UInt8], original: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        if family == .v4 { w.u8(3); w.u8(3) } else { w.u8(1); w.u8(4) }
        w.u16(0); w.u32(0)
        w.append(original)
        let c: UInt16
        if family == .v4 {
            c = SimChecksum.internet(w.bytes)
        } else {
            c = SimChecksum.internet(w.bytes, initial: pseudoHeaderSum(src: src, dst: dst, proto: .icmpv6, length: w.count))
        }
        w.set16(c, at: 2)
        return w.bytes
    }

    public static func ipv4(src: [UInt8], dst: [UInt8], proto: IPProto, ttl: UInt8, id: UInt16, dontFragment: Bool, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(0x45); w.u8(0)
        w.u16(UInt16(20 + payload.count))
        w.u16(id)
        w.u16(dontFragment ? 0x4000 : 0)
        w.u8(ttl); w.u8(proto.rawValue)
        w.u16(0)
        w.append(src); w.append(dst)
        w.set16(SimChecksum.internet(w.bytes), at: 10)
        w.append(payload)
        return w.bytes
    }

    public static func ipv6(src: [UInt8], dst: [UInt8], proto: IPProto, hopLimit: UInt8, flowLabel: UInt32, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u32(0x6000_0000 | (flowLabel & 0xFFFFF))
        w.u16(UInt16(payload.count))
        w.u8(proto.rawValue); w.u8(hopLimit)
        w.append(src); w.append(dst)
        w.append(payload)
        return w.bytes
    }
}

// MARK: - Link layers and files

public enum SimLinkType: UInt16, Sendable {
    case ethernet = 1
    case linuxSLL = 113
}

/// A captured frame before link-layer framing.
struct SimFrame {
    var time: Int64          // ns since the Unix epoch
    var order: Int           // insertion order: stable tie-break
    var interface: Int
    var ipPacket: [UInt8]
    var family: IPFamily
    var sourceMAC: [UInt8]
    var destinationMAC: [UInt8]
    /// SLL packet type: 0 to us, 2 multicast, 3 other host, 4 outgoing.
    var sllPacketType: UInt16
    /// Builds `ipPacket` when the frames are put in time order: counters a sender keeps (DTLS record
    /// sequence numbers, GCK reliable serials) are then handed out in sending order, whatever order
    /// the scenario generated the traffic in.
    var build: (() -> [UInt8])? = nil
}

/// The bytes of a frame built later (a quoting ICMP error reads its original here).
final class LazyBytes {
    var bytes: [UInt8] = []
}

public struct SimInterface: Sendable {
    public var name: String
    public var linkType: SimLinkType
    public var description: String
    public init(name: String, linkType: SimLinkType, description: String) {
        self.name = name; self.linkType = linkType; self.description = description
    }
}

enum LinkFraming {
    static func frame(_ f: SimFrame, linkType: SimLinkType) -> [UInt8] {
        var w = ByteWriter()
        let etherType: UInt16 = f.family == .v4 ? 0x0800 : 0x86DD
        switch linkType {
        case .ethernet:
            w.append(f.destinationMAC); w.append(f.sourceMAC); w.u16(etherType)
        case .linuxSLL:
            w.u16(f.sllPacketType); w.u16(1); w.u16(6); w.append(f.sourceMAC); w.zeros(2); w.u16(etherType)
        }
        w.append(f.ipPacket)
        return w.bytes
    }
}

public enum CaptureFileFormat: String, Sendable, CaseIterable {
    case pcapng, pcap
}

/// An Interface Statistics Block: what the capturing machine says it dropped so far.
struct SimStatistics {
    var time: Int64
    var interface: Int
    var osDrop: UInt64
}

enum CaptureFileWriter {
    static func pcapng(interfaces: [SimInterface], frames: [SimFrame], comment: String,
                       statistics: [SimStatistics] = []) -> [UInt8] {
        var out = ByteWriter()
        // Section header block.
        block(&out, type: 0x0A0D_0D0A) { b in
            b.u32le(0x1A2B_3C4D); b.u16le(1); b.u16le(0)
            b.u32le(0xFFFF_FFFF); b.u32le(0xFFFF_FFFF)
            option(&b, 1, Array(comment.utf8))
            option(&b, 4, Array("peerscope simulate".utf8))
            b.u16le(0); b.u16le(0)
        }
        for iface in interfaces {
            block(&out, type: 1) { b in
                b.u16le(iface.linkType.rawValue); b.u16le(0); b.u32le(262_144)
                option(&b, 2, Array(iface.name.utf8))
                option(&b, 3, Array(iface.description.utf8))
                option(&b, 9, [6])
                b.u16le(0); b.u16le(0)
            }
        }
        var stats = statistics.sorted { $0.time < $1.time }[...]
        func statisticsBlock(_ s: SimStatistics) {
            let micros = UInt64(s.time / 1000)
            block(&out, type: 5) { b in
                b.u32le(UInt32(s.interface))
                b.u32le(UInt32(micros >> 32)); b.u32le(UInt32(micros & 0xFFFF_FFFF))
                var v = ByteWriter()
                v.u32le(UInt32(s.osDrop & 0xFFFF_FFFF)); v.u32le(UInt32(s.osDrop >> 32))
                option(&b, 7, v.bytes)   // isb_osdrop
                b.u16le(0); b.u16le(0)
            }
        }
        for f in frames {
            while let s = stats.first, s.time <= f.time { statisticsBlock(s); stats.removeFirst() }
            let data = LinkFraming.frame(f, linkType: interfaces[f.interface].linkType)
            let micros = UInt64(f.time / 1000)
            block(&out, type: 6) { b in
                b.u32le(UInt32(f.interface))
                b.u32le(UInt32(micros >> 32)); b.u32le(UInt32(micros & 0xFFFF_FFFF))
                b.u32le(UInt32(data.count)); b.u32le(UInt32(data.count))
                b.append(data); b.pad(to: 4)
            }
        }
        for s in stats { statisticsBlock(s) }
        return out.bytes
    }

    /// Classic pcap (microseconds); every frame is framed with the first interface's link type.
    static func pcap(interfaces: [SimInterface], frames: [SimFrame]) -> [UInt8] {
        let linkType = interfaces.first?.linkType ?? .ethernet
        var out = ByteWriter()
        out.u32le(0xA1B2_C3D4); out.u16le(2); out.u16le(4); out.u32le(0); out.u32le(0)
        out.u32le(262_144); out.u32le(UInt32(linkType.rawValue))
        for f in frames {
            let data = LinkFraming.frame(f, linkType: linkType)
            let micros = f.time / 1000
            out.u32le(UInt32(micros / 1_000_000)); out.u32le(UInt32(micros % 1_000_000))
            out.u32le(UInt32(data.count)); out.u32le(UInt32(data.count))
            out.append(data)
        }
        return out.bytes
    }

    private static func block(_ out: inout ByteWriter, type: UInt32, _ body: (inout ByteWriter) -> Void) {
        var b = ByteWriter()
        body(&b)
        b.pad(to: 4)
        let total = UInt32(12 + b.count)
        out.u32le(type); out.u32le(total); out.append(b.bytes); out.u32le(total)
    }

    private static func option(_ b: inout ByteWriter, _ code: UInt16, _ value: [UInt8]) {
        b.u16le(code); b.u16le(UInt16(value.count)); b.append(value); b.pad(to: 4)
    }
}
