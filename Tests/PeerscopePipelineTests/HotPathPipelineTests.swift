import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// Issue 13, the per-packet path: a TCP delivery with nothing pending is framed in place (no copy),
/// one that completes a pending frame is copied behind it; app JSON from GCK Data is parsed once.
/// Each test states the exact outcome, so a fast path that changed results fails here.
final class StreamBufferInPlaceTests: XCTestCase {
    func testADeliveryWithNothingPendingIsViewedInPlaceAndConsumed() {
        var b = StreamBuffer()
        let delivery = Bytes(storage: Array("xxHELLOyy".utf8), lower: 2, count: 5)
        b.append(delivery)
        XCTAssertTrue(b.isViewingDelivery)
        XCTAssertEqual(b.bytes.array, Array("HELLO".utf8))
        XCTAssertEqual(b.consume(2), 2)
        XCTAssertEqual(b.bytes.array, Array("LLO".utf8))
        XCTAssertEqual(b.offset, 2)
        XCTAssertEqual(b.consume(10), 3)
        XCTAssertTrue(b.isEmpty)
        XCTAssertFalse(b.isViewingDelivery)
        XCTAssertEqual(b.offset, 5)
    }

    func testADeliveryCompletingAPendingFrameIsCopiedBehindIt() {
        var b = StreamBuffer()
        let first = Array("abcdef".utf8)
        b.append(Bytes(first))
        b.consume(4)                      // "ef" pending, still in the first delivery's storage
        b.append(Bytes(Array("GHI".utf8)))
        XCTAssertFalse(b.isViewingDelivery, "pending bytes and the new delivery are copied together")
        XCTAssertEqual(b.bytes.array, Array("efGHI".utf8))
        b.append(Bytes(Array("J".utf8)))  // appended to the buffer's own storage
        XCTAssertEqual(b.bytes.array, Array("efGHIJ".utf8))
        XCTAssertEqual(b.offset, 4)
        XCTAssertEqual(first, Array("abcdef".utf8), "the delivery's bytes are never written")
        b.clear()
        XCTAssertEqual(b.offset, 10)
        XCTAssertTrue(b.isEmpty)
        b.append(Bytes(Array("K".utf8)))
        XCTAssertTrue(b.isViewingDelivery, "after a clear the next delivery is viewed in place again")
    }

    func testDetachCopiesOnlyWhatIsPendingOutOfTheDelivery() {
        var b = StreamBuffer()
        let block = Array(repeating: UInt8(7), count: 4096) + Array("tail".utf8)
        b.append(Bytes(storage: block, lower: 4090, count: 10))
        b.consume(6)
        b.detach()
        XCTAssertFalse(b.isViewingDelivery)
        XCTAssertEqual(b.bytes.array, Array("tail".utf8))
        XCTAssertEqual(b.bytes.storage.count, 4, "only the pending bytes are kept, not the delivery's block")
        XCTAssertEqual(b.offset, 6)
    }

    /// A partial frame left after a delivery waits in the buffer's own storage (the framer's `end` sees it).
    func testAPartialFrameLeftAfterADeliveryIsNotAViewOfIt() {
        let conn = TCPConnectionInfo(id: 4, client: Endpoint(.v4(0x0A00_0001), 50002), server: Endpoint(.v4(0x0A00_0002), 7000), sawSYN: true)
        ToyFramed.frames = []
        ToyFramed.endViews = []
        let p = PluginPipeline(plugins: [ToyFramed.self], context: PluginContext())
        let f = FrameInfo(input: 0, number: 1, t: 1, capturedLength: 0, originalLength: 0, linkType: 1)
        p.process(.tcpData(frame: f, connection: conn, direction: .toServer, payload: Bytes([2] + Array("ab".utf8) + [3] + Array("c".utf8))))
        p.process(.tcpEvent(frame: f, connection: conn, direction: .toServer, event: .closed))
        XCTAssertEqual(ToyFramed.frames, ["1:ab(2)"])
        XCTAssertEqual(ToyFramed.endViews, [false], "the 2 bytes left are a copy")
    }

    /// The same toy stream cut three ways gives the same frames at the same offsets: whole frames per
    /// delivery (in place), frames split over deliveries (copied), and one byte at a time.
    func testFramesAreTheSameWhetherDeliveriesStartFreshOrCompleteAPendingFrame() {
        let conn = TCPConnectionInfo(id: 3, client: Endpoint(.v4(0x0A00_0001), 50001), server: Endpoint(.v4(0x0A00_0002), 7000), sawSYN: true)
        let stream: [UInt8] = [3] + Array("abc".utf8) + [2] + Array("de".utf8) + [4] + Array("fghi".utf8) + [1] + Array("j".utf8)
        func run(_ cuts: [Int]) -> [String] {
            ToyFramed.frames = []
            let p = PluginPipeline(plugins: [ToyFramed.self], context: PluginContext())
            var start = 0, n: UInt64 = 0
            for end in cuts + [stream.count] where end > start {
                n += 1
                p.process(.tcpData(frame: FrameInfo(input: 0, number: n, t: Nanos(n), capturedLength: 0, originalLength: 0, linkType: 1),
                                   connection: conn, direction: .toServer, payload: Bytes(Array(stream[start ..< end]))))
                start = end
            }
            return ToyFramed.frames
        }
        let expected = ["1:abc(3)", "5:de(2)", "8:fghi(4)", "13:j(1)"]
        XCTAssertEqual(run([4, 7, 12]), expected, "whole frames, each delivery starting fresh")
        XCTAssertEqual(run([2, 6, 9, 13]), expected, "frames split over deliveries, each completing a pending one")
        XCTAssertEqual(run(Array(1 ..< stream.count)), expected, "one byte at a time")
    }
}

/// Hands each UDP payload on port 7100 on as `gck.data`, as GCK Data does.
final class GCKDataStub: DecoderPlugin {
    static let descriptor = PluginDescriptor(id: "gck-data-stub", summary: "", claims: [.udpPorts(7100 ... 7100)], messageTypes: [])
    init() {}
    func decode(_ input: PluginInput, _ ctx: PluginContext) { ctx.handOff("gck.data", payload: input.payload) }
}

/// Records the app JSON hand-offs: key, bytes and the parsed value.
final class AppJSONRecorder: DecoderPlugin {
    static let descriptor = PluginDescriptor(id: "json-rec", summary: "", claims: [.carried("app.json")], messageTypes: [])
    nonisolated(unsafe) static var seen: [(key: String?, bytes: String, parsed: JSONValue?)] = []
    init() {}
    func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard case .carried(_, let key, _) = input.delivery else { return }
        Self.seen.append((key, String(decoding: input.payload.array, as: UTF8.self), input.parsed as? JSONValue))
    }
}

final class AppJSONFromGCKTests: XCTestCase {
    var pipeline: PluginPipeline!
    var diagnostics: [Diagnostic] = []
    var number: UInt64 = 0
    let flow = FlowKey(.udp, Endpoint(.v4(0x0A00_0001), 7100), Endpoint(.v4(0x0A00_0002), 7100))

    override func setUp() {
        AppJSONRecorder.seen = []
        diagnostics = []
        let ctx = PluginContext()
        ctx.onDiagnostic = { [unowned self] in self.diagnostics.append($0) }
        pipeline = PluginPipeline(plugins: [GCKDataStub.self, AppJSONPlugin.self, AppJSONRecorder.self], context: ctx)
    }

    func send(_ s: String, _ flow: FlowKey? = nil) {
        number += 1
        pipeline.process(.udp(frame: FrameInfo(input: 0, number: number, t: Nanos(number), capturedLength: 0, originalLength: 0, linkType: 1),
                              flow: flow ?? self.flow, payload: Bytes(Array(s.utf8))))
    }

    func testAWholeObjectGoesOnOnceWithItsParsedValueAndTrimmedBytes() {
        send("{\"type\":\"keep_alive\",\"n\":1}\n\0\0")
        XCTAssertEqual(AppJSONRecorder.seen.count, 1)
        XCTAssertEqual(AppJSONRecorder.seen.first?.key, "keep_alive")
        XCTAssertEqual(AppJSONRecorder.seen.first?.bytes, "{\"type\":\"keep_alive\",\"n\":1}")
        XCTAssertEqual(AppJSONRecorder.seen.first?.parsed?["n"], .int(1))
        XCTAssertEqual(diagnostics.map(\.id), [])
    }

    func testAnObjectSplitAcrossThreeDataPayloadsGoesOnOnceWhole() {
        send("{\"type\":\"chat_big\",\"te")
        send("xt\":\"hello, ")
        XCTAssertEqual(AppJSONRecorder.seen.count, 0, "nothing until the object is whole")
        send("world\"}")
        XCTAssertEqual(AppJSONRecorder.seen.map(\.bytes), ["{\"type\":\"chat_big\",\"text\":\"hello, world\"}"])
        XCTAssertEqual(AppJSONRecorder.seen.first?.parsed?["text"], .string("hello, world"))
        XCTAssertEqual(diagnostics.map(\.id), [])
        // The next whole object starts fresh (nothing pending).
        send("{\"type\":\"keep_alive\"}")
        XCTAssertEqual(AppJSONRecorder.seen.map(\.key), ["chat_big", "keep_alive"])
    }

    func testPiecesOnOtherFlowsDoNotMix() {
        let other = FlowKey(.udp, Endpoint(.v4(0x0A00_0003), 7100), Endpoint(.v4(0x0A00_0002), 7100))
        send("{\"type\":\"a\",\"x\":")
        send("{\"type\":\"b\",\"y\":", other)
        send("1}")
        send("2}", other)
        XCTAssertEqual(AppJSONRecorder.seen.map(\.bytes), ["{\"type\":\"a\",\"x\":1}", "{\"type\":\"b\",\"y\":2}"])
    }

    func testACutObjectFollowedByANewOneIsReportedAndTheNewOneGoesOn() {
        send("{\"type\":\"a\",\"x\":")
        send("{\"type\":\"b\"}")
        XCTAssertEqual(AppJSONRecorder.seen.map(\.key), ["b"])
        XCTAssertEqual(diagnostics.map(\.id), ["app-json.incomplete"])
        XCTAssertEqual(diagnostics.first?.message, "16 bytes of a JSON message never completed before the next one")
    }

    func testABrokenContinuationIsInvalidAtItsOffsetInTheJoinedBytes() {
        send("{\"type\":\"a\",\"x\":")
        send("1 2}")
        XCTAssertEqual(AppJSONRecorder.seen.count, 0)
        XCTAssertEqual(diagnostics.map(\.id), ["app-json.invalid"])
        XCTAssertEqual(diagnostics.first?.offset, 18, "the offset in the joined object, after `1 `")
        // The next piece that does not start an object has nothing pending to continue.
        send("x}")
        XCTAssertEqual(AppJSONRecorder.seen.count, 0)
    }

    func testAnObjectBrokenInOnePayloadIsInvalidAndNotKept() {
        send("{\"type\":\"a\"} trailing")
        XCTAssertEqual(AppJSONRecorder.seen.count, 0)
        XCTAssertEqual(diagnostics.map(\.id), ["app-json.invalid"])
        XCTAssertEqual(diagnostics.first?.offset, 13)
        send("{\"type\":\"c\"}")
        XCTAssertEqual(AppJSONRecorder.seen.map(\.key), ["c"])
        XCTAssertEqual(diagnostics.count, 1, "nothing was kept pending from the broken payload")
    }
}

/// Attributes set one by one in place (the plugins' hot path) are the same bytes as the dictionary's.
final class PackedAttributeBuildingTests: XCTestCase {
    func testSettingInAnyOrderGivesTheDictionarysBytes() {
        var rng = SystemRandomNumberGenerator()
        let keys = ["a", "ab", "b", "seq", "kind", "length", "payloadSize", "ä", "Z", ""]
        for _ in 0 ..< 500 {
            var packed = EventAttrs(), dict: [String: String] = [:]
            for _ in 0 ..< Int.random(in: 0 ... 12, using: &rng) {
                let k = keys.randomElement(using: &rng) ?? "a"
                let v: String? = Bool.random(using: &rng) && Int.random(in: 0 ..< 4, using: &rng) == 0 ? nil
                    : String(repeating: "x", count: Int.random(in: 0 ... 200, using: &rng))
                packed[k] = v
                dict[k] = v
            }
            XCTAssertEqual(packed, EventAttrs(dict), "set in this order: \(dict)")
            XCTAssertEqual(packed.dictionary, dict)
        }
        XCTAssertEqual(EventAttrs.typed([.txid: "t1", .kind: "data"]), EventAttrs(["txid": "t1", "kind": "data"]))
    }
}
