@testable import PeerscopeCore
import XCTest

/// `MessageBodyCache` copies a repeated message's members only when the writer type and the key bytes
/// are the same: repeated, nearly identical and colliding keys all write what writing afresh writes.
final class MessageBodyCacheTests: XCTestCase {
    /// Members that depend on the key bytes only: their hex and their length.
    struct HexWriter: MessageFieldsWriter {
        var payload: Bytes
        var fields: [(String, JSONValue)] { [("hex", .string(payload.hex)), ("n", .int(Int64(payload.count)))] }
        func writeMembers(to out: inout JSONBytes) {
            out.key("hex")
            out.string(payload.hex)
            out.key("n")
            out.int(Int64(payload.count))
        }
        var cacheKey: Bytes? { payload }
    }

    /// Another writer type over the same bytes: never given a `HexWriter`'s members.
    struct CountWriter: MessageFieldsWriter {
        var payload: Bytes
        var fields: [(String, JSONValue)] { [("count", .int(Int64(payload.count)))] }
        func writeMembers(to out: inout JSONBytes) {
            out.key("count")
            out.int(Int64(payload.count))
        }
        var cacheKey: Bytes? { payload }
    }

    /// A `HexWriter` that hands the cache its key's hash (as the mDNS decoder hands it the payload's).
    struct HashedWriter: MessageFieldsWriter {
        var payload: Bytes
        var cacheKeyHash: UInt64?
        var fields: [(String, JSONValue)] { HexWriter(payload: payload).fields }
        func writeMembers(to out: inout JSONBytes) { HexWriter(payload: payload).writeMembers(to: &out) }
        var cacheKey: Bytes? { payload }
    }

    /// A writer's own hash of its key stands for the cache's: the same lines, hits and misses as the
    /// cache hashing every key itself (a cache on a replaced hash ignores the writer's).
    func testAWritersOwnKeyHashGivesTheSameLinesHitsAndMisses() {
        let ks = keys()
        let writers: [any MessageFieldsWriter] = ks.map { HashedWriter(payload: $0, cacheKeyHash: $0.byteHash) }
            + ks.map { HexWriter(payload: $0) } + ks.map { HashedWriter(payload: $0, cacheKeyHash: nil) }
        let plain = render(writers)
        var given = MessageBodyCache(), own = MessageBodyCache(hash: MessageBodyCache.hash)
        XCTAssertEqual(render(writers, cache: &given), plain)
        XCTAssertEqual(render(writers, cache: &own), plain)
        XCTAssertEqual(given.hits, own.hits)
        XCTAssertEqual(given.misses, own.misses)
        XCTAssertEqual(given.count, own.count)
        // Each key's hash is `ByteHash.hash` of its bytes, views into larger buffers included.
        for k in ks { XCTAssertEqual(k.byteHash, k.array.withUnsafeBytes { ByteHash.hash($0) }) }
    }

    /// Keys: repeats, keys differing in one byte (first, middle, last, in a tail shorter than 8 bytes),
    /// a prefix of another, the empty key, and views into a larger buffer at different offsets.
    func keys() -> [Bytes] {
        let base: [UInt8] = (0 ..< 37).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        var flipped: [[UInt8]] = []
        for i in [0, 8, 18, 33, 36] {
            var b = base
            b[i] ^= 0x01
            flipped.append(b)
        }
        let big = [0xAA, 0xBB] + base + [0xCC]
        var out: [Bytes] = [Bytes(base), Bytes(base)] + flipped.map { Bytes($0) }
        out += [Bytes(Array(base.prefix(36))), Bytes(Array(base.prefix(8))), Bytes([]), Bytes(base)]
        out.append(Bytes(storage: big, lower: 2, count: base.count))     // equal bytes, another buffer
        out.append(Bytes(storage: big, lower: 1, count: base.count))     // shifted by one
        out += flipped.map { Bytes($0) }                                   // each near-twin repeated
        return out
    }

    static let frame = FrameInfo(input: 0, number: 1, t: 5, capturedLength: 0, originalLength: 0, linkType: 1)

    /// The lines of `writers`' messages, written afresh.
    func render(_ writers: [any MessageFieldsWriter]) -> [UInt8] {
        var out = JSONBytes()
        for w in writers {
            DecodedMessage(plugin: "test", type: "t", frame: Self.frame, flow: nil, writer: w).writeJSONLine(to: &out, includeInput: false)
        }
        return out.bytes
    }

    /// The same lines through `cache`.
    func render(_ writers: [any MessageFieldsWriter], cache: inout MessageBodyCache) -> [UInt8] {
        var out = JSONBytes()
        for w in writers {
            DecodedMessage(plugin: "test", type: "t", frame: Self.frame, flow: nil, writer: w)
                .writeJSONLine(to: &out, includeInput: false, cache: &cache)
        }
        return out.bytes
    }

    func testCachedMembersAreTheWrittenOnesForRepeatedNearAndCollidingKeys() {
        let ks = keys()
        let writers: [any MessageFieldsWriter] = ks.map { HexWriter(payload: $0) } + ks.map { CountWriter(payload: $0) } + ks.map { HexWriter(payload: $0) }
        let plain = render(writers)
        XCTAssertEqual(plain, Array(writers.map {
            DecodedMessage(plugin: "test", type: "t", frame: Self.frame, flow: nil, writer: $0).json(includeInput: false).jsonText + "\n"
        }.joined().utf8), "the writers write their fields")
        // Distinct (type, key) pairs: the misses; every other message is a hit.
        var distinct = Set<String>()
        for w in writers { distinct.insert("\(type(of: w))|\(w.cacheKey?.array ?? [])") }
        for (name, hash) in [("default hash", MessageBodyCache.hash), ("every key on one hash", { _ in 42 }),
                             ("two buckets", { MessageBodyCache.hash($0) & 1 })] as [(String, (UnsafeRawBufferPointer) -> UInt64)] {
            var cache = MessageBodyCache(hash: hash)
            XCTAssertEqual(render(writers, cache: &cache), plain, name)
            XCTAssertEqual(cache.misses, distinct.count, name)
            XCTAssertEqual(cache.hits, writers.count - distinct.count, name)
        }
        // A cache too small to hold much starts again empty: still the same bytes.
        var small = MessageBodyCache(limit: 300, hash: { _ in 7 })
        XCTAssertEqual(render(writers, cache: &small), plain, "bounded cache")
        XCTAssertLessThanOrEqual(small.held, 300)
        XCTAssertGreaterThan(small.misses, distinct.count, "entries were dropped and written again")
    }

    /// A churning crowd: 600 hosts, one starting every 2 s for 20 minutes of capture time, each repeating
    /// its own announcement at 0, 30 and 60 s and then gone. The cache holds the keys used within the
    /// last `defaultIdle` (plus a sweep interval and those 60 s), not all 600 seen since the start;
    /// every repeat is still copied, and the lines equal those of a cache that never forgets by time
    /// and of writing afresh. Fails with the forgetting off (the table then holds 600).
    func testKeysNotRepeatedLatelyAreForgottenAndTheLinesStayTheSame() {
        let s = CaptureTime.second, t0: Nanos = 1_767_225_600 * CaptureTime.second
        var messages: [DecodedMessage] = []
        var timed: [(Nanos, Int)] = []
        for i in 0 ..< 600 { for dt: Int64 in [0, 30, 60] { timed.append((t0 + (Int64(i) * 2 + dt) * s, i)) } }
        timed.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        for (n, (t, i)) in timed.enumerated() {
            let key = Bytes(Array("host-\(i).local announcement".utf8) + [UInt8(truncatingIfNeeded: i), UInt8(i >> 8)])
            let frame = FrameInfo(input: 0, number: UInt64(n + 1), t: t, capturedLength: 0, originalLength: 0, linkType: 1)
            messages.append(DecodedMessage(plugin: "test", type: "t", frame: frame, flow: nil, writer: HexWriter(payload: key)))
        }
        var plain = JSONBytes(), forgetting = JSONBytes(), keeping = JSONBytes()
        var bounded = MessageBodyCache(), unbounded = MessageBodyCache(idle: nil)
        var most = 0, mostUnbounded = 0
        for m in messages {
            m.writeJSONLine(to: &plain, includeInput: false)
            m.writeJSONLine(to: &forgetting, includeInput: false, cache: &bounded)
            m.writeJSONLine(to: &keeping, includeInput: false, cache: &unbounded)
            most = max(most, bounded.count)
            mostUnbounded = max(mostUnbounded, unbounded.count)
        }
        XCTAssertEqual(forgetting.bytes, plain.bytes, "a forgetting cache writes what writing afresh writes")
        XCTAssertEqual(keeping.bytes, plain.bytes)
        let idle = Int(MessageBodyCache.defaultIdle / s), sweep = Int(MessageBodyCache.sweepEvery / s)
        XCTAssertLessThanOrEqual(most, (idle + sweep + 60) / 2 + 2, "the cache holds the keys repeated lately")
        XCTAssertGreaterThan(most, 100, "and those still repeating keep their entries")
        XCTAssertEqual(mostUnbounded, 600, "without forgetting, every key stays")
        XCTAssertEqual(bounded.hits, 1200, "every repeat is copied")
        XCTAssertEqual(bounded.misses, 600)
        // Much later, one more message: everything idle goes at the next sweep.
        let late = FrameInfo(input: 0, number: 9999, t: t0 + 5000 * s, capturedLength: 0, originalLength: 0, linkType: 1)
        DecodedMessage(plugin: "test", type: "t", frame: late, flow: nil, writer: HexWriter(payload: Bytes([1, 2, 3])))
            .writeJSONLine(to: &forgetting, includeInput: false, cache: &bounded)
        XCTAssertEqual(bounded.count, 1, "only the new key is left")
        XCTAssertLessThan(bounded.held, 200, "and its bytes")
    }

    func testWritersWithoutAKeyAreAlwaysWritten() {
        struct Plain: MessageFieldsWriter {
            var fields: [(String, JSONValue)] { [("x", .int(1))] }
            func writeMembers(to out: inout JSONBytes) {
                out.key("x")
                out.int(1)
            }
        }
        var cache = MessageBodyCache()
        XCTAssertEqual(render([Plain(), Plain()], cache: &cache), render([Plain(), Plain()]))
        XCTAssertEqual(cache.hits, 0)
        XCTAssertEqual(cache.misses, 0)
        XCTAssertEqual(cache.held, 0)
    }

    func testDeferredFieldsWriteTheFieldListTheyBuild() {
        let list: [(String, JSONValue)] = [("a", .int(-3)), ("b\"", .string("x\u{1}é")), ("c", .array([.bool(true), .null])),
                                           ("d", .object([("e", .uint(7))]))]
        let deferred = DecodedMessage(plugin: "p", type: "t", frame: Self.frame, flow: nil, writer: DeferredFields({ list }))
        let plain = DecodedMessage(plugin: "p", type: "t", frame: Self.frame, flow: nil, fields: list)
        var a = JSONBytes(), b = JSONBytes()
        deferred.writeJSONLine(to: &a, includeInput: true)
        plain.writeJSONLine(to: &b, includeInput: true)
        XCTAssertEqual(String(decoding: a.bytes, as: UTF8.self), String(decoding: b.bytes, as: UTF8.self))
        XCTAssertEqual(deferred.json(includeInput: true), plain.json(includeInput: true))
    }

    func testHashReadsEveryByte() {
        let a: [UInt8] = Array(repeating: 9, count: 21)
        var seen = Set<UInt64>()
        for i in a.indices {
            var b = a
            b[i] = 10
            seen.insert(b.withUnsafeBytes { MessageBodyCache.hash($0) })
        }
        seen.insert(a.withUnsafeBytes { MessageBodyCache.hash($0) })
        XCTAssertEqual(seen.count, a.count + 1, "a change in any byte (also in the tail) changes the hash")
    }
}

/// `JSONBytes` writes addresses and endpoints as their descriptions, quoted, without building them.
final class JSONBytesAddressTests: XCTestCase {
    func testAddressesAndEndpointsAreTheirDescriptions() {
        var rng = SystemRandomNumberGenerator()
        var addresses: [IPAddress] = [.v4(0), .v4(0xFFFF_FFFF), .v4(0xC0A8_0001), .v6(hi: 0, lo: 0, scope: nil), .v6(hi: 0, lo: 1, scope: nil),
                                      .v6(hi: 0xFE80_0000_0000_0000, lo: 1, scope: nil), .v6(hi: 0xFF02_0000_0000_0000, lo: 0xFB, scope: nil),
                                      .v6(hi: 0xFE80_0000_0000_0000, lo: 0x1, scope: "en0"), .v6(hi: 0x2001_0DB8_0000_0001, lo: 0x0000_0000_0001_0000, scope: nil),
                                      .v6(hi: 0x2001_0DB8_0000_0000, lo: 0x0001_0000_0000_0001, scope: nil),
                                      .v6(hi: 0x0001_0000_0000_0000, lo: 0x0000_0000_0000_0001, scope: "a\"b")]
        // Random groups, each zero or not, so that zero runs of every length and place occur.
        for _ in 0 ..< 3000 {
            var words: [UInt64] = [0, 0]
            for g in 0 ..< 8 where Bool.random(using: &rng) {
                let v = UInt64([1, 0xF, 0x10, 0xABC, 0x1000, 0xFFFF, UInt64.random(in: 1 ... 0xFFFF, using: &rng)].randomElement(using: &rng) ?? 1)
                words[g / 4] |= v << (UInt64(3 - g % 4) * 16)
            }
            addresses.append(.v6(hi: words[0], lo: words[1], scope: nil))
        }
        let spelled: [IPAddress: String] = [addresses[3]: "::", addresses[4]: "::1", addresses[5]: "fe80::1", addresses[6]: "ff02::fb",
                                            addresses[7]: "fe80::1%en0", addresses[8]: "2001:db8:0:1::1:0", addresses[9]: "2001:db8::1:0:0:1"]
        for (a, text) in spelled { XCTAssertEqual(a.description, text) }
        for a in addresses {
            if case .v6(let hi, let lo, nil) = a { XCTAssertEqual(a.description, Self.rfc5952(hi, lo)) }
            var out = JSONBytes()
            out.address(a)
            XCTAssertEqual(String(decoding: out.bytes, as: UTF8.self), JSONValue.string(a.description).jsonText, a.description)
            for port: UInt16 in [0, 7, 5353, 65535] {
                let e = Endpoint(a, port)
                var o = JSONBytes()
                o.endpoint(e)
                XCTAssertEqual(String(decoding: o.bytes, as: UTF8.self), JSONValue.string(e.description).jsonText, e.description)
            }
        }
    }

    /// RFC 5952 spelled the plain way (groups as strings, the first longest run of two or more zero
    /// groups as `::`): the reference for the one writer both spellings share.
    static func rfc5952(_ hi: UInt64, _ lo: UInt64) -> String {
        let g = (0 ..< 8).map { k in UInt16(truncatingIfNeeded: (k < 4 ? hi : lo) >> (UInt64(3 - k % 4) * 16)) }
        var best = (start: -1, length: 1)
        var k = 0
        while k < 8 {
            var j = k
            while j < 8 && g[j] == 0 { j += 1 }
            if j - k > best.length { best = (k, j - k) }
            k = max(j, k + 1)
        }
        let hex = g.map { String($0, radix: 16) }
        guard best.start >= 0 else { return hex.joined(separator: ":") }
        return hex[..<best.start].joined(separator: ":") + "::" + hex[(best.start + best.length)...].joined(separator: ":")
    }
}
