@testable import PeerscopeCore
import PeerscopeSimulator
import XCTest

/// Attribute bytes read back from a damaged spill file: lengths past the end, or so large that they wrap
/// to a negative `Int`, end at the buffer's end instead of trapping.
final class EventAttrsDamageTests: XCTestCase {
    private func attrs(_ bytes: [UInt8]) -> EventAttrs {
        var a = EventAttrs()
        a.bytes = bytes
        return a
    }

    func testALengthPastTheEndEndsAtTheEnd() {
        // Key length 5 with two bytes left: the key is what is there, the value empty.
        let a = attrs([0x05] + Array("ab".utf8))
        XCTAssertEqual(a.map(\.key), ["ab"])
        XCTAssertEqual(a["ab"], "")
        XCTAssertEqual(a.count, 1)
    }

    func testALengthThatWrapsToANegativeIntDoesNotTrap() {
        // 2^64 - 1 as LEB128 (ten bytes): as an `Int` it is -1, which made the key's range run backwards.
        let huge: [UInt8] = Array(repeating: 0xFF, count: 9) + [0x01]
        let a = attrs([0x01] + Array("k".utf8) + huge + Array("v".utf8))
        XCTAssertEqual(a.map(\.key), ["k"])
        XCTAssertEqual(a["k"], "v")
        let b = attrs(huge + Array("key".utf8))
        XCTAssertEqual(b.map(\.key), ["key"])
        XCTAssertEqual(b["key"], "")
    }

    func testRandomJunkIsReadWithinTheBufferByEveryReader() {
        var rng = SimRandom(seed: 13)
        let set = AttributeKeySet(["a", "b", "sn", "peer"])
        for _ in 0 ..< 2000 {
            let n = Int(rng.next() % 40)
            let bytes = (0 ..< n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let a = attrs(bytes)
            // Each slot lies inside the buffer, after the one before: the readers' walk always ends.
            var i = 0, slots = 0
            while i < bytes.count {
                let s = a.slot(at: i)
                XCTAssertTrue(i < s.key.lowerBound && s.key.upperBound <= s.value.lowerBound && s.value.upperBound <= bytes.count)
                i = s.value.upperBound
                slots += 1
            }
            XCTAssertEqual(slots, a.count)
            XCTAssertEqual(a.keys.count, a.count)
            _ = a["a"]
            XCTAssertEqual(a.values(of: set).count, 4)
            XCTAssertEqual(a.containsAny(of: set), a.values(of: set).contains { $0 != nil })
            _ = a.description
            var h = Hasher()
            a.hash(into: &h)
        }
    }
}
