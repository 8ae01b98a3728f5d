import PeerscopeCore
import PeerscopeTimeline
import PeerscopeSimulator
import XCTest

/// A timeline entry's detail from packed attributes (one pass over the entries) against the plain
/// per-key lookups on the same attributes as a dictionary.
final class DetailFastPathTests: XCTestCase {
    func testPackedDetailMatchesTheDictionaryPath() {
        var rng = SimRandom(seed: 2026)
        let keys = TimelineMapping.detailKeys + ["length", "seq", "txid", "notes", "cod", "Content", "é"]
        // Around both limits (60, 240 for content), in bytes and in characters: a combining accent makes
        // a value longer in bytes than in characters.
        let values: [String] = ["", "x", "Connected", String(repeating: "a", count: 60), String(repeating: "a", count: 61),
                                String(repeating: "e\u{301}", count: 60), String(repeating: "e\u{301}", count: 61),
                                String(repeating: "ü", count: 59), String(repeating: "b", count: 240), String(repeating: "b", count: 241),
                                String(repeating: "🇫🇷", count: 30), "a=b c"]
        var shortened = 0
        for round in 0 ..< 600 {
            var d: [String: String] = [:]
            for _ in 0 ..< Int.random(in: 0 ... 7, using: &rng) {
                if let k = keys.randomElement(using: &rng), let v = values.randomElement(using: &rng) { d[k] = v }
            }
            let packed = EventAttrs(d)
            let fast = TimelineMapping.detail(packed)
            XCTAssertEqual(fast, TimelineMapping.detail(d), "round \(round): \(d)")
            for kind: EventKind in [.gckData, .invitationReceipt] {
                XCTAssertEqual(TimelineMapping.detail(kind, packed), TimelineMapping.detail(kind, d), "round \(round)")
            }
            if fast.contains("...") { shortened += 1 }
        }
        XCTAssertGreaterThan(shortened, 50, "long values were shortened on both paths")
        XCTAssertEqual(TimelineMapping.detail(EventAttrs(["state": "Connected", "code": "7", "seq": "1"])), "state=Connected code=7")
    }
}
