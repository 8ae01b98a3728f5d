import PeerscopeCore
import XCTest
import PeerscopePlugins

/// `peerscope decode` writes mDNS messages straight from the parsed `DNSMessage` (`DNSMessageFields`);
/// the bytes must be those of the field tree `MDNSPlugin.fields` builds (the previous writer), on every
/// record type, on text that needs escaping or is not UTF-8, and on whatever random corruption parses.
final class DNSMessageFieldsTests: XCTestCase {
    static let frame = FrameInfo(input: 3, number: 42, t: -1_700_000_000_123_456_789, capturedLength: 100, originalLength: 100,
                                 linkType: 1)
    static let flows: [FlowKey?] = [
        nil,
        FlowKey(.udp, Endpoint(.v4(0xC0A8_0102), 5353), Endpoint(.v4(0xE000_00FB), 5353)),
        FlowKey(.tcp, Endpoint(.v4(0), 0), Endpoint(.v4(0xFFFF_FFFF), 65535)),
        FlowKey(.udp, Endpoint(.v6(hi: 0xFE80_0000_0000_0000, lo: 1, scope: "en0"), 5353),
                Endpoint(.v6(hi: 0xFF02_0000_0000_0000, lo: 0xFB, scope: nil), 5353)),
    ]

    /// The line the direct writer gives and the line the field tree gives, for every flow shape and with
    /// and without `input`; returns the first mismatch.
    func mismatch(_ m: DNSMessage) -> String? {
        for flow in Self.flows {
            let msg = DecodedMessage(plugin: "mdns", type: m.isResponse ? "response" : "query", frame: Self.frame, flow: flow,
                                     writer: DNSMessageFields(m))
            XCTAssertNotNil(msg.writer)
            for input in [false, true] {
                var direct = JSONBytes()
                msg.writeJSONLine(to: &direct, includeInput: input)
                let tree = msg.json(includeInput: input).jsonText + "\n"
                if direct.bytes != Array(tree.utf8) {
                    return "direct: \(String(decoding: direct.bytes, as: UTF8.self))tree:   \(tree)"
                }
            }
        }
        return nil
    }

    /// Every record type the decoder knows, header flags, odd classes, and text needing escapes.
    func testEveryRecordTypeAndHeaderFlagWritesTheTreesBytes() throws {
        var b = DNSBuilder(id: 0xBEEF, flags: 0x8400 | 0x0200 | 0x0003 | (2 << 11), qd: 2, an: 4, ar: 9)
        let inst = ["Luca’s \"quoted\" \\ iMac\t\u{01}", "_smb", "_tcp", "local"]
        b.question("_smb._tcp.local", type: 12, qu: true)
        b.name(["odd", "local"]); b.u16(4242); b.u16(3)  // unknown type, class 3
        b.ptr("_smb._tcp.local", inst, ttl: 4500)
        b.srv(inst, target: "Lucas-iMac.local", port: 445, ttl: 120)
        b.txt(inst, ["a=1", "flag", "", "q=\"x\\y\"", "c=\u{1E}\u{7F}", "u=Zoë 😀"], ttl: 4500)
        b.record(inst, type: 16, ttl: 10) { r in
            // Not UTF-8, a NUL inside, a bare high byte: tshark's (and txtValue's) U+FFFD and cut.
            for s: [UInt8] in [[0x62, 0xFF, 0xFE], [0x61, 0x00, 0x7A], [0xC3], [0x78, 0x00, 0xFF]] { r.u8(UInt8(s.count)); r.raw(s) }
        }
        b.a("Lucas-iMac.local", [169, 254, 225, 216], ttl: 120)
        b.record(["Lucas-iMac", "local"], type: 28, ttl: 120, flush: true) { $0.raw([0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]) }
        b.record(["v6", "local"], type: 28, ttl: 120) { $0.raw([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]) }
        b.record(inst, type: 47, ttl: 4500, flush: true) { r in
            r.name(inst)
            r.raw([0, 5, 0, 0, 0x80, 0, 0x40])
        }
        b.record([], type: 41, ttl: 0x0001_8000) { r in
            r.u16(4); r.u16(6); r.raw([1, 2, 3, 4, 5, 6]); r.u16(65001); r.u16(0)
        }
        b.record(["h", "local"], type: 13, ttl: 7) { r in r.u8(3); r.raw(Array("ARM".utf8)); r.u8(2); r.raw([0x69, 0xFF]) }
        b.record(["x", "local"], type: 65, ttl: 0) { $0.raw([1, 2, 3]) }
        b.record(["bad", "local"], type: 1, ttl: 1) { $0.raw([1, 2, 3]) }   // an A record of 3 bytes: malformed
        let (m, _) = DNSMessage.parse(b.payload)
        let msg = try XCTUnwrap(m)
        let kinds = Set(msg.records.map(\.type))
        XCTAssertTrue(kinds.isSuperset(of: [1, 12, 13, 16, 28, 33, 41, 47, 65]), "\(kinds)")
        XCTAssertTrue(msg.records.contains { !$0.rdataValid }, "a malformed record is among them")
        XCTAssertNil(mismatch(msg))
        // A query, and a message cut short (`complete: false`).
        var q = DNSBuilder(flags: 0, qd: 1)
        q.question("_companion-link._tcp.local", type: 255)
        XCTAssertNil(mismatch(try XCTUnwrap(DNSMessage.parse(q.payload).0)))
        var cut = b.bytes
        cut.removeLast(9)
        let partial = try XCTUnwrap(DNSMessage.parse(Bytes(cut)).0)
        XCTAssertFalse(partial.complete)
        XCTAssertNil(mismatch(partial))
    }

    /// Random corruption of an announcement: every message that still parses writes the tree's bytes.
    func testCorruptedMessagesWriteTheTreesBytes() {
        var b = DNSBuilder(flags: 0x8400, qd: 1, an: 1, ar: 4)
        let inst = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]
        b.question("_chat._tcp.local", type: 12)
        b.ptr("_chat._tcp.local", inst, ttl: 4500)
        b.srv(inst, target: "host.local", port: 50000, ttl: 120)
        b.txt(inst, ["_d=Phone", "k=v"], ttl: 4500)
        b.a("host.local", [192, 168, 1, 2], ttl: 120)
        b.record([], type: 41, ttl: 0x8000) { r in r.u16(4); r.u16(2); r.raw([7, 7]) }
        let base = b.bytes
        var rng = SimRandom(seed: 1313)
        var parsed = 0, failures: [String] = []
        for _ in 0 ..< 3000 {
            guard let m = DNSMessage.parse(Bytes(rng.corrupted(base))).0 else { continue }
            parsed += 1
            if let bad = mismatch(m), failures.count < 3 { failures.append(bad) }
        }
        XCTAssertGreaterThan(parsed, 600)
        XCTAssertEqual(failures, [], failures.joined(separator: "\n"))
    }
}
