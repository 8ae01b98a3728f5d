import PeerscopeCore
@testable import PeerscopePackets
import XCTest
import PeerscopeSimulator

/// Issue 13: a quiet TCP connection with nothing held is parked as a compact record
/// (`PacketOptions.tcpParkAfter`) and made again from it when it comes back. Whatever comes back
/// (data after a long silence, a retransmission, a FIN or a reset after idle, a new SYN on a closed
/// tuple, its idle or close deadline, the end of input) must give exactly the units, counters and
/// losses it gives when every connection stays an object.
final class TCPParkingTests: XCTestCase {
    /// Every field of a connection, by reflection: a field added to `TCPConn` or `TCPHalf` and not
    /// carried by the record makes the round trip below fail.
    func fields(_ c: TCPConn) -> [String] {
        Mirror(reflecting: c).children.map { child in
            var s = ""
            dump(child.value, to: &s)
            return "\(child.label ?? "?")=\(s)"
        }
    }

    /// A connection in a random state (random values, extremes, never-set zeros, a FIN or none, an
    /// interface name or none) reads back from its record with every field the same.
    func testAParkedRecordGivesBackEveryFieldOfTheConnection() {
        var rng = SimRandom(seed: 1313)
        func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        func int64() -> Int64 {
            pick([0, 1, -1, .max, .min, Int64(bitPattern: rng.next()), Int64(rng.next() % 5000), 1_767_225_600_000_000_000])
        }
        func bool() -> Bool { rng.next() % 2 == 0 }
        func half() -> TCPHalf {
            var h = TCPHalf()
            h.started = bool(); h.fromSYN = bool(); h.base = UInt32(truncatingIfNeeded: rng.next())
            h.next = int64(); h.fin = bool() ? nil : int64(); h.finAt = int64(); h.finDone = bool(); h.sawData = bool()
            h.highest = int64(); h.highestAt = int64(); h.inOrderAt = int64(); h.ackedBeyond = int64(); h.ackedBeyondAt = int64()
            return h
        }
        let addrs: [UInt32] = [0, 1, 0x0A00_0001, 0xFFFF_FFFF, 0xC0A8_0102]
        var writer = TCPParkWriter()
        for round in 0 ..< 2000 {
            let a = Endpoint(.v4(pick(addrs)), UInt16(truncatingIfNeeded: rng.next()))
            let b = Endpoint(.v4(pick(addrs)), UInt16(truncatingIfNeeded: rng.next()))
            let key = a < b ? FlowKey(.tcp, a, b) : FlowKey(.tcp, b, a)
            let frame = FrameInfo(input: Int(int64() % 4), number: rng.next(), t: int64(), capturedLength: Int(int64()),
                                  originalLength: Int(int64()), linkType: UInt32(truncatingIfNeeded: rng.next()),
                                  interfaceName: pick([nil, "", "en0", "Wi‑Fi 📶"]))
            let c = TCPConn(info: TCPConnectionInfo(id: pick([0, 1, rng.next()]), client: a, server: b, sawSYN: bool()),
                            frame: frame, t: int64())
            c.c2s = half(); c.s2c = half()
            c.lastSeen = int64(); c.synPending = bool(); c.synReported = bool(); c.established = bool(); c.closed = bool()
            c.closedAt = int64(); c.firstSeen = int64()
            c.toServerSegments = Int(int64()); c.toClientSegments = Int(int64())
            c.firstAckToServer = bool() ? nil : UInt32(truncatingIfNeeded: rng.next())
            c.firstAckToClient = bool() ? nil : UInt32(truncatingIfNeeded: rng.next())
            c.ackAdvanceToServer = int64(); c.ackAdvanceToClient = int64()
            let due = int64()
            let record = c.parkRecord(due: due, in: &writer)
            XCTAssertEqual(TCPConn.parkDue(record), due)
            let back = TCPConn(parked: record, key: key)
            XCTAssertEqual(fields(back), fields(c), "round \(round)")
            if fields(back) != fields(c) { return }
        }
    }

    /// The key packs two IPv4 endpoints and gives the same `FlowKey` back; other keys do not park.
    func testAParkKeyIsTheFlowKeyOfTwoIPv4Endpoints() throws {
        let a = Endpoint(.v4(0xFFFF_FFFF), 65535), b = Endpoint(.v4(0), 0)
        let key = try XCTUnwrap(TCPParkKey(FlowKey(.tcp, b, a)))
        XCTAssertEqual(key.flowKey, FlowKey(.tcp, b, a))
        XCTAssertNil(TCPParkKey(FlowKey(.tcp, b, Endpoint(.v6(hi: 1, lo: 2, scope: nil), 80))))
        XCTAssertNil(TCPParkKey(FlowKey(.udp, b, a)))
    }

    /// What a run gives: every unit with all its fields, the connections tracked after each step,
    /// the counters, the losses, and the most connections parked at once.
    struct Outcome: Equatable {
        var units: [String] = []
        var active: [Int] = []
        var counters = PacketCounters()
        var unseen: [CaptureLoss] = []
        var oneSided: [CaptureLoss] = []
        var mostParked = 0
    }

    func describe(_ u: TransportUnit) -> String {
        func frame(_ f: FrameInfo) -> String {
            "#\(f.input).\(f.number) t\(f.t) \(f.capturedLength)/\(f.originalLength) lt\(f.linkType) \(f.interfaceName ?? "-")"
        }
        func conn(_ c: TCPConnectionInfo) -> String { "\(c.id) \(c.client)>\(c.server) syn:\(c.sawSYN)" }
        switch u {
        case .tcpData(let f, let c, let d, let p): return "data \(conn(c)) \(d.rawValue) \(frame(f)) \(p.array)"
        case .tcpEvent(let f, let c, let d, let e): return "\(e.rawValue) \(conn(c)) \(d.rawValue) \(frame(f))"
        default: return "other \(frame(u.frame))"
        }
    }

    func run(_ frames: [([UInt8], Nanos)], parkAfter: Nanos?, byDeadlines: Bool = true, end: Nanos) -> Outcome {
        var options = PacketOptions()
        options.sweepByDeadlines = byDeadlines
        options.tcpParkAfter = parkAfter
        let d = PacketDecoder(options: options)
        let s = Sink()
        var o = Outcome()
        for (i, (f, t)) in frames.enumerated() {
            d.advance(to: t, { s.units.append($0) })
            s.feed(d, Build.frame(f, number: UInt64(i + 1), t: t, iface: i % 3 == 0 ? "en\(i % 2)" : nil,
                                  originalLength: f.count + (i % 7 == 0 ? 4 : 0)))
            o.active.append(d.activeConnections)
            o.mostParked = max(o.mostParked, d.parkedConnections)
        }
        var t = frames.last?.1 ?? 0
        while t < end {
            t += CaptureTime.second / 2
            d.advance(to: t, { s.units.append($0) })
            o.active.append(d.activeConnections)
            o.mostParked = max(o.mostParked, d.parkedConnections)
        }
        s.finish(d, at: end)
        o.units = s.units.map(describe)
        o.counters = d.counters
        o.unseen = d.unseenDataLosses
        o.oneSided = d.oneSidedLosses
        XCTAssertEqual(d.parkedConnections, 0, "the end of input leaves nothing parked")
        return o
    }

    /// Connections that go quiet and come back every way they can: data after a long silence, a
    /// retransmission of delivered bytes, a hole opened and filled after idle, a FIN or a reset after
    /// idle, acknowledgements of bytes never captured (unseen data), a one-sided flow, late segments
    /// and a new SYN on a closed tuple, keep-alives; some stay quiet until their idle deadline, some
    /// until the end of input. Parked after one second they give what unparked ones give.
    func testParkedConnectionsComeBackWithTheUnitsTheyWouldHaveGiven() {
        var rng = SimRandom(seed: 4242)
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        let second = CaptureTime.second
        var frames: [([UInt8], Nanos)] = []
        for i in 0 ..< 240 {
            var conv = Conversation()
            conv.cport = 30000 &+ UInt16(i % 200)  // some tuples come back as new connections
            conv.cISN = UInt32(truncatingIfNeeded: 4_294_967_000 &+ UInt32(i) &* 7919)  // some wrap across 2^32
            conv.sISN = UInt32(truncatingIfNeeded: 70_000 &+ i &* 104_729)
            var t = Nanos(below(900)) * second + Nanos(i)
            func add(_ f: [UInt8], quiet: Bool = false) {
                frames.append((f, t))
                t += quiet ? Nanos(5 + below(280)) * second : Nanos(1 + below(1500)) * second / 1000
            }
            let up = pattern(8 + below(30), seed: UInt8(i & 0xFF)), down = pattern(5 + below(20), seed: UInt8((i * 3) & 0xFF))
            if below(5) > 0 {
                add(conv.syn); add(conv.synAck); add(conv.ack, quiet: true)
            }
            add(conv.data(true, at: 0, Array(up.prefix(4))), quiet: true)
            switch below(10) {
            case 0:  // data after a long silence, then a clean close
                add(conv.data(true, at: 4, Array(up.dropFirst(4))), quiet: true)
                add(conv.data(false, at: 0, down), quiet: true)
                add(conv.fin(true, at: up.count), quiet: true)
                add(conv.fin(false, at: down.count))
            case 1:  // a retransmission of delivered bytes after idle, then more data
                add(conv.data(true, at: 0, Array(up.prefix(4))), quiet: true)
                add(conv.data(true, at: 2, Array(up.dropFirst(2))), quiet: true)
            case 2:  // a hole opened after idle, filled after another silence
                add(conv.data(true, at: 8, Array(up.dropFirst(8))), quiet: true)
                add(conv.data(true, at: 4, Array(up[4 ..< 8])), quiet: true)
            case 3:  // a FIN after idle, the other side's FIN after another silence
                add(conv.fin(true, at: 4), quiet: true)
                add(conv.fin(false, at: 0), quiet: true)
                add(conv.data(true, at: 0, Array(up.prefix(4))), quiet: true)  // after close: ignored
            case 4:  // a reset after idle
                add(conv.rst(false, at: 0), quiet: true)
            case 5:  // acknowledgements of bytes never captured, then quiet until the idle deadline or the end
                add(conv.seg(false, seq: conv.sISN &+ 1, ack: conv.cISN &+ 1 &+ 4, flags: Build.ACK), quiet: true)
                add(conv.seg(true, seq: conv.cISN &+ 5, ack: conv.sISN &+ 1 &+ 900, flags: Build.ACK), quiet: true)
            case 6:  // one-sided: only the client's segments, acknowledging server data never seen
                for k in 1 ... 3 {
                    add(conv.seg(true, seq: conv.cISN &+ 5, ack: conv.sISN &+ 1 &+ UInt32(k * 300), flags: Build.ACK), quiet: true)
                }
            case 7:  // closed, then a late segment and a new SYN on the same tuple after the close timeout
                add(conv.fin(true, at: 4)); add(conv.fin(false, at: 0), quiet: true)
                add(conv.data(false, at: 0, down), quiet: true)
                var again = conv
                again.cISN = conv.cISN &+ 100_000
                add(again.syn, quiet: true); add(again.synAck); add(again.ack, quiet: true)
                add(again.data(true, at: 0, up), quiet: true)
            case 8:  // keep-alives (one below the next byte) across silences
                for _ in 0 ..< 1 + below(4) {
                    add(conv.seg(true, seq: conv.cISN &+ 4, ack: conv.sISN &+ 1, flags: Build.ACK), quiet: true)
                }
                add(conv.data(true, at: 4, Array(up.dropFirst(4))))
            default:  // a new SYN with another ISN while open (port reuse) after idle
                var again = conv
                again.cISN = conv.cISN &+ 7
                add(again.syn, quiet: true); add(again.synAck); add(again.data(true, at: 0, up), quiet: true)
            }
        }
        frames.sort { $0.1 < $1.1 }
        let end = (frames.last?.1 ?? 0) + 400 * second
        let kept = run(frames, parkAfter: nil, end: end)
        let parked = run(frames, parkAfter: second, end: end)
        XCTAssertEqual(kept.mostParked, 0)
        XCTAssertGreaterThan(parked.mostParked, 50)
        XCTAssertGreaterThan(kept.units.filter { $0.hasPrefix("idle_evicted") }.count, 10)
        XCTAssertGreaterThan(kept.counters.tcpRetransmissions, 10)
        XCTAssertGreaterThan(kept.counters.tcpIgnored, 5)
        XCTAssertFalse(kept.unseen.isEmpty)
        XCTAssertFalse(kept.oneSided.isEmpty)
        XCTAssertEqual(parked.units.count, kept.units.count)
        if let i = (0 ..< min(parked.units.count, kept.units.count)).first(where: { parked.units[$0] != kept.units[$0] }) {
            XCTFail("unit \(i) differs: parked \(parked.units[i]), kept \(kept.units[i])")
        }
        XCTAssertNil(parked.active.indices.first { parked.active[$0] != kept.active[$0] }, "connections tracked differ")
        XCTAssertEqual(parked.active.count, kept.active.count)
        XCTAssertEqual(parked.counters, kept.counters)
        XCTAssertEqual(parked.unseen, kept.unseen)
        XCTAssertEqual(parked.oneSided, kept.oneSided)
        // And both are what the full scan (no deadlines, nothing parked) finds.
        let scan = run(frames, parkAfter: second, byDeadlines: false, end: end)
        XCTAssertEqual(scan.mostParked, 0)
        XCTAssertTrue(scan.units == kept.units, "the full scan's units differ")
        XCTAssertEqual(scan.counters, kept.counters)
    }

    /// A full table chooses what to evict among parked connections too, as among objects.
    func testAFullTableEvictsParkedConnectionsAsItEvictsOthers() {
        let second = CaptureTime.second
        var frames: [([UInt8], Nanos)] = []
        for i in 0 ..< 64 {
            var conv = Conversation()
            conv.cport = 20000 &+ UInt16(i)
            let t = Nanos(i) * 3 * second
            frames.append((conv.syn, t))
            frames.append((conv.synAck, t + 1000))
            frames.append((conv.data(true, at: 0, [1, 2, 3]), t + 2000))
        }
        func outcome(_ parkAfter: Nanos?) -> Outcome {
            var options = PacketOptions()
            options.maxConnections = 20
            options.tcpParkAfter = parkAfter
            let d = PacketDecoder(options: options)
            let s = Sink()
            var o = Outcome()
            for (i, (f, t)) in frames.enumerated() {
                d.advance(to: t, { s.units.append($0) })
                s.feed(d, Build.frame(f, number: UInt64(i + 1), t: t))
                o.active.append(d.activeConnections)
                o.mostParked = max(o.mostParked, d.parkedConnections)
            }
            s.finish(d, at: 400 * second)
            o.units = s.units.map(describe)
            o.counters = d.counters
            return o
        }
        let kept = outcome(nil), parked = outcome(second)
        XCTAssertGreaterThan(parked.mostParked, 5)
        XCTAssertGreaterThan(kept.units.filter { $0.hasPrefix("idle_evicted") }.count, 20)
        XCTAssertTrue(parked == Outcome(units: kept.units, active: kept.active, counters: kept.counters, mostParked: parked.mostParked),
                      "parked and kept runs differ")
    }
}
