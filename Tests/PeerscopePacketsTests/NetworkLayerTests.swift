import PeerscopeCore
@testable import PeerscopePackets
import XCTest

final class NetworkLayerTests: XCTestCase {
    func decodeAll(_ frames: [RawFrame], options: PacketOptions = .init()) -> (Sink, PacketDecoder) {
        let d = PacketDecoder(options: options)
        let s = Sink()
        for f in frames { s.feed(d, f) }
        return (s, d)
    }

    let datagram = Build.udp(40000, 53, pattern(100, seed: 11))  // 108 bytes

    func frag4(_ lo: Int, _ hi: Int, more: Bool, bytes: [UInt8]? = nil, id: UInt16 = 77) -> RawFrame {
        let chunk = bytes ?? Array(datagram[lo ..< hi])
        return Build.frame(Build.eth4(Build.ipv4("10.1.1.1", "10.1.1.2", proto: 17, chunk, id: id, more: more, fragOffset: lo)))
    }

    func testIPv4FragmentsInReverseOrder() {
        let (s, d) = decodeAll([frag4(96, 108, more: false), frag4(48, 96, more: true), frag4(0, 48, more: true)])
        XCTAssertEqual(s.udp.count, 1)
        XCTAssertEqual(s.udp.first?.1.array, pattern(100, seed: 11))
        XCTAssertEqual(s.udp.first?.0.dst.port, 53)
        XCTAssertEqual(s.diags.count, 0)
        XCTAssertEqual(d.pendingReassemblies, 0)
        XCTAssertEqual(d.counters.reassembled, 1)
    }

    func testIPv4OverlappingFragmentsFirstCopyWins() {
        var evil = Array(datagram[40 ..< 96])
        for i in 0 ..< 8 { evil[i] = 0xEE }  // bytes 40..<48 differ from the first copy
        let (s, _) = decodeAll([frag4(0, 48, more: true), frag4(40, 96, more: true, bytes: evil), frag4(96, 108, more: false)])
        XCTAssertEqual(s.udp.first?.1.array, pattern(100, seed: 11))
        XCTAssertEqual(s.diagIDs(), ["ipv4.frag.overlap_conflict"])
        // Same bytes overlapping: only an info note.
        let (s2, _) = decodeAll([frag4(0, 48, more: true), frag4(40, 96, more: true), frag4(96, 108, more: false)])
        XCTAssertEqual(s2.udp.first?.1.array, pattern(100, seed: 11))
        XCTAssertEqual(s2.diags.map(\.severity), [.info])
    }

    func testOversizedAndInconsistentFragments() {
        let big = Build.frame(Build.eth4(Build.ipv4("10.1.1.1", "10.1.1.2", proto: 17, [UInt8](repeating: 0, count: 16),
                                                    more: false, fragOffset: 65528)))
        let (s, d) = decodeAll([big])
        XCTAssertEqual(s.diagIDs(), ["ipv4.frag.oversized"])
        XCTAssertEqual(d.pendingReassemblies, 0)
        let (s2, _) = decodeAll([frag4(96, 108, more: false), frag4(48, 60, more: false)])
        XCTAssertTrue(s2.diagIDs().contains("ipv4.frag.inconsistent"))
        XCTAssertTrue(s2.udp.isEmpty)
    }

    func testFragmentTimeoutAndLimit() {
        var frames = [frag4(0, 48, more: true)]
        frames[0].info.t = 0
        let (s, d) = decodeAll(frames)
        d.advance(to: 31 * CaptureTime.second, { s.units.append($0) }, { s.diags.append($0) })
        XCTAssertEqual(s.diagIDs(), ["ipv4.frag.incomplete"])
        XCTAssertEqual(d.pendingReassemblies, 0)

        var opts = PacketOptions()
        opts.maxReassemblies = 2
        let (s2, d2) = decodeAll([frag4(0, 48, more: true, id: 1), frag4(0, 48, more: true, id: 2), frag4(0, 48, more: true, id: 3),
                                  frag4(48, 96, more: true, id: 3), frag4(96, 108, more: false, id: 3)], options: opts)
        XCTAssertEqual(s2.diagIDs(), ["ipv4.frag.limit"])
        XCTAssertEqual(s2.udp.count, 1)
        XCTAssertEqual(d2.pendingReassemblies, 1)
    }

    func frag6(_ lo: Int, _ hi: Int, more: Bool, iface: String? = "en0") -> RawFrame {
        let fh: [UInt8] = [17, 0] + Build.be16(UInt16(lo) | (more ? 1 : 0)) + Build.be32(0xABCD)
        let hbh: [UInt8] = [44, 0, 1, 4, 0, 0, 0, 0]  // hop-by-hop (PadN) in front of the fragment header
        return Build.frame(Build.eth6(Build.ipv6("fe80::1", "fe80::2", next: 0, hbh + fh + Array(datagram[lo ..< hi]))), iface: iface)
    }

    func testIPv6FragmentHeaderReassembles() {
        let (s, _) = decodeAll([frag6(56, 108, more: false), frag6(0, 56, more: true)])
        XCTAssertEqual(s.udp.count, 1)
        XCTAssertEqual(s.udp.first?.1.array, pattern(100, seed: 11))
        XCTAssertEqual(s.udp.first?.0.src.address.description, "fe80::1%en0")
        XCTAssertEqual(s.diags.count, 0)
    }

    func testIPv6ExtensionHeaders() {
        let u = Build.udp(1000, 2000, [5, 5])
        let dst: [UInt8] = [43, 0, 1, 4, 0, 0, 0, 0]
        let routing: [UInt8] = [51, 0, 0, 0, 0, 0, 0, 0]
        let ah: [UInt8] = [17, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]  // (1 + 2) * 4 = 12 bytes
        let (s, _) = decodeAll([Build.frame(Build.eth6(Build.ipv6("2001:db8::1", "2001:db8::2", next: 60, dst + routing + ah + u)))])
        XCTAssertEqual(s.udp.first?.1.array, [5, 5])
        XCTAssertEqual(s.udp.first?.0.dst.port, 2000)
        // No next header: nothing, quietly.
        let (n, _) = decodeAll([Build.frame(Build.eth6(Build.ipv6("2001:db8::1", "2001:db8::2", next: 59, [])))])
        XCTAssertTrue(n.units.isEmpty && n.diags.isEmpty)
        // An extension header longer than the packet.
        let (t, _) = decodeAll([Build.frame(Build.eth6(Build.ipv6("2001:db8::1", "2001:db8::2", next: 60, [17, 4, 0, 0, 0, 0, 0, 0])))])
        XCTAssertEqual(t.diagIDs(), ["ipv6.ext.truncated"])
        XCTAssertEqual(t.diags.first?.offset, 54)
    }

    func testIPv4HeaderChecks() {
        var ip = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1]))
        ip[0] = 0x44
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(ip))]).0.diagIDs(), ["ipv4.bad_ihl"])
        let long = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1]), totalLength: 200)
        let (s, _) = decodeAll([Build.frame(Build.eth4(long))])
        XCTAssertEqual(s.diagIDs(), ["ipv4.bad_total_length"])
        XCTAssertEqual(s.diags.first?.offset, 16)
        let short = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1]), totalLength: 10)
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(short))]).0.diagIDs(), ["ipv4.bad_total_length"])
        var v = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1]))
        v[0] = 0x65
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(v))]).0.diagIDs(), ["ipv4.bad_version"])
        // IPv4 options are skipped.
        let opt = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1, 2]), ihl: 6)
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(opt))]).0.udp.first?.1.array, [1, 2])
    }

    func testIPv4ChecksumWhenAskedFor() {
        // 45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7: the classic example header, checksum b861.
        var ip = [UInt8](Bytes(hex: "450000730000400040 11b861c0a80001c0a800c7")?.array ?? [])
        ip += Build.udp(1, 2, [UInt8](repeating: 0, count: 0x73 - 28))
        var opts = PacketOptions()
        opts.verifyIPv4Checksum = true
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(ip))], options: opts).0.diags.count, 0)
        ip[11] = 0x62
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(ip))], options: opts).0.diagIDs(), ["ipv4.bad_checksum"])
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(ip))]).0.diags.count, 0, "off by default")
    }

    func testUDPLengthChecks() {
        let bad = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1, 2, 3], length: 40))
        let (s, _) = decodeAll([Build.frame(Build.eth4(bad))])
        XCTAssertEqual(s.diagIDs(), ["udp.bad_length"])
        XCTAssertTrue(s.units.isEmpty)
        // A UDP length shorter than the IP payload: the UDP length wins.
        let short = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, [1, 2, 3], length: 10))
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(short))]).0.udp.first?.1.array, [1, 2])
        // Cut by the snap length: what is there, flagged.
        let full = Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, pattern(50, seed: 1))))
        let cut = Array(full.prefix(60))
        let (c, _) = decodeAll([Build.frame(cut, originalLength: full.count)])
        XCTAssertEqual(c.udp.first?.1.array, Array(pattern(50, seed: 1).prefix(60 - 42)))
        XCTAssertEqual(c.diagIDs(), ["udp.truncated"])
    }

    func testTCPBadOffset() {
        let t = Build.tcp(1, 2, seq: 1, flags: Build.ACK, [1, 2, 3], dataOffset: 5)
        var bad = t
        bad[12] = 0x40
        XCTAssertEqual(decodeAll([Build.frame(Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 6, bad)))]).0.diagIDs(), ["tcp.bad_offset"])
        bad[12] = 0xF0
        let (s, _) = decodeAll([Build.frame(Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 6, bad)))])
        XCTAssertEqual(s.diagIDs(), ["tcp.bad_offset"])
        XCTAssertEqual(s.diags.first?.offset, 14 + 20 + 12)
    }

    func testICMPPortUnreachableQuotesTheUDPFlow() {
        let original = Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(5000, 53, pattern(30, seed: 2)))
        let icmp: [UInt8] = [3, 3, 0, 0, 0, 0, 0, 0] + Array(original.prefix(28))
        let (s, _) = decodeAll([Build.frame(Build.eth4(Build.ipv4("10.0.0.2", "10.0.0.1", proto: 1, icmp)))])
        XCTAssertEqual(s.icmp.count, 1)
        let i = s.icmp.first
        XCTAssertEqual(i?.quoted, FlowKey(.udp, Endpoint(.v4(0x0A00_0001), 5000), Endpoint(.v4(0x0A00_0002), 53)))
        XCTAssertEqual(i?.reporter, .v4(0x0A00_0002))
        XCTAssertEqual(i?.summary, "port unreachable")
        // A quote too short to name the flow still reports the error.
        let short: [UInt8] = [3, 1, 0, 0, 0, 0, 0, 0] + Array(original.prefix(20))
        let (s2, _) = decodeAll([Build.frame(Build.eth4(Build.ipv4("10.0.0.9", "10.0.0.1", proto: 1, short)))])
        XCTAssertEqual(s2.icmp.first?.quoted, nil)
        XCTAssertEqual(s2.icmp.first?.code, 1)
        XCTAssertEqual(s2.diagIDs(), ["icmp.quote.truncated"])
        // Echo requests are not errors.
        let (e, _) = decodeAll([Build.frame(Build.eth4(Build.ipv4("10.0.0.2", "10.0.0.1", proto: 1, [8, 0, 0, 0, 0, 1, 0, 1])))])
        XCTAssertTrue(e.units.isEmpty)
    }

    func testICMPv6UnreachableQuotesTheFlowWithScope() {
        let original = Build.ipv6("fe80::1", "fe80::2", next: 6, Build.tcp(60000, 7000, seq: 1, flags: Build.SYN))
        let icmp: [UInt8] = [1, 4, 0, 0, 0, 0, 0, 0] + original
        let (s, _) = decodeAll([Build.frame(Build.eth6(Build.ipv6("fe80::2", "fe80::1", next: 58, icmp)), iface: "awdl0")])
        let i = s.icmp.first
        XCTAssertEqual(i?.isV6, true)
        XCTAssertEqual(i?.quoted, FlowKey(.tcp, Endpoint(Build.ip("fe80::1%awdl0"), 60000), Endpoint(Build.ip("fe80::2%awdl0"), 7000)))
        XCTAssertEqual(i?.summary, "port unreachable")
        // Packet too big, quoting UDP behind a destination options header.
        let inner = Build.ipv6("2001:db8::1", "2001:db8::2", next: 60, [17, 0, 1, 4, 0, 0, 0, 0] + Build.udp(1, 2, [0]))
        let ptb: [UInt8] = [2, 0, 0, 0, 0, 0, 5, 0] + inner
        let (p, _) = decodeAll([Build.frame(Build.eth6(Build.ipv6("2001:db8::ff", "2001:db8::1", next: 58, ptb)))])
        XCTAssertEqual(p.icmp.first?.quoted?.dst.port, 2)
        XCTAssertEqual(p.icmp.first?.summary, "packet too big")
    }

    /// Every prefix of a valid frame decodes without trapping; each yields diagnostics, and any unit
    /// carries only bytes the full frame had at that place.
    func testEveryPrefixOfUDPAndTCPFrames() {
        let payload = pattern(40, seed: 9)
        let udpFrame = Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, payload)))
        let tcpFrame = Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 6, Build.tcp(1, 2, seq: 7, flags: Build.ACK, payload, dataOffset: 6)))
        let udp6Frame = Build.eth6(Build.ipv6("fe80::1", "fe80::2", next: 17, Build.udp(1, 2, payload)))
        for full in [udpFrame, tcpFrame, udp6Frame] {
            for n in 0 ..< full.count {
                for snappedFrame in [true, false] {
                    let f = Build.frame(Array(full.prefix(n)), originalLength: snappedFrame ? full.count : n)
                    let d = PacketDecoder()
                    let s = Sink()
                    s.feed(d, f)
                    s.finish(d)
                    XCTAssertFalse(s.diags.isEmpty, "prefix \(n) of \(full.count), snapped \(snappedFrame): no diagnostic")
                    for u in s.units {
                        switch u {
                        case .udp(_, _, let p), .tcpData(_, _, _, let p):
                            XCTAssertTrue(snappedFrame, "prefix \(n): a unit from a frame that is not snapped")
                            XCTAssertEqual(p.array, Array(payload.prefix(p.count)), "prefix \(n)")
                            XCTAssertLessThan(p.count, payload.count)
                        case .tcpEvent(_, _, _, let e):
                            XCTAssertTrue(e == .gap, "prefix \(n): \(e)")
                        case .icmpError:
                            XCTFail("icmp from a UDP/TCP frame")
                        }
                    }
                }
            }
            // The full frame: no diagnostics, a whole payload.
            let s = Sink()
            s.feed(PacketDecoder(), Build.frame(full))
            XCTAssertTrue(s.diags.isEmpty)
            XCTAssertEqual(s.units.count, 1)
        }
    }
}

final class DiagnosticCapTests: XCTestCase {
    /// Past the collector's per-id limit diagnostics are only counted (no summary diagnostic with an
    /// id of its own): the totals stay true.
    func testDiagnosticsPerIDAreCappedAndCounted() {
        var opts = PacketOptions()
        opts.maxDiagnosticsPerID = 3
        let d = PacketDecoder(options: opts)
        let s = Sink()
        for i in 0 ..< 10 { s.feed(d, Build.frame([1, 2, 3], number: UInt64(i + 1))) }
        s.feed(d, Build.frame(Build.eth4([0x45]), number: 11))
        XCTAssertEqual(s.diagIDs(), ["eth.truncated", "eth.truncated", "eth.truncated", "ipv4.truncated"])
        s.finish(d)
        XCTAssertEqual(s.diagIDs().count, 4, "nothing more at the end")
        XCTAssertEqual(d.diagnostics.totals, ["eth.truncated": 10, "ipv4.truncated": 1])
        XCTAssertEqual(d.counters.diagnostics, 11)
        XCTAssertEqual(d.counters.diagnosticsSuppressed, 7)
    }

    /// A shared collector (the engine's) applies its own limit across the stages reporting into it.
    func testASharedCollectorAppliesItsLimit() {
        let shared = DiagnosticCollector(keptPerID: 2)
        shared.record(Diagnostic(id: "eth.truncated", message: "from elsewhere"))
        let d = PacketDecoder(options: PacketOptions(), diagnostics: shared)
        let s = Sink()
        for i in 0 ..< 5 { s.feed(d, Build.frame([1, 2, 3], number: UInt64(i + 1))) }
        XCTAssertEqual(s.diagIDs(), ["eth.truncated"], "one kept elsewhere, one here")
        XCTAssertEqual(shared.totals["eth.truncated"], 6)
        XCTAssertEqual(shared.count, 6)
    }
}
