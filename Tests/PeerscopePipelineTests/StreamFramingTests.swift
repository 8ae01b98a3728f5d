import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// A toy protocol framed by the pipeline: `u8 length, body`; length 0xFF is junk (skip one byte),
/// 0xFE gives the direction up. Records frames as "offset:body(parsed length)".
final class ToyFramed: StreamFramingPlugin {
    static let descriptor = PluginDescriptor(id: "toy", summary: "", claims: [.tcpHeuristic], messageTypes: [],
                                             diagnostics: [DiagnosticSpec("overflow", .warning, ""), DiagnosticSpec("junk", .info, ""),
                                                           DiagnosticSpec("gap", .info, ""), DiagnosticSpec("left", .info, "")])
    static let streamLimits = StreamLimits(maxBuffered: 64, overflowProblem: "overflow")
    nonisolated(unsafe) static var frames: [String] = []
    /// Whether a gap drops what is buffered.
    nonisolated(unsafe) static var dropOnGap = true
    /// At each `end` with bytes left: whether the buffer still viewed a delivery (HotPathPipelineTests).
    nonisolated(unsafe) static var endViews: [Bool] = []
    init() {}
    func probe(_ input: PluginInput) -> ProbeResult { input.payload.count < 3 ? .needMoreBytes : .accept }

    final class Framer: StreamFramer {
        func frame(_ buffer: StreamBuffer, _ ctx: PluginContext) -> FrameResult {
            guard let n = buffer.bytes.byte(0) else { return .needMore }
            if n == 0xFF {
                ctx.diagnose("junk", "junk at \(buffer.offset)", offset: buffer.offset)
                return .skip(1)
            }
            if n == 0xFE { return .giveUp }
            if n == 0xFC { return .skip(1 + 100) }  // a frame too large to keep: skipped as it streams by
            guard buffer.count >= 1 + Int(n) else { return .needMore }
            return .frame(length: 1 + Int(n), payload: 1 ..< 1 + Int(n), parsed: Int(n))
        }
        func gap(_ buffer: StreamBuffer, _ ctx: PluginContext) -> Bool {
            ctx.diagnose("gap", "gap with \(buffer.count) buffered", offset: buffer.offset)
            return ToyFramed.dropOnGap
        }
        func end(_ buffer: StreamBuffer, atEndOfInput: Bool, _ ctx: PluginContext) {
            if !buffer.isEmpty {
                ToyFramed.endViews.append(buffer.isViewingDelivery)
                ctx.onDiagnostic(Diagnostic(id: "toy.left", severity: .info, message: "\(buffer.count) left at end=\(atEndOfInput)",
                                            evidence: buffer.lastFrame?.evidence, offset: buffer.offset, t: ctx.now))
            }
        }
    }

    func makeFramer(_ connection: TCPConnectionInfo, _ direction: TCPDirection) -> any StreamFramer { Framer() }

    func decode(_ input: PluginInput, _ ctx: PluginContext) {
        Self.frames.append("\(input.streamOffset ?? -1):\(String(decoding: input.payload.array, as: UTF8.self))(\(input.parsed as? Int ?? -1))")
    }
}

final class StreamFramingTests: XCTestCase {
    let conn = TCPConnectionInfo(id: 9, client: Endpoint(.v4(0x0A00_0001), 50000), server: Endpoint(.v4(0x0A00_0002), 7000), sawSYN: true)
    var pipeline: PluginPipeline!
    var diagnostics: [Diagnostic] = []
    var number: UInt64 = 0

    override func setUp() {
        ToyFramed.frames = []
        ToyFramed.dropOnGap = true
        diagnostics = []
        let ctx = PluginContext()
        ctx.onDiagnostic = { [unowned self] in self.diagnostics.append($0) }
        pipeline = PluginPipeline(plugins: [ToyFramed.self], context: ctx)
    }

    func send(_ bytes: [UInt8], _ dir: TCPDirection = .toServer) {
        number += 1
        pipeline.process(.tcpData(frame: FrameInfo(input: 0, number: number, t: Nanos(number), capturedLength: 0, originalLength: 0, linkType: 1),
                                  connection: conn, direction: dir, payload: Bytes(bytes)))
    }

    func event(_ e: TCPEvent, _ dir: TCPDirection = .toServer) {
        number += 1
        pipeline.process(.tcpEvent(frame: FrameInfo(input: 0, number: number, t: Nanos(number), capturedLength: 0, originalLength: 0, linkType: 1),
                                   connection: conn, direction: dir, event: e))
    }

    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testFramesSplitAcrossDeliveriesAndSeveralInOneAreCutWithTheirOffsets() {
        send([3] + bytes("ab"))
        XCTAssertEqual(ToyFramed.frames, [], "a frame is handed on only when whole")
        send(bytes("c") + [2] + bytes("de") + [1])
        send(bytes("f"))
        XCTAssertEqual(ToyFramed.frames, ["1:abc(3)", "5:de(2)", "8:f(1)"])
        XCTAssertEqual(pipeline.framesPerPlugin["toy"], 3, "counted per delivery, as before the pipeline framed")
    }

    func testBothDirectionsHaveTheirOwnBufferAndOffsets() {
        send([2] + bytes("a"))
        send([1] + bytes("z"), .toClient)
        send(bytes("b"))
        XCTAssertEqual(ToyFramed.frames, ["1:z(1)", "1:ab(2)"])
    }

    func testSkipBeyondTheBufferDiscardsWhatStreamsByAndJunkIsReported() {
        send([0xFF, 0xFC] + [UInt8](repeating: 0x41, count: 40))
        send([UInt8](repeating: 0x41, count: 60) + [1] + bytes("x"))
        XCTAssertEqual(ToyFramed.frames, ["103:x(1)"])
        XCTAssertEqual(diagnostics.map(\.id), ["toy.junk"])
        XCTAssertEqual(diagnostics.first?.offset, 0)
    }

    func testTheBoundIsThePipelinesAndOverflowGivesTheDirectionUp() {
        send([200] + [UInt8](repeating: 0x42, count: 70))
        XCTAssertEqual(diagnostics.map(\.id), ["toy.overflow"])
        XCTAssertEqual(diagnostics.first?.severity, .error)
        XCTAssertEqual(diagnostics.first?.evidence, .frame(input: 0, frame: 1))
        send([1] + bytes("y"))
        XCTAssertEqual(ToyFramed.frames, [], "a given-up direction is not decoded any more")
        send([1] + bytes("k"), .toClient)
        XCTAssertEqual(ToyFramed.frames, ["1:k(1)"], "the other direction still is")
    }

    func testGiveUpStopsTheDirectionQuietly() {
        send([1] + bytes("a") + [0xFE, 1] + bytes("b"))
        send([1] + bytes("c"))
        XCTAssertEqual(ToyFramed.frames, ["1:a(1)"])
        event(.closed)
        XCTAssertEqual(diagnostics.map(\.id), [], "nothing left over is reported for a stopped direction")
    }

    func testAGapIsForwardedAndTheFramerDecidesWhetherTheBufferGoes() {
        send([5] + bytes("abc"))
        event(.gap)
        send([1] + bytes("z"))
        XCTAssertEqual(diagnostics.map(\.message), ["gap with 4 buffered"])
        XCTAssertEqual(ToyFramed.frames, ["5:z(1)"], "the partial frame was dropped; offsets count the lost bytes' place")

        setUp()
        ToyFramed.dropOnGap = false
        send([5] + bytes("abc"))
        event(.gap)
        send(bytes("de"))
        XCTAssertEqual(ToyFramed.frames, ["1:abcde(5)"], "kept when the framer says so")
    }

    func testWhatIsLeftIsReportedAtCloseAndAtEndOfInputWithTheLastFrameAsEvidence() {
        send([4] + bytes("ab"))
        send([3] + bytes("x"), .toClient)
        event(.closed)
        XCTAssertEqual(diagnostics.map(\.message), ["3 left at end=false", "2 left at end=false"])
        XCTAssertEqual(diagnostics.map(\.evidence), [.frame(input: 0, frame: 1), .frame(input: 0, frame: 2)])

        setUp()
        send([4] + bytes("ab"))
        pipeline.finish(100)
        XCTAssertEqual(diagnostics.map(\.message), ["3 left at end=true"])
    }

    func testBytesBufferedWhileProbingReachTheFramer() {
        // The probe wants 3 bytes: the first delivery waits in the pipeline's buffer, then reaches the framer.
        send([2] + bytes("q"), .toClient)
        send(bytes("r"), .toClient)
        XCTAssertEqual(ToyFramed.frames, ["1:qr(2)"])
    }

    func testStreamBufferCompactsWithoutLosingOffsets() {
        var b = StreamBuffer()
        for i in 0 ..< 100 {
            b.append(Bytes([UInt8](repeating: UInt8(i), count: 100)))
            XCTAssertEqual(b.consume(90), 90)
        }
        XCTAssertEqual(b.offset, 9000)
        XCTAssertEqual(b.count, 1000)
        XCTAssertEqual(b.bytes.byte(0), 90)
        XCTAssertEqual(b.consume(5000), 1000, "never more than is buffered")
        b.clear()
        XCTAssertTrue(b.isEmpty)
        XCTAssertEqual(b.offset, 10000)
    }

    /// Issue 13: a busy capture's TCP connections are mostly never claimed, and each has an entry in the
    /// pipeline's stream table for as long as it is open: the entry is a reference and a tag (a waiting
    /// connection's buffers are boxed), not two stream buffers inline.
    func testAConnectionsStreamTableEntryIsOneReferenceWide() {
        XCTAssertLessThanOrEqual(PluginPipeline.streamStateStride, 16)
    }
}
