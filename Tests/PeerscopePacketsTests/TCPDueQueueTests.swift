import PeerscopeCore
@testable import PeerscopePackets
import XCTest

/// `TCPDueQueue` sifts by moves through its buffer (no copies of entries: a sweep entry holds its
/// connection). It must hold its entries exactly where the copying heap it replaced held them, so the
/// sweep meets equal times in the same order, and it must neither leak nor over-release a connection.
final class TCPDueQueueTests: XCTestCase {
    /// The queue as it was before (copies through `swapAt` and the array's subscript): the reference.
    struct ReferenceQueue {
        var items: [TCPSweepEntry] = []

        mutating func insert(_ e: TCPSweepEntry) {
            items.append(e)
            var i = items.count - 1
            while i > 0 {
                let parent = (i - 1) / 2
                guard items[i].t < items[parent].t else { break }
                items.swapAt(i, parent)
                i = parent
            }
        }

        mutating func removeMin() -> TCPSweepEntry? {
            guard let top = items.first else { return nil }
            let last = items.removeLast()
            guard !items.isEmpty else { return top }
            items[0] = last
            var i = 0
            let n = items.count
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < n, items[l].t < items[m].t { m = l }
                if r < n, items[r].t < items[m].t { m = r }
                if m == i { return top }
                items.swapAt(i, m)
                i = m
            }
        }
    }

    func connection(_ id: UInt64) -> TCPConn {
        let a = Endpoint(.v4(0x0A00_0001), 1000), b = Endpoint(.v4(0x0A00_0002), 80)
        let frame = FrameInfo(input: 0, number: id, t: 0, capturedLength: 60, originalLength: 60, linkType: LinkType.ethernet)
        return TCPConn(info: TCPConnectionInfo(id: id, client: a, server: b, sawSYN: true), frame: frame, t: 0)
    }

    func testTheQueueHoldsAndGivesItsEntriesAsTheCopyingHeapDidAndReleasesEveryConnection() {
        var g = SystemRandomNumberGenerator()
        weak var probe: TCPConn?
        do {
            var queue = TCPSweepQueue()
            var reference = ReferenceQueue()
            var next: UInt64 = 0
            for round in 0 ..< 20_000 {
                // Few distinct times, so equal times are common; bursts of inserts, then of removals.
                let inserting = (round / 500) % 2 == 0 ? Int.random(in: 0 ..< 4, using: &g) != 0 : Int.random(in: 0 ..< 4, using: &g) == 0
                if inserting {
                    next += 1
                    let c = connection(next)
                    if next == 1 { probe = c }
                    let e = TCPSweepEntry(t: Nanos.random(in: 0 ..< 64, using: &g), conn: c)
                    queue.insert(e)
                    reference.insert(e)
                } else {
                    let want = queue.minTime
                    let a = queue.removeMin(), b = reference.removeMin()
                    XCTAssertEqual(want, b?.t)
                    XCTAssertTrue(a?.conn === b?.conn)
                    XCTAssertEqual(a?.t, b?.t)
                }
                XCTAssertEqual(queue.items.map { ObjectIdentifier($0.conn) }, reference.items.map { ObjectIdentifier($0.conn) })
                XCTAssertEqual(queue.items.map(\.t), reference.items.map(\.t))
            }
            while let a = queue.removeMin() {
                XCTAssertTrue(a.conn === reference.removeMin()?.conn)
            }
            XCTAssertNil(queue.minTime)
            XCTAssertNil(reference.removeMin())
            for t: Nanos in [5, 3, 9, 3] { queue.insert(TCPSweepEntry(t: t, conn: connection(99))) }
            queue.removeAll()
        }
        XCTAssertNil(probe, "every connection released once the queues are gone")
        // Connections neither leaked nor released too early: each entry's object alive until removed.
        var queue = TCPSweepQueue()
        var weakOnes: [() -> TCPConn?] = []
        for i in 0 ..< 100 {
            let c = connection(UInt64(i))
            weak var w = c
            weakOnes.append { w }
            queue.insert(TCPSweepEntry(t: Nanos(100 - i % 7), conn: c))
        }
        XCTAssertTrue(weakOnes.allSatisfy { $0() != nil })
        var seen: [Nanos] = []
        while let e = queue.removeMin() {
            XCTAssertEqual(e.conn.info.client.port, 1000)
            seen.append(e.t)
        }
        XCTAssertEqual(seen, seen.sorted())
        XCTAssertTrue(weakOnes.allSatisfy { $0() == nil })
    }
}
