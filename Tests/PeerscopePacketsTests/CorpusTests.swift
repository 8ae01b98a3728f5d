import Foundation
import PeerscopeCore
@testable import PeerscopePackets
import XCTest

/// Runs the decoder over the real captures in `../shared/corpus` (skipped when absent) and checks
/// facts tshark reports for them (see the corpus MANIFEST).
final class CorpusTests: XCTestCase {
    static var corpus: URL? {
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"] {
            return URL(fileURLWithPath: env).appendingPathComponent("corpus")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }

    func frames(_ name: String) throws -> [RawFrame] {
        guard let dir = Self.corpus, let data = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path) else {
            throw XCTSkip("corpus file \(name) not available")
        }
        guard let frames = MiniCaptureReader.read([UInt8](data)) else {
            XCTFail("\(name): unreadable")
            return []
        }
        return frames
    }

    func decode(_ name: String) throws -> (Sink, PacketDecoder) {
        let d = PacketDecoder()
        let s = Sink()
        var last: Nanos = 0
        for f in try frames(name) {
            s.feed(d, f)
            last = f.info.t
        }
        s.finish(d, at: last)
        return (s, d)
    }

    func testPKTAPInnerEthernetDNS() throws {
        let (s, _) = try decode("tcpdump-pktap-macos.pcap")
        XCTAssertEqual(s.udp.map { $0.0.description }, ["udp 10.32.4.27:63538 > 10.32.100.15:53"])
        XCTAssertEqual(s.udp.first?.1.count, 60 - 8 - 20)
        XCTAssertTrue(s.diags.isEmpty, "\(s.diags.map(\.line))")
    }

    func testRaw80211Monitor() throws {
        let (s, d) = try decode("zeek-wlanmon-ipad-mdns.pcap")
        XCTAssertEqual(s.udp.count, 3)
        XCTAssertEqual(s.udp.first?.0.description, "udp 172.17.156.76:61738 > 208.67.220.220:53")
        XCTAssertEqual(s.udp.last?.0.src.address.description, "fe80::a667:6ff:fef7:ec54%wlan0")
        XCTAssertEqual(s.udp.last?.0.dst.port, 5353)
        XCTAssertEqual(d.counters.frames, 3)
    }

    func testICMPv6PortUnreachable() throws {
        let (s, _) = try decode("ndpi-doq-icmpv6-unreach.pcapng")
        XCTAssertEqual(s.icmp.count, 6)
        for i in s.icmp {
            XCTAssertTrue(i.isV6 && i.type == 1 && i.code == 4)
            XCTAssertEqual(i.quoted?.description, "udp [::1]:784 > [::1]:47826")
        }
    }

    func testICMPHostAndPortUnreachableQuotingTCPAndUDP() throws {
        let (s, d) = try decode("ndpi-gnutella-hostunreach.pcap")
        let host = s.icmp.filter { $0.type == 3 && $0.code == 1 }
        let port = s.icmp.filter { $0.type == 3 && $0.code == 3 }
        XCTAssertEqual(host.count, 4)
        XCTAssertEqual(port.count, 4)
        XCTAssertEqual(Set(host.compactMap { $0.quoted?.description }),
                       ["tcp 10.0.2.15:50231 > 76.68.138.207:45079", "tcp 10.0.2.15:50275 > 122.117.100.78:9010"])
        for p in port {
            XCTAssertEqual(p.quoted?.proto, .udp)
            XCTAssertEqual(p.quoted?.src.port, 28681)
            XCTAssertEqual(p.quoted?.dst.address, p.reporter)
        }
        // Its 184 retransmissions (tshark) are all SYNs: they open no second connection.
        XCTAssertEqual(d.counters.tcpRetransmissions, 0)
        XCTAssertTrue(s.events.contains { $0.0 == .reset || $0.0 == .refused })
        let synIDs = s.events.filter { $0.0 == .syn }.map(\.2)
        XCTAssertEqual(synIDs.count, Set(synIDs).count, "one .syn per connection")
        XCTAssertGreaterThan(synIDs.count, 100)
    }

    func testICMPAdminProhibited() throws {
        let (s, _) = try decode("ndpi-zoom-p2p-adminprohib.pcapng")
        let prohibited = s.icmp.filter { $0.type == 3 && $0.code == 10 }
        XCTAssertEqual(prohibited.count, 53)
        XCTAssertTrue(prohibited.allSatisfy { $0.quoted?.dst.port == 3478 && $0.quoted?.src.address == .v4(0xC0A8_0C9C) })
    }

    func testLinuxCookedMDNS() throws {
        let (s, _) = try decode("nfstream-mdns-sll.pcap")
        XCTAssertEqual(s.udp.filter { $0.0.src.port == 5353 || $0.0.dst.port == 5353 }.count, 292)
    }

    func testNullLoopbackSMB() throws {
        let (s, d) = try decode("sv-macos-lo0-null-smb.pcap")
        XCTAssertEqual(s.udp.filter { $0.0.src.port == 5353 || $0.0.dst.port == 5353 }.count, 16)
        XCTAssertEqual(d.counters.connectionsOpened, 5)
        XCTAssertEqual(d.activeConnections, 0, "finish forgets every flow")
    }

    /// Total TCP bytes delivered equal tshark's sum of `tcp.len` over segments that are not
    /// retransmissions (`tcp.len>0 && !tcp.analysis.retransmission`): each byte once, none lost.
    func testTCPByteTotalsMatchTshark() throws {
        for (name, total) in [("sv-macos-lo0-null-smb.pcap", 717_465), ("ndpi-whatsapp-login-call.pcap", 56966),
                              ("sanders-http-espn-fail.pcapng", 318_310)] {
            let (s, _) = try decode(name)
            XCTAssertEqual(s.stream(.toServer).count + s.stream(.toClient).count, total, name)
            XCTAssertFalse(s.events.contains { $0.0 == .gap }, name)
        }
    }

    func testHandshakeOverSLLNanosecond() throws {
        let (s, _) = try decode("tcpdump-tcp-handshake-nano-sll.pcap")
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient"])
        guard case .tcpEvent(_, let c, _, _)? = s.units.first else { return XCTFail("no event") }
        XCTAssertEqual(c.description, "tcp#1 131.155.215.69:46656 > 137.116.81.94:80")
    }

    func testHTTPStreamEndedByRST() throws {
        let (s, _) = try decode("ppp-http-stream-rst.pcap")
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient", "fin/toClient", "reset/toServer", "closed/toServer"],
                       "\(s.diags.map(\.line))")
        XCTAssertEqual(s.stream(.toServer).count, 1036)
        XCTAssertEqual(s.stream(.toClient).count, 600)
        XCTAssertEqual(Array(s.stream(.toServer).prefix(4)), Array("GET ".utf8))
    }

    func testRetransmissionsDeliveredOnce() throws {
        let (s, d) = try decode("sanders-tcp-retransmissions.pcapng")
        XCTAssertEqual(d.counters.tcpRetransmissions, 5)
        let bytes = s.stream(.toServer) + s.stream(.toClient)
        XCTAssertGreaterThan(bytes.count, 0)
        XCTAssertLessThan(bytes.count, 1500)
    }

    func testSnapLengthCutFramesAreFlagged() throws {
        let (s, d) = try decode("zeek-truncated-snap68.pcap")
        XCTAssertEqual(d.counters.connectionsOpened, 1)
        XCTAssertTrue(s.diagIDs().contains("tcp.truncated"))
        XCTAssertTrue(s.events.contains { $0.0 == .gap })
        XCTAssertTrue(s.diags.allSatisfy { $0.severity <= .warning })
    }

    /// Every capture decodes to the end without trapping, and TCP bytes per direction never exceed
    /// the sequence space they cover.
    func testWholeCorpusDecodes() throws {
        guard let dir = Self.corpus, let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
            throw XCTSkip("corpus not available")
        }
        var decoded = 0
        for name in names.sorted() where name.hasSuffix(".pcap") || name.hasSuffix(".pcapng") {
            let (s, d) = try decode(name)
            XCTAssertEqual(d.bufferedBytes, 0, name)
            if ProcessInfo.processInfo.environment["PEERSCOPE_PRINT_DIAGS"] != nil {
                var ids: [String: Int] = [:]
                for x in s.diags { ids[x.id, default: 0] += 1 }
                var ev: [String: Int] = [:]
                for x in s.events { ev[x.0.rawValue, default: 0] += 1 }
                print("CORPUS \(name): units \(s.units.count) udp \(s.udp.count) icmp \(s.icmp.count) conns \(d.counters.connectionsOpened) events \(ev.sorted { $0.key < $1.key }) diags \(ids.sorted { $0.key < $1.key }) counters nonIP \(d.counters.nonIP) other \(d.counters.otherIP) retrans \(d.counters.tcpRetransmissions) ignored \(d.counters.tcpIgnored)")
            }
            XCTAssertFalse(s.diags.contains { $0.id == "link.unsupported" }, name)
            decoded += 1
        }
        XCTAssertGreaterThan(decoded, 20)
    }
}

/// Just enough pcap/pcapng reading for these tests (the real reader lives in PeerscopeCapture).
/// pcap frames get the interface name `wlan0`/`eth0`-like stand-in "wlan0" so scopes are visible.
enum MiniCaptureReader {
    static func read(_ a: [UInt8]) -> [RawFrame]? {
        let b = Bytes(a)
        guard let magic = b.u32le(0) else { return nil }
        switch magic {
        case 0xA1B2_C3D4, 0xA1B2_3C4D: return pcap(b, le: true, nanos: magic == 0xA1B2_3C4D)
        case 0xD4C3_B2A1, 0x4D3C_B2A1: return pcap(b, le: false, nanos: magic == 0x4D3C_B2A1)
        case 0x0A0D_0D0A: return pcapng(b)
        default: return nil
        }
    }

    static func pcap(_ b: Bytes, le: Bool, nanos: Bool) -> [RawFrame]? {
        func u32(_ o: Int) -> UInt32? { le ? b.u32le(o) : b.u32be(o) }
        guard let lt = u32(20) else { return nil }
        var out: [RawFrame] = []
        var o = 24
        while let sec = u32(o), let frac = u32(o + 4), let incl = u32(o + 8), let orig = u32(o + 12),
              let data = b.slice(o + 16, Int(incl)) {
            let t = Nanos(sec) * CaptureTime.second + Nanos(frac) * (nanos ? 1 : 1000)
            out.append(RawFrame(info: FrameInfo(input: 0, number: UInt64(out.count + 1), t: t, capturedLength: Int(incl),
                                                originalLength: Int(orig), linkType: lt & 0xFFFF, interfaceName: "wlan0"),
                                data: Bytes(data.array)))
            o += 16 + Int(incl)
        }
        return out
    }

    static func pcapng(_ b: Bytes) -> [RawFrame]? {
        guard b.u32le(8) == 0x1A2B_3C4D || b.u32be(8) == 0x1A2B_3C4D else { return nil }
        let le = b.u32le(8) == 0x1A2B_3C4D
        func u32(_ o: Int) -> UInt32? { le ? b.u32le(o) : b.u32be(o) }
        func u16(_ o: Int) -> UInt16? { le ? b.u16le(o) : b.u16be(o) }
        var links: [UInt32] = []
        var out: [RawFrame] = []
        var o = 0
        while let type = u32(o), let len32 = u32(o + 4), len32 >= 12, o + Int(len32) <= b.count {
            let len = Int(len32)
            if type == 1, let lt = u16(o + 8) { links.append(UInt32(lt)) }
            if type == 6, let ifc = u32(o + 8), let hi = u32(o + 12), let lo = u32(o + 16), let cap = u32(o + 20),
               let orig = u32(o + 24), let data = b.slice(o + 28, Int(cap)), Int(ifc) < links.count {
                let raw = UInt64(hi) << 32 | UInt64(lo)
                let ts = raw > 1 << 53 ? Nanos(truncatingIfNeeded: raw) : Nanos(raw) * 1000  // ns or µs resolution
                out.append(RawFrame(info: FrameInfo(input: 0, number: UInt64(out.count + 1), t: ts, capturedLength: Int(cap),
                                                    originalLength: Int(orig), linkType: links[Int(ifc)], interfaceName: "if\(ifc)"),
                                    data: Bytes(data.array)))
            }
            o += len
        }
        return out
    }
}
