import Foundation
import XCTest
import Peerscope
@testable import PeerscopeCore
import PeerscopeReports
import PeerscopeTimeline

/// Issue 13: the timeline stage's store packs its events (`PackedEvents`: kind and plugin as one
/// label, the count in 32 bits, fixed-size chunks). Reading them back gives exactly the events put in,
/// field by field, on every sample and corpus input and on generated crowds; the edits the store makes
/// while timelines are built (moves that compact it, folds into an earlier event, cuts) give the same
/// events as on a plain list, across chunk boundaries and for counts beyond 32 bits.
final class PackedEventsTests: XCTestCase {
    /// Every field of every event of `events` read back from `packed`, whole and one by one.
    static func differences(_ events: [PeerEvent], _ packed: PackedEvents, _ name: String) -> [String] {
        var out: [String] = []
        if packed.count != events.count { return ["\(name): \(packed.count) packed events for \(events.count)"] }
        for (i, e) in events.enumerated() {
            let p = packed[i]
            var bad: [String] = []
            if p != e { bad.append("event") }
            // The boxes put in (a list in a file: boxes of equal values, made again when read; see `PackedBoxTable`).
            if packed.attributesFile == nil,
               p.fromAndFlowBoxes.from !== e.fromAndFlowBoxes.from || p.fromAndFlowBoxes.flow !== e.fromAndFlowBoxes.flow { bad.append("boxes") }
            if p.fromAndFlowBoxes.from != e.fromAndFlowBoxes.from || p.fromAndFlowBoxes.flow != e.fromAndFlowBoxes.flow || p.to != e.to {
                bad.append("box values")
            }
            if packed.t(i) != e.t { bad.append("t") }
            if packed.lastT(i) != e.lastT { bad.append("lastT") }
            if packed.kind(i) != e.kind { bad.append("kind") }
            if packed.source(i) != e.source { bad.append("source") }
            if packed.count(i) != e.count { bad.append("count") }
            if packed.evidence(i) != e.evidence { bad.append("evidence") }
            if packed.lastEvidence(i) != e.lastEvidence { bad.append("lastEvidence") }
            if packed.flow(i) != e.flow { bad.append("flow") }
            if packed.from(i) != e.from { bad.append("from") }
            if packed.to(i) != e.to { bad.append("to") }
            if packed.attrs(i) != e.attrs || Array(packed.attrs(i)).map(\.key) != Array(e.attrs).map(\.key) { bad.append("attrs") }
            if !packed.samePeersAndFlow(i, e) { bad.append("samePeersAndFlow") }
            // The same through a pointer to the list (the timeline's event store reads them so).
            withUnsafePointer(to: packed) { q in
                if PackedEvents.event(in: q, i) != e { bad.append("event in place") }
                if PackedEvents.t(in: q, i) != e.t { bad.append("t in place") }
                if PackedEvents.lastT(in: q, i) != e.lastT { bad.append("lastT in place") }
                if PackedEvents.kind(in: q, i) != e.kind { bad.append("kind in place") }
                if PackedEvents.source(in: q, i) != e.source { bad.append("source in place") }
                if PackedEvents.count(in: q, i) != e.count { bad.append("count in place") }
                if PackedEvents.evidence(in: q, i) != e.evidence { bad.append("evidence in place") }
                if PackedEvents.lastEvidence(in: q, i) != e.lastEvidence { bad.append("lastEvidence in place") }
                if PackedEvents.flow(in: q, i) != e.flow { bad.append("flow in place") }
                if PackedEvents.from(in: q, i) != e.from { bad.append("from in place") }
                if PackedEvents.to(in: q, i) != e.to { bad.append("to in place") }
                if PackedEvents.attrs(in: q, i) != e.attrs { bad.append("attrs in place") }
                if !PackedEvents.samePeersAndFlow(in: q, i, e) { bad.append("samePeersAndFlow in place") }
            }
            if !bad.isEmpty { out.append("\(name) #\(i) (\(e.kind)): \(bad.joined(separator: ", "))") }
            if out.count > 20 { break }
        }
        return out
    }

    func testPackedEventsReadBackEveryEventOnEverySampleCorpusInputAndCrowd() throws {
        var problems: [String] = []
        var events = 0, coalesced = 0, kinds: Set<EventKind> = []
        func check(_ name: String, _ captures: [String], _ logs: [String]) throws {
            let trace = try AnalysisSession(AnalysisOptions(captures: captures, logs: logs)).decode().trace
            problems += Self.differences(trace.events, PackedEvents(trace.events), name)
            events += trace.events.count
            coalesced += trace.events.filter { $0.count > 1 }.count
            kinds.formUnion(trace.events.map(\.kind))
        }
        for g in try EventCatalogueTests.inputGroups() { try check((g.captures + g.logs).joined(separator: " "), g.captures, g.logs) }
        try withGeneratedCrowds("packed") { path, _ in try check(path, [path], []) }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        // The inputs hold what the packing must keep: several chunks, folded runs, many kinds.
        XCTAssertGreaterThan(events, 3 * PackedEvents.chunkSize)
        XCTAssertGreaterThan(coalesced, 0)
        XCTAssertGreaterThan(kinds.count, 10)
        XCTAssertLessThanOrEqual(PackedEvents.recordSize, 88, "a packed event stays well under a PeerEvent's 120 bytes")
    }

    /// A list over four chunks: kinds, plugins, flows, hints, attributes, frame and log evidence, runs.
    static func script(_ n: Int) -> [PeerEvent] {
        let kinds: [EventKind] = [.browse, .announced, .appKeepAlive, .tcpOpened, .goodbye]
        let sources = ["mdns", "gck-heartbeat", "log-mpc-gck"]
        var out: [PeerEvent] = []
        for i in 0 ..< n {
            let a = IPAddress("10.0.\(i % 7).\(1 + i % 11)")!
            let flow: FlowKey? = i % 5 == 0 ? nil : FlowKey(.udp, Endpoint(a, UInt16(5000 + i % 13)), Endpoint(IPAddress("10.0.9.9")!, 16402))
            let evidence: Evidence = i % 9 == 0 ? .logLine(input: 1, line: i + 1) : .frame(input: i % 3, frame: UInt64(i + 1))
            var e = PeerEvent(kind: kinds[i % kinds.count], t: Nanos(i / 3) * 1_000_000, evidence: evidence,
                              from: PeerHint(peerID: UInt64(i % 17 + 1), endpoint: flow?.src),
                              to: i % 4 == 0 ? .unknown : PeerHint(address: IPAddress("10.0.9.9")!), flow: flow,
                              source: sources[i % sources.count],
                              attrs: i % 6 == 0 ? [:] : ["service": "_s\(i % 5)._tcp.local", "n": "\(i)"])
            if i % 8 == 0 {
                e.count = 2 + i % 5
                e.lastT = e.t + 5_000
                e.lastEvidence = .frame(input: 0, frame: UInt64(i + 2))
            }
            out.append(e)
        }
        return out
    }

    func testEditsAcrossChunksGiveThePlainListsEvents() {
        let plain = Self.script(3 * PackedEvents.chunkSize + 17)
        Self.checkEdits(plain, PackedEvents(plain))
    }

    /// The same with the attributes left in a spill file (`init(attributesIn:)`, the timeline stage's
    /// store on a spilled input): every field, attributes read back from the file, equals the plain
    /// list's after the same edits (a note set in place and events added without a record held).
    func testEditsAcrossChunksGiveThePlainListsEventsWithAttributesInASpillFile() throws {
        let spill = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 4096)
        for e in Self.script(3 * PackedEvents.chunkSize + 17) { try spill.append(e) }
        try spill.finishWriting()
        // The events as read back (the file's own boxes), each added with its record.
        var plain: [PeerEvent] = []
        var packed = PackedEvents(attributesIn: spill)
        var reader = spill.makeIterator()
        while let e = reader.next() {
            plain.append(e)
            packed.append(e, record: reader.recordOffset, boxIDs: reader.recordBoxIDs)
        }
        XCTAssertNil(spill.readError)
        XCTAssertTrue(packed.attributesFile === spill)
        // The records name the file's boxes by index: none is held in the list's own tables.
        XCTAssertEqual(packed.ownBoxCount, 0)
        XCTAssertLessThanOrEqual(PackedEvents.fileRecordSize, 64, "a file record holds no attributes slot and no references")
        Self.checkEdits(plain, packed)
        XCTAssertNil(spill.recordReadError)
    }

    /// A list in a file narrows each event's span to its last time (32 bits: nanoseconds, or whole
    /// microseconds) and its evidence (input in 15 bits, frames or lines in 32, the last as a
    /// difference): values at and past every edge of those forms come back exactly, and stay so
    /// through the edits the timeline makes (folds that leave the narrow form, moves, cuts, overwrites).
    func testAFileListKeepsSpansAndEvidenceTheNarrowFormsCannotHold() throws {
        let spill = try SpilledEvents(directory: NSTemporaryDirectory())
        try spill.finishWriting()
        let spans: [Nanos] = [0, 1, (1 << 31) - 1, 1 << 31, 3_000_000_000, 2_147_483_646_000, 2_147_483_647_000,
                              2_400_000_000_001, -1, Nanos.max]
        let evidence: [(Evidence, Evidence?)] = [
            (.frame(input: 0, frame: 7), nil), (.frame(input: 0, frame: 0), .frame(input: 0, frame: UInt64(UInt32.max) - 1)),
            (.frame(input: 0, frame: 0), .frame(input: 0, frame: UInt64(UInt32.max))),
            (.frame(input: 0, frame: UInt64(UInt32.max)), nil), (.frame(input: 0, frame: UInt64(UInt32.max) + 1), nil),
            (.frame(input: 0x7FFE, frame: 9), .frame(input: 0x7FFE, frame: 10)), (.frame(input: 0x7FFF, frame: 9), nil),
            (.frame(input: -1, frame: 9), nil), (.frame(input: 1, frame: 9), .frame(input: 2, frame: 10)),
            (.frame(input: 1, frame: 9), .frame(input: 1, frame: 8)), (.frame(input: 1, frame: 9), .logLine(input: 1, line: 10)),
            (.logLine(input: 3, line: 0), .logLine(input: 3, line: Int(UInt32.max))), (.logLine(input: 3, line: -5), nil),
            (.logLine(input: 0x7FFE, line: 12), .logLine(input: 0x7FFE, line: 12)), (.logLine(input: Int.max, line: 1), nil),
        ]
        var plain = Self.script(3 * PackedEvents.chunkSize + 17)
        for i in plain.indices {
            if i % 3 == 0 { plain[i].t = [0, -5, Nanos.min, 1_700_000_000_000_000_000][i / 3 % 4] }
            plain[i].lastT = plain[i].t &+ spans[i % spans.count]
            let (f, l) = evidence[i % evidence.count]
            plain[i].evidence = f
            plain[i].lastEvidence = l
        }
        var packed = PackedEvents(attributesIn: spill)
        for e in plain { packed.append(e) }
        XCTAssertLessThanOrEqual(PackedEvents.fileRecordSize, 40)
        Self.checkEdits(plain, packed)
        // Folds one by one: a narrow record goes wide and back.
        var one = PackedEvents(attributesIn: spill)
        var e = plain[1]
        e.t = 1_000
        e.lastT = 1_000
        e.evidence = .frame(input: 2, frame: 100)
        e.lastEvidence = nil
        one.append(e)
        for (t, ev) in [(Nanos(2_000), Evidence.frame(input: 2, frame: 101)), (9_000_000_000_123, .frame(input: 3, frame: 5)),
                        (3_000, .frame(input: 2, frame: 102)), (4_000, .logLine(input: 2, line: 103))] {
            one.fold(into: 0, t: t, evidence: ev)
            e.count += 1
            e.lastT = t
            e.lastEvidence = ev
            XCTAssertEqual(Self.differences([e], one, "fold to \(t)"), [])
        }
    }

    /// A list in a file keeps every field right where the narrow forms do not do: boxes the file does
    /// not hold (a hint normalised after reading) or indexes that do not name the event's boxes (held in
    /// the list's own table), records past 4 GiB into the file, an event without a record, and more
    /// than 65,535 labels; through moves, cuts and overwrites.
    func testAFileListKeepsFieldsTheNarrowFormsCannotHold() throws {
        let spill = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 4096)
        let script = Self.script(600)
        for e in script { try spill.append(e) }
        try spill.finishWriting()
        var read: [(PeerEvent, Int, SpilledEvents.BoxIDs)] = []
        var reader = spill.makeIterator()
        while let e = reader.next() { read.append((e, reader.recordOffset, reader.recordBoxIDs)) }
        XCTAssertEqual(read.count, script.count)
        var plain: [PeerEvent] = []
        var offsets: [Int] = []
        var packed = PackedEvents(attributesIn: spill)
        let far = [Int(UInt32.max) - 1, Int(UInt32.max), Int(UInt32.max) + 1, 5_000_000_000, Int.max]
        for (i, (e0, at, ids)) in read.enumerated() {
            var e = e0
            var given = ids
            var offset = at
            switch i % 10 {
            case 1: e.from = PeerHint(peerID: UInt64(900 + i % 3), displayName: "normalised \(i % 3)")  // not in the file
            case 2: given = SpilledEvents.BoxIDs(from: ids.to, to: ids.from, flow: ids.flow)  // mixed up
            case 3: given = SpilledEvents.BoxIDs(from: ids.flow, to: 1 << 31 | 7, flow: UInt32.max)  // junk
            case 4: offset = far[i / 10 % far.count]
            default: break
            }
            plain.append(e)
            if i % 10 == 5 {
                packed.append(e)  // no record: attributes held
                offsets.append(-1)
            } else {
                packed.append(e, record: offset, boxIDs: given)
                offsets.append(offset)
            }
        }
        // Only the fallbacks went to the list's own table (a few normalised hints, and boxes of mixed-up indexes).
        XCTAssertGreaterThan(packed.ownBoxCount, 0)
        XCTAssertLessThan(packed.ownBoxCount, 300, "600 events name 1,600 boxes")
        func checkOffsets(_ what: String) {
            XCTAssertEqual(packed.indices.map { packed.recordOffset($0) }, offsets, what)
        }
        checkOffsets("appended")
        // Fields other than attributes (the far records cannot be read back: their attributes are none).
        func sameButAttrs(_ what: String) {
            for i in plain.indices {
                var p = packed[i]
                p.attrs = plain[i].attrs
                guard p == plain[i], p.count == plain[i].count, p.lastEvidence == plain[i].lastEvidence,
                      packed.from(i) == plain[i].from, packed.to(i) == plain[i].to, packed.flow(i) == plain[i].flow,
                      packed.samePeersAndFlow(i, plain[i]) else {
                    XCTFail("\(what) #\(i): \(packed[i]) != \(plain[i])")
                    return
                }
                if offsets[i] < Int(UInt32.max) - 1 || offsets[i] == -1 {
                    XCTAssertEqual(packed.attrs(i), plain[i].attrs, "\(what) #\(i)")
                }
            }
        }
        sameButAttrs("appended")
        XCTAssertNotNil(spill.recordReadError, "a record past the file's end is not read")
        // Moves (wide places and labels go with their event), a cut and an overwrite.
        var k = 0
        for i in plain.indices where i % 4 != 1 {
            plain[k] = plain[i]
            offsets[k] = offsets[i]
            packed.move(from: i, to: k)
            k += 1
        }
        plain.removeSubrange(k...)
        offsets.removeSubrange(k...)
        packed.keepFirst(k)
        // An overwrite keeps the slot's record place (its attributes are held).
        plain[0] = plain[2]
        packed[0] = packed[2]
        packed.removeLast()
        plain.removeLast()
        offsets.removeLast()
        checkOffsets("edited")
        sameButAttrs("edited")

        // More labels than 16 bits hold (kinds and plugins as one label), moved across the mark.
        var many = PackedEvents(attributesIn: spill)
        var labelsPlain: [PeerEvent] = []
        for i in 0 ..< 70_000 {
            let e = PeerEvent(kind: .browse, t: Nanos(i), evidence: .frame(input: 0, frame: UInt64(i)), source: "p\(i)")
            labelsPlain.append(e)
            many.append(e, record: -1)
        }
        for (i, k) in [(69_999, 3), (65_534, 65_535), (65_535, 65_536), (4, 69_000)] {
            labelsPlain[k] = labelsPlain[i]
            many.move(from: i, to: k)
        }
        XCTAssertTrue(labelsPlain.indices.allSatisfy { many.source($0) == labelsPlain[$0].source && many[$0] == labelsPlain[$0] })
        many.keepFirst(65_536)
        XCTAssertEqual(many.source(65_535), labelsPlain[65_535].source)
        many.append(labelsPlain[69_999], record: 12)
        XCTAssertEqual(many.source(65_536), "p69999")
        XCTAssertEqual(many.recordOffset(65_536), 12)
    }

    static func checkEdits(_ plain: [PeerEvent], _ packed: PackedEvents) {
        var plain = plain, packed = packed
        let n = plain.count
        XCTAssertEqual(Self.differences(plain, packed, "packed"), [])
        // Compacting in place as the timeline does: keep two events in three, moved down (across chunks).
        var k = 0
        for i in 0 ..< n where i % 3 != 1 {
            plain[k] = plain[i]
            packed.move(from: i, to: k)
            k += 1
        }
        // Folds into kept events in earlier chunks (a query folded into a fold begun long before).
        for (target, t) in [(5, Nanos(9_000_000_000)), (PackedEvents.chunkSize - 1, 9_000_000_001), (PackedEvents.chunkSize, 9_000_000_002), (5, 9_000_000_003)] {
            let ev = Evidence.frame(input: 0, frame: UInt64(t))
            plain[target].count &+= 1
            plain[target].lastT = t
            plain[target].lastEvidence = ev
            packed.fold(into: target, t: t, evidence: ev)
        }
        var note = plain[7].attrs
        note["note"] = "stopped advertising; still in session"
        plain[7].attrs = note
        packed.setAttrs(note, at: 7)
        plain.removeSubrange(k...)
        packed.keepFirst(k)
        XCTAssertEqual(Self.differences(plain, packed, "compacted"), [])
        // A cut at a chunk's end, then growing again from there, and removing back over the boundary.
        plain.removeSubrange((2 * PackedEvents.chunkSize)...)
        packed.keepFirst(2 * PackedEvents.chunkSize)
        for e in Self.script(3) {
            plain.append(e)
            packed.append(e)
        }
        for _ in 0 ..< 4 {
            plain.removeLast()
            packed.removeLast()
        }
        packed.shrink()
        XCTAssertEqual(Self.differences(plain, packed, "cut and regrown"), [])
        // A whole event written over another.
        plain[3] = plain[PackedEvents.chunkSize + 3]
        packed[3] = packed[PackedEvents.chunkSize + 3]
        XCTAssertEqual(Self.differences(plain, packed, "overwritten"), [])
    }

    func testCountsBeyond32BitsAreKept() {
        var plain = Self.script(10)
        plain[2].count = 5_000_000_000
        plain[4].count = Int(UInt32.max) - 1
        plain[6].count = Int(UInt32.max)
        var packed = PackedEvents(plain)
        XCTAssertEqual(Self.differences(plain, packed, "big"), [])
        // Folding past 32 bits, and a big count moved and cut.
        for i in [4, 4, 2] {
            plain[i].count &+= 1
            plain[i].lastT = 99
            plain[i].lastEvidence = .frame(input: 0, frame: 99)
            packed.fold(into: i, t: 99, evidence: .frame(input: 0, frame: 99))
        }
        XCTAssertEqual(packed.count(4), Int(UInt32.max) + 1)
        plain[1] = plain[2]
        packed.move(from: 2, to: 1)
        plain[2] = plain[3]
        packed.move(from: 3, to: 2)
        plain[0] = plain[9]
        packed[0] = plain[9]
        XCTAssertEqual(Self.differences(plain, packed, "big moved"), [])
        plain.removeSubrange(5...)
        packed.keepFirst(5)
        plain.append(Self.script(1)[0])
        packed.append(Self.script(1)[0])
        plain.append(Self.script(1)[0])
        packed.append(Self.script(1)[0])
        XCTAssertEqual(Self.differences(plain, packed, "big cut"), [])
    }

    /// A list in a file holds a count in 16 bits and the label with the evidences' input as one 16-bit
    /// shape (40-byte records): counts at and past 65,535 and more shapes than 16 bits name come back
    /// exactly, through folds that cross the marks (a narrow count going wide, a fold whose evidence
    /// changes the shape), moves, cuts and overwrites.
    func testAFileListKeepsCountsAndShapesPast16Bits() throws {
        let spill = try SpilledEvents(directory: NSTemporaryDirectory())
        try spill.finishWriting()
        XCTAssertEqual(PackedEvents.fileRecordSize, 40)
        var plain = Self.script(40)
        let counts = [65_533, 65_534, 65_535, 65_536, 70_000, Int(UInt32.max), 5_000_000_000, 1, 0]
        for (i, n) in counts.enumerated() { plain[i * 4].count = n }
        var packed = PackedEvents(attributesIn: spill)
        for e in plain { packed.append(e) }
        XCTAssertEqual(Self.differences(plain, packed, "counts"), [])
        // Folds across 65,534 / 65,535 (narrow to wide), a fold moving the evidence to another input
        // (a new shape), then moves, a cut and an overwrite.
        for (i, ev) in [(0, Evidence.frame(input: 0, frame: 90)), (0, .frame(input: 0, frame: 91)), (0, .frame(input: 0, frame: 92)),
                        (4, .frame(input: 5, frame: 93)), (8, .logLine(input: 0, line: 94)), (28, .frame(input: 0, frame: 95))] {
            plain[i].count &+= 1
            plain[i].lastT = 99
            plain[i].lastEvidence = ev
            packed.fold(into: i, t: 99, evidence: ev)
        }
        XCTAssertEqual(packed.count(0), 65_536)
        XCTAssertEqual(Self.differences(plain, packed, "folded"), [])
        // Each slot moved from is moved into again or cut (a move leaves it to be overwritten).
        for (i, k) in [(0, 1), (4, 0), (8, 3), (20, 12), (28, 4), (24, 8), (36, 20)] {
            plain[k] = plain[i]
            packed.move(from: i, to: k)
        }
        plain[2] = plain[16]
        packed[2] = packed[16]
        plain.removeSubrange(24...)
        packed.keepFirst(24)
        XCTAssertEqual(Self.differences(plain, packed, "moved"), [])

        // More shapes than 16 bits name: 300 labels with 250 inputs each.
        var many = PackedEvents(attributesIn: spill)
        var shapesPlain: [PeerEvent] = []
        for i in 0 ..< 75_000 {
            let e = PeerEvent(kind: .browse, t: Nanos(i), evidence: .frame(input: i / 300, frame: UInt64(i)), source: "p\(i % 300)")
            shapesPlain.append(e)
            many.append(e, record: -1)
        }
        // A fold that sends a narrow shape wide (another input) and one past the mark back to a known shape.
        for (i, ev) in [(10, Evidence.frame(input: 1, frame: 5)), (74_000, .frame(input: 0, frame: 74_001)), (74_001, .logLine(input: 0, line: 3))] {
            shapesPlain[i].count &+= 1
            shapesPlain[i].lastT = Nanos(i + 1)
            shapesPlain[i].lastEvidence = ev
            many.fold(into: i, t: Nanos(i + 1), evidence: ev)
        }
        for (i, k) in [(74_999, 3), (65_534, 65_535), (65_535, 65_536), (4, 69_000)] {
            shapesPlain[k] = shapesPlain[i]
            many.move(from: i, to: k)
        }
        XCTAssertEqual(Self.differences(shapesPlain, many, "shapes"), [])
    }

    /// The engine gives a browse query the attribute buffer of an equal query held before, so the runs
    /// a querier opens again (after each pause) and the runs of queriers asking the same question
    /// share one buffer; the events the trace stands for are the same with and without.
    func testQueryRunsShareTheirQueriesAttributeBuffersAndStandForTheSameEvents() throws {
        func stats(_ q: QueryRuns) -> (repeats: Int, sharing: Int) {
            var first: [EventAttrs: EventAttrs] = [:]
            var repeats = 0, sharing = 0
            for r in q.runs where !r.template.attrs.isEmpty {
                let a = r.template.attrs
                if let f = first[a] {
                    repeats += 1
                    if EventAttrsSharing.sameBuffer(f, a) { sharing += 1 }
                } else {
                    first[a] = a
                }
            }
            return (repeats, sharing)
        }
        try withGeneratedCrowds("qshare") { path, _ in
            var unshared = AnalysisSession.engineOptions(AnalysisSession.Configuration())
            unshared.shareAttributes = false
            let sharingEngine = Engine(options: AnalysisSession.engineOptions(AnalysisSession.Configuration()))
            sharingEngine.compactQueries = true
            let plainEngine = Engine(options: unshared)
            plainEngine.compactQueries = true
            let shared = try PeerscopeRun.run(paths: [path], engine: sharingEngine)
            let plain = try PeerscopeRun.run(paths: [path], engine: plainEngine)
            XCTAssertEqual(shared.queryRuns.merged(shared.events), plain.queryRuns.merged(plain.events), path)
            let s = stats(shared.queryRuns), p = stats(plain.queryRuns)
            XCTAssertGreaterThan(s.repeats, 50, "\(path): runs repeat their queries' attributes")
            XCTAssertGreaterThan(s.sharing, s.repeats * 3 / 4, "\(path): most share a buffer (\(s.sharing) of \(s.repeats))")
            // Without the engine's table a querier's own runs may still share: the mDNS plugin's per-querier
            // cache hands out one packed buffer. The table never shares less.
            XCTAssertGreaterThanOrEqual(s.sharing, p.sharing, path)
        }
    }
}
