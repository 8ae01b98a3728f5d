import Peerscope
import PeerscopeCore
import XCTest

/// The engine puts late events (timer expiries) in time order in place: the same order as a stable
/// sort by time, ties in the order they were reported.
final class EventOrderTests: XCTestCase {
    func testSortByTimeIsAStableSortByTime() {
        var rng = SeededLCG(state: 0x9E37_79B9_7F4A_7C15)  // seeded: a failure can be replayed
        for n in [0, 1, 2, 3, 10, 257, 2000] {
            for spread in [1, 5, 1000] {
                let events = (0 ..< n).map { i in
                    PeerEvent(kind: .browse, t: Nanos(Int.random(in: 0 ..< spread, using: &rng)),
                              evidence: .frame(input: 0, frame: UInt64(i)), source: "test")
                }
                let expected = events.enumerated().sorted { a, b in
                    a.element.t != b.element.t ? a.element.t < b.element.t : a.offset < b.offset
                }.map(\.element)
                var sorted = events
                Engine.sortByTime(&sorted)
                XCTAssertEqual(sorted.map(\.evidence), expected.map(\.evidence), "n=\(n) spread=\(spread)")
                XCTAssertEqual(sorted.count, n)
                // Already in order: untouched.
                var again = sorted
                Engine.sortByTime(&again)
                XCTAssertEqual(again, sorted)
            }
        }
    }
}

/// A seeded generator (Knuth's MMIX LCG), so the random orders are the same every run.
private struct SeededLCG: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}
