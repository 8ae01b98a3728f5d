import Foundation
@testable import PeerscopeCore
import PeerscopeSimulator
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The spill file (`SpilledEvents`): events read back equal the ones written, through buffers of any
/// size; a file cut short or damaged stops the reading with a message, never a crash.
final class SpilledEventsTests: XCTestCase {
    /// Events with every field at its edges: no hints, shared and distinct boxes, times before 1970 and
    /// far apart, out of order, counts past 32 bits, evidence of inputs that do not fit the packed pair,
    /// log lines, attributes empty and long.
    static func events() throws -> [PeerEvent] {
        let a = try XCTUnwrap(IPAddress("10.0.0.7")), m = try XCTUnwrap(IPAddress("224.0.0.251"))
        let l1 = try XCTUnwrap(IPAddress("fe80::1")), l2 = try XCTUnwrap(IPAddress("fe80::2"))
        var out: [PeerEvent] = []
        var rng = SystemRandomNumberGenerator()
        let hints = [PeerHint.unknown, PeerHint(peerID: 0x1234_5678_9ABC, displayName: "Ann's iPhone"),
                     PeerHint(address: a), PeerHint(participantID: 0x7FFF_FFFF, displayName: "")]
        let flows: [FlowKey?] = [nil, FlowKey(.udp, Endpoint(a, 5353), Endpoint(m, 5353)),
                                 FlowKey(.tcp, Endpoint(l1, 49152), Endpoint(l2, 7000))]
        let times: [Nanos] = [0, -1, Int64.min, Int64.max, 1_700_000_000_000_000_000, 5, 4]
        let evidence: [Evidence] = [.frame(input: 0, frame: 1), .frame(input: Int(Int32.max) + 5, frame: UInt64.max),
                                    .logLine(input: 3, line: 42), .logLine(input: -2, line: -7)]
        for i in 0 ..< 400 {
            var e = PeerEvent(kind: i % 3 == 0 ? .browse : EventKind("x.kind\(i % 7)"), t: times[i % times.count],
                              evidence: evidence[i % evidence.count], from: hints[i % hints.count],
                              to: hints[(i / 4) % hints.count], flow: flows[i % flows.count], source: "plugin\(i % 5)",
                              attrs: i % 4 == 0 ? [:] : ["k": "v\(i)", "long": String(repeating: "é", count: i % 50 * 40)])
            e.lastT = i % 2 == 0 ? e.t : e.t &+ Int64.random(in: 0 ... 1 << 40, using: &rng)
            e.count = [1, 2, Int(UInt32.max) + 3, Int.max, 0][i % 5]
            if i % 3 == 1 { e.lastEvidence = evidence[(i + 1) % evidence.count] }
            out.append(e)
        }
        return out
    }

    static func written(_ events: [PeerEvent], buffer: Int) throws -> SpilledEvents {
        let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: buffer)
        s.readBufferSize = buffer
        for e in events { try s.append(e) }
        try s.finishWriting()
        return s
    }

    func testEventsReadBackEqualTheOnesWrittenThroughAnyBuffer() throws {
        let events = try Self.events()
        for buffer in [3, 64, 4096, 1 << 20] {
            let s = try Self.written(events, buffer: buffer)
            XCTAssertEqual(s.count, events.count)
            XCTAssertFalse(s.inTimeOrder)
            XCTAssertEqual(s.lastT, Int64.max)
            // Twice: the passes of the timeline stage read it again from the start.
            for _ in 0 ..< 2 {
                let back = Array(s)
                XCTAssertNil(s.readError)
                XCTAssertEqual(back.count, events.count, "buffer \(buffer)")
                for (a, b) in zip(back, events) where a != b || a.count != b.count || a.lastEvidence != b.lastEvidence {
                    XCTFail("buffer \(buffer): \(a) != \(b)")
                    break
                }
                // Boxes by value, one per distinct value: identity across events is kept too.
                XCTAssertTrue(zip(back, back.dropFirst(4)).allSatisfy { $0.fromAndFlowBoxes.flow === $1.fromAndFlowBoxes.flow || $0.flow != $1.flow })
            }
        }
    }

    /// The reader says where each event's record starts: where the writer's file stood before it
    /// (a writer flushing every event tells), through read buffers of any size.
    func testTheReaderGivesWhereEachRecordStarts() throws {
        let events = try Self.events()
        let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 1)
        var starts: [Int] = []
        for e in events {
            starts.append(s.bytesWritten)
            try s.append(e)
        }
        try s.finishWriting()
        for buffer in [1, 3, 64, 4096, 1 << 20] {
            s.readBufferSize = buffer
            var offsets: [Int] = []
            var back: [PeerEvent] = []
            XCTAssertTrue(s.forEachWithOffset { e, at in
                back.append(e)
                offsets.append(at)
            })
            XCTAssertEqual(offsets, starts, "buffer \(buffer)")
            XCTAssertEqual(back, events, "buffer \(buffer)")
        }
    }

    /// Single records read again (forward, backward, across blocks) give each event's attributes, and the
    /// list still goes when its last holder lets go: the kept block must not hold the list (it did, so a
    /// process analysing many captures kept every spill file open).
    func testRecordsReadAgainGiveTheirAttributesAndTheListStillGoes() throws {
        let events = try Self.events()
        weak var gone: SpilledEvents?
        do {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 64)
            for e in events { try s.append(e) }
            try s.finishWriting()
            s.readBufferSize = 48
            var starts: [Int] = []
            XCTAssertTrue(s.forEachWithOffset { _, at in starts.append(at) })
            XCTAssertEqual(starts.count, events.count)
            var order = Array(events.indices)
            order += order.reversed()
            var rng = SimRandom(seed: 16)
            order += events.indices.shuffled(using: &rng)
            for i in order {
                let e = events[i]
                XCTAssertEqual(s.attrs(atRecord: starts[i], kind: e.kind, source: e.source, evidence: e.evidence), e.attrs,
                               "event \(i)")
            }
            XCTAssertNil(s.recordReadError)
            s.dropWriteTables()
            gone = s
        }
        XCTAssertNil(gone, "the spill outlived its last holder")
    }

    func testTheFileHasNoNameWhileUsedAndAFolderThatCannotTakeItThrows() throws {
        let s = try Self.written(try Self.events(), buffer: 1 << 20)
        XCTAssertTrue(s.path.hasPrefix(NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.path))
        XCTAssertGreaterThan(s.bytesWritten, 0)
        XCTAssertThrowsError(try SpilledEvents(directory: "/nonexistent-peerscope-dir")) { e in
            XCTAssertTrue("\(e)".hasPrefix("cannot create a temporary file in /nonexistent-peerscope-dir: "), "\(e)")
        }
    }

    func testAWriteFailingHalfWayThrowsAndWritesNothingPastIt() throws {
        let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 16)
        s.failWritesAfter = 1000
        var threw = false
        for e in try Self.events() {
            do { try s.append(e) } catch {
                XCTAssertTrue(error.message.contains("cannot write the temporary file"), error.message)
                threw = true
                break
            }
        }
        XCTAssertTrue(threw)
        XCTAssertLessThanOrEqual(s.bytesWritten, 1000)
    }

    /// Cut at every length, or overwritten with bytes no writer makes: the reading stops with a message
    /// and gives only whole events, equal to the ones written.
    func testAFileCutShortOrDamagedStopsTheReadingWithAMessage() throws {
        let events = Array(try Self.events().prefix(40))
        let size = try Self.written(events, buffer: 64).bytesWritten
        for cut in Array(stride(from: 0, to: size, by: Swift.max(1, size / 50))) + [1, 2, size - 2, size - 1] {
            let s = try Self.written(events, buffer: 64)
            XCTAssertEqual(ftruncate(s.fd, off_t(cut)), 0)
            let back = Array(s)
            XCTAssertNotNil(s.readError, "cut at \(cut)")
            XCTAssertLessThan(back.count, events.count)
            XCTAssertEqual(back, Array(events.prefix(back.count)))
        }
        for garbage: UInt8 in [0xFF, 0x7F, 0x80] {
            let s = try Self.written(events, buffer: 64)
            let junk = [UInt8](repeating: garbage, count: 32)
            _ = junk.withUnsafeBytes { pwrite(s.fd, $0.baseAddress, 32, 0) }
            let back = Array(s)
            XCTAssertNotNil(s.readError, "garbage \(garbage)")
            XCTAssertLessThan(back.count, events.count)
        }
    }

    // MARK: sorted writes (spilling while decoding)

    /// The edge events given decoding orders and cut into sorted writes of random sizes (each sorted by
    /// time, then decoding order): reading merges them into the list of all of them sorted by time, ties
    /// in decoding order, each with its `seq`, through buffers of any size; twice over.
    func testSortedWritesReadBackMergedByTimeThenDecodingOrder() throws {
        let events = try Self.events()
        var state: UInt64 = 5
        func nextSize() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 59)
        }
        for buffer in [3, 64, 4096, 1 << 20] {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: buffer)
            s.readBufferSize = buffer
            var i = 0, writes = 0
            while i < events.count {
                let n = nextSize()
                let part = (i ..< min(events.count, i + n)).sorted { (events[$0].t, $0) < (events[$1].t, $1) }
                s.beginSortedWrite()
                for k in part { try s.append(events[k], seq: k) }
                s.endSortedWrite()
                if !part.isEmpty { writes += 1 }
                i += n
            }
            try s.finishWriting()
            XCTAssertEqual(s.writeCount, writes)
            XCTAssertTrue(s.inTimeOrder)
            XCTAssertEqual(s.count, events.count)
            let expected = events.indices.sorted { (events[$0].t, $0) < (events[$1].t, $1) }
            for _ in 0 ..< 2 {
                var back: [(PeerEvent, Int)] = []
                XCTAssertTrue(s.forEachWithSeq { back.append(($0, $1)) })
                XCTAssertEqual(back.map(\.1), expected, "buffer \(buffer)")
                for (b, k) in zip(back, expected) where b.0 != events[k] || b.0.count != events[k].count || b.0.lastEvidence != events[k].lastEvidence {
                    XCTFail("buffer \(buffer): \(b.0) != \(events[k])")
                    break
                }
            }
        }
    }

    /// A sorted write out of order is said (`inTimeOrder` false); the list is still read, merged.
    func testASortedWriteOutOfOrderIsSaid() throws {
        let s = try SpilledEvents(directory: NSTemporaryDirectory())
        let e = PeerEvent(kind: .browse, t: 5, evidence: .frame(input: 0, frame: 1), source: "p")
        s.beginSortedWrite()
        try s.append(e, seq: 1)
        try s.append(e, seq: 0)
        s.endSortedWrite()
        XCTAssertFalse(s.inTimeOrder)
        XCTAssertEqual(Array(s).count, 2)
    }

    /// A write failing in the middle of a sorted write: the writes ended before it are read back whole
    /// (their bytes not yet on file from memory), the one it cut is dropped, after `stopWriting`.
    func testAfterAFailedWriteTheEndedSortedWritesAreReadBack() throws {
        let events = try Self.events().sorted { $0.t < $1.t }
        for limit in [0, 50, 700, 3000] {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 256)
            s.readBufferSize = 32
            s.failWritesAfter = limit
            var ended = 0
            var failed = false
            outer: for w in 0 ..< 40 {
                s.beginSortedWrite()
                for k in w * 10 ..< w * 10 + 10 {
                    do { try s.append(events[k], seq: k) } catch {
                        failed = true
                        break outer
                    }
                }
                s.endSortedWrite()
                ended += 10
            }
            XCTAssertTrue(failed, "limit \(limit)")
            s.stopWriting()
            var back: [Int] = []
            XCTAssertTrue(s.forEachWithSeq { _, seq in back.append(seq) }, "\(s.readError ?? "")")
            XCTAssertEqual(back, Array(0 ..< ended), "limit \(limit)")
        }
    }

}

/// Issue 13 (recpack): the reader names each event's hints and flow by their indexes in the file's
/// tables (`Iterator.recordBoxIDs`, a store keeps them instead of the boxes), in plain and merged
/// reading, and the tables from boxes to indexes go once the file is written.
final class SpilledEventsBoxIDTests: XCTestCase {
    static func check(_ s: SpilledEvents, _ name: String) -> Int {
        var it = s.makeIterator()
        var n = 0
        while let e = it.next() {
            let ids = it.recordBoxIDs
            XCTAssertTrue(s.hint(ids.from) === e.fromBox, "\(name) #\(n): from")
            XCTAssertTrue(s.hint(ids.to) === e.toBox, "\(name) #\(n): to")
            XCTAssertTrue(s.flow(ids.flow) === e.flowBox, "\(name) #\(n): flow")
            XCTAssertEqual(ids.from == 0, e.fromBox == nil, "\(name) #\(n)")
            XCTAssertEqual(ids.flow == 0, e.flowBox == nil, "\(name) #\(n)")
            n += 1
        }
        XCTAssertNil(s.readError)
        return n
    }

    func testTheReaderGivesEachRecordsBoxIndexesAndTheWriteTablesGoWhenWritten() throws {
        let events = try SpilledEventsTests.events()
        for buffer in [3, 4096] {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: buffer)
            s.readBufferSize = buffer
            for e in events { try s.append(e) }
            XCTAssertGreaterThan(s.writeTableCount, 0)
            try s.finishWriting()
            XCTAssertEqual(s.writeTableCount, 0, "the write tables go with the writing")
            XCTAssertEqual(Self.check(s, "plain \(buffer)"), events.count)
            // Merged reading (sorted writes of 7 events each).
            let m = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: buffer)
            m.readBufferSize = buffer
            for start in stride(from: 0, to: events.count, by: 7) {
                m.beginSortedWrite()
                for k in (start ..< min(events.count, start + 7)).sorted(by: { (events[$0].t, $0) < (events[$1].t, $1) }) {
                    try m.append(events[k], seq: k)
                }
                m.endSortedWrite()
            }
            try m.finishWriting()
            XCTAssertEqual(Self.check(m, "merged \(buffer)"), events.count)
            // Indexes out of range, and any once the list is closed, name no box (never a crash).
            XCTAssertNil(s.hint(0))
            XCTAssertNil(s.hint(UInt32.max))
            XCTAssertNil(s.flow(1 << 31))
            XCTAssertNotNil(s.hint(1))
            s.close()
            XCTAssertNil(s.hint(1))
            XCTAssertNil(s.flow(1))
        }
    }
}

/// Issue 13 (recpack): a written spill keeps its hints and flows as bytes (`PackedBoxTable`) and makes a
/// box when one is read: every field of every value comes back, through a cache far smaller than the
/// table (boxes made again are equal by value), and an index out of range names none.
final class PackedBoxTableTests: XCTestCase {
    static func hints() throws -> [PeerHint] {
        let v4 = try XCTUnwrap(IPAddress("10.1.2.3")), v6 = try XCTUnwrap(IPAddress("fe80::1:2"))
        let scoped = IPAddress.v6(hi: 0xFE80 << 48, lo: 77, scope: "en0"), emptyScope = IPAddress.v6(hi: 1, lo: UInt64.max, scope: "")
        var out: [PeerHint] = []
        for i in 0 ..< 3 * PackedBoxTable<PeerHint>.cacheSize {
            let a = [v4, v6, scoped, emptyScope, .v4(UInt32(truncatingIfNeeded: i))][i % 5]
            var h = PeerHint()
            // Each field present or not on its own (the packed form must not derive one from another).
            if i % 2 == 0 { h.peerID = UInt64(i) &* 0x9E37_79B9_7F4A_7C15 }
            if i % 3 == 0 { h.participantID = UInt32(truncatingIfNeeded: i * 7919) }
            if i % 4 != 3 { h.displayName = i % 8 == 0 ? "" : "Ann’s iPhone \(i) é🙂" }
            if i % 5 < 3 { h.endpoint = Endpoint(a, UInt16(truncatingIfNeeded: i * 13)) }
            if i % 7 < 4 { h.address = i % 2 == 0 ? a : v6 }
            out.append(h)
        }
        return out
    }

    func testEveryFieldComesBackThroughASmallCache() throws {
        let hints = try Self.hints()
        var table = try XCTUnwrap(PackedBoxTable(hints.map { Shared($0) }))
        XCTAssertEqual(table.count, hints.count)
        // Forward, backward and again: the cache keeps a few; every box made is equal to the value.
        let order = Array(hints.indices) + hints.indices.reversed() + Array(hints.indices)
        for k in order {
            let b = try XCTUnwrap(table.box(UInt32(k + 1)))
            XCTAssertEqual(b.value, hints[k], "hint \(k)")
            XCTAssertEqual(b.value.participantID, hints[k].participantID, "hint \(k)")
            XCTAssertEqual(b.value.address, hints[k].address, "hint \(k)")
            XCTAssertEqual(b, Shared(hints[k]))
        }
        // Read twice in a row: the same box (the cache), equal ones compare equal and hash alike.
        XCTAssertTrue(table.box(5) === table.box(5))
        XCTAssertEqual(table.box(5)?.hashValue, Shared(hints[4]).hashValue)
        XCTAssertNil(table.box(0))
        XCTAssertNil(table.box(UInt32(hints.count + 1)))
        XCTAssertNil(table.box(UInt32.max))

        var flows: [FlowKey] = []
        for (i, h) in hints.enumerated() {
            guard let src = h.endpoint else { continue }
            flows.append(FlowKey(i % 2 == 0 ? .udp : .tcp, src, Endpoint(h.address ?? src.address, UInt16(i % 65_536))))
        }
        var ft = try XCTUnwrap(PackedBoxTable(flows.map { Shared($0) }))
        for k in flows.indices.reversed() + flows.indices {
            XCTAssertEqual(ft.box(UInt32(k + 1))?.value, flows[k], "flow \(k)")
        }
    }

    /// Dropping the box caches (as the timeline stage ends) lets go of every box they hold; events read
    /// after come back equal, in the same order, their boxes equal by value to those made before.
    func testDroppedBoxCachesGiveEqualBoxesAfter() throws {
        let hints = Array(try Self.hints().prefix(600))
        var events: [PeerEvent] = []
        for (i, h) in hints.enumerated() {
            let flow = h.endpoint.map { FlowKey(.tcp, $0, Endpoint(IPAddress.v4(2), 80)) }
            events.append(PeerEvent(kind: .announced, t: Nanos(i), evidence: .frame(input: 0, frame: UInt64(i)), from: h,
                                    to: hints[(i * 7) % hints.count], flow: flow, source: "mdns", attrs: ["n": "\(i)"]))
        }
        let s = try SpilledEventsTests.written(events, buffer: 4096)
        let before = Array(s)
        XCTAssertGreaterThan(s.cachedBoxCount, 0)
        let held = try XCTUnwrap(s.hint(1))
        XCTAssertTrue(s.hint(1) === held, "cached")
        s.dropBoxCaches()
        XCTAssertEqual(s.cachedBoxCount, 0)
        let again = try XCTUnwrap(s.hint(1))
        XCTAssertFalse(again === held, "made again")
        XCTAssertEqual(again, held)
        let after = Array(s)
        XCTAssertNil(s.readError)
        XCTAssertEqual(after, before)
        XCTAssertEqual(after, events)
        XCTAssertEqual(after.map(\.from.participantID), events.map(\.from.participantID))
        XCTAssertEqual(after.map(\.to.address), events.map(\.to.address))
    }

    /// A spill with more distinct hints and flows than the cache holds reads back every event equal,
    /// its box indexes naming equal boxes, through plain and merged reading.
    func testASpillWithManyHintsReadsBackEqualEvents() throws {
        let hints = try Self.hints()
        var events: [PeerEvent] = []
        for (i, h) in hints.enumerated() {
            let flow = h.endpoint.map { FlowKey(.udp, $0, Endpoint(IPAddress.v4(1), 5353)) }
            events.append(PeerEvent(kind: .browse, t: Nanos(i), evidence: .frame(input: 0, frame: UInt64(i)), from: h,
                                    to: hints[(i * 31) % hints.count], flow: flow, source: "mdns", attrs: ["n": "\(i)"]))
        }
        let s = try SpilledEventsTests.written(events, buffer: 4096)
        for _ in 0 ..< 2 {
            let back = Array(s)
            XCTAssertNil(s.readError)
            XCTAssertEqual(back.count, events.count)
            for (a, b) in zip(back, events) where a != b || a.from.participantID != b.from.participantID || a.to.address != b.to.address {
                XCTFail("\(a) != \(b)")
                break
            }
        }
        var it = s.makeIterator()
        while let e = it.next() {
            let ids = it.recordBoxIDs
            guard s.hint(ids.from) == e.fromBox, s.hint(ids.to) == e.toBox, s.flow(ids.flow) == e.flowBox else {
                XCTFail("indexes \(ids) do not name the boxes of \(e)")
                break
            }
        }
        // A record read again for its attributes (no boxes made for it).
        var offsets: [Int] = []
        s.forEachWithOffset { _, at in offsets.append(at) }
        for i in [0, 7_000, events.count - 1] {
            let e = events[i]
            XCTAssertEqual(s.attrs(atRecord: offsets[i], kind: e.kind, source: e.source, evidence: e.evidence), e.attrs)
        }
        XCTAssertNil(s.recordReadError)
    }
}
