@testable import PeerscopeCore
import PeerscopeSimulator
import XCTest

/// Fast paths of Core's hot helpers against the plain code they replace.
final class FastPathEquivalenceTests: XCTestCase {
    /// The hex writer the fast one replaced: one Character per digit.
    private func slowHex(_ b: Bytes) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var s = ""
        for x in b.array { s.append(digits[Int(x >> 4)]); s.append(digits[Int(x & 0xF)]) }
        return s
    }

    func testHexMatchesThePerCharacterWriterOnSlices() {
        var rng = SimRandom(seed: 13)
        let storage = (0 ..< 300).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } + Array(0 ... 255)
        let whole = Bytes(storage)
        XCTAssertEqual(whole.hex, slowHex(whole))
        XCTAssertEqual(Bytes.empty.hex, "")
        XCTAssertEqual(Bytes([0x00, 0x09, 0x0A, 0xAF, 0xF0, 0xFF]).hex, "00090aaff0ff")
        for _ in 0 ..< 500 {
            let lo = Int.random(in: 0 ... storage.count, using: &rng)
            let n = Int.random(in: 0 ... 40, using: &rng)
            let b = Bytes(storage: storage, lower: lo, count: n)   // a view not starting at 0
            XCTAssertEqual(b.hex, slowHex(b), "\(lo)+\(n)")
            XCTAssertEqual(b.hex.utf8.count, b.count * 2)
        }
    }

    /// `values(of:)` finds each key of the set as the subscript does, in one pass.
    func testValuesOfAKeySetMatchTheSubscript() {
        var rng = SimRandom(seed: 7)
        let keys = ["note", "message", "description", "level", "from", "to", "state", "wait", "accepted", "decision",
                    "inviteID", "type", "channel", "reason", "encryption", "attempt", "delay", "code", "service", "port", "content"]
        let set = AttributeKeySet(keys)
        // Keys that are prefixes, extensions or case variants of set keys, and non-ASCII ones.
        let others = ["not", "notes", "Note", "t", "tox", "codec", "cod", "é", "typé", "length", "seq", "txid", ""]
        let values = ["", "x", "Connected", String(repeating: "é", count: 70), "a b", "\u{0}"]
        for round in 0 ..< 400 {
            var d: [String: String] = [:]
            for _ in 0 ..< Int.random(in: 0 ... 8, using: &rng) {
                let k = Bool.random(using: &rng) ? keys.randomElement(using: &rng) : others.randomElement(using: &rng)
                if let k, let v = values.randomElement(using: &rng) { d[k] = v }
            }
            let a = EventAttrs(d)
            let found = a.values(of: set)
            XCTAssertEqual(found.count, keys.count)
            for (i, k) in keys.enumerated() { XCTAssertEqual(found[i], a[k], "round \(round) key \(k)") }
            // `containsAny` says whether that pass finds anything, without making the values.
            XCTAssertEqual(a.containsAny(of: set), found.contains { $0 != nil }, "round \(round): \(d)")
        }
        XCTAssertFalse(EventAttrs().containsAny(of: set))
        XCTAssertFalse(EventAttrs(["length": "20", "sn": "0"]).containsAny(of: set))
        XCTAssertTrue(EventAttrs(["length": "20", "state": ""]).containsAny(of: set))
        XCTAssertFalse(EventAttrs(["x": "1"]).containsAny(of: AttributeKeySet([])))
        XCTAssertEqual(EventAttrs().values(of: set), [String?](repeating: nil, count: keys.count))
        XCTAssertEqual(EventAttrs(["x": "1"]).values(of: AttributeKeySet([])), [])
    }

    /// Sets and removals by the one-pass `locate` give what a dictionary gives, and the same bytes as
    /// packing that dictionary at once (key order kept, each key once); lookups find every key and no other.
    func testSetAndLookupByLocateMatchADictionary() {
        var rng = SimRandom(seed: 99)
        // Prefixes of each other, equal lengths, non-ASCII (bytes above 0x7F sort after ASCII), empty.
        let keys = ["", "a", "ab", "abc", "b", "ba", "seq", "length", "payloadSize", "kind", "ack", "é", "éa", "z", "Z", "\u{0}"]
        for round in 0 ..< 300 {
            var d: [String: String] = [:]
            var a = EventAttrs()
            for _ in 0 ..< Int.random(in: 0 ... 20, using: &rng) {
                guard let k = keys.randomElement(using: &rng) else { continue }
                let v: String? = Int.random(in: 0 ..< 4, using: &rng) == 0 ? nil : String(Int.random(in: 0 ... 1000, using: &rng))
                d[k] = v
                a[k] = v
            }
            XCTAssertEqual(a, EventAttrs(d), "round \(round)")
            XCTAssertEqual(a.dictionary, d)
            for k in keys + ["abcd", "c", "éb", " "] { XCTAssertEqual(a[k], d[k], "round \(round) key \(k)") }
        }
    }
}
