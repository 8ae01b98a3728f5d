import PeerscopeCore
@testable import PeerscopePackets
import XCTest

/// Small frame builders: every test frame is assembled from these, field by field.
enum Build {
    static func addr(_ s: String) -> [UInt8] {
        guard let a = IPAddress(s) else { XCTFail("bad address \(s)"); return [] }
        switch a {
        case .v4(let v): return be32(v)
        case .v6(let hi, let lo, _): return be64(hi) + be64(lo)
        }
    }

    /// A parsed address (a test failure, and 0.0.0.0, when the text is bad).
    static func ip(_ s: String) -> IPAddress {
        guard let a = IPAddress(s) else { XCTFail("bad address \(s)"); return .v4(0) }
        return a
    }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: UInt32) -> [UInt8] { be32(v).reversed() }
    static func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(v & 0xFFFF_FFFF)) }

    static func ipv4(_ src: String, _ dst: String, proto: UInt8, _ payload: [UInt8], id: UInt16 = 0x1234,
                     more: Bool = false, fragOffset: Int = 0, totalLength: Int? = nil, ihl: Int = 5) -> [UInt8] {
        var h: [UInt8] = [UInt8(0x40 | ihl), 0]
        h += be16(UInt16(truncatingIfNeeded: totalLength ?? (ihl * 4 + payload.count)))
        h += be16(id)
        h += be16((more ? 0x2000 : 0) | UInt16(fragOffset / 8))
        h += [64, proto, 0, 0]
        h += addr(src) + addr(dst)
        while h.count < ihl * 4 { h.append(1) }  // NOP options
        return h + payload
    }

    static func ipv6(_ src: String, _ dst: String, next: UInt8, _ payload: [UInt8], payloadLength: Int? = nil) -> [UInt8] {
        var h: [UInt8] = [0x60, 0, 0, 0]
        h += be16(UInt16(truncatingIfNeeded: payloadLength ?? payload.count))
        h += [next, 64]
        h += addr(src) + addr(dst)
        return h + payload
    }

    static func udp(_ sp: UInt16, _ dp: UInt16, _ payload: [UInt8], length: Int? = nil) -> [UInt8] {
        be16(sp) + be16(dp) + be16(UInt16(truncatingIfNeeded: length ?? payload.count + 8)) + [0, 0] + payload
    }

    static let FIN: UInt8 = 0x01, SYN: UInt8 = 0x02, RST: UInt8 = 0x04, PSH: UInt8 = 0x08, ACK: UInt8 = 0x10

    static func tcp(_ sp: UInt16, _ dp: UInt16, seq: UInt32, ack: UInt32 = 0, flags: UInt8, _ payload: [UInt8] = [],
                    dataOffset: Int = 5) -> [UInt8] {
        var h = be16(sp) + be16(dp) + be32(seq) + be32(ack)
        h += [UInt8(dataOffset << 4), flags, 0xFF, 0xFF, 0, 0, 0, 0]
        while h.count < dataOffset * 4 { h.append(1) }
        return h + payload
    }

    static func ethernet(type: UInt16, vlans: [(tpid: UInt16, vid: UInt16)] = [], _ payload: [UInt8]) -> [UInt8] {
        var h: [UInt8] = [0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]
        for v in vlans { h += be16(v.tpid) + be16(v.vid) }
        return h + be16(type) + payload
    }

    static func eth4(_ ip: [UInt8]) -> [UInt8] { ethernet(type: 0x0800, ip) }
    static func eth6(_ ip: [UInt8]) -> [UInt8] { ethernet(type: 0x86DD, ip) }

    static func frame(_ bytes: [UInt8], link: UInt32 = LinkType.ethernet, number: UInt64 = 1, t: Nanos = 1_000_000_000,
                      iface: String? = nil, originalLength: Int? = nil) -> RawFrame {
        RawFrame(info: FrameInfo(input: 0, number: number, t: t, capturedLength: bytes.count,
                                 originalLength: originalLength ?? bytes.count, linkType: link, interfaceName: iface),
                 data: Bytes(bytes))
    }
}

/// Collects what a decoder emits.
final class Sink {
    var units: [TransportUnit] = []
    var diags: [Diagnostic] = []

    func feed(_ d: PacketDecoder, _ f: RawFrame) {
        d.decode(f, { self.units.append($0) }, { self.diags.append($0) })
    }

    func finish(_ d: PacketDecoder, at t: Nanos = 9_000_000_000_000) {
        d.finish(at: t, { self.units.append($0) }, { self.diags.append($0) })
    }

    var udp: [(FlowKey, Bytes)] {
        units.compactMap { if case .udp(_, let f, let p) = $0 { return (f, p) } else { return nil } }
    }

    var icmp: [ICMPErrorInfo] {
        units.compactMap { if case .icmpError(_, let i) = $0 { return i } else { return nil } }
    }

    func stream(_ dir: TCPDirection, id: UInt64? = nil) -> [UInt8] {
        var out: [UInt8] = []
        for u in units {
            if case .tcpData(_, let c, let d, let p) = u, d == dir, id == nil || c.id == id { out += p.array }
        }
        return out
    }

    var events: [(TCPEvent, TCPDirection, UInt64)] {
        units.compactMap { if case .tcpEvent(_, let c, let d, let e) = $0 { return (e, d, c.id) } else { return nil } }
    }

    var eventNames: [String] { events.map { "\($0.0.rawValue)/\($0.1.rawValue)" } }

    func diagIDs() -> [String] { diags.map(\.id) }
}

