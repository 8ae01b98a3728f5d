import PeerscopeCore
@testable import PeerscopePackets
import XCTest

final class LinkLayerTests: XCTestCase {
    let udp4 = Build.ipv4("192.168.1.10", "224.0.0.251", proto: 17, Build.udp(5353, 5353, [1, 2, 3, 4]))
    let udp6 = Build.ipv6("fe80::1", "ff02::fb", next: 17, Build.udp(5353, 5353, [9, 8, 7]))
    let flow4 = FlowKey(.udp, Endpoint(.v4(0xC0A8_010A), 5353), Endpoint(.v4(0xE000_00FB), 5353))

    func decode(_ bytes: [UInt8], link: UInt32, iface: String? = nil) -> Sink {
        let d = PacketDecoder()
        let s = Sink()
        s.feed(d, Build.frame(bytes, link: link, iface: iface))
        return s
    }

    func assertFlow4(_ s: Sink, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(s.udp.count, 1, what, file: file, line: line)
        XCTAssertEqual(s.udp.first?.0, flow4, what, file: file, line: line)
        XCTAssertEqual(s.udp.first?.1.array, [1, 2, 3, 4], what, file: file, line: line)
        XCTAssertEqual(s.diags.count, 0, "\(what): \(s.diags.map(\.line))", file: file, line: line)
    }

    func v6Source(_ s: Sink) -> IPAddress? { s.udp.first?.0.src.address }

    func testEthernetWithStackedVLANs() {
        assertFlow4(decode(Build.eth4(udp4), link: LinkType.ethernet), "plain")
        assertFlow4(decode(Build.ethernet(type: 0x0800, vlans: [(0x8100, 42)], udp4), link: LinkType.ethernet), "802.1Q")
        assertFlow4(decode(Build.ethernet(type: 0x0800, vlans: [(0x88A8, 7), (0x8100, 42)], udp4), link: LinkType.ethernet), "802.1ad")
        // Ethernet padding after a short IP packet is not payload.
        assertFlow4(decode(Build.eth4(udp4) + [0, 0, 0, 0, 0, 0], link: LinkType.ethernet), "padded")
        // ARP is counted, not an error.
        let arp = decode(Build.ethernet(type: 0x0806, [UInt8](repeating: 0, count: 28)), link: LinkType.ethernet)
        XCTAssertTrue(arp.units.isEmpty && arp.diags.isEmpty)
    }

    func testLinuxCookedV1AndV2() {
        let sll: [UInt8] = [0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + Build.be16(0x0800)
        assertFlow4(decode(sll + udp4, link: LinkType.linuxSLL), "SLL")
        let sll2: [UInt8] = Build.be16(0x0800) + [0, 0] + Build.be32(3) + [0, 1, 0, 6] + [2, 0, 0, 0, 0, 1, 0, 0]
        XCTAssertEqual(sll2.count, 20)
        assertFlow4(decode(sll2 + udp4, link: LinkType.linuxSLL2), "SLL2")
        let s = decode(Build.be16(0x86DD) + [0, 0] + Build.be32(3) + [0, 1, 0, 6] + [2, 0, 0, 0, 0, 1, 0, 0] + udp6,
                       link: LinkType.linuxSLL2, iface: "any")
        XCTAssertEqual(v6Source(s), IPAddress("fe80::1%any"))
    }

    func testNullBothByteOrdersAndLoop() {
        assertFlow4(decode(Build.le32(2) + udp4, link: LinkType.null), "NULL LE")
        assertFlow4(decode(Build.be32(2) + udp4, link: LinkType.null), "NULL BE")
        for family: UInt32 in [24, 28, 30] {
            XCTAssertEqual(decode(Build.le32(family) + udp6, link: LinkType.null).udp.count, 1, "AF \(family) LE")
            XCTAssertEqual(decode(Build.be32(family) + udp6, link: LinkType.null).udp.count, 1, "AF \(family) BE")
        }
        assertFlow4(decode(Build.be32(2) + udp4, link: LinkType.loop), "LOOP")
        // LOOP is always network order: a little-endian family is not IPv4.
        XCTAssertTrue(decode(Build.le32(2) + udp4, link: LinkType.loop).udp.isEmpty)
    }

    func testRawIP() {
        for lt in [LinkType.raw, LinkType.raw12, LinkType.raw14, LinkType.ipv4] {
            assertFlow4(decode(udp4, link: lt), "raw \(lt)")
        }
        for lt in [LinkType.raw, LinkType.ipv6] {
            let s = decode(udp6, link: lt, iface: "utun0")
            XCTAssertEqual(s.udp.first?.0, FlowKey(.udp, Endpoint(Build.ip("fe80::1%utun0"), 5353),
                                                   Endpoint(Build.ip("ff02::fb"), 5353)), "raw \(lt)")
        }
    }

    func pktapHeader(dlt: UInt32, name: String) -> [UInt8] {
        var h = Build.le32(108) + Build.le32(1) + Build.le32(dlt)
        var n = Array(name.utf8)
        n += [UInt8](repeating: 0, count: 24 - n.count)
        h += n
        h += [UInt8](repeating: 0, count: 108 - h.count)
        return h
    }

    func testPKTAPUsesItsInterfaceNameAsScope() {
        assertFlow4(decode(pktapHeader(dlt: 1, name: "en0") + Build.eth4(udp4), link: LinkType.pktap, iface: "pktap0"), "PKTAP")
        let d = PacketDecoder()
        let s = Sink()
        s.feed(d, Build.frame(pktapHeader(dlt: 1, name: "awdl0") + Build.eth6(udp6), link: LinkType.pktap, iface: "pktap0"))
        s.feed(d, Build.frame(pktapHeader(dlt: 1, name: "en0") + Build.eth6(udp6), link: LinkType.pktap, iface: "pktap0"))
        s.feed(d, Build.frame(pktapHeader(dlt: 1, name: "awdl0") + Build.eth6(udp6), link: LinkType.pktap, iface: "pktap0"))
        XCTAssertEqual(s.udp.map { $0.0.src.address.description }, ["fe80::1%awdl0", "fe80::1%en0", "fe80::1%awdl0"])
        XCTAssertNotEqual(s.udp[0].0, s.udp[1].0)
        // Inner raw IP (utun) too.
        XCTAssertEqual(decode(pktapHeader(dlt: 12, name: "utun2") + udp6, link: LinkType.pktap).udp.first?.0.src.address,
                       IPAddress("fe80::1%utun2"))
        // A header length past the frame is a diagnostic.
        var bad = pktapHeader(dlt: 1, name: "en0")
        bad[0] = 0xFF
        bad[1] = 0x01
        let b = decode(bad, link: LinkType.pktap)
        XCTAssertTrue(b.units.isEmpty)
        XCTAssertFalse(b.diags.isEmpty)
    }

    func wlan(_ fc0: UInt8, _ fc1: UInt8, qos: Bool = false) -> [UInt8] {
        var h: [UInt8] = [fc0, fc1, 0, 0] + [UInt8](repeating: 0xAA, count: 18) + [0x10, 0]
        if fc1 & 3 == 3 { h += [UInt8](repeating: 0xBB, count: 6) }
        if qos { h += [0, 0] }
        return h + [0xAA, 0xAA, 0x03, 0, 0, 0]
    }

    func testIEEE80211DataWithLLCSNAP() {
        assertFlow4(decode(wlan(0x08, 0x01) + Build.be16(0x0800) + udp4, link: LinkType.ieee80211), "data to-DS")
        assertFlow4(decode(wlan(0x88, 0x02, qos: true) + Build.be16(0x0800) + udp4, link: LinkType.ieee80211), "QoS data")
        assertFlow4(decode(wlan(0x08, 0x03) + Build.be16(0x0800) + udp4, link: LinkType.ieee80211), "WDS 4 addresses")
        // Protected frames are counted, not decoded.
        let d = PacketDecoder()
        let s = Sink()
        s.feed(d, Build.frame(wlan(0x08, 0x41) + Build.be16(0x0800) + udp4, link: LinkType.ieee80211))
        XCTAssertTrue(s.units.isEmpty)
        XCTAssertEqual(d.counters.encrypted80211, 1)
        // Radiotap with the FCS flag: the 4 trailing bytes are dropped.
        let rt: [UInt8] = [0, 0, 12, 0] + Build.le32(0x2) + [0x10, 0, 0, 0]
        let frame = rt + wlan(0x08, 0x02) + Build.be16(0x0800) + udp4 + [0xDE, 0xAD, 0xBE, 0xEF]
        assertFlow4(decode(frame, link: LinkType.radiotap), "radiotap")
    }

    func testPPP() {
        assertFlow4(decode([0xFF, 0x03, 0x00, 0x21] + udp4, link: LinkType.ppp), "PPP HDLC framing")
        assertFlow4(decode([0x00, 0x21] + udp4, link: LinkType.ppp), "PPP")
        XCTAssertEqual(decode([0xFF, 0x03, 0x00, 0x57] + udp6, link: LinkType.pppHDLC).udp.count, 1)
    }

    func testLinkLocalScopeFollowsTheInterface() {
        let d = PacketDecoder()
        let s = Sink()
        s.feed(d, Build.frame(Build.eth6(udp6), iface: "awdl0"))
        s.feed(d, Build.frame(Build.eth6(udp6), iface: "en0"))
        let g = Build.ipv6("2001:db8::1", "2001:db8::2", next: 17, Build.udp(1, 2, []))
        s.feed(d, Build.frame(Build.eth6(g), iface: "en0"))
        XCTAssertEqual(s.udp.map { $0.0.src.address.description }, ["fe80::1%awdl0", "fe80::1%en0", "2001:db8::1"])
        XCTAssertEqual(s.udp[0].0.dst.address.description, "ff02::fb", "multicast keeps no scope")
    }

    func testUnknownLinkTypeReportedOncePerType() {
        let d = PacketDecoder()
        let s = Sink()
        for i in 0 ..< 50 { s.feed(d, Build.frame([1, 2, 3], link: 147, number: UInt64(i + 1))) }
        for i in 0 ..< 5 { s.feed(d, Build.frame([1, 2, 3], link: 148, number: UInt64(i + 51))) }
        XCTAssertEqual(s.diagIDs(), ["link.unsupported", "link.unsupported"])
        XCTAssertEqual(s.diags.first?.evidence, .frame(input: 0, frame: 1))
        XCTAssertEqual(d.counters.unsupportedLinkFrames, [147: 50, 148: 5])
        XCTAssertTrue(s.units.isEmpty)
    }
}

final class PPPoETests: XCTestCase {
    func testPPPoESessionBehindVLANs() {
        let ip = Build.ipv4("10.3.65.35", "185.8.212.46", proto: 17, Build.udp(1, 2, [3]))
        let pppoe: [UInt8] = [0x11, 0x00] + Build.be16(0x0036) + Build.be16(UInt16(ip.count + 2)) + Build.be16(0x0021) + ip
        let s = Sink()
        s.feed(PacketDecoder(), Build.frame(Build.ethernet(type: 0x8864, vlans: [(0x8100, 1), (0x8100, 2)], pppoe)))
        XCTAssertEqual(s.udp.first?.0.description, "udp 10.3.65.35:1 > 185.8.212.46:2")
    }
}
