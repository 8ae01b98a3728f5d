import PeerscopeCore
@testable import PeerscopePackets
import XCTest
import PeerscopeSimulator

/// The TCP sweep looks only at connections queued as due (`PacketOptions.sweepByDeadlines`, the
/// default) instead of every connection each second: the two find the same connections at the same
/// ticks, so every transport unit (data, FINs given up, closes, idle evictions) comes out the same,
/// in the same order, at the same frames.
final class TCPSweepTests: XCTestCase {
    /// Each unit as text: what it is, its connection, direction and frame (data with its bytes).
    func describe(_ units: [TransportUnit]) -> [String] {
        units.map { u in
            switch u {
            case .tcpData(let f, let c, let d, let p): "data \(c.id) \(d.rawValue) @\(f.number) \(p.array)"
            case .tcpEvent(let f, let c, let d, let e): "\(e.rawValue) \(c.id) \(d.rawValue) @\(f.number) t\(f.t)"
            default: "other @\(u.frame.number)"
            }
        }
    }

    /// Runs `frames` (bytes, time) through a decoder with the sweep by deadlines or by scanning,
    /// advancing the clock between frames as the engine does; returns the units and the connection
    /// count after each frame.
    func run(_ frames: [([UInt8], Nanos)], byDeadlines: Bool, end: Nanos) -> ([String], [Int]) {
        var options = PacketOptions()
        options.sweepByDeadlines = byDeadlines
        let d = PacketDecoder(options: options)
        let s = Sink()
        var active: [Int] = []
        for (i, (f, t)) in frames.enumerated() {
            d.advance(to: t, { s.units.append($0) })
            s.feed(d, Build.frame(f, number: UInt64(i + 1), t: t))
            active.append(d.activeConnections)
        }
        var t = frames.last?.1 ?? 0
        while t < end {
            t += CaptureTime.second / 2
            d.advance(to: t, { s.units.append($0) })
            active.append(d.activeConnections)
        }
        s.finish(d, at: end)
        return (describe(s.units), active)
    }

    /// A crowd of connections doing everything the sweep acts on: idle ones evicted, closes kept for
    /// the close timeout, FINs held behind holes and given up, resets, a new SYN on a closed tuple,
    /// keep-alives that push the idle deadline later, all interleaved over twenty minutes.
    func testSweepByDeadlinesFindsWhatAFullScanFinds() {
        var rng = SimRandom(seed: 2026)
        let frames = crowd(&rng)
        let end = (frames.last?.1 ?? 0) + 400 * CaptureTime.second
        let scan = run(frames, byDeadlines: false, end: end), queued = run(frames, byDeadlines: true, end: end)
        XCTAssertGreaterThan(scan.0.filter { $0.hasPrefix("idle_evicted") }.count, 10)
        XCTAssertGreaterThan(scan.0.filter { $0.hasPrefix("gap") }.count, 10)
        XCTAssertGreaterThan(scan.0.filter { $0.hasPrefix("closed") }.count, 40)
        same(queued, scan)
    }

    /// Frames stamped earlier than the one before (a pcap whose clock stepped back, interfaces merged
    /// out of order): a connection's idle deadline moves earlier, and the queued sweep must still
    /// evict it when the full scan does.
    func testTimesGoingBackwardsEvictWhenAFullScanDoes() {
        var rng = SimRandom(seed: 77)
        var frames = crowd(&rng)
        let second = CaptureTime.second
        var stepped = 0
        for i in frames.indices.dropFirst() where i % 5 == 0 {
            // Stamped up to 250 s before the frame read just before it.
            frames[i].1 = max(0, frames[i - 1].1 - Nanos(1 + Int(rng.next() % 250)) * second)
            stepped += 1
        }
        let end = (frames.map(\.1).max() ?? 0) + 400 * second
        let scan = run(frames, byDeadlines: false, end: end), queued = run(frames, byDeadlines: true, end: end)
        XCTAssertGreaterThan(stepped, 100)
        XCTAssertGreaterThan(scan.0.filter { $0.hasPrefix("idle_evicted") }.count, 10)
        same(queued, scan)
    }

    /// Issue 13: a busy capture has an entry or two in the sweep's queue for every open connection, so
    /// an entry is the connection's reference and a time (a key and id made it 104 bytes). A connection
    /// that left the table is stale to its entries: the tests above compare every unit with the full scan.
    func testASweepEntryIsATimeAndAReference() {
        XCTAssertLessThanOrEqual(MemoryLayout<TCPSweepEntry>.stride, 16)
    }

    func same(_ queued: ([String], [Int]), _ scan: ([String], [Int]), file: StaticString = #filePath, line: UInt = #line) {
        if let i = queued.1.indices.first(where: { $0 >= scan.1.count || queued.1[$0] != scan.1[$0] }) ?? (queued.1.count == scan.1.count ? nil : queued.1.count) {
            XCTFail("connections tracked differ first after step \(i)", file: file, line: line)
        }
        XCTAssertEqual(queued.0.count, scan.0.count, file: file, line: line)
        if let i = (0 ..< min(queued.0.count, scan.0.count)).first(where: { queued.0[$0] != scan.0[$0] }) {
            XCTFail("unit \(i) differs: queued \(queued.0[i]), scan \(scan.0[i])", file: file, line: line)
        }
    }

    /// A crowd of connections doing everything the sweep acts on (see the first test), sorted by time.
    func crowd(_ rng: inout SimRandom) -> [([UInt8], Nanos)] {
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        var frames: [([UInt8], Nanos)] = []
        let second = CaptureTime.second
        for i in 0 ..< 150 {
            var conv = Conversation()
            conv.cport = 40000 &+ UInt16(i % 120)  // some tuples come back as new connections
            conv.cISN = UInt32(1000 + i * 7919)
            var t = Nanos(below(1200)) * second + Nanos(i)
            func add(_ f: [UInt8]) {
                frames.append((f, t))
                t += Nanos(1 + below(40)) * second / Nanos(1 + below(4))
            }
            add(conv.syn)
            add(conv.synAck)
            add(conv.ack)
            let up = pattern(6 + below(20), seed: UInt8(i & 0xFF))
            switch below(6) {
            case 0:  // closes cleanly
                add(conv.data(true, at: 0, up))
                add(conv.fin(true, at: up.count))
                add(conv.fin(false, at: 0))
            case 1:  // FIN held behind a hole, never filled
                add(conv.data(true, at: 0, Array(up.prefix(2))))
                add(conv.data(true, at: 4, Array(up.dropFirst(4))))
                add(conv.fin(true, at: up.count))
            case 2:  // FIN held, hole filled late (maybe after the hold timeout)
                add(conv.data(true, at: 3, Array(up.dropFirst(3))))
                add(conv.fin(true, at: up.count))
                t += Nanos(below(20)) * second
                add(conv.data(true, at: 0, Array(up.prefix(3))))
            case 3:  // reset
                add(conv.data(true, at: 0, up))
                add(conv.rst(false, at: 0))
            case 4:  // goes idle after a while of keep-alives
                for k in 0 ..< below(5) {
                    t += Nanos(60 + below(200)) * second
                    add(conv.data(true, at: k, [up[k % up.count]]))
                }
            default:  // both FINs, one side's bytes missing: closes only when given up
                add(conv.data(false, at: 2, [9, 9]))
                add(conv.fin(false, at: 4))
                add(conv.fin(true, at: 0))
            }
        }
        frames.sort { $0.1 < $1.1 }
        return frames
    }
}
