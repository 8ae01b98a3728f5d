import PeerscopeCore
import PeerscopePlugins
import XCTest

/// Compression-pointer chains (a hostile message must cost time linear in its size) and malformed
/// payloads on UDP 5353 (diagnosed, never silently dropped).
final class DNSHostileTests: XCTestCase {
    func u16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

    /// As /tmp/audit23/mkchain2.py: question 0 is the root name; each next question up to offset 16384
    /// is a pointer to the previous one (a chain of pointers), then questions pointing at the chain's
    /// top fill the message up to `total` bytes. Returns the message, its question count and chain length.
    func chainMessage(total: Int) -> (bytes: [UInt8], questions: Int, chain: Int) {
        var body: [UInt8] = [0] + u16(12) + u16(1)
        var offsets = [12]
        while 12 + body.count + 6 < 16384 {
            let o = 12 + body.count
            body += u16(0xC000 | (offsets.last ?? 12)) + u16(12) + u16(1)
            offsets.append(o)
        }
        let top = offsets.last ?? 12
        var n = offsets.count
        while 12 + body.count + 6 <= total {
            body += u16(0xC000 | top) + u16(12) + u16(1)
            n += 1
        }
        return ([0, 0, 0, 0] + u16(n) + [0, 0, 0, 0, 0, 0] + body, n, offsets.count)
    }

    func testPointerChainCostsOneHopPerName() {
        let (bytes, n, chain) = chainMessage(total: 65400)
        XCTAssertGreaterThan(chain, 2000)
        // Budget out of the way: every question decodes, one pointer each (earlier names are cached).
        let (m, problems) = DNSMessage.parse(Bytes(bytes), maxPointerHops: 1_000_000)
        XCTAssertEqual(problems, [])
        XCTAssertEqual(m?.questions.count, n)
        XCTAssertEqual(m?.pointerHops, n - 1)
        XCTAssertEqual(m?.questions.last?.name, DNSName.root)
    }

    func testPointerBudgetStopsTheMessageWithADiagnostic() throws {
        let (bytes, n, _) = chainMessage(total: 65400)
        XCTAssertGreaterThan(n, DNSMessage.maxPointerHops)
        let (m, problems) = DNSMessage.parse(Bytes(bytes))
        XCTAssertEqual(problems.map(\.id), ["name.pointer_budget"])
        let msg = try XCTUnwrap(m)
        XCTAssertFalse(msg.complete)
        XCTAssertEqual(msg.pointerHops, DNSMessage.maxPointerHops + 1)
        // Linear work: the questions up to the budget all decoded (following the chain anew for
        // each would have spent the budget within the first ~130).
        XCTAssertEqual(msg.questions.count, DNSMessage.maxPointerHops + 1)
        let offset = try XCTUnwrap(problems.first?.offset)
        XCTAssertEqual(offset, 12 + 5 + 6 * DNSMessage.maxPointerHops, "offset of the pointer over the budget")
    }

    func testChainInsideRdataIsFollowedOnce() {
        // An answer of an unknown type whose rdata is a chain of pointers, each to the previous
        // (the first to a root name), then records whose owner names point at the chain's top.
        let chainLength = 2000, records = 1000
        var msg: [UInt8] = [0, 0, 0x84, 0] + u16(0) + u16(1 + records) + [0, 0, 0, 0]
        msg += [0] + u16(0xFF00) + u16(1) + [0, 0, 0, 10]   // root, TYPE65280, IN, ttl
        let rdataStart = msg.count + 2
        var rdata: [UInt8] = [0]
        for i in 0 ..< chainLength {
            rdata += u16(0xC000 | (rdataStart + (i == 0 ? 0 : 1 + 2 * (i - 1))))
        }
        msg += u16(rdata.count) + rdata
        let top = rdataStart + 1 + 2 * (chainLength - 1)
        for _ in 0 ..< records {
            msg += u16(0xC000 | top) + u16(1) + u16(1) + [0, 0, 0, 10] + u16(4) + [10, 0, 0, 1]
        }
        let (m, problems) = DNSMessage.parse(Bytes(msg))
        XCTAssertEqual(problems, [])
        XCTAssertEqual(m?.records.count, 1 + records)
        // The chain is walked once (the first record: its own pointer, then the chain), then every
        // record reuses its top: one pointer each.
        XCTAssertEqual(m?.pointerHops, chainLength + records)
    }

    func testCachedSuffixesKeepTheirNames() throws {
        // q1 "a.b.local"; q2 "x" + pointer to q1's "b"; q3 pointer to q2; q4 pointer to q2's pointer
        // target ("b.local"), read from the cache.
        var msg: [UInt8] = [0, 0, 0, 0] + u16(4) + [0, 0, 0, 0, 0, 0]
        msg += [1, 0x61, 1, 0x62, 5] + Array("local".utf8) + [0] + u16(12) + u16(1)
        let q2 = msg.count
        msg += [1, 0x78] + u16(0xC000 | 14) + u16(12) + u16(1)
        msg += u16(0xC000 | q2) + u16(12) + u16(1)
        msg += u16(0xC000 | 14) + u16(12) + u16(1)
        let (m, problems) = DNSMessage.parse(Bytes(msg))
        XCTAssertEqual(problems, [])
        XCTAssertEqual(m?.questions.map(\.name.text), ["a.b.local", "x.b.local", "x.b.local", "b.local"])
        XCTAssertEqual(m?.questions.map(\.name.labels.count), [3, 3, 3, 2])
    }

    // MARK: malformed payloads on UDP 5353

    func run(_ payloads: [[UInt8]]) -> (diagnostics: [Diagnostic], messages: [DecodedMessage]) {
        let ctx = PluginContext(options: DecodeOptions(wantsMessages: true))
        let pipeline = PluginPipeline(plugins: [MDNSPlugin.self, AppJSONPlugin.self], context: ctx)
        var diagnostics: [Diagnostic] = [], messages: [DecodedMessage] = []
        ctx.onDiagnostic = { diagnostics.append($0) }
        ctx.onMessage = { messages.append($0) }
        let flow = FlowKey(.udp, Endpoint(.v4(0x0A00_0001), 5353), Endpoint(.v4(0xE000_00FB), 5353))
        for (i, p) in payloads.enumerated() {
            let f = FrameInfo(input: 0, number: UInt64(i + 1), t: 1_800_000_000 * CaptureTime.second, capturedLength: p.count + 42,
                              originalLength: p.count + 42, linkType: LinkType.ethernet)
            pipeline.process(.udp(frame: f, flow: flow, payload: Bytes(p)))
        }
        return (diagnostics, messages)
    }

    func testMalformedPayloadsOnPort5353AreDiagnosed() {
        let r = run([
            [],                                                   // empty
            [0, 0, 0x84, 0, 0],                                   // shorter than a header
            [0, 0, 0x78, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1],  // opcode 15
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3],        // no counts, bytes after the header
            Array(#"{"type":"keep_alive"}"#.utf8),                // not DNS at all
        ])
        XCTAssertEqual(r.diagnostics.map(\.id), ["mdns.header.short", "mdns.header.short", "mdns.header.opcode",
                                                 "mdns.header.empty", "mdns.header.opcode"])
        XCTAssertEqual(r.diagnostics.map(\.evidence), (1 ... 5).map { .frame(input: 0, frame: UInt64($0)) })
        XCTAssertEqual(r.diagnostics.map(\.offset), [0, 0, 2, 4, 2])
        XCTAssertTrue(r.messages.isEmpty, "nothing decoded: \(r.messages.map(\.type))")
        // A header alone is a valid (empty) message.
        let ok = run([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]])
        XCTAssertEqual(ok.diagnostics.map(\.id), [])
        XCTAssertEqual(ok.messages.map(\.type), ["query"])
    }
}
