@testable import PeerscopeCore
import XCTest

/// `EventAttrs.keeping(_:)`: a buffer of only some keys (a timeline entry's detail keys) from which
/// `values(of:)` reads what it reads from the whole buffer, on well-formed and damaged bytes.
final class EventAttrsKeepingTests: XCTestCase {
    private func raw(_ bytes: [UInt8]) -> EventAttrs {
        var a = EventAttrs()
        a.bytes = bytes
        return a
    }

    private func entry(_ k: String, _ v: String) -> [UInt8] {
        var out: [UInt8] = []
        EventAttrs.append(k, v, to: &out)
        return out
    }

    func testOnlyTheSetsKeysStayAndReadTheSameValues() {
        let set = AttributeKeySet(["service", "port", "note", "type"])
        let whole: EventAttrs = ["addresses": "10.0.0.1,fe80::1", "host": "a.local", "port": "7000",
                                 "service": "_airplay._tcp.local", "txt": String(repeating: "x=1 ", count: 80)]
        let kept = whole.keeping(set)
        XCTAssertEqual(kept.values(of: set), whole.values(of: set))
        XCTAssertEqual(kept.keys, ["port", "service"])
        XCTAssertLessThan(kept.bytes.count, whole.bytes.count / 5)
        // None of the keys: nothing kept (and the same nothing read).
        let none: EventAttrs = ["length": "20", "sn": "0"]
        XCTAssertTrue(none.keeping(set).isEmpty)
        XCTAssertEqual(none.keeping(set).values(of: set), none.values(of: set))
        XCTAssertTrue(EventAttrs().keeping(set).isEmpty)
        // A key twice (no writer does it): the first value, as `values(of:)` and the subscript read.
        let twice = raw(entry("port", "1") + entry("zz", "q") + entry("port", "2") + entry("type", ""))
        XCTAssertEqual(twice.keeping(set).values(of: set), twice.values(of: set))
        XCTAssertEqual(twice.keeping(set)["port"], "1")
        XCTAssertEqual(twice.keeping(set).count, 2, "the second port goes, the empty type stays")
    }

    func testDamagedBytesGiveWhatTheWholeBufferGivesAndNeverTrap() {
        let set = AttributeKeySet(["service", "port", "note"])
        let good = entry("note", "hello") + entry("port", "80") + entry("service", "_x._tcp.local")
        var buffers: [[UInt8]] = [good + [0x05] + Array("po".utf8), [0xFF, 0xFF], [0x00, 0x00, 0x00],
                                  good + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]]
        // Every cut of a well-formed buffer, and every single byte overwritten.
        for n in 0 ..< good.count { buffers.append(Array(good[..<n])) }
        for i in good.indices {
            var b = good
            b[i] = 0xFF
            buffers.append(b)
            b[i] = 0x04
            buffers.append(b)
        }
        for b in buffers {
            let a = raw(b)
            XCTAssertEqual(a.keeping(set).values(of: set), a.values(of: set), "\(b)")
        }
    }
}
