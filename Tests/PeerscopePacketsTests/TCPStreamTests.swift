import PeerscopeCore
@testable import PeerscopePackets
import XCTest
import PeerscopeSimulator

/// A scripted TCP conversation between a client and a server over Ethernet/IPv4.
struct Conversation {
    var client = "10.0.0.1", server = "10.0.0.2"
    var cport: UInt16 = 50000, sport: UInt16 = 7000
    var cISN: UInt32 = 1000, sISN: UInt32 = 5000

    func seg(_ toServer: Bool, seq: UInt32, ack: UInt32 = 0, flags: UInt8, _ payload: [UInt8] = []) -> [UInt8] {
        let t = toServer ? Build.tcp(cport, sport, seq: seq, ack: ack, flags: flags, payload)
                         : Build.tcp(sport, cport, seq: seq, ack: ack, flags: flags, payload)
        return Build.eth4(Build.ipv4(toServer ? client : server, toServer ? server : client, proto: 6, t))
    }

    var syn: [UInt8] { seg(true, seq: cISN, flags: Build.SYN) }
    var synAck: [UInt8] { seg(false, seq: sISN, ack: cISN &+ 1, flags: Build.SYN | Build.ACK) }
    var ack: [UInt8] { seg(true, seq: cISN &+ 1, ack: sISN &+ 1, flags: Build.ACK) }

    /// Data at stream offset `at` (0 = first byte after the SYN).
    func data(_ toServer: Bool, at: Int, _ bytes: [UInt8], flags: UInt8 = Build.ACK | Build.PSH) -> [UInt8] {
        let isn = toServer ? cISN : sISN
        // Acknowledges nothing past the peer's SYN: always true, whatever order segments are replayed in.
        return seg(toServer, seq: isn &+ 1 &+ UInt32(at), ack: (toServer ? sISN : cISN) &+ 1, flags: flags, bytes)
    }

    func fin(_ toServer: Bool, at: Int) -> [UInt8] { data(toServer, at: at, [], flags: Build.FIN | Build.ACK) }
    func rst(_ toServer: Bool, at: Int) -> [UInt8] { data(toServer, at: at, [], flags: Build.RST | Build.ACK) }
}

func pattern(_ n: Int, seed: UInt8) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) } }

final class TCPStreamTests: XCTestCase {
    func run(_ frames: [[UInt8]], options: PacketOptions = .init(), finish: Bool = false) -> Sink {
        let d = PacketDecoder(options: options)
        let s = Sink()
        for (i, f) in frames.enumerated() {
            s.feed(d, Build.frame(f, number: UInt64(i + 1), t: 1_000_000_000 + Nanos(i) * 1_000_000))
        }
        if finish { s.finish(d) }
        return s
    }

    /// The required drip test: one byte per segment, shuffled, with retransmissions and overlapping
    /// segments, and sequence numbers wrapping across 2^32, gives the in-order bytes in both directions.
    func testDripFedShuffledStreamEqualsInOrder() {
        var conv = Conversation()
        conv.cISN = 0xFFFF_FFF0  // client bytes wrap after 15
        conv.sISN = 0xFFFF_FF80
        let up = pattern(300, seed: 1), down = pattern(211, seed: 99)

        // Reference: in-order, one segment per direction.
        let inOrder = run([conv.syn, conv.synAck, conv.ack, conv.data(true, at: 0, up), conv.data(false, at: 0, down),
                           conv.fin(true, at: up.count), conv.fin(false, at: down.count)])
        XCTAssertEqual(inOrder.stream(.toServer), up)
        XCTAssertEqual(inOrder.stream(.toClient), down)
        XCTAssertEqual(inOrder.eventNames, ["syn/toServer", "established/toClient", "fin/toServer", "fin/toClient", "closed/toClient"])

        var rng = SimRandom(seed: 42)
        var body: [[UInt8]] = []
        for (toServer, bytes) in [(true, up), (false, down)] {
            for i in bytes.indices { body.append(conv.data(toServer, at: i, [bytes[i]])) }
            for i in stride(from: 0, to: bytes.count, by: 5) { body.append(conv.data(toServer, at: i, [bytes[i]])) }  // retransmissions
            for i in stride(from: 3, to: bytes.count - 4, by: 17) {  // overlapping, same content
                body.append(conv.data(toServer, at: i, Array(bytes[i ..< i + 4])))
            }
            body.append(conv.fin(toServer, at: bytes.count))
        }
        body.shuffle(using: &rng)
        let drip = run([conv.syn, conv.synAck, conv.ack] + body)

        XCTAssertEqual(drip.stream(.toServer), inOrder.stream(.toServer))
        XCTAssertEqual(drip.stream(.toClient), inOrder.stream(.toClient))
        XCTAssertEqual(Array(drip.eventNames.prefix(2)), ["syn/toServer", "established/toClient"])
        XCTAssertEqual(Set(drip.eventNames.dropFirst(2).dropLast()), ["fin/toServer", "fin/toClient"])
        XCTAssertEqual(drip.eventNames.last?.hasPrefix("closed/"), true)
        XCTAssertEqual(drip.eventNames.count, 5)
        // Each FIN comes after the last byte of its direction.
        for dir in [TCPDirection.toServer, .toClient] {
            let lastData = drip.units.lastIndex { if case .tcpData(_, _, let d, _) = $0 { return d == dir } else { return false } }
            let fin = drip.units.firstIndex { if case .tcpEvent(_, _, let d, .fin) = $0 { return d == dir } else { return false } }
            XCTAssertNotNil(lastData)
            XCTAssertNotNil(fin)
            if let lastData, let fin { XCTAssertLessThan(lastData, fin, "\(dir)") }
        }
        XCTAssertFalse(drip.diagIDs().contains("tcp.overlap.conflict"))
        XCTAssertFalse(drip.events.contains { $0.0 == .gap })
        // Every unit names connection 1 with the SYN sender as client.
        for case .tcpData(_, let c, _, _) in drip.units {
            XCTAssertEqual(c.id, 1)
            XCTAssertEqual(c.client, Endpoint(.v4(0x0A00_0001), 50000))
            XCTAssertTrue(c.sawSYN)
        }
    }

    func testConflictingOverlapKeepsFirstCopyAndIsReported() {
        let conv = Conversation()
        let s = run([conv.syn, conv.synAck, conv.ack,
                     conv.data(true, at: 4, [4, 5, 6, 7]),         // buffered
                     conv.data(true, at: 2, [2, 3, 0xEE, 0xEE, 0xEE, 0xEE, 8]),  // overlaps 4..<8 with other bytes
                     conv.data(true, at: 0, [0, 1])])
        XCTAssertEqual(s.stream(.toServer), [0, 1, 2, 3, 4, 5, 6, 7, 8])
        XCTAssertTrue(s.diagIDs().contains("tcp.overlap.conflict"))
    }

    func testRSTAnsweringSYNIsRefused() {
        let conv = Conversation()
        let s = run([conv.syn, conv.seg(false, seq: 0, ack: conv.cISN &+ 1, flags: Build.RST | Build.ACK)])
        XCTAssertEqual(s.eventNames, ["syn/toServer", "refused/toClient", "closed/toClient"])
    }

    func testRSTMidConnectionIsResetFromItsSender() {
        let conv = Conversation()
        let s = run([conv.syn, conv.synAck, conv.ack, conv.data(true, at: 0, [1, 2, 3]), conv.data(false, at: 0, [9]),
                     conv.rst(false, at: 1), conv.data(true, at: 3, [4])])
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient", "reset/toClient", "closed/toClient"])
        XCTAssertEqual(s.stream(.toServer), [1, 2, 3])  // nothing after the RST
        let c = run([conv.syn, conv.synAck, conv.ack, conv.rst(true, at: 0)])
        XCTAssertEqual(c.eventNames.suffix(2), ["reset/toServer", "closed/toServer"])
    }

    func testSequenceWrapAround() {
        var conv = Conversation()
        conv.cISN = 0xFFFF_FFFA
        let bytes = pattern(20, seed: 3)
        // Segments straddling 2^32, delivered out of order.
        let s = run([conv.syn, conv.synAck, conv.ack,
                     conv.data(true, at: 10, Array(bytes[10 ..< 20])),
                     conv.data(true, at: 3, Array(bytes[3 ..< 10])),
                     conv.data(true, at: 0, Array(bytes[0 ..< 3]))])
        XCTAssertEqual(s.stream(.toServer), bytes)
        // Picked up mid-stream right before the wrap, no SYN.
        let m = run([conv.data(true, at: 0, Array(bytes[0 ..< 5])), conv.data(true, at: 5, Array(bytes[5 ..< 20])),
                     conv.data(false, at: 0, [1])])
        XCTAssertEqual(m.stream(.toServer), bytes)
        XCTAssertEqual(m.eventNames, ["established/toClient"])
    }

    func testBufferBoundEmitsGapAndContinues() {
        var opts = PacketOptions()
        opts.tcpBufferLimit = 100
        let conv = Conversation()
        let bytes = pattern(400, seed: 5)
        var frames = [conv.syn, conv.synAck, conv.ack, conv.data(true, at: 0, Array(bytes[0 ..< 10]))]
        // bytes 10..<20 never arrive
        for i in stride(from: 20, to: 400, by: 10) { frames.append(conv.data(true, at: i, Array(bytes[i ..< i + 10]))) }
        let s = run(frames, options: opts)
        XCTAssertEqual(s.stream(.toServer), Array(bytes[0 ..< 10]) + Array(bytes[20 ..< 400]))
        XCTAssertEqual(s.events.filter { $0.0 == .gap }.count, 1)
        XCTAssertEqual(s.diagIDs().filter { $0 == "tcp.reassembly.overflow" }.count, 1)
        // The gap comes right after the first 10 bytes and before the rest.
        let gap = s.units.firstIndex { if case .tcpEvent(_, _, _, .gap) = $0 { return true } else { return false } }
        let firstAfter = s.units.firstIndex { if case .tcpData(_, _, _, let p) = $0 { return p.byte(0) == bytes[20] } else { return false } }
        if let gap, let firstAfter { XCTAssertLessThan(gap, firstAfter) } else { XCTFail("missing gap or data") }
    }

    func testHeldFINWaitsForMissingBytesThenGivesUp() {
        let conv = Conversation()
        let d = PacketDecoder()
        let s = Sink()
        let t0: Nanos = 1_000_000_000
        s.feed(d, Build.frame(conv.syn, t: t0))
        s.feed(d, Build.frame(conv.synAck, t: t0))
        s.feed(d, Build.frame(conv.data(true, at: 0, [1, 2]), t: t0))
        s.feed(d, Build.frame(conv.data(true, at: 4, [5, 6]), t: t0))
        s.feed(d, Build.frame(conv.fin(true, at: 6), t: t0))
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient"], "FIN held behind the hole")
        XCTAssertEqual(d.bufferedBytes, 2)
        d.advance(to: t0 + 11 * CaptureTime.second, { s.units.append($0) })
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient", "gap/toServer", "fin/toServer"])
        XCTAssertEqual(s.stream(.toServer), [1, 2, 5, 6])
        XCTAssertEqual(d.bufferedBytes, 0)
    }

    /// Held FINs given up at one tick come out in connection order, not in the table's hash order (which
    /// changes from process to process): the same capture gives the same events, hence the same report.
    func testHeldFINsGivenUpAtOneTickComeOutInConnectionOrder() {
        let d = PacketDecoder()
        let s = Sink()
        let t0: Nanos = 1_000_000_000
        for i in 0 ..< 16 {
            var conv = Conversation()
            conv.cport = 50000 &+ UInt16(i)
            for f in [conv.syn, conv.synAck, conv.data(true, at: 0, [1]), conv.data(true, at: 2, [3]), conv.fin(true, at: 3)] {
                s.feed(d, Build.frame(f, t: t0))
            }
        }
        let before = s.units.count
        d.advance(to: t0 + 11 * CaptureTime.second, { s.units.append($0) })
        let ids: [Int] = s.units[before...].compactMap {
            if case .tcpEvent(_, let c, _, .fin) = $0 { return Int(c.id) } else { return nil }
        }
        XCTAssertEqual(ids.count, 16)
        XCTAssertEqual(ids, ids.sorted(), "held FINs given up in hash order")
    }

    func testHoleFilledBeforeFINTimeout() {
        let conv = Conversation()
        let s = run([conv.syn, conv.synAck, conv.data(true, at: 2, [3]), conv.fin(true, at: 3), conv.data(true, at: 0, [1, 2])])
        XCTAssertEqual(s.stream(.toServer), [1, 2, 3])
        XCTAssertEqual(s.eventNames, ["syn/toServer", "established/toClient", "fin/toServer"])
    }

    func testNewSYNOnClosedTupleStartsNewConnection() {
        let conv = Conversation()
        var again = conv
        again.cISN = 90_000
        again.sISN = 70_000
        let s = run([conv.syn, conv.synAck, conv.data(true, at: 0, [1]), conv.fin(true, at: 1), conv.fin(false, at: 0),
                     again.syn, again.synAck, again.data(true, at: 0, [2])])
        XCTAssertEqual(s.events.map { "\($0.0.rawValue)#\($0.2)" },
                       ["syn#1", "established#1", "fin#1", "fin#1", "closed#1", "syn#2", "established#2"])
        XCTAssertEqual(s.stream(.toServer, id: 2), [2])
        // A retransmitted SYN is not a new connection.
        let r = run([conv.syn, conv.syn, conv.synAck])
        XCTAssertEqual(r.events.map(\.2), [1, 1])
    }

    func testSynAckWithoutSYNMakesTheSenderTheServer() {
        let conv = Conversation()
        let s = run([conv.synAck, conv.data(true, at: 0, [7])])
        guard case .tcpData(_, let c, let dir, _)? = s.units.last else { return XCTFail("no data") }
        XCTAssertEqual(dir, .toServer)
        XCTAssertEqual(c.server, Endpoint(.v4(0x0A00_0002), 7000))
    }

    func testIdleEvictionOnCaptureTime() {
        let conv = Conversation()
        let d = PacketDecoder()
        let s = Sink()
        s.feed(d, Build.frame(conv.syn, t: 0))
        s.feed(d, Build.frame(conv.synAck, t: 1))
        XCTAssertEqual(d.activeConnections, 1)
        d.advance(to: 299 * CaptureTime.second, { s.units.append($0) })
        XCTAssertEqual(d.activeConnections, 1)
        d.advance(to: 302 * CaptureTime.second, { s.units.append($0) })
        XCTAssertEqual(d.activeConnections, 0)
        XCTAssertEqual(s.eventNames.last, "idle_evicted/toServer")
        // A closed connection goes after the close timeout, with no event.
        let d2 = PacketDecoder()
        let s2 = Sink()
        for f in [conv.syn, conv.synAck, conv.fin(true, at: 0), conv.fin(false, at: 0)] { s2.feed(d2, Build.frame(f, t: 0)) }
        XCTAssertEqual(d2.activeConnections, 1)
        s2.feed(d2, Build.frame(Conversation(cport: 1).syn, t: 31 * CaptureTime.second))
        XCTAssertEqual(d2.activeConnections, 1)  // only the new one
        XCTAssertFalse(s2.events.contains { $0.0 == .idleEvicted })
    }

    func testFinishFlushesBufferedBytesAfterAGap() {
        let conv = Conversation()
        let s = run([conv.syn, conv.synAck, conv.data(true, at: 0, [1]), conv.data(true, at: 5, [6, 7])], finish: true)
        XCTAssertEqual(s.stream(.toServer), [1, 6, 7])
        XCTAssertEqual(s.eventNames.suffix(1), ["gap/toServer"])
    }
}

final class TCPAckGapTests: XCTestCase {
    /// Bytes the peer acknowledged but the capture never saw are a gap at once, not after a timeout.
    func testPeerAckAboveAHoleDeclaresTheGap() {
        let conv = Conversation()
        let d = PacketDecoder()
        let s = Sink()
        for f in [conv.syn, conv.synAck, conv.data(true, at: 0, [1, 2]), conv.data(true, at: 5, [6, 7])] { s.feed(d, Build.frame(f)) }
        XCTAssertEqual(s.stream(.toServer), [1, 2])
        // The server acknowledges through byte 7: bytes 2..<5 were lost before the capture point.
        s.feed(d, Build.frame(conv.seg(false, seq: conv.sISN &+ 1, ack: conv.cISN &+ 1 &+ 7, flags: Build.ACK)))
        XCTAssertEqual(s.stream(.toServer), [1, 2, 6, 7])
        XCTAssertEqual(s.eventNames.last, "gap/toServer")
        XCTAssertEqual(d.bufferedBytes, 0)
        // An ACK for bytes never seen sent does nothing.
        s.feed(d, Build.frame(conv.data(true, at: 20, [9])))
        s.feed(d, Build.frame(conv.seg(false, seq: conv.sISN &+ 1, ack: conv.cISN &+ 1 &+ 500, flags: Build.ACK)))
        XCTAssertEqual(s.stream(.toServer), [1, 2, 6, 7])
        XCTAssertEqual(d.bufferedBytes, 1)
    }

    /// Picked up mid-stream with a keep-alive (one byte below the next): no phantom hole before the FIN.
    func testKeepAliveFirstOpensNoHole() {
        let conv = Conversation()
        let s = Sink()
        let d = PacketDecoder()
        s.feed(d, Build.frame(conv.data(true, at: 9, [], flags: Build.ACK)))
        s.feed(d, Build.frame(conv.fin(true, at: 10)))
        XCTAssertEqual(s.eventNames, ["fin/toServer"])
    }
}
