import XCTest
@testable import PeerscopeCore

final class BytesTests: XCTestCase {
    func testReadsAreBoundsCheckedAndZeroBased() {
        let b = Bytes([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99])
        let s = b.slice(2, 4)
        XCTAssertEqual(s?.count, 4)
        XCTAssertEqual(s?.byte(0), 0x22)
        XCTAssertEqual(s?.u16be(0), 0x2233)
        XCTAssertEqual(s?.u16le(0), 0x3322)
        XCTAssertEqual(s?.u32be(0), 0x2233_4455)
        XCTAssertNil(s?.u32be(1), "a read past the slice must fail even though the storage has more bytes")
        XCTAssertNil(s?.byte(4))
        XCTAssertNil(s?.byte(-1))
        XCTAssertNil(b.slice(8, 3))
        XCTAssertNil(b.slice(-1, 2))
        XCTAssertNil(b.slice(2, Int.max), "huge lengths from the wire must not overflow")
        XCTAssertEqual(b.u64be(2), 0x2233_4455_6677_8899)
        XCTAssertEqual(b.suffix(from: 100).count, 0)
        XCTAssertEqual(b.prefix(3).array, [0x00, 0x11, 0x22])
    }

    func testCursorDoesNotMovePastTheEnd() {
        var c = ByteCursor(Bytes([1, 2, 3]))
        XCTAssertEqual(c.u16be(), 0x0102)
        XCTAssertNil(c.u16be())
        XCTAssertEqual(c.offset, 2)
        XCTAssertEqual(c.u8(), 3)
        XCTAssertTrue(c.atEnd)
        XCTAssertFalse(c.skip(1))
    }

    func testHexRoundTrip() {
        let b = Bytes(hex: "07d0 0000 0000001b")
        XCTAssertEqual(b?.array, [0x07, 0xD0, 0, 0, 0, 0, 0, 0x1B])
        XCTAssertEqual(b?.hex, "07d000000000001b")
        XCTAssertNil(Bytes(hex: "abc"), "odd number of digits")
        XCTAssertNil(Bytes(hex: "zz"))
    }
}

final class AddressTests: XCTestCase {
    func testIPv6TextFollowsRFC5952() {
        XCTAssertEqual(IPAddress("fe80:0:0:0:1c78:b065:b483:f72c%awdl0")?.description, "fe80::1c78:b065:b483:f72c%awdl0")
        XCTAssertEqual(IPAddress("2001:db8::1")?.description, "2001:db8::1")
        XCTAssertEqual(IPAddress("::")?.description, "::")
        XCTAssertEqual(IPAddress("::1")?.description, "::1")
        XCTAssertEqual(IPAddress("2001:db8:0:1:1:1:1:1")?.description, "2001:db8:0:1:1:1:1:1", "a single zero group is not compressed")
        XCTAssertEqual(IPAddress("ff02::fb")?.isMulticast, true)
        XCTAssertNil(IPAddress("1::2::3"))
        XCTAssertNil(IPAddress("1:2:3"))
    }

    func testScopesOnlyOnLinkLocalAndDistinguishInterfaces() {
        let a = IPAddress("fe80::1%awdl0")
        let b = IPAddress("fe80::1%en0")
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a?.unscoped, b?.unscoped)
        XCTAssertEqual(IPAddress("2001:db8::1%en0")?.description, "2001:db8::1", "global addresses carry no scope")
        XCTAssertEqual(IPAddress(v6: Bytes(hex: "fe800000000000000000000000000001")!, scope: "awdl0"), a)
    }

    func testIPv4() {
        XCTAssertEqual(IPAddress("192.0.2.225")?.description, "192.0.2.225")
        XCTAssertNil(IPAddress("192.0.2"))
        XCTAssertNil(IPAddress("192.0.2.256"))
        XCTAssertEqual(IPAddress("169.254.1.1")?.isLinkLocal, true)
        XCTAssertEqual(Endpoint(IPAddress("fe80::1")!, 16402).description, "[fe80::1]:16402")
        let f = FlowKey(.udp, Endpoint(.v4(2), 9), Endpoint(.v4(1), 8))
        XCTAssertEqual(f.canonical, f.reversed.canonical)
    }
}

final class IdentityTests: XCTestCase {
    func testBase36PeerIDAndParticipantID() {
        // Spec §1.1: int("1ddatjp8m3xy7", 36) == 0x5a2ddcb42308149f, logged as participant 2308149F.
        let id = PeerIdentity.parse(idString: "1ddatjp8m3xy7")
        XCTAssertEqual(id, 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(id.map(PeerIdentity.participantID), 0x2308_149F)
        XCTAssertEqual(PeerIdentity.participantHex(0x2308_149F), "2308149F")
        XCTAssertEqual(PeerIdentity.idString(0x5A2D_DCB4_2308_149F), "1ddatjp8m3xy7")
        XCTAssertEqual(PeerIdentity.idString(35), "000000000000z", "zero-padded to 13 characters")
        XCTAssertNil(PeerIdentity.parse(idString: "zzzzzzzzzzzzz"), "does not fit 64 bits")
        XCTAssertNil(PeerIdentity.parse(idString: "12345678901234"))
        XCTAssertNil(PeerIdentity.parse(idString: "abc-def"))
        XCTAssertEqual(PeerHint(peerID: 0x5A2D_DCB4_A308_149F).participantID, 0x2308_149F, "top bit of the low word is dropped")
    }
}

final class ChecksumTests: XCTestCase {
    func testKnownVectors() {
        XCTAssertEqual(Checksum.crc32(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(Checksum.crc16ARC(Array("123456789".utf8)), 0xBB3D)
        // The real invitation receipt frame (corpus mpc-vectors): CRC over the header with the field zeroed.
        let receipt: [UInt8] = [0x07, 0xD0, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(Checksum.crc32(receipt), 0x0CCA_7E2C)
    }
}

final class TimeTests: XCTestCase {
    func testISO8601WithNanoseconds() {
        XCTAssertEqual(CaptureTime.iso8601(0), "1970-01-01T00:00:00.000000000Z")
        XCTAssertEqual(CaptureTime.iso8601(1_768_471_200_123_456_789), "2026-01-15T10:00:00.123456789Z")
        XCTAssertEqual(CaptureTime.iso8601(-1), "1969-12-31T23:59:59.999999999Z")
        XCTAssertEqual(CaptureTime.days(year: 2026, month: 1, day: 15), 20468)
        XCTAssertEqual(CaptureTime.relative(12_345_678_901, to: 0), "+12.345s")
        XCTAssertEqual(CaptureTime.duration(6_004_000_000), "6.004s")
    }
}

final class JSONTests: XCTestCase {
    func testWriterKeepsOrderAndEscapes() {
        let v: JSONValue = .object([("b", 1), ("a", .string("x\"y\n\u{1}")), ("c", [true, .null])])
        XCTAssertEqual(v.jsonText, #"{"b":1,"a":"x\"y\n\u0001","c":[true,null]}"#)
    }

    func testParserRoundTripAndErrors() throws {
        let text = #"{"type":"keep_alive","n":-12,"big":18446744073709551615,"f":1.5e2,"s":"\u00e9\ud83d\ude00","a":[{}]}"#
        let v = try JSONParser.parse(text)
        XCTAssertEqual(v["type"]?.stringValue, "keep_alive")
        XCTAssertEqual(v["n"]?.int64Value, -12)
        XCTAssertEqual(v["big"], .uint(UInt64.max))
        XCTAssertEqual(v["f"], .double(150))
        XCTAssertEqual(v["s"]?.stringValue, "é😀")
        XCTAssertEqual(try JSONParser.parse(v.jsonText), v)
        XCTAssertThrowsError(try JSONParser.parse(#"{"a":}"#)) { e in
            XCTAssertEqual(e as? JSONParser.Failure, .syntax(offset: 5, expected: "a value"))
        }
        XCTAssertThrowsError(try JSONParser.parse(String(repeating: "[", count: 10_000)))
        XCTAssertThrowsError(try JSONParser.parse(#"{"a":1} x"#))
        XCTAssertThrowsError(try JSONParser.parse("\"abc"))
    }
}

final class EventCoalescerTests: XCTestCase {
    let a = PeerHint(peerID: 1), b = PeerHint(peerID: 2)
    let flow = FlowKey(.udp, Endpoint(.v4(1), 16402), Endpoint(.v4(2), 16401))
    var frame: UInt64 = 0

    func event(_ kind: EventKind, _ s: Double, from: PeerHint, to: PeerHint, flow: FlowKey?) -> PeerEvent {
        frame += 1
        return PeerEvent(kind: kind, t: CaptureTime.nanos(seconds: s), evidence: .frame(input: 0, frame: frame),
                         from: from, to: to, flow: flow, source: "test")
    }

    func testSteadyRunsFoldUntilAGapOrAnotherEventOnTheFlow() throws {
        var c = EventCoalescer(gap: 5 * CaptureTime.second)
        var out: [PeerEvent] = []
        for i in 0 ..< 10 { c.add(event(.appKeepAlive, Double(i) * 2, from: a, to: b, flow: flow), to: &out) }
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out[0].count, 10)
        XCTAssertEqual(out[0].t, 0)
        XCTAssertEqual(out[0].lastT, CaptureTime.nanos(seconds: 18))
        XCTAssertEqual(out[0].lastEvidence, .frame(input: 0, frame: 10))
        XCTAssertEqual(out[0].occurrences.count, 2)
        XCTAssertEqual(c.folded, 9)

        // A gap longer than 5 s starts a new event; the other direction is its own run.
        c.add(event(.appKeepAlive, 23.5, from: a, to: b, flow: flow), to: &out)
        c.add(event(.appKeepAlive, 24, from: b, to: a, flow: flow.reversed), to: &out)
        c.add(event(.appKeepAlive, 25, from: a, to: b, flow: flow), to: &out)
        XCTAssertEqual(out.map(\.count), [10, 2, 1])

        // Any other event on the flow (either direction) ends its runs: no state change hides in one.
        c.add(event(.dtlsAlert, 26, from: b, to: a, flow: flow.reversed), to: &out)
        c.add(event(.appKeepAlive, 27, from: a, to: b, flow: flow), to: &out)
        XCTAssertEqual(out.map(\.kind), [.appKeepAlive, .appKeepAlive, .appKeepAlive, .dtlsAlert, .appKeepAlive])
        XCTAssertEqual(out.last?.count, 1)
    }

    func testOnlySteadyKindsWithAFlowFoldAndGapZeroKeepsAll() {
        var c = EventCoalescer(gap: 5 * CaptureTime.second)
        var out: [PeerEvent] = []
        for i in 0 ..< 3 { c.add(event(.iceRequest, Double(i), from: a, to: b, flow: flow), to: &out) }
        for i in 0 ..< 3 { c.add(event(.appKeepAlive, Double(i), from: a, to: b, flow: nil), to: &out) }
        XCTAssertEqual(out.count, 6, "ICE checks are counted by the handshake detector; log events have no flow")
        // Advertisements are about a peer, not a flow: folded per peer and source, and nothing between
        // them (another event, even on the mDNS flow) cuts the run.
        var ads = EventCoalescer()
        var kept: [PeerEvent] = []
        for i in 0 ..< 100 {
            ads.add(event(.identityAdvertised, Double(i) * 60, from: a, to: .unknown, flow: nil), to: &kept)
            ads.add(event(.browse, Double(i) * 60 + 1, from: a, to: .unknown, flow: flow), to: &kept)
        }
        ads.add(event(.identityAdvertised, 7000, from: b, to: .unknown, flow: nil), to: &kept)
        let adverts = kept.filter { $0.kind == .identityAdvertised }
        XCTAssertEqual(adverts.map(\.count), [100, 1], "one event per peer however many refreshes")
        XCTAssertEqual(adverts.first?.lastT, CaptureTime.nanos(seconds: 99 * 60))
        var off = EventCoalescer(gap: 0)
        var all: [PeerEvent] = []
        for i in 0 ..< 3 { off.add(event(.gckHeartbeat, Double(i), from: a, to: b, flow: flow), to: &all) }
        XCTAssertEqual(all.count, 3)
    }

    func testEachKindFoldsWithinItsOwnGap() {
        var c = EventCoalescer()   // app keep-alives 6 s, session traffic 15 s
        var out: [PeerEvent] = []
        for i in 0 ..< 4 { c.add(event(.gckHeartbeat, Double(i) * 5.8, from: a, to: b, flow: flow), to: &out) }
        XCTAssertEqual(out.count, 1, "heartbeats 5.8 s apart are one run")
        for i in 0 ..< 3 { c.add(event(.appKeepAlive, 100 + Double(i) * 7, from: a, to: b, flow: flow), to: &out) }
        XCTAssertEqual(out.count, 4, "keep-alives 7 s apart are a silence the app detector must see")
    }

    func testPruneForgetsIdleRuns() {
        var c = EventCoalescer(gap: 5 * CaptureTime.second)
        var out: [PeerEvent] = []
        c.add(event(.gckHeartbeat, 0, from: a, to: b, flow: flow), to: &out)
        c.prune(at: CaptureTime.nanos(seconds: 3), events: out)
        c.add(event(.gckHeartbeat, 4, from: a, to: b, flow: flow), to: &out)
        XCTAssertEqual(out.count, 1, "still open at 3 s")
        c.prune(at: CaptureTime.nanos(seconds: 10), events: out)
        c.add(event(.gckHeartbeat, 8.5, from: a, to: b, flow: flow), to: &out)
        XCTAssertEqual(out.count, 2, "pruned at 10 s: a late arrival starts a new event")
    }
}

final class JSONWriterTests: XCTestCase {
    func testScalarsAndEscapesByteForByte() {
        XCTAssertEqual(JSONValue.int(Int64.min).jsonText, "-9223372036854775808")
        XCTAssertEqual(JSONValue.int(0).jsonText, "0")
        XCTAssertEqual(JSONValue.int(-42).jsonText, "-42")
        XCTAssertEqual(JSONValue.uint(UInt64.max).jsonText, "18446744073709551615")
        XCTAssertEqual(JSONValue.double(1.5).jsonText, "1.5")
        XCTAssertEqual(JSONValue.double(.nan).jsonText, "null")
        XCTAssertEqual(JSONValue.string("a\"b\\c\n\r\t\u{01}\u{1F}é😀").jsonText, #""a\"b\\c\n\r\t\u0001\u001fé😀""#)
        let v = JSONValue.object([("k", .array([.int(1), .null, .bool(true)])), ("e", .object([]))])
        XCTAssertEqual(v.jsonText, #"{"k":[1,null,true],"e":{}}"#)
        XCTAssertEqual(try JSONParser.parse(JSONValue.string("\u{00}x").jsonText).stringValue, "\u{00}x")
    }

    func testIndentedTextKeepsShortScalarContainersOnOneLine() {
        let long = String(repeating: "x", count: 120)
        let v = JSONValue.object([
            ("evidence", .array([.object([("input", .int(0)), ("frame", .uint(7))])])),
            ("long", .array([.string(long)])),
        ])
        XCTAssertEqual(v.prettyText, """
        {
          "evidence": [
            {"input": 0, "frame": 7}
          ],
          "long": [
            "\(long)"
          ]
        }
        """)
    }
}

/// Issue 14: the event catalogue is the one place kinds are declared.
final class EventCatalogueCoreTests: XCTestCase {
    func testStepsRolesAndCoalescingComeFromTheCatalogue() {
        let ev = Evidence.frame(input: 0, frame: 1)
        func event(_ k: EventKind, _ attrs: [String: String] = [:]) -> PeerEvent {
            PeerEvent(kind: k, t: 0, evidence: ev, source: "t", attrs: attrs)
        }
        XCTAssertEqual(EventCatalogue.step(event(.gckDD)), TimelineStep(.gckHandshake, "O"))
        XCTAssertEqual(EventCatalogue.step(event(.inviteResponse, ["accepted": "no"])), TimelineStep(.invitationDeclined, "N"))
        XCTAssertEqual(EventCatalogue.step(event(.inviteResponse, ["accepted": "true"])), TimelineStep(.invitationAccepted, "A"))
        XCTAssertEqual(EventCatalogue.step(event(.tcpOpened)), .other, "a TCP connection that is no invitation channel")
        XCTAssertEqual(EventCatalogue.step(event("user.lobby")), .other)
        XCTAssertEqual(EventCatalogue.role(event(.stateChange, ["to": "Connecting"])), .start)
        XCTAssertEqual(EventCatalogue.role(event(.stateChange, ["to": "Connected"])), .traffic)
        XCTAssertEqual(EventCatalogue.role(event(.disconnected)), .attach)
        XCTAssertEqual(EventCatalogue.label(.gckLSAACK), "LSAACK")
        XCTAssertEqual(EventCoalescer.steadyKinds, [.appKeepAlive, .gckHeartbeat, .gckData, .dtlsApplicationData, .identityAdvertised])
        XCTAssertEqual(EventCoalescer.peerKinds, [.identityAdvertised], "folded per peer, without a flow")
        XCTAssertEqual(EventCoalescer.defaultGaps[.appKeepAlive], 6 * CaptureTime.second)
        XCTAssertEqual(EventCoalescer.defaultGaps[.gckHeartbeat], 15 * CaptureTime.second)
    }

    func testEachKindIsDeclaredOnceInItsFamily() {
        var seen: Set<EventKind> = []
        for spec in EventCatalogue.entries {
            XCTAssertTrue(seen.insert(spec.kind).inserted, "\(spec.kind) twice")
            XCTAssertTrue(spec.kind.isIn(spec.family), "\(spec.kind) in \(spec.family)")
            XCTAssertFalse(spec.summary.isEmpty, "\(spec.kind) has a one-line meaning")
        }
        XCTAssertEqual(EventCatalogue.byKind.count, EventCatalogue.entries.count)
    }

    func testTypedAttributes() {
        var e = PeerEvent(kind: .icmpUnreachable, t: 0, evidence: .frame(input: 0, frame: 1), source: "t",
                          attrs: ["reporter": "192.0.2.1", "accepted": "yes"])
        XCTAssertEqual(e[.reporter], IPAddress("192.0.2.1"))
        XCTAssertEqual(e[.accepted], true)
        e[.atEnd] = false
        XCTAssertEqual(e.attrs["atEnd"], "false")
        e.attrs["reporter"] = "not an address"
        XCTAssertNil(e[.reporter], "a value that is not of the type reads as absent")
        XCTAssertNil(e.quotedFlow, "no flow")
    }
}

final class DiagnosticLimiterTests: XCTestCase {
    func testKeepsTheFirstOfEachIDAndCountsTheTrueTotal() {
        var l = DiagnosticLimiter(keptPerID: 2)
        let admitted = ["a", "a", "b", "a", "a", "b", "c"].map { l.admit($0) }
        XCTAssertEqual(admitted, [true, true, true, false, false, true, true])
        XCTAssertEqual(l.totals, ["a": 4, "b": 2, "c": 1])
        XCTAssertEqual(l.overflow.map(\.id), ["a"])
        XCTAssertEqual(l.overflow.first?.notKept, 2)
        XCTAssertEqual(l.overflow.first?.total, 4)
        l.reset()
        XCTAssertTrue(l.overflow.isEmpty)
        XCTAssertTrue(l.admit("a"))
    }

    /// One collector for every stage: kept in arrival order under one per-id limit, every one counted,
    /// and what a stage read apart (a log) absorbed with its true totals.
    func testCollectorKeepsInOrderUnderOneLimitAndAbsorbsTotals() {
        let c = DiagnosticCollector(keptPerID: 2)
        for id in ["a", "b", "a", "a"] { c.record(Diagnostic(id: id, message: id)) }
        XCTAssertTrue(c.admit("b"))
        c.keep(Diagnostic(id: "b", message: "built after admit"))
        XCTAssertFalse(c.admit("b"), "past the limit: not even built")
        XCTAssertEqual(c.kept.map(\.id), ["a", "b", "a", "b"])
        XCTAssertEqual(c.totals, ["a": 3, "b": 3])
        XCTAssertEqual(c.count, 6)
        // A log kept 2 of its 40 `log.x` and has one pattern problem it counted nowhere.
        c.absorb(kept: [Diagnostic(id: "log.x", message: "1"), Diagnostic(id: "log.x", message: "2"),
                        Diagnostic(id: "log.patterns.invalid", message: "p")], totals: ["log.x": 40])
        XCTAssertEqual(c.totals["log.x"], 40)
        XCTAssertEqual(c.totals["log.patterns.invalid"], 1)
        XCTAssertEqual(c.count, 47)
        XCTAssertEqual(c.kept.count, 7)
        // The run's limit applies to what is absorbed too; carrying on from a finished stage keeps its state.
        let d = DiagnosticCollector(keptPerID: 2, continuing: [Diagnostic(id: "a", message: "1")], totals: ["a": 5])
        d.absorb(kept: ["2", "3", "4"].map { Diagnostic(id: "a", message: $0) }, totals: ["a": 9])
        XCTAssertEqual(d.kept.map(\.message), ["1", "2"])
        XCTAssertEqual(d.totals, ["a": 14])
        XCTAssertEqual(d.count, 14)
    }

    func testDeclaredIDsCoverFamilies() {
        XCTAssertTrue(DiagnosticSpec.covers("tcp.truncated", "tcp.truncated"))
        XCTAssertFalse(DiagnosticSpec.covers("tcp.truncated", "tcp.truncated.more"))
        XCTAssertTrue(DiagnosticSpec.covers("mdns.name.*", "mdns.name.loop"))
        XCTAssertFalse(DiagnosticSpec.covers("mdns.name.*", "mdns.other"))
        XCTAssertTrue(DiagnosticSpec.covers("*.handoff.depth", "app-json.handoff.depth"))
        XCTAssertFalse(DiagnosticSpec.covers("*.handoff.depth", "app-json.handoff"))
        let layer = DiagnosticLayer(name: "t", summary: "t", diagnostics: [.id("x.y", .info, "m")])
        XCTAssertEqual(layer.spec(for: "x.y")?.severity, .info)
        XCTAssertNil(layer.spec(for: "x.z"))
    }
}
