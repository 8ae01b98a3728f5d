import PeerscopeCore
import XCTest
import PeerscopePlugins

final class DNSMessageTests: XCTestCase {
    // MARK: - Well-formed messages

    /// A response as Apple's mDNSResponder sends it: PTR, SRV, TXT with cache-flush, A and AAAA in the
    /// additionals, NSEC and an EDNS OPT record; names compressed.
    func testAnnouncementDecodesEveryRecordType() throws {
        var b = DNSBuilder(flags: 0x8400, an: 1, ar: 6)
        let inst = ["Luca’s iMac", "_smb", "_tcp", "local"]
        b.ptr("_smb._tcp.local", inst, ttl: 4500)
        b.srv(inst, target: "Lucas-iMac.local", port: 445, ttl: 120)
        b.txt(inst, ["a=1", "flag", ""], ttl: 4500)
        b.a("Lucas-iMac.local", [169, 254, 225, 216], ttl: 120)
        b.record(["Lucas-iMac", "local"], type: 28, ttl: 120, flush: true) { $0.raw([0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]) }
        b.record(inst, type: 47, ttl: 4500, flush: true) { r in
            r.name(inst)
            r.raw([0, 5, 0, 0, 0x80, 0, 0x40])  // window 0: TXT(16), SRV(33)
        }
        b.record([], type: 41, ttl: 0x0000_1194) { r in
            r.u16(4); r.u16(6); r.raw([1, 2, 3, 4, 5, 6])  // Owner option
        }
        let (m, problems) = DNSMessage.parse(b.payload)
        XCTAssertEqual(problems, [])
        let msg = try XCTUnwrap(m)
        XCTAssertTrue(msg.isResponse)
        XCTAssertTrue(msg.header.authoritative)
        XCTAssertEqual(msg.answers.count, 1)
        XCTAssertEqual(msg.additionals.count, 6)
        XCTAssertEqual(msg.answers[0].name.text, "_smb._tcp.local")
        XCTAssertEqual(msg.answers[0].data, .ptr(DNSName(labels: inst)))
        XCTAssertFalse(msg.answers[0].cacheFlush)
        let srv = msg.additionals[0]
        XCTAssertEqual(srv.name.text, "Luca’s iMac._smb._tcp.local")
        XCTAssertTrue(srv.cacheFlush)
        XCTAssertEqual(srv.rrclass, 1)
        guard case .srv(_, _, let port, let target) = srv.data else { return XCTFail("\(srv.data)") }
        XCTAssertEqual(port, 445)
        XCTAssertEqual(target.text, "Lucas-iMac.local")
        guard case .txt(let strings) = msg.additionals[1].data else { return XCTFail() }
        XCTAssertEqual(strings.map(DNSText.txtValue), ["a=1", "flag", ""])
        XCTAssertEqual(msg.additionals[2].data, .a(.v4(0xA9FE_E1D8)))
        XCTAssertEqual(msg.additionals[3].data, .aaaa(try XCTUnwrap(IPAddress("fe80::1"))))
        XCTAssertEqual(msg.additionals[4].data, .nsec(next: DNSName(labels: inst), types: [16, 33]))
        let opt = msg.additionals[5]
        XCTAssertEqual(opt.name.text, "<Root>")
        XCTAssertEqual(opt.rrclass, 1)  // the OPT class is the UDP payload size, not class + flush bit
        XCTAssertFalse(opt.cacheFlush)
        XCTAssertEqual(opt.data, .opt([.init(code: 4, length: 6)]))
    }

    func testOPTRecordShowsTTLAndDOBit() throws {
        // Root, OPT, payload size 1440, TTL: extended rcode 0, version 0, flags 0x8000 (DO), no options.
        let bytes: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 41, 0x05, 0xA0, 0x00, 0x00, 0x80, 0x00, 0, 0]
        func opt(_ b: [UInt8]) throws -> JSONValue {
            let (m, problems) = DNSMessage.parse(Bytes(b))
            XCTAssertEqual(problems, [])
            let fields = JSONValue.object(MDNSPlugin.fields(try XCTUnwrap(m)))
            return try XCTUnwrap(fields["additionals"]?.arrayValue?.first)
        }
        let rec = try opt(bytes)
        XCTAssertEqual(rec["udpPayloadSize"], .uint(1440))
        XCTAssertEqual(rec["ttl"], .uint(0x8000))
        XCTAssertEqual(rec["do"], .bool(true))
        var noDO = bytes
        noDO[19] = 0
        let plain = try opt(noDO)
        XCTAssertEqual(plain["do"], .bool(false))
        XCTAssertEqual(plain["ttl"], .uint(0))
    }

    func testQuestionsCarryTheQUBitApart() throws {
        var b = DNSBuilder(flags: 0, qd: 2)
        b.question("_chat._tcp.local", type: 12, qu: true)
        b.question("_http._tcp.local", type: 255)
        let (m, problems) = DNSMessage.parse(b.payload)
        XCTAssertEqual(problems, [])
        let msg = try XCTUnwrap(m)
        XCTAssertFalse(msg.isResponse)
        XCTAssertEqual(msg.questions.map(\.name.text), ["_chat._tcp.local", "_http._tcp.local"])
        XCTAssertEqual(msg.questions.map(\.unicastResponse), [true, false])
        XCTAssertEqual(msg.questions.map(\.qclass), [1, 1])
        XCTAssertEqual(msg.questions.map { DNSType.mnemonic($0.type) }, ["PTR", "ANY"])
    }

    func testUnknownTypesKeepNumberAndLength() throws {
        var b = DNSBuilder(an: 1)
        b.record(["x", "local"], type: 65, ttl: 10) { $0.raw([1, 2, 3]) }
        b.record(["y", "local"], type: 4242, ttl: 10) { $0.raw([9]) }
        var bytes = b.bytes
        bytes[7] = 2  // two answers
        let (m, problems) = DNSMessage.parse(Bytes(bytes))
        XCTAssertEqual(problems, [])
        let msg = try XCTUnwrap(m)
        XCTAssertEqual(msg.answers.map { DNSType.mnemonic($0.type) }, ["HTTPS", "TYPE4242"])
        XCTAssertEqual(msg.answers.map(\.data), [.other(length: 3), .other(length: 1)])
    }

    // MARK: - Names as tshark prints them

    func testNamesAreEscapedLikeTshark() {
        // Each pair: raw label bytes, and what tshark 4.0 prints (checked with tshark on crafted packets).
        let cases: [([UInt8], String)] = [
            (Array("a.b".utf8), "a.b"),
            (Array("back\\slash".utf8), "back\\slash"),
            ([0x63, 0x01, 0x7F], "c\\001\\177"),
            ([0x74, 0x09, 0x0A, 0x0D, 0x07, 0x08, 0x0B, 0x0C, 0x00], "t\\t\\n\\r\\a\\b\\v\\f\\000"),
            (Array("Luca’s iMac".utf8), "Luca’s iMac"),
            ([0x62, 0xFF, 0xFE], "b\u{FFFD}\u{FFFD}"),
            ([0x61, 0xE2, 0x80, 0x41], "a\u{FFFD}A"),
            ([0xC0, 0x80], "\\u0000"),
            ([0xE2, 0x80, 0x8B], "\\u200B"),
            ([0xC2, 0x85], "\\u0085"),
            ([0xED, 0xA0, 0x80], "\u{FFFD}"),
            ([0xF3, 0xA0, 0x80, 0x81], "\\U000E0001"),
            ([0xF0, 0x9F, 0x98, 0x80], "😀"),
        ]
        for (raw, expected) in cases {
            XCTAssertEqual(DNSText.format(Bytes(raw)), expected, "\(raw)")
        }
        XCTAssertEqual(DNSName.root.text, "<Root>")
        XCTAssertEqual(DNSText.txtValue(Bytes([0x63, 0x3D, 0x1E, 0x00, 0x78])), "c=\u{1E}")
    }

    // MARK: - Hostile input: every case is a diagnostic, decoding terminates

    private func expectProblem(_ bytes: [UInt8], _ id: String, file: StaticString = #filePath, line: UInt = #line) -> DNSMessage? {
        let (m, problems) = DNSMessage.parse(Bytes(bytes))
        XCTAssertTrue(problems.contains { $0.id == id }, "expected \(id), got \(problems)", file: file, line: line)
        for p in problems { XCTAssertTrue(p.offset >= 0 && p.offset <= bytes.count, "offset \(p)", file: file, line: line) }
        return m
    }

    func testShortHeader() {
        XCTAssertNil(expectProblem([0, 0, 0x84, 0, 0], "header.short"))
        XCTAssertNil(expectProblem([], "header.short"))
    }

    func testCompressionPointerToItselfIsALoop() throws {
        // header, 1 question; name at 12 = pointer to 12.
        let m = try XCTUnwrap(expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 12, 0, 1], "name.loop"))
        XCTAssertTrue(m.questions.isEmpty)
        XCTAssertFalse(m.complete)
    }

    func testCompressionPointerCycleIsALoop() {
        // name at 12: label "a" then pointer to 12 (a backward pointer into the same name).
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 0xC0, 12, 0, 12, 0, 1], "name.loop")
        // Two names pointing at each other: q1 at 12 = "b" + ptr 19; q2 at 19... the first one points forward.
        _ = expectProblem([0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0x62, 0xC0, 20, 0, 12, 0, 1, 1, 0x63, 0xC0, 12, 0, 12, 0, 1],
                          "name.pointer_forward")
    }

    func testPointerIntoEarlierNameThatPointsBackIsALoop() {
        // q1 at 12: "x" 0 (fine). q2 at 19: "y" + pointer to 21, which is q2's own pointer → loop.
        _ = expectProblem([0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0x78, 0, 0, 12, 0, 1, 1, 0x79, 0xC0, 21, 0, 12, 0, 1],
                          "name.loop")
    }

    func testForwardAndOutOfRangePointers() {
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 16, 0, 12, 0, 1, 0], "name.pointer_forward")
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 12, 0, 1], "name.pointer_out_of_range")
    }

    func testOverLongNameAndReservedLabelTypes() {
        // 5 labels of 63 bytes = 320 wire bytes > 255.
        var bytes: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for _ in 0 ..< 5 { bytes.append(63); bytes += Array(repeating: 0x61, count: 63) }
        bytes += [0, 0, 12, 0, 1]
        _ = expectProblem(bytes, "name.too_long")
        // Label length 0x40 and 0x80: extended / reserved label types (a "label" over 63 bytes).
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0x61, 0, 0, 12, 0, 1], "name.label_type")
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x80] + Array(repeating: 0x61, count: 128) + [0, 0, 12, 0, 1],
                          "name.label_type")
    }

    func testLongNameBuiltFromPointersIsCut() {
        // Names that each add 62 bytes onto the previous one through a pointer: the fifth passes 255.
        var bytes: [UInt8] = [0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0]
        var prev: Int? = nil
        for _ in 0 ..< 5 {
            let at = bytes.count
            bytes.append(60); bytes += Array(repeating: 0x62, count: 60)
            if let p = prev { bytes += [0xC0 | UInt8(p >> 8), UInt8(p & 0xFF)] } else { bytes.append(0) }
            bytes += [0, 12, 0, 1]
            prev = at
        }
        let m = expectProblem(bytes, "name.too_long")
        XCTAssertEqual(m?.questions.count, 4)
    }

    func testLabelRunningPastTheEnd() {
        _ = expectProblem([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0x61, 0x62], "name.truncated")
    }

    func testCountsLargerThanThePacket() throws {
        var b = DNSBuilder(an: 1)
        b.a("h.local", [10, 0, 0, 1], ttl: 120)
        var bytes = b.bytes
        bytes[6] = 0xFF; bytes[7] = 0xFF  // 65535 answers
        let m = try XCTUnwrap(expectProblem(bytes, "count.overrun"))
        XCTAssertEqual(m.answers.count, 1, "the one real answer is kept")
        XCTAssertFalse(m.complete)
    }

    func testTXTStringOverrunningItsRecord() throws {
        var b = DNSBuilder(an: 1)
        b.record(["i", "_x", "_tcp", "local"], type: 16, ttl: 4500) { $0.raw([3, 0x61, 0x3D, 0x31, 20, 0x62, 0x3D]) }
        b.a("h.local", [10, 0, 0, 1], ttl: 120)
        var bytes = b.bytes
        bytes[7] = 2
        let m = try XCTUnwrap(expectProblem(bytes, "txt.overrun"))
        guard case .txt(let strings) = m.answers[0].data else { return XCTFail() }
        XCTAssertEqual(strings.map(DNSText.txtValue), ["a=1"])
        XCTAssertFalse(m.answers[0].rdataValid)
        XCTAssertEqual(m.answers.count, 2, "the record after the bad TXT still decodes")
    }

    func testRdataLengthPastTheEndAndWrongAddressLength() {
        var b = DNSBuilder(an: 1)
        b.record(["h", "local"], type: 1, ttl: 1) { $0.raw([1, 2, 3]) }
        _ = expectProblem(b.bytes, "rdata.length")
        var bytes = b.bytes
        bytes[bytes.count - 4] = 0x40  // rdlength 0x4003
        _ = expectProblem(bytes, "rdata.overrun")
    }

    func testPointerInsideRdataMayNotLeaveTheRecord() {
        // PTR rdata of 2 bytes holding a label that claims 5 bytes.
        var b = DNSBuilder(an: 1)
        b.record(["_x", "_tcp", "local"], type: 12, ttl: 1) { $0.raw([5, 0x61]) }
        b.raw([0x62, 0x63, 0x64, 0])
        _ = expectProblem(b.bytes, "name.truncated")
    }

    /// Random corruption of a real-shaped message: never traps, always terminates, and the number of
    /// records decoded never exceeds what the bytes can hold.
    func testRandomCorruptionTerminates() {
        var b = DNSBuilder(flags: 0x8400, an: 1, ar: 3)
        let inst = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]
        b.ptr("_chat._tcp.local", inst, ttl: 4500)
        b.srv(inst, target: "host.local", port: 50000, ttl: 120)
        b.txt(inst, ["_d=Phone", "k=v"], ttl: 4500)
        b.a("host.local", [192, 168, 1, 2], ttl: 120)
        let base = b.bytes
        var rng = SimRandom(seed: 42)
        for _ in 0 ..< 20000 {
            let bytes = rng.corrupted(base)
            let (m, _) = DNSMessage.parse(Bytes(bytes))
            if let m {
                XCTAssertLessThanOrEqual(m.records.count * 11 + m.questions.count * 5, bytes.count)
            }
        }
    }
}
