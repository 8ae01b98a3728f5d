import PeerscopeCore
@testable import PeerscopeTimeline
import XCTest

/// The timelines' peer order compares the text after the shared label prefix for two peers known only
/// by address (or only by peer ID); it must be the order of the full labels, then refs, on every mix.
final class PeerOrderTests: XCTestCase {
    func peers() -> [PeerInfo] {
        var out: [PeerInfo] = []
        let addresses: [IPAddress] = [.v4(0x0A00_0002), .v4(0x0A00_000A), .v4(0x0A00_0064), .v4(0xC0A8_0001), .v4(0x0100_0000),
                                      .v4(.max), .v4(0), .v6(hi: 0xFE80 << 48, lo: 1, scope: "en0"),
                                      .v6(hi: 0xFE80 << 48, lo: 1, scope: "en1"), .v6(hi: 0xFE80 << 48, lo: 1, scope: nil),
                                      .v6(hi: 0xFE80 << 48, lo: 1, scope: "e\u{301}n"), .v6(hi: 0, lo: 1, scope: nil),
                                      .v6(hi: 0x2001_0DB8 << 32, lo: 0xA, scope: nil)]
        let ids: [UInt64] = [0, 1, 35, 36, 0xFFFF_FFFF_FFFF_FFFF, 0x1234_5678_9ABC_DEF0, 1 << 40]
        for a in addresses { out.append(PeerInfo(ref: .address(a))) }
        for v in ids { out.append(PeerInfo(ref: .id(v))) }
        for n in ["Anna’s iPad", "unknown peer at 10.0.0.3", "peer 0000000000001", "", "Zoë", "Zoe\u{308}"] {
            out.append(PeerInfo(ref: .name(n)))
        }
        out += [PeerInfo(ref: .participant(7)), PeerInfo(ref: .logOwner(input: 0)), PeerInfo(ref: .logOwner(input: 11))]
        // Display names on address and ID peers, empty ones included (those fall back to what is known).
        for (i, name) in ["", "Bob", "unknown peer at 9.9.9.9", "peer zzz", ""].enumerated() {
            var a = PeerInfo(ref: .address(addresses[i]))
            a.displayName = name
            out.append(a)
            var b = PeerInfo(ref: .id(ids[i]))
            b.displayName = name
            out.append(b)
        }
        return out
    }

    func testPeerOrderIsTheLabelsThenRefs() {
        let ps = peers()
        var compared = 0
        for a in ps {
            for b in ps {
                XCTAssertEqual(PeerInfo.sortsBefore(a, b), (a.label, a.ref) < (b.label, b.ref), "\(a.label) vs \(b.label)")
                compared += 1
            }
        }
        XCTAssertGreaterThan(compared, 1000)
        let sorted = ps.sorted(by: PeerInfo.sortsBefore).map(\.ref)
        XCTAssertEqual(sorted, ps.sorted { ($0.label, $0.ref) < ($1.label, $1.ref) }.map(\.ref))
    }
}
