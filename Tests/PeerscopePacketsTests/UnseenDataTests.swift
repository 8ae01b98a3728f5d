@testable import PeerscopeCore
@testable import PeerscopePackets
import XCTest

/// Issue 11: TCP data the receiver acknowledged but the capture never saw is a `CaptureLoss` with
/// reason `unseenData` per connection (count = bytes, window = the capture times around the hole).
final class UnseenDataTests: XCTestCase {
    static let t0: Nanos = 1_000_000_000
    /// Frames one millisecond apart from `t0`; the decoder and its sink once finished.
    func run(_ frames: [[UInt8]]) -> (PacketDecoder, Sink) {
        let d = PacketDecoder(options: .init())
        let s = Sink()
        for (i, f) in frames.enumerated() {
            s.feed(d, Build.frame(f, number: UInt64(i + 1), t: Self.t0 + Nanos(i) * 1_000_000))
        }
        s.finish(d)
        return (d, s)
    }
    func t(_ frameIndex: Int) -> Nanos { Self.t0 + Nanos(frameIndex) * 1_000_000 }

    func testAHoleTheReceiverAcknowledgedIsUnseenData() throws {
        let c = Conversation()
        // Client bytes 100..<150 never captured; the server acknowledges up to 250.
        let (d, s) = run([c.syn, c.synAck, c.ack, c.data(true, at: 0, pattern(100, seed: 1)), c.data(true, at: 150, pattern(100, seed: 2)),
                          c.seg(false, seq: c.sISN &+ 1, ack: c.cISN &+ 1 &+ 250, flags: Build.ACK)])
        XCTAssertEqual(s.eventNames.filter { $0.hasPrefix("gap") }, ["gap/toServer"])
        let l = try XCTUnwrap(d.unseenDataLosses.first)
        XCTAssertEqual(d.unseenDataLosses.count, 1)
        XCTAssertEqual(l.reason, .unseenData)
        XCTAssertEqual(l.count, 50)
        // From the last in-order data before the hole to the acknowledgement that gave up on it.
        XCTAssertEqual(l.start, t(3))
        XCTAssertEqual(l.end, t(5))
        XCTAssertEqual(l.source, "tcp#1 10.0.0.1:50000 > 10.0.0.2:7000")
        XCTAssertTrue(l.makesInputIncomplete)
    }

    func testAnAcknowledgementBeyondEverythingSeenIsUnseenData() throws {
        let c = Conversation()
        // The client's last 200 bytes (100..<300) were never captured, but the server acknowledged them.
        let (d, _) = run([c.syn, c.synAck, c.ack, c.data(true, at: 0, pattern(100, seed: 1)),
                          c.seg(false, seq: c.sISN &+ 1, ack: c.cISN &+ 1 &+ 100, flags: Build.ACK),
                          c.seg(false, seq: c.sISN &+ 1, ack: c.cISN &+ 1 &+ 300, flags: Build.ACK)])
        XCTAssertEqual(d.unseenDataLosses.map(\.count), [200])
        XCTAssertEqual(d.unseenDataLosses.first?.start, t(3))
        XCTAssertEqual(d.unseenDataLosses.first?.end, t(5))
    }

    func testDataCapturedAfterItsAcknowledgementIsNotLost() {
        let c = Conversation()
        // Merged interfaces can put the ACK before the data it acknowledges: nothing was missed.
        let (d, s) = run([c.syn, c.synAck, c.ack,
                          c.seg(false, seq: c.sISN &+ 1, ack: c.cISN &+ 1 &+ 100, flags: Build.ACK),
                          c.data(true, at: 0, pattern(100, seed: 1)), c.fin(true, at: 100), c.fin(false, at: 0)])
        XCTAssertEqual(s.stream(.toServer), pattern(100, seed: 1))
        XCTAssertEqual(d.unseenDataLosses, [])
    }

    func testACleanConversationAndKeepAlivesLoseNothing() {
        let c = Conversation()
        let (d, _) = run([c.syn, c.synAck, c.ack, c.data(true, at: 0, pattern(300, seed: 1)), c.data(false, at: 0, pattern(20, seed: 2)),
                          c.seg(false, seq: c.sISN &+ 21, ack: c.cISN &+ 301, flags: Build.ACK),
                          // A keep-alive: one below the next byte, acknowledged with the next byte.
                          c.seg(true, seq: c.cISN &+ 300, ack: c.sISN &+ 21, flags: Build.ACK),
                          c.seg(false, seq: c.sISN &+ 21, ack: c.cISN &+ 301, flags: Build.ACK),
                          c.fin(true, at: 300), c.seg(false, seq: c.sISN &+ 21, ack: c.cISN &+ 302, flags: Build.FIN | Build.ACK)])
        XCTAssertEqual(d.unseenDataLosses, [])
        // Picked up mid-stream on a keep-alive (no SYN, no data yet): its sequence space is one byte
        // off, so its acknowledgement proves nothing.
        let (d2, _) = run([c.seg(true, seq: c.cISN &+ 300, ack: c.sISN &+ 21, flags: Build.ACK),
                           c.seg(false, seq: c.sISN &+ 21, ack: c.cISN &+ 301, flags: Build.ACK)])
        XCTAssertEqual(d2.unseenDataLosses, [])
    }

    // MARK: one-sided TCP

    func testAConnectionSeenOneWayWhileItsAcksMoveIsOneSided() throws {
        let c = Conversation()
        // Only the client's segments: its acknowledgements take in 100 bytes the server sent, none captured.
        let (d, _) = run([c.syn, c.ack, c.data(true, at: 0, pattern(40, seed: 1)),
                          c.seg(true, seq: c.cISN &+ 41, ack: c.sISN &+ 101, flags: Build.ACK)])
        let l = try XCTUnwrap(d.oneSidedLosses.first)
        XCTAssertEqual(d.oneSidedLosses.count, 1)
        XCTAssertEqual(l.reason, .oneSided)
        XCTAssertEqual(l.source, "tcp 10.0.0.1:50000 > 10.0.0.2:7000 seen, nothing from 10.0.0.2:7000; its acknowledgements moved 100 bytes")
        XCTAssertEqual(l.flow, FlowKey(.tcp, Endpoint(Build.ip("10.0.0.1"), 50000), Endpoint(Build.ip("10.0.0.2"), 7000)))
        XCTAssertEqual(l.start, t(0))
        XCTAssertEqual(l.end, t(3))
        XCTAssertEqual(d.unseenDataLosses, [], "the direction never seen has no sequence space to have holes in")
        // The trace keeps the flow.
        XCTAssertEqual(EventTrace.loss(EventTrace.json(l)), l)
    }

    func testUnansweredSYNsAndBothDirectionsAreNotOneSided() {
        let c = Conversation()
        // A SYN sent again and again, never answered: the failure itself, not a capture that missed a side.
        let (d, _) = run([c.syn, c.syn, c.syn])
        XCTAssertEqual(d.oneSidedLosses, [])
        // Both directions seen.
        let (d2, _) = run([c.syn, c.synAck, c.ack, c.data(false, at: 0, pattern(100, seed: 1)),
                           c.seg(true, seq: c.cISN &+ 1, ack: c.sISN &+ 101, flags: Build.ACK)])
        XCTAssertEqual(d2.oneSidedLosses, [])
        // One way, acknowledgements that never move (a client that only sends): nothing says the server spoke.
        let (d3, _) = run([c.ack, c.data(true, at: 0, pattern(100, seed: 1)), c.data(true, at: 100, pattern(100, seed: 2))])
        XCTAssertEqual(d3.oneSidedLosses, [])
    }
}
