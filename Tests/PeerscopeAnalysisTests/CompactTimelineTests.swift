import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// Timeline entries and the resolver's bindings in their compact, scalable forms.
final class CompactTimelineTests: XCTestCase {
    func testEntryEvidenceDetailAndLetterReadBackAsGiven() {
        var e = TimelineEntry(t: 5, state: .heartbeat, kind: .gckHeartbeat, sent: true, counterpart: .id(7),
                              session: SessionKey(pair: PeerPair(.id(7), .id(9)), number: 2),
                              evidence: [.frame(input: 0, frame: 3)], source: "gck-heartbeat", detail: "", letter: "B")
        XCTAssertEqual(e.evidence, [.frame(input: 0, frame: 3)])
        XCTAssertEqual(e.letter, "B")
        XCTAssertEqual(e.detail, "")
        XCTAssertEqual(e.counterpart, .id(7))
        XCTAssertEqual(e.session?.number, 2)
        e.evidence.append(.frame(input: 0, frame: 9))
        XCTAssertEqual(e.evidence, [.frame(input: 0, frame: 3), .frame(input: 0, frame: 9)])
        e.evidence = [.logLine(input: 1, line: 4)]
        XCTAssertEqual(e.evidence, [.logLine(input: 1, line: 4)])
        e.detail = "state=Connected"
        e.letter = nil
        e.counterpart = nil
        XCTAssertEqual(e.detail, "state=Connected")
        XCTAssertNil(e.letter)
        XCTAssertNil(e.counterpart)
        XCTAssertLessThanOrEqual(MemoryLayout<TimelineEntry>.stride, 120, "evidence packed: see EvidencePair")
        XCTAssertLessThanOrEqual(MemoryLayout<ResolvedEvent>.stride, 48)
    }

    /// A finding's details are stored packed: read and written like the dictionary they were, the
    /// same details giving equal findings whatever order they were set in.
    func testFindingDetailsReadAndWriteLikeADictionary() {
        let details = ["level": "session", "direction": "Alice (1.2.3.4) -> Bob", "since": "2024-01-01T00:00:00.000000000Z",
                       "outcome": "recovered", "empty": "", "é": "ü ’"]
        var f = Finding(kind: "keepalive-timeout", severity: .warning, peer: "Alice", peerID: nil, t: 1, message: "m",
                        evidence: [.frame(input: 0, frame: 1)], key: "k", details: details)
        XCTAssertEqual(f.details, details)
        XCTAssertEqual(f.detailAttrs["direction"], "Alice (1.2.3.4) -> Bob")
        XCTAssertEqual(f.detailAttrs["empty"], "")
        XCTAssertNil(f.detailAttrs["absent"])
        f.details["outcome"] = "open"
        f.detailAttrs["evidenceCount"] = "51"
        f.details["level"] = nil
        var expected = details
        expected["outcome"] = "open"
        expected["evidenceCount"] = "51"
        expected["level"] = nil
        XCTAssertEqual(f.details, expected)
        var g = Finding(kind: "keepalive-timeout", severity: .warning, peer: "Alice", peerID: nil, t: 1, message: "m",
                        evidence: [.frame(input: 0, frame: 1)], key: "k", details: ["evidenceCount": "51"])
        for (k, v) in expected.sorted(by: { $0.key > $1.key }) { g.detailAttrs[k] = v }
        XCTAssertEqual(f, g, "equal details, equal findings, whatever the order they were set in")
        XCTAssertEqual(f.hashValue, g.hashValue)
        XCTAssertEqual(f.detailAttrs.map(\.key), expected.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    /// An address many peer IDs used one after another (apps relaunched all day): each lookup takes
    /// the peer ID seen there last at that time, the first one before any.
    func testAddressReusedByManyPeerIDsResolvesByTime() {
        var r = PeerResolver(identities: PeerIdentities())
        let a = IPAddress.v4(0xC000_0201)
        for i in 0 ..< 1000 {
            r.learn(PeerHint(peerID: UInt64(1000 + i), address: a), at: Int64(i) * 10)
        }
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 255), .id(1025))
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 250), .id(1025), "a binding made at exactly t counts")
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: -5), .id(1000))
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 99_999), .id(1999))
        let ep = Endpoint(a, 16402)
        XCTAssertEqual(r.resolve(PeerHint(endpoint: ep), at: 5_005), .id(1500))
    }

    /// A run keeps folding while its peer's timeline grows by hundreds of entries (the array is
    /// reallocated many times under it), and a finished peer's entries are kept without slack.
    func testRunsKeepFoldingWhileATimelineGrowsAndEndExactlySized() throws {
        let s = Script()
        s.connect(Script.alice, Script.bob, at: 0)
        for i in 0 ..< 500 {
            let t = 1 + Double(i) * 0.2
            s.packet(.gckHeartbeat, t, Script.alice, Script.bob)
            // Each its own entry: a browser losing Alice (a control step), then her announcement.
            s.log(.lost, t + 0.05, Script.alice)
            s.packet(.announced, t + 0.1, Script.alice, .unknown)
        }
        let tl = s.timelines()
        let alice = try XCTUnwrap(tl.timeline(.id(try XCTUnwrap(Script.alice.peerID))))
        let beats = alice.entries.filter { $0.kind == .gckHeartbeat }
        XCTAssertEqual(beats.count, 1, "one run")
        XCTAssertEqual(beats.first?.count, 500)
        XCTAssertEqual(beats.first?.lastT, Script.at(1 + 499 * 0.2))
        XCTAssertEqual(alice.entries.filter { $0.kind == .lost }.count, 500)
        XCTAssertEqual(alice.entries.filter { $0.kind == .announced }.count, 500)
        for p in tl.peers {
            XCTAssertLessThanOrEqual(p.entries.capacity - p.entries.count, p.entries.count / 16, "\(p.peer.label): no slack kept")
        }
    }
}
