@testable import PeerscopeCore
import XCTest

/// `PeerDirectory` returns early when a known peer is taught again what it knows (every mDNS refresh
/// does): the facts told and the answers given must be those of the full bookkeeping.
final class PeerDirectoryTests: XCTestCase {
    func testTeachingAgainTellsNothingAndChangesNothing() {
        let dir = PeerDirectory()
        var facts: [PeerDirectory.Fact] = []
        dir.onFact = { facts.append($0) }
        let a = IPAddress.v4(0x0A00_0001)
        let ll = IPAddress.v6(hi: 0xFE80_0000_0000_0000, lo: 1, scope: "en0")
        for _ in 0 ..< 3 {
            dir.learn(peerID: 7, displayName: "Anna’s iPhone")
            dir.learn(peerID: 7, address: a)
            dir.learn(peerID: 7, address: ll)
            dir.learn(peerID: 7, endpoint: Endpoint(a, 5000))
            dir.learn(peerID: 7, displayName: nil)
            dir.learn(peerID: 7, displayName: "")
        }
        XCTAssertEqual(facts, [.learnt(PeerHint(peerID: 7, displayName: "Anna’s iPhone")), .learnt(PeerHint(peerID: 7, address: a)),
                               .learnt(PeerHint(peerID: 7, address: ll)), .learnt(PeerHint(peerID: 7, endpoint: Endpoint(a, 5000)))])
        XCTAssertEqual(dir.peerIDs(named: "Anna’s iPhone"), [7])
        XCTAssertEqual(dir.peerID(for: ll.unscoped), 7)

        // Another peer takes the endpoint: asking gives it; peer 7 teaching it again takes it back
        // (the endpoint is known to 7, but no longer 7's: not an early return), without a new fact.
        facts = []
        dir.learn(peerID: 9, endpoint: Endpoint(a, 5000))
        XCTAssertEqual(dir.peerID(for: Endpoint(a, 5000)), 9)
        dir.learn(peerID: 7, endpoint: Endpoint(a, 5000))
        XCTAssertEqual(dir.peerID(for: Endpoint(a, 5000)), 7)
        XCTAssertEqual(facts.count, 2, "9's address and endpoint; nothing for 7")

        // A new name moves the peer between names and is told once.
        facts = []
        dir.learn(peerID: 7, displayName: "Anna’s iPad")
        dir.learn(peerID: 7, displayName: "Anna’s iPad")
        XCTAssertEqual(facts, [.learnt(PeerHint(peerID: 7, displayName: "Anna’s iPad"))])
        XCTAssertEqual(dir.peerIDs(named: "Anna’s iPhone"), [])
        XCTAssertEqual(dir.peerIDs(named: "Anna’s iPad"), [7])

        // Advertisements: every one told; first and last kept, in place or for a new peer.
        facts = []
        dir.advertised(peerID: 7, at: 50)
        dir.advertised(peerID: 7, at: 20)
        dir.advertised(peerID: 11, at: 30)
        XCTAssertEqual(facts.count, 3)
        XCTAssertEqual(dir.entries[7]?.advertisedFirst, 20)
        XCTAssertEqual(dir.entries[7]?.advertisedLast, 50)
        XCTAssertEqual(dir.entries[11]?.advertisedFirst, 30)
        XCTAssertEqual(dir.entries[11]?.advertisedLast, 30)
        XCTAssertEqual(dir.hint(forParticipant: PeerIdentity.participantID(11)).peerID, 11)
    }
}
