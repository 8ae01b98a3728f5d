import PeerscopeCore
@testable import PeerscopePackets
import XCTest
import PeerscopeSimulator

/// Seeded mutation fuzzing: hostile bytes at every layer must never trap or hang, and the decoder's
/// bookkeeping stays consistent.
final class FuzzTests: XCTestCase {
    func testMutatedFramesNeverTrap() {
        var rng = SimRandom(seed: 7)
        let conv = Conversation()
        let seeds: [[UInt8]] = [
            conv.syn, conv.synAck, conv.data(true, at: 0, pattern(30, seed: 1)), conv.data(false, at: 5, pattern(9, seed: 2)),
            conv.fin(true, at: 30), conv.rst(false, at: 0),
            Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(1, 2, pattern(20, seed: 3)))),
            Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Array(Build.udp(1, 2, pattern(20, seed: 3)).prefix(16)), more: true)),
            Build.eth4(Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, pattern(12, seed: 4), fragOffset: 16)),
            Build.eth6(Build.ipv6("fe80::1", "fe80::2", next: 0, [44, 0, 1, 4, 0, 0, 0, 0] + [17, 0, 0, 1, 0, 0, 0, 9] + pattern(16, seed: 5))),
            Build.eth4(Build.ipv4("10.0.0.2", "10.0.0.1", proto: 1, [3, 3, 0, 0, 0, 0, 0, 0] +
                                  Build.ipv4("10.0.0.1", "10.0.0.2", proto: 17, Build.udp(5, 6, [])))),
            Build.eth6(Build.ipv6("fe80::2", "fe80::1", next: 58, [1, 4, 0, 0, 0, 0, 0, 0] +
                                  Build.ipv6("fe80::1", "fe80::2", next: 6, Build.tcp(1, 2, seq: 1, flags: Build.SYN)))),
        ]
        let links: [UInt32] = [LinkType.ethernet, LinkType.null, LinkType.loop, LinkType.raw, LinkType.linuxSLL, LinkType.linuxSLL2,
                               LinkType.pktap, LinkType.ieee80211, LinkType.radiotap, LinkType.ppp, LinkType.ipv6]
        var opts = PacketOptions()
        opts.tcpBufferLimit = 256
        opts.maxReassemblies = 8
        opts.maxConnections = 16
        let d = PacketDecoder(options: opts)
        var units = 0
        var emptyData = 0
        for i in 0 ..< 10_000 {
            var f = seeds[Int(rng.next() % UInt64(seeds.count))]
            let flips = Int(rng.next() % 6)
            for _ in 0 ..< flips where !f.isEmpty {
                let at = Int(rng.next() % UInt64(f.count))
                f[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 4 == 0 { f = Array(f.prefix(Int(rng.next() % UInt64(f.count + 1)))) }
            let link = rng.next() % 5 == 0 ? links[Int(rng.next() % UInt64(links.count))] : LinkType.ethernet
            let snapped = rng.next() % 3 == 0
            let frame = Build.frame(f, link: link, number: UInt64(i + 1), t: Nanos(i) * 50_000_000,
                                    iface: "en0", originalLength: snapped ? f.count + 40 : f.count)
            d.decode(frame, { u in
                units += 1
                if case .tcpData(_, _, _, let p) = u, p.isEmpty { emptyData += 1 }
            }, { _ in })
            if d.bufferedBytes < 0 || d.activeConnections > 16 || d.pendingReassemblies > 8 {
                return XCTFail("frame \(i): buffered \(d.bufferedBytes), connections \(d.activeConnections), reassemblies \(d.pendingReassemblies)")
            }
        }
        XCTAssertEqual(emptyData, 0, "empty .tcpData units")
        d.finish(at: .max, { _ in units += 1 }, { _ in })
        XCTAssertEqual(d.bufferedBytes, 0)
        XCTAssertEqual(d.activeConnections, 0)
        XCTAssertGreaterThan(units, 1000)
    }
}
