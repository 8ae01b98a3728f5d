import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

final class BinaryPlistTests: XCTestCase {
    /// Python 3.11 `plistlib.dumps(d, fmt=FMT_BINARY)` (keys sorted) of
    /// `{"nested": {"inner": {"deep": [1, -1, 2**63, 2**64-1, 1.5, 300, 70000]}},
    ///   "utf16": "Antani \u2713 \u00fc \U0001F600", "data": bytes(range(20)), "date": datetime(2001, 1, 2),
    ///   "big": 2**40, "neg": -5, "yes": True, "no": False, "uid": UID(7), "empty": {}, "ascii": "hello"}`
    static let pythonCorpus = """
    62706c6973743030db0102030405060708090a0b0c0d0e0f1011121e1f2021556173636969536269675464617461546461746555656d7074\
    79536e6567566e6573746564526e6f53756964557574663136537965735568656c6c6f1300000100000000004f1014000102030405060708\
    090a0b0c0d0e0f101112133340f5180000000000d013fffffffffffffffbd1131455696e6e6572d115165464656570a71718191a1b1c1d10\
    0113ffffffffffffffff1400000000000000008000000000000000140000000000000000ffffffffffffffff233ff80000000000001101\
    2c12000111700880076d0041006e00740061006e006900202713002000fc0020d83dde00090008001f00250029002e00330039003d0044\
    0047004b00510055005b0064007b00840085008e00910097009a009f00a700a900b200c300d400dd00e000e500e600e801030000000000\
    000201000000000000002200000000000000000000000000000104
    """

    func testPythonCorpus() throws {
        let b = try XCTUnwrap(Bytes(hex: Self.pythonCorpus))
        XCTAssertEqual(b.count, 360)
        let v = try BinaryPlist.decode(b)
        XCTAssertEqual(v["ascii"], .string("hello"))
        XCTAssertEqual(v["big"], .int(1 << 40))
        XCTAssertEqual(v["neg"], .int(-5))
        XCTAssertEqual(v["yes"], .bool(true))
        XCTAssertEqual(v["no"], .bool(false))
        XCTAssertEqual(v["uid"], .uid(7))
        XCTAssertEqual(v["empty"], .dict([]))
        XCTAssertEqual(v["date"], .date(86400))
        XCTAssertEqual(v["data"]?.dataValue?.array, Array(0 ..< 20))
        XCTAssertEqual(v["utf16"], .string("Antani \u{2713} \u{00fc} \u{1F600}"))
        let deep = try XCTUnwrap(v["nested"]?["inner"]?["deep"])
        XCTAssertEqual(deep, .array([.int(1), .int(-1), .uint(1 << 63), .uint(UInt64.max), .real(1.5), .int(300), .int(70000)]))
        // File order of keys (plistlib sorts them).
        guard case .dict(let entries) = v else { return XCTFail("not a dict") }
        XCTAssertEqual(entries.map(\.0), ["ascii", "big", "data", "date", "empty", "neg", "nested", "no", "uid", "utf16", "yes"])
    }

    /// Python `plistlib` of an EVS-style Invite dict (sender 2d9omqtkz17st "Antani", recipient 0x0123456789abcdef "Alice",
    /// invite ID 0, context b"secret-context").
    static let pythonInvite = """
    62706c6973743030d50102030405060708090a5f101f4d434e656172627953657276696365496e76697465436f6e746578744b65795f101a\
    4d434e656172627953657276696365496e7669746549444b65795f101b4d434e6561726279536572766963654d65737361676549444b6579\
    5f10214d434e656172627953657276696365526563697069656e745065657249444b65795f101e4d434e6561726279536572766963655365\
    6e6465725065657249444b65794e7365637265742d636f6e74657874100010014e0123456789abcdef05416c6963654f100f9bc10019f094\
    00bd06416e74616e69081335527094b5c4c6c8d70000000000000101000000000000000b000000000000000000000000000000e9
    """

    func testPythonInviteMessage() throws {
        let b = try XCTUnwrap(Bytes(hex: Self.pythonInvite))
        let m = try InvitationMessage.parse(b).get()
        XCTAssertEqual(m.messageID, 1)
        XCTAssertEqual(m.inviteID, 0)
        XCTAssertEqual(m.sender?.idString, "2d9omqtkz17st")
        XCTAssertEqual(m.sender?.displayName, "Antani")
        XCTAssertEqual(m.recipient?.peerID, 0x0123_4567_89AB_CDEF)
        XCTAssertEqual(m.recipient?.displayName, "Alice")
        XCTAssertEqual(m.contextSize, 14)
        XCTAssertTrue(m.problems.isEmpty)
    }

    func testWriterRoundTripNestedAndLarge() throws {
        // More than 255 objects: two-byte references and offsets; a long string and data (extended counts).
        var items: [PV] = []
        for i in 0 ..< 300 { items.append(.int(Int64(i) * 1000 - 5000)) }
        let long = String(repeating: "x", count: 300)
        let bytes = bplist(.dict([("items", .array(items)), ("long", .str(long)), ("blob", .data(Array(repeating: 7, count: 1000))),
                                  ("inner", .dict([("ü", .str("Grüße"))]))]))
        let v = try BinaryPlist.decode(Bytes(bytes))
        guard case .array(let a)? = v["items"] else { return XCTFail("items") }
        XCTAssertEqual(a.count, 300)
        XCTAssertEqual(a[299], .int(299_000 - 5000))
        XCTAssertEqual(a[0], .int(-5000))
        XCTAssertEqual(v["long"]?.stringValue?.count, 300)
        XCTAssertEqual(v["blob"]?.dataValue?.count, 1000)
        XCTAssertEqual(v["inner"]?["ü"], .string("Grüße"))
    }

    // MARK: Hostile input

    /// A minimal plist: header, objects, offset table, trailer. `objects` are raw object bytes.
    func handmade(_ objects: [[UInt8]], top: UInt64 = 0, count: UInt64? = nil, tableOffset: UInt64? = nil,
                  refSize: UInt8 = 1, offsetSize: UInt8 = 1) -> [UInt8] {
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for o in objects { offsets.append(out.count); out += o }
        let table = out.count
        for o in offsets { out.append(UInt8(o)) }
        out += [0, 0, 0, 0, 0, 0, offsetSize, refSize]
        out += be64(count ?? UInt64(objects.count)) + be64(top) + be64(tableOffset ?? UInt64(table))
        return out
    }

    func expect(_ bytes: [UInt8], _ kind: BinaryPlistError.Kind, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let v = try BinaryPlist.decode(Bytes(bytes))
            XCTFail("decoded \(v), expected \(kind)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            XCTAssertGreaterThanOrEqual(error.offset, 0, file: file, line: line)
            XCTAssertLessThanOrEqual(error.offset, bytes.count, file: file, line: line)
        }
    }

    func testHandmadeBaseline() throws {
        // [1, "a"] : array(2 refs) -> int 1, ascii "a"
        let ok = handmade([[0xA2, 1, 2], [0x10, 1], [0x51, 0x61]])
        XCTAssertEqual(try BinaryPlist.decode(Bytes(ok)), .array([.int(1), .string("a")]))
    }

    func testOffsetTableOutOfRange() {
        expect(handmade([[0x10, 1]], tableOffset: 5000), .offsetTableOutOfRange)
        expect(handmade([[0x10, 1]], tableOffset: UInt64.max), .offsetTableOutOfRange)
        expect(handmade([[0x10, 1]], tableOffset: 2), .offsetTableOutOfRange)
    }

    func testObjectOffsetOutOfRange() {
        var b = handmade([[0x10, 1]])
        b[10] = 0xF0  // the only offset-table entry points past the table
        expect(b, .objectOffsetOutOfRange)
    }

    func testCycle() {
        // Object 0 is an array containing object 1, which is an array containing object 0.
        expect(handmade([[0xA1, 1], [0xA1, 0]]), .cycle)
        // A dictionary whose value is itself.
        expect(handmade([[0xD1, 1, 0], [0x51, 0x6B]]), .cycle)
    }

    func testSharedObjectIsNotACycle() throws {
        // [s, s] with the same string object twice: legal sharing.
        let b = handmade([[0xA2, 1, 1], [0x51, 0x61]])
        XCTAssertEqual(try BinaryPlist.decode(Bytes(b)), .array([.string("a"), .string("a")]))
    }

    func testCountsLargerThanTheFile() {
        expect(handmade([[0x10, 1]], count: 1_000_000_000_000), .countTooLarge)
        // An array claiming 0x7fffffff members via an extended count.
        expect(handmade([[0xAF, 0x12, 0x7F, 0xFF, 0xFF, 0xFF]]), .countTooLarge)
        // Data claiming 2^62 bytes with an 8-byte count.
        expect(handmade([[0x4F, 0x13, 0x40, 0, 0, 0, 0, 0, 0, 0]]), .countTooLarge)
        // A string longer than what is left before the offset table.
        expect(handmade([[0x5E, 0x61]]), .countTooLarge)
        // A UTF-16 string whose unit count doubles past the end.
        expect(handmade([[0x6F, 0x10, 0x30, 0, 0x61]]), .countTooLarge)
    }

    func testDepthBomb() {
        // 200 arrays, each containing the next; two-byte refs and offsets keep it well-formed otherwise.
        let n = 200
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for i in 0 ..< n {
            offsets.append(out.count)
            out += i == n - 1 ? [0x10, 0] : [0xA1] + be16(UInt16(i + 1))
        }
        let table = out.count
        for o in offsets { out += be16(UInt16(o)) }
        out += [0, 0, 0, 0, 0, 0, 2, 2] + be64(UInt64(n)) + be64(0) + be64(UInt64(table))
        expect(out, .tooDeep)
        // The same chain decodes when the limit allows it.
        XCTAssertNoThrow(try BinaryPlist.decode(Bytes(out), maxDepth: 250))
    }

    func testBadReferencesMarkersAndTrailer() {
        expect(handmade([[0xA1, 9]]), .badReference)
        expect(handmade([[0x10, 1]], top: 3), .badReference)
        expect(handmade([[0x70]]), .unknownMarker)
        expect(handmade([[0x15, 0]]), .badInteger)
        expect(handmade([[0x10, 1]], refSize: 0), .badTrailer)
        expect(handmade([[0x10, 1]], offsetSize: 9), .badTrailer)
        expect(handmade([[0xD1, 1, 1], [0x10, 1]]), .badKey)
        expect(Array("bplist01".utf8) + Array(repeating: 0, count: 40), .badMagic)
        expect(Array("bplist00".utf8) + [0x10], .truncated)
    }

    /// Every truncation and every single-byte corruption of a real plist: errors or values, never a trap.
    func testTruncationsAndCorruptionsNeverTrap() throws {
        let b = try XCTUnwrap(Bytes(hex: Self.pythonCorpus)).array
        var failures = 0
        for n in 0 ..< b.count {
            if (try? BinaryPlist.decode(Bytes(Array(b.prefix(n))))) == nil { failures += 1 }
        }
        XCTAssertEqual(failures, b.count, "every strict prefix must fail (the trailer is at the end)")
        for i in 0 ..< b.count {
            for x: UInt8 in [0x01, 0x80, 0xFF] {
                var c = b
                c[i] ^= x
                _ = try? BinaryPlist.decode(Bytes(c))
            }
        }
    }
}
