import PeerscopeCore
import XCTest
@testable import PeerscopePlugins

/// What `DiscoveryTracker.remember` keeps of a response the full path read (instances by slot in the
/// order first touched, hosts with the message's addresses), and the responses it must refuse: a host
/// another instance's SRV points at, a flushed family holding addresses the message does not carry.
/// Every sequence also runs with the fast path off and must give the same events.
final class RefreshMemoTests: XCTestCase {
    typealias Harness = RefreshFastPathTests.Harness
    let s = CaptureTime.second
    let t0: Nanos = 1_800_000_000 * CaptureTime.second
    static let a = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]
    static let b = ["2kq9wz41pd0c5", "_chat", "_tcp", "local"]

    /// Two instances on one host, its IPv4 and IPv6 address (both flushed).
    static func twoInstances() -> [UInt8] {
        var m = DNSBuilder(an: 6, ar: 2)
        m.ptr("_chat._tcp.local", a, ttl: 4500)
        m.srv(a, target: "a-host.local", port: 50001, ttl: 120)
        m.txt(a, ["_d=one"], ttl: 4500)
        m.ptr("_chat._tcp.local", b, ttl: 4400)
        m.srv(b, target: "a-host.local", port: 50002, ttl: 110)
        m.txt(b, ["_d=two"], ttl: 4300)
        m.a("a-host.local", [192, 168, 1, 10], ttl: 120)
        m.record(["a-host", "local"], type: DNSType.aaaa, ttl: 100, flush: true) {
            $0.raw([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])
        }
        return m.bytes
    }

    func run(_ packets: [(Nanos, [UInt8], String)], end: Nanos) -> (fast: Harness, slow: Harness) {
        let fast = Harness(fast: true), slow = Harness(fast: false)
        for h in [fast, slow] {
            for (t, bytes, src) in packets { h.send(bytes, at: t, from: src) }
            h.finish(end)
        }
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.directory.entries, slow.directory.entries)
        return (fast, slow)
    }

    func testARememberedResponseHoldsItsInstancesInTheOrderFirstTouchedWithEachRecordsTTL() throws {
        let (fast, _) = run([(t0, Self.twoInstances(), "192.168.1.10")], end: t0 + s)
        let tracker = try XCTUnwrap(fast.plugin?.tracker)
        XCTAssertEqual(tracker.refreshes.count, 1)
        let r = try XCTUnwrap(tracker.refreshes.values.first)
        XCTAssertEqual(r.instances.map(\.key), ["1ddatjp8m3xy7._chat._tcp.local", "2kq9wz41pd0c5._chat._tcp.local"])
        XCTAssertEqual(r.instances.map(\.ptr), [4500, 4400])
        XCTAssertEqual(r.instances.map(\.srv), [120, 110])
        XCTAssertEqual(r.instances.map(\.txt), [4500, 4300])
        for e in r.instances {
            XCTAssertTrue(tracker.instances.holds(e.slot, e.key))
            XCTAssertEqual(e.stamp, tracker.instances.values[e.slot].stamp)
        }
        XCTAssertEqual(r.hosts.map(\.key), ["a-host.local"])
        XCTAssertEqual(r.hosts.first?.addresses.map(\.0.description), ["192.168.1.10", "2001:db8::1"])
        XCTAssertEqual(r.hosts.first?.addresses.map(\.1), [120, 100])
        // And a copy is a refresh.
        let (again, _) = run([(t0, Self.twoInstances(), "192.168.1.10"), (t0 + 30 * s, Self.twoInstances(), "192.168.1.10")],
                             end: t0 + 400 * s)
        XCTAssertEqual(again.plugin?.fastRefreshes, 1)
    }

    func testAResponseIsNotRememberedWhileAnotherInstanceTargetsItsHost() {
        // Another source's instance points its SRV at the same host: a copy of the first response could
        // change what that instance resolves to, so it is read in full every time.
        var c = DNSBuilder(an: 1)
        c.srv(["third", "_chat", "_tcp", "local"], target: "a-host.local", port: 50003, ttl: 120)
        let m = Self.twoInstances()
        let (fast, _) = run([(t0, m, "192.168.1.10"), (t0 + 10 * s, c.bytes, "192.168.1.20"), (t0 + 20 * s, m, "192.168.1.10"),
                             (t0 + 30 * s, m, "192.168.1.10")], end: t0 + 40 * s)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 0)
        let first = fast.plugin?.tracker.refreshes.filter { $0.key.source == IPAddress("192.168.1.10") }.map(\.value.lastUsed)
        XCTAssertEqual(first, [t0], "the first source's response: remembered at +0 s only, never again")
    }

    func testAFlushedFamilyHoldingAnotherAddressIsNotRemembered() {
        // The host's other IPv4 address, received less than a second before the flush, stays (RFC 6762
        // §10.2): the message does not say everything about the family, so it is not remembered until
        // a flush drops it.
        var other = DNSBuilder(an: 1)
        other.a("a-host.local", [192, 168, 1, 11], ttl: 120, flush: false)
        let m = Self.twoInstances()
        let (fast, _) = run([(t0, other.bytes, "192.168.1.10"), (t0 + s / 2, m, "192.168.1.10"), (t0 + s * 8 / 10, m, "192.168.1.10"),
                             (t0 + 5 * s, m, "192.168.1.10"), (t0 + 6 * s, m, "192.168.1.10")], end: t0 + 400 * s)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 1, "only the copy at +6 s: the one at +5 s flushed the other address")
    }

    /// The label text written as bytes gives what the scalar-by-scalar reference gave: every one- and
    /// two-byte label, and random labels mixing controls, DEL, valid, overlong, truncated and invalid
    /// UTF-8, 5- and 6-byte forms, surrogates, format and unassigned scalars, and planes past the BMP.
    func testLabelTextWrittenAsBytesIsTheReferencesText() {
        for x in 0 ... 255 {
            XCTAssertEqual(DNSText.slowFormat(Bytes([UInt8(x)])), Self.referenceSlowFormat(Bytes([UInt8(x)])))
            for y in 0 ... 255 {
                let b = Bytes([UInt8(x), UInt8(y)])
                XCTAssertEqual(DNSText.slowFormat(b), Self.referenceSlowFormat(b), "\(x) \(y)")
            }
        }
        let pieces: [[UInt8]] = [
            Array("Luca’s iMac".utf8), Array("é".utf8), [0xE2, 0x80, 0x99], [0xF0, 0x9F, 0x98, 0x80], [0xC0, 0xAF], [0xE0, 0x80, 0xAF],
            [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFC, 0x84, 0x80, 0x80, 0x80, 0x80],
            [0xE2, 0x80, 0x8B], [0xEF, 0xBF, 0xBF], [0xF3, 0xA0, 0x80, 0x81], [0xCD, 0xB8], [0xF0, 0x90], [0x80], [0xFF], [0xFE],
            [0x00], [0x07], [0x1B], [0x7F], [0x5C], [0x41], [0xC2, 0x85], [0xC2, 0xA0], [0xF0, 0xAF, 0xBF, 0xBF],
        ]
        var g = SystemRandomNumberGenerator()
        for _ in 0 ..< 20_000 {
            var label: [UInt8] = []
            for _ in 0 ..< Int.random(in: 1 ... 8, using: &g) {
                if Bool.random(using: &g) {
                    label += pieces.randomElement(using: &g) ?? []
                } else {
                    label.append(UInt8.random(in: 0 ... 255, using: &g))
                }
            }
            let b = Bytes(label)
            XCTAssertEqual(DNSText.slowFormat(b), Self.referenceSlowFormat(b), "\(label)")
            XCTAssertEqual(Array(DNSText.slowFormat(b).utf8), Array(Self.referenceSlowFormat(b).utf8))
        }
    }

    /// The tracker's timers order equal times by key as `String` does: `DNSName.keyLess` compares bytes
    /// only for strings that are NFC by their scalars, and must agree with `<` on every pair, those it
    /// leaves to `String` too (decomposed é equal to é, Hangul jamo, Å as the angstrom sign, emoji).
    func testKeyOrderIsStringOrder() {
        let pieces = ["a", "b", "z", "A", "-", ".", "_", "0", "9", "é", "ß", "ÿ", "\u{2BC}", "\u{2FF}", "’", "–", "…", "\u{2010}", "\u{2027}",
                      "\u{2028}", "\u{2000}", "e\u{301}", "\u{301}", "\u{300}", "\u{212B}", "Å", "\u{1100}\u{1161}", "가", "😀", "\u{FB01}",
                      "\u{0344}", "\u{2126}", "Ω", "\u{1E9B}\u{323}", "ẛ̣"]
        var g = SystemRandomNumberGenerator()
        var strings: [String] = ["", "luca’s imac._chat._tcp.local", "luca’s imac 2._chat._tcp.local"]
        for _ in 0 ..< 3000 {
            strings.append((0 ..< Int.random(in: 0 ... 6, using: &g)).map { _ in pieces.randomElement(using: &g) ?? "" }.joined())
        }
        for a in strings {
            for _ in 0 ..< 20 {
                let b = strings.randomElement(using: &g) ?? ""
                XCTAssertEqual(DNSName.keyLess(a, b), a < b, "\(Array(a.unicodeScalars)) \(Array(b.unicodeScalars))")
            }
            XCTAssertFalse(DNSName.keyLess(a, a))
        }
        // The byte path is taken for the names it is meant for (and not for the others).
        XCTAssertTrue(Array("luca’s imac–é…".utf8).withUnsafeBufferPointer { DNSName.isNFCByItsScalars($0) })
        XCTAssertFalse(Array("e\u{301}".utf8).withUnsafeBufferPointer { DNSName.isNFCByItsScalars($0) })
        XCTAssertFalse(Array("\u{2000}".utf8).withUnsafeBufferPointer { DNSName.isNFCByItsScalars($0) })
    }
}

/// The DNS reader's names by offset: a short list up to `NameCache.listLimit`, a dictionary past it.
final class DNSNameCacheTests: XCTestCase {
    func testTheNameCacheIsADictionaryWhereAnOffsetKeepsItsFirstEntry() {
        var g = SystemRandomNumberGenerator()
        for _ in 0 ..< 200 {
            var cache = DNSMessage.NameCache()
            var reference: [Int: (DNSName, Int, Int)] = [:]
            let span = Int.random(in: 1 ... 120, using: &g)
            for step in 0 ..< 150 {
                let offset = Int.random(in: 0 ..< span, using: &g)
                let e = (DNSName(labels: ["n\(step)", "local"]), step, offset)
                cache.add(at: offset, e)
                if reference[offset] == nil { reference[offset] = e }
                XCTAssertEqual(cache.count, reference.count)
                let probe = Int.random(in: 0 ..< span + 2, using: &g)
                XCTAssertEqual(cache.entry(at: probe)?.0, reference[probe]?.0)
                XCTAssertEqual(cache.entry(at: probe)?.1, reference[probe]?.1)
            }
            for (offset, e) in reference {
                XCTAssertEqual(cache.entry(at: offset)?.0, e.0)
                XCTAssertEqual(cache.entry(at: offset)?.2, e.2)
            }
        }
    }

    func testAMessageOfManyCompressedNamesReadsEveryName() throws {
        var m = DNSBuilder(an: 80)
        for i in 0 ..< 80 {
            m.ptr("_s\(i % 7)._tcp.local", ["inst\(i)", "_s\(i % 7)", "_tcp", "local"], ttl: 120)
        }
        let (msg, problems) = DNSMessage.parse(m.payload)
        XCTAssertEqual(problems.map(\.id), [])
        let records = try XCTUnwrap(msg).records
        XCTAssertEqual(records.count, 80)
        for (i, r) in records.enumerated() {
            XCTAssertEqual(r.name.text, "_s\(i % 7)._tcp.local")
            guard case .ptr(let target) = r.data else { return XCTFail("record \(i) is not a PTR") }
            XCTAssertEqual(target.text, "inst\(i)._s\(i % 7)._tcp.local")
            XCTAssertEqual(target.labels, ["inst\(i)", "_s\(i % 7)", "_tcp", "local"])
        }
    }
}

/// The reference for `DNSText.slowFormat`: the version it replaced.
extension RefreshMemoTests {
    private static func hex(_ v: UInt32, _ width: Int) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    /// The label text as `DNSText.slowFormat` gave it before it wrote bytes (appended to a `String`
    /// scalar by scalar): the reference the new version is compared with.
    static func referenceSlowFormat(_ b: Bytes) -> String {
        var out = ""
        var i = 0
        let n = b.count
        let replacement: Character = "\u{FFFD}"
        while i < n {
            let c = b.storage[b.lower &+ i]
            i &+= 1
            if c < 0x80 {
                switch c {
                case 0x20 ... 0x7E: out.unicodeScalars.append(Unicode.Scalar(c))
                case 0x07: out += "\\a"
                case 0x08: out += "\\b"
                case 0x0C: out += "\\f"
                case 0x0A: out += "\\n"
                case 0x0D: out += "\\r"
                case 0x09: out += "\\t"
                case 0x0B: out += "\\v"
                default:
                    out += "\\" + String(c >> 6) + String((c >> 3) & 7) + String(c & 7)
                }
                continue
            }
            // Lead byte: how many continuation bytes follow.
            var need: Int
            var value: UInt32
            switch c {
            case 0xC0 ... 0xDF: need = 1; value = UInt32(c & 0x1F)
            case 0xE0 ... 0xEF: need = 2; value = UInt32(c & 0x0F)
            case 0xF0 ... 0xF7: need = 3; value = UInt32(c & 0x07)
            case 0xF8 ... 0xFB: need = 4; value = UInt32(c & 0x03)
            case 0xFC ... 0xFD: need = 5; value = UInt32(c & 0x01)
            default:
                out.append(replacement)
                continue
            }
            var complete = true
            while need > 0 {
                guard i < n else { complete = false; break }
                let d = b.storage[b.lower &+ i]
                guard d & 0xC0 == 0x80 else { complete = false; break }
                value = value << 6 | UInt32(d & 0x3F)
                i &+= 1
                need -= 1
            }
            guard complete, let scalar = Unicode.Scalar(value) else {
                out.append(replacement)
                continue
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .unassigned, .surrogate:
                out += scalar.value > 0xFFFF ? "\\U" + hex(scalar.value, 8) : "\\u" + hex(scalar.value, 4)
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
