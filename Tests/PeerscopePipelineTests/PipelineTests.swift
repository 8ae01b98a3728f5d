import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// Records what it was given; claims and probe behaviour are set per subclass.
class Recorder: DecoderPlugin {
    class var descriptor: PluginDescriptor { PluginDescriptor(id: "rec", summary: "", claims: [], messageTypes: []) }
    required init() {}
    nonisolated(unsafe) static var log: [String] = []
    func probe(_ input: PluginInput) -> ProbeResult { .accept }
    func decode(_ input: PluginInput, _ ctx: PluginContext) {
        Self.log.append("\(Self.descriptor.id):\(String(decoding: input.payload.array, as: UTF8.self))")
    }
}

final class PortA: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "a", summary: "", claims: [.udpPorts(5000...5001)], messageTypes: []) }
    override func probe(_ input: PluginInput) -> ProbeResult { input.payload.byte(0) == UInt8(ascii: "A") ? .accept : .reject }
}

final class Heuristic: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "h", summary: "", claims: [.udpHeuristic, .tcpHeuristic], messageTypes: []) }
    override func probe(_ input: PluginInput) -> ProbeResult {
        if case .stream = input.delivery {
            // Needs 3 bytes to decide, accepts streams starting with "HEY".
            if input.payload.count < 3 { return .needMoreBytes }
            return input.payload.starts(with: Array("HEY".utf8)) ? .accept : .reject
        }
        return input.payload.byte(0) == UInt8(ascii: "H") ? .accept : .reject
    }
}

/// Hands its payload minus the first byte on to "inner".
final class Outer: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "outer", summary: "", claims: [.udpPorts(7000...7000)], messageTypes: []) }
    override func decode(_ input: PluginInput, _ ctx: PluginContext) {
        super.decode(input, ctx)
        ctx.handOff("inner", key: input.payload.byte(0).map { String(UnicodeScalar($0)) }, payload: input.payload.suffix(from: 1))
    }
}

final class InnerX: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "x", summary: "", claims: [.carried("inner", key: "x")], messageTypes: []) }
}

final class InnerAny: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "any", summary: "", claims: [.carried("inner")], messageTypes: []) }
    override func decode(_ input: PluginInput, _ ctx: PluginContext) {
        super.decode(input, ctx)
        // Re-wraps forever: the pipeline must cut the recursion.
        ctx.handOff("inner", key: "loop", payload: input.payload)
    }
}

final class PipelineTests: XCTestCase {
    let frame = FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1)
    func ep(_ p: UInt16) -> Endpoint { Endpoint(.v4(0x0A00_0001), p) }

    override func setUp() { Recorder.log = [] }

    func udp(_ s: String, _ src: UInt16, _ dst: UInt16) -> TransportUnit {
        .udp(frame: frame, flow: FlowKey(.udp, ep(src), ep(dst)), payload: Bytes(Array(s.utf8)))
    }

    func testPortClaimsProbeFirstThenHeuristicsAndUnclaimedIsCounted() {
        let p = PluginPipeline(plugins: [Heuristic.self, PortA.self], context: PluginContext())
        p.process(udp("A1", 40000, 5001))   // port claim, probe accepts
        p.process(udp("H2", 5000, 40000))   // port claim rejects, heuristic accepts
        p.process(udp("Z3", 1, 2))          // nobody
        XCTAssertEqual(Recorder.log, ["a:A1", "h:H2"])
        XCTAssertEqual(p.unclaimed["udp"], 1)
        XCTAssertEqual(p.framesPerPlugin["a"], 1)
    }

    func testStreamIsPinnedAfterEnoughBytesAndBufferedBytesAreDelivered() {
        let p = PluginPipeline(plugins: [Heuristic.self], context: PluginContext())
        let c = TCPConnectionInfo(id: 1, client: ep(1000), server: ep(2000), sawSYN: true)
        for ch in "HEY there" {
            p.process(.tcpData(frame: frame, connection: c, direction: .toServer, payload: Bytes(Array(String(ch).utf8))))
        }
        XCTAssertEqual(Recorder.log.joined(), "h:HEY" + " there".map { "h:\($0)" }.joined())
        // A second connection that never matches is given up after the probe rejects it.
        let d = TCPConnectionInfo(id: 2, client: ep(1001), server: ep(2000), sawSYN: true)
        p.process(.tcpData(frame: frame, connection: d, direction: .toServer, payload: Bytes(Array("NOPE".utf8))))
        XCTAssertEqual(p.unclaimed["tcp"], 1)
    }

    func testHandOffGoesToKeyedClaimantAndRecursionIsBounded() {
        let ctx = PluginContext()
        var diagnostics: [Diagnostic] = []
        ctx.onDiagnostic = { diagnostics.append($0) }
        let p = PluginPipeline(plugins: [Outer.self, InnerX.self, InnerAny.self], context: ctx)
        p.process(udp("xhello", 7000, 7000))
        XCTAssertEqual(Recorder.log, ["outer:xhello", "x:hello"])
        Recorder.log = []
        p.process(udp("yhi", 7000, 7000))
        XCTAssertEqual(Recorder.log.first, "outer:yhi")
        XCTAssertEqual(Recorder.log.count, 1 + p.maxHandOffDepth, "the loop stops at the depth limit")
        XCTAssertEqual(diagnostics.map(\.id), ["any.handoff.depth"])
    }
}

/// Records the parsed value handed on with the payload.
final class ParsedRecorder: Recorder {
    override class var descriptor: PluginDescriptor { PluginDescriptor(id: "parsed", summary: "", claims: [.carried("app.json", key: "probe_type")], messageTypes: []) }
    nonisolated(unsafe) static var parsed: [JSONValue] = []
    override func decode(_ input: PluginInput, _ ctx: PluginContext) {
        if let v = input.parsed as? JSONValue { Self.parsed.append(v) }
    }
}

final class ParsedHandOffTests: XCTestCase {
    func testAHandOffCarriesTheParsedValueWithTheBytes() throws {
        ParsedRecorder.parsed = []
        let ctx = PluginContext()
        let p = PluginPipeline(plugins: [AppJSONPlugin.self, ParsedRecorder.self], context: ctx)
        let frame = FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1)
        let flow = FlowKey(.udp, Endpoint(.v4(0x0A00_0001), 40000), Endpoint(.v4(0x0A00_0002), 40001))
        p.process(.udp(frame: frame, flow: flow, payload: Bytes(Array(#"{"type":"probe_type","n":7}"#.utf8))))
        XCTAssertEqual(ParsedRecorder.parsed.first?["n"], .int(7), "the framing plugin's parse, not a second one")
    }

    func testMessagePluginsUseTheParsedValue() {
        // No bytes at all: only the parsed object can give the device ID.
        let ctx = PluginContext()
        var events: [PeerEvent] = []
        ctx.onEvent = { events.append($0) }
        let frame = FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1)
        let input = PluginInput(frame: frame, delivery: .carried(carrier: "app.json", key: "handshake", parent: "app-json"),
                                flow: nil, payload: Bytes([]),
                                parsed: JSONValue.object([("type", "handshake"), ("deviceId", "D-1")]))
        ctx.currentInput = input
        AppHandshakePlugin().decode(input, ctx)
        XCTAssertEqual(events.first?.attrs["deviceId"], "D-1")
    }
}

final class RegistryTests: XCTestCase {
    func testRegistryIdsAreUniqueAndEveryPluginClaimsSomething() {
        let ds = PluginRegistry.decoders.map { $0.descriptor }
        XCTAssertEqual(Set(ds.map(\.id)).count, ds.count, "duplicate plugin ids: \(ds.map(\.id))")
        for d in ds {
            XCTAssertFalse(d.claims.isEmpty, "\(d.id) claims nothing")
            XCTAssertFalse(d.summary.isEmpty, "\(d.id) has no summary")
        }
        // A catch-all for a carrier must come after the keyed claimants of the same carrier.
        for (i, d) in ds.enumerated() {
            for case .carried(let c, nil) in d.claims {
                let keyedLater = ds[(i + 1)...].contains { $0.claims.contains { if case .carried(c, .some) = $0 { true } else { false } } }
                XCTAssertFalse(keyedLater, "\(d.id) takes every '\(c)' payload before a keyed plugin can")
            }
        }
    }
}
