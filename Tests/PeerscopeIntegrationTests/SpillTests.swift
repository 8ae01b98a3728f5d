import Foundation
@testable import Peerscope
@testable import PeerscopeCore
import PeerscopeReports
import PeerscopeSimulator
@testable import PeerscopeTimeline
import XCTest

/// Kept events spilled to a temporary file once decoding is over (`SpilledEvents`,
/// `Configuration.spillBytes`): the timeline stage reads them back in passes, and the report is the one
/// the in-memory run gives, on every input.
final class SpillTests: XCTestCase {
    /// A configuration that spills everything (threshold 0) through buffers of 64 bytes, so that every
    /// event crosses write and read buffers many times over, while decoding in sorted writes of a few
    /// events each (many writes merged on reading); or never spills.
    static func configuration(spill: Bool, directory: String? = nil) -> AnalysisSession.Configuration {
        var c = AnalysisSession.Configuration()
        c.spillBytes = spill ? 0 : Int.max
        c.spillBufferBytes = 64
        c.spillWindowEvents = 3
        c.spillOnlyQueryHeavy = false
        c.spillDirectory = directory
        return c
    }

    struct Outcome {
        var json: String
        var text: String
        var spilled: Bool
        var notes: [String]
    }

    static func analyse(_ captures: [String], logs: [String], _ c: AnalysisSession.Configuration,
                        writeLimit: Int? = nil) throws -> Outcome {
        let s = AnalysisSession(c)
        s.addCaptures(captures)
        _ = s.addLogs(logs)
        s.spillWriteLimit = writeLimit
        let report = try s.finish().report
        return Outcome(json: JSONReportWriter.render(report), text: TextReportWriter.render(report, showAllTimeline: true),
                       spilled: s.spillPath != nil, notes: s.notes)
    }

    /// Samples (with and without their logs) and every corpus capture, compressed ones included.
    static func inputs() -> [(name: String, captures: [String], logs: [String])] {
        var out: [(String, [String], [String])] = []
        let dir = Place.samples
        for f in ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() where f.hasSuffix(".pcapng") {
            let path = dir.appendingPathComponent(f).path
            out.append((f, [path], []))
            let logDir = dir.appendingPathComponent("logs/\(f.dropLast(".pcapng".count))")
            let logs = ((try? FileManager.default.contentsOfDirectory(atPath: logDir.path)) ?? [])
                .sorted().map { logDir.appendingPathComponent($0).path }
            if !logs.isEmpty { out.append((f + " with logs", [path], logs)) }
        }
        if let shared = Place.shared {
            let corpus = shared.appendingPathComponent("corpus")
            for f in ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()
            where [".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"].contains(where: { f.hasSuffix($0) }) {
                out.append((f, [corpus.appendingPathComponent(f).path], []))
            }
        }
        return out
    }

    func compare(_ name: String, _ captures: [String], logs: [String], _ problems: inout [String], spills: inout Int) throws {
        let memory = try Self.analyse(captures, logs: logs, Self.configuration(spill: false))
        let spilled = try Self.analyse(captures, logs: logs, Self.configuration(spill: true))
        XCTAssertFalse(memory.spilled, name)
        if spilled.spilled { spills += 1 }
        if memory.json != spilled.json {
            problems.append("\(name) JSON \(firstDifferingLine(memory.json, spilled.json, ("memory", "spilled")))")
        }
        if memory.text != spilled.text {
            problems.append("\(name) text \(firstDifferingLine(memory.text, spilled.text, ("memory", "spilled")))")
        }
        XCTAssertEqual(spilled.notes, [], name)
    }

    func testSpilledReportsEqualInMemoryOnesOnEverySampleAndCorpusCapture() throws {
        var problems: [String] = []
        var spills = 0
        let inputs = Self.inputs()
        for i in inputs { try compare(i.name, i.captures, logs: i.logs, &problems, spills: &spills) }
        XCTAssertEqual(problems, [], problems.prefix(10).joined(separator: "\n"))
        // Every input with events spilled (an empty capture has none to spill).
        XCTAssertGreaterThan(spills, inputs.count / 2)
        if Place.shared == nil { throw XCTSkip("../shared/corpus is not beside the package: samples only") }
    }

    /// Generated group sessions with their devices' logs and without, and the crowded mDNS captures the
    /// folding tests read (browse queries in query runs, folded in the timeline stage).
    func testSpilledReportsEqualInMemoryOnesOnGeneratedGroupsAndCrowds() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-spilltest-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var problems: [String] = []
        var spills = 0
        let (capture, logs) = try Self.writeGeneratedGroup(in: dir)
        XCTAssertFalse(logs.isEmpty)
        try compare("group-8", [capture], logs: [], &problems, spills: &spills)
        try compare("group-8 with logs", [capture], logs: logs, &problems, spills: &spills)
        try withGeneratedCrowds("spill") { path, hosts in
            try compare("crowd of \(hosts)", [path], logs: [], &problems, spills: &spills)
            // A crowd read with logs: its queries go through the list in full, log lines among them.
            try compare("crowd of \(hosts) with logs", [path], logs: logs, &problems, spills: &spills)
        }
        XCTAssertEqual(problems, [], problems.prefix(10).joined(separator: "\n"))
        XCTAssertEqual(spills, 6)
    }

    /// The file is made in the folder asked (TMPDIR by default, never beside the inputs), has no name
    /// while it is used, and nothing is left there after the run, nor after a run whose spill failed.
    func testTheTemporaryFileLivesInTheTemporaryFolderAndIsGoneAfterTheRun() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-spilldir-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sample = Place.samples.appendingPathComponent("healthy-pair.pcapng").path
        let s = AnalysisSession(Self.configuration(spill: true, directory: dir.path))
        s.addCaptures([sample])
        _ = try s.finish()
        let path = try XCTUnwrap(s.spillPath)
        XCTAssertTrue(path.hasPrefix(dir.path + "/peerscope-spill-"), path)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [])
        // A write failing half-way: nothing left either.
        let failed = try Self.analyse([sample], logs: [], Self.configuration(spill: true, directory: dir.path), writeLimit: 100)
        XCTAssertFalse(failed.spilled)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [])
        // No folder named: TMPDIR (else /tmp), never the inputs' folder.
        XCTAssertNil(AnalysisSession.Configuration().spillDirectory)
        let tmp = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        XCTAssertEqual(AnalysisSession.temporaryDirectory, tmp)
        let d = AnalysisSession(Self.configuration(spill: true))
        d.addCaptures([sample])
        _ = try d.finish()
        let dpath = try XCTUnwrap(d.spillPath)
        XCTAssertTrue(dpath.hasPrefix((tmp.hasSuffix("/") ? tmp : tmp + "/") + "peerscope-spill-"), dpath)
        XCTAssertFalse(dpath.hasPrefix(Place.samples.path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dpath))
    }

    /// A folder that cannot take the file, or a write failing half-way (a full disk): the events stay in
    /// memory, one note says so, and the report is the in-memory one: no event lost.
    func testASpillThatCannotBeWrittenKeepsTheEventsInMemoryWithOneNote() throws {
        let sample = Place.samples.appendingPathComponent("healthy-pair.pcapng").path
        let logDir = Place.samples.appendingPathComponent("logs/healthy-pair")
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: logDir.path)) ?? []).sorted().map { logDir.appendingPathComponent($0).path }
        let memory = try Self.analyse([sample], logs: logs, Self.configuration(spill: false))
        let missing = "/nonexistent-peerscope-\(ProcessInfo.processInfo.processIdentifier)/tmp"
        let unwritable = try Self.analyse([sample], logs: logs, Self.configuration(spill: true, directory: missing))
        XCTAssertFalse(unwritable.spilled)
        XCTAssertEqual(unwritable.notes.count, 1)
        XCTAssertTrue(unwritable.notes.first?.hasPrefix("cannot create a temporary file in \(missing): ") ?? false, "\(unwritable.notes)")
        XCTAssertTrue(unwritable.notes.first?.hasSuffix("; keeping the events in memory") ?? false)
        XCTAssertEqual(unwritable.json, memory.json)
        XCTAssertEqual(unwritable.text, memory.text)
        for limit in [0, 1, 100, 5000] {
            let full = try Self.analyse([sample], logs: logs, Self.configuration(spill: true), writeLimit: limit)
            XCTAssertFalse(full.spilled, "limit \(limit)")
            XCTAssertEqual(full.notes.count, 1, "limit \(limit)")
            XCTAssertTrue(full.notes.first?.contains("cannot write the temporary file") ?? false, "\(full.notes)")
            XCTAssertEqual(full.json, memory.json, "limit \(limit)")
        }
    }

    /// By default only a list whose query runs outnumber its events spills (a crowded mDNS capture), not
    /// one the in-memory path frees before any entry exists (a group session).
    func testByDefaultOnlyAQueryHeavyListSpills() throws {
        var c = AnalysisSession.Configuration()
        c.spillBytes = 0
        XCTAssertTrue(c.spillOnlyQueryHeavy)
        let sample = Place.samples.appendingPathComponent("group-8.pcapng").path
        let trace = try AnalysisSession(AnalysisOptions(captures: [sample])).decode(compactQueries: true).trace
        XCTAssertLessThanOrEqual(trace.queryRuns.count, trace.events.count)
        XCTAssertFalse(try Self.analyse([sample], logs: [], c).spilled)
        var crowds = 0
        try withGeneratedCrowds("spill-default") { path, _ in
            let t = try AnalysisSession(AnalysisOptions(captures: [path])).decode(compactQueries: true).trace
            XCTAssertGreaterThan(t.queryRuns.count, t.events.count)
            let spilled = try Self.analyse([path], logs: [], c), memory = try Self.analyse([path], logs: [], Self.configuration(spill: false))
            XCTAssertTrue(spilled.spilled)
            XCTAssertEqual(spilled.json, memory.json)
            crowds += 1
        }
        XCTAssertEqual(crowds, 2)
    }

    /// The threshold: the samples stay in memory by default, a list past it spills.
    func testTheDefaultThresholdKeepsSamplesInMemoryAndALargerListSpills() throws {
        XCTAssertEqual(AnalysisSession.Configuration().spillBytes, AnalysisSession.defaultSpillBytes)
        if ProcessInfo.processInfo.environment["PEERSCOPE_SPILL_BYTES"] == nil {
            XCTAssertEqual(AnalysisSession.defaultSpillBytes, 8 << 20)
        }
        let sample = Place.samples.appendingPathComponent("healthy-pair.pcapng").path
        var c = AnalysisSession.Configuration()
        c.spillOnlyQueryHeavy = false
        c.spillBytes = 64 << 20
        XCTAssertFalse(try Self.analyse([sample], logs: [], c).spilled)
        // Just under and just over what the sample's events take as plain events.
        let trace = try AnalysisSession(AnalysisOptions(captures: [sample])).decode(compactQueries: true).trace
        let bytes = (trace.events.count + trace.queryRuns.count) * MemoryLayout<PeerEvent>.stride
        c.spillBytes = bytes
        XCTAssertFalse(try Self.analyse([sample], logs: [], c).spilled)
        c.spillBytes = bytes - 1
        XCTAssertTrue(try Self.analyse([sample], logs: [], c).spilled)
    }

    /// The builder's own guards, for a spill analysis never gives it: a list out of time order is read
    /// into memory and sorted as a list is (the passes read the file in its order), and a file that
    /// cannot be read back to its end makes the report incomplete and say so, never a silent loss.
    func testABuilderSortsASpillOutOfTimeOrderAndSaysWhatADamagedOneMissed() throws {
        let sample = Place.samples.appendingPathComponent("group-8.pcapng").path
        let trace = try AnalysisSession(AnalysisOptions(captures: [sample])).decode(compactQueries: false).trace
        var reversed = trace
        reversed.events = trace.allEvents.reversed()
        XCTAssertGreaterThan(reversed.events.count, 100)
        XCTAssertNotEqual(Set(reversed.events.map(\.t)).count, 1)
        func spill(_ events: [PeerEvent]) throws -> SpilledEvents {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 64)
            s.readBufferSize = 64
            for e in events { try s.append(e) }
            try s.finishWriting()
            return s
        }
        let memory = JSONReportWriter.render(AnalysisSession.report(reversed))
        let outOfOrder = try spill(reversed.events)
        XCTAssertFalse(outOfOrder.inTimeOrder)
        var empty = reversed
        empty.events = []
        let fromSpill = AnalysisSession.report(empty, detectors: .defaults, spilled: outOfOrder, mapLargeBlocks: nil)
        XCTAssertEqual(JSONReportWriter.render(fromSpill), memory)
        XCTAssertEqual(fromSpill.inputProblems, [])

        // In time order, cut in half: the passes stop where the file does, and the report says so.
        let inOrder = try spill(trace.allEvents)
        XCTAssertTrue(inOrder.inTimeOrder)
        XCTAssertEqual(ftruncate(inOrder.fd, off_t(inOrder.bytesWritten / 2)), 0)
        let cut = AnalysisSession.report(empty, detectors: .defaults, spilled: inOrder, mapLargeBlocks: nil)
        XCTAssertFalse(cut.complete)
        XCTAssertEqual(cut.inputProblems.count, 1)
        XCTAssertTrue(cut.inputProblems.first?.hasSuffix("the timelines miss the events not read") ?? false, "\(cut.inputProblems)")
        // Out of time order and cut: read into memory, and still said.
        let both = try spill(reversed.events)
        XCTAssertEqual(ftruncate(both.fd, off_t(both.bytesWritten / 2)), 0)
        let cutList = AnalysisSession.report(empty, detectors: .defaults, spilled: both, mapLargeBlocks: nil)
        XCTAssertFalse(cutList.complete)
        XCTAssertEqual(cutList.inputProblems.count, 1)
    }

    // MARK: spilling while decoding

    /// The list the engine keeps in memory (query runs merged back in: what the timeline stage reads), and
    /// the one read back from what it spilled while decoding with `settings`, with each event's decoding
    /// order and the number of sorted writes.
    static func decodedBothWays(_ captures: [String], _ settings: Engine.SpillSettings)
        throws -> (memory: [PeerEvent], spilled: [PeerEvent], seqs: [Int], writes: Int, notes: [String]) {
        let options = AnalysisSession.engineOptions(AnalysisSession.Configuration())
        let memory: [PeerEvent], frames: UInt64
        if let known = inMemoryLists[captures] {
            (memory, frames) = known
        } else {
            let inMemory = Engine(options: options)
            inMemory.compactQueries = true
            let run = try PeerscopeRun.run(paths: captures, engine: inMemory)
            (memory, frames) = (run.queryRuns.merged(run.events), run.stats.frames)
            inMemoryLists[captures] = (memory, frames)
        }
        let engine = Engine(options: options)
        engine.compactQueries = true
        engine.spillSettings = settings
        let spilledRun = try PeerscopeRun.run(paths: captures, engine: engine)
        var spilled: [PeerEvent] = [], seqs: [Int] = []
        var writes = 0
        if let spill = engine.takeSpilled() {
            XCTAssertTrue(spill.inTimeOrder)
            XCTAssertTrue(spill.forEachWithSeq { e, seq in
                spilled.append(e)
                seqs.append(seq)
            })
            writes = spill.writeCount
            XCTAssertEqual(spilledRun.events.count + spilledRun.queryRuns.count, 0)
        } else {
            spilled = spilledRun.queryRuns.merged(spilledRun.events)
        }
        XCTAssertEqual(spilledRun.stats.frames, frames)
        return (memory, spilled, seqs, writes, engine.spillNotes)
    }

    /// In-memory lists by inputs (each decoded once per test run; generated inputs are rewritten alike).
    nonisolated(unsafe) static var inMemoryLists: [[String]: ([PeerEvent], UInt64)] = [:]

    static func everything(window: Int, bufferBytes: Int = 64) -> Engine.SpillSettings {
        Engine.SpillSettings(directory: AnalysisSession.temporaryDirectory, thresholdEvents: 0, onlyQueryHeavy: false,
                             windowEvents: window, bufferBytes: bufferBytes)
    }

    /// Spilling while decoding, in many sorted writes of a few events each (the engine's window, what
    /// coalescer runs still point at held back): the events read back are exactly the in-memory list,
    /// event for event and in order, on every sample and corpus capture, a generated group session and
    /// the crowds (queries in query runs until spilling starts). Timer events reported after later packets
    /// are among them: the order read differs from the order
    /// decoded on some inputs (the crowds' expiries), and the merge still gives the sorted list.
    func testEventsSpilledWhileDecodingAreTheInMemoryListInManySortedWrites() throws {
        var inputs = Self.inputs().filter { $0.logs.isEmpty }.map { ($0.name, $0.captures) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-spilldec-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sim = try Simulator.run("group-8", options: SimulationOptions(seed: 7, peers: 8, format: .pcap))
        let group = dir.appendingPathComponent("group.pcap").path
        try Data(sim.capture).write(to: URL(fileURLWithPath: group))
        inputs.append(("group-8 generated", [group]))
        var problems: [String] = []
        var reordered: [String] = []
        var manyWrites = 0, withQueries = 0
        func check(_ name: String, _ captures: [String]) throws {
            for (window, buffer) in [(1, 64), (3, 7), (64, 1 << 20)] {
                let r = try Self.decodedBothWays(captures, Self.everything(window: window, bufferBytes: buffer))
                XCTAssertEqual(r.notes, [], name)
                if r.memory != r.spilled {
                    let i = zip(r.memory, r.spilled).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(r.memory.count, r.spilled.count)
                    problems.append("\(name) window \(window): \(r.memory.count) events in memory, \(r.spilled.count) spilled, first difference at \(i)")
                    continue
                }
                guard window == 3 else { continue }
                if zip(r.seqs, r.seqs.dropFirst()).contains(where: { $0 > $1 }) { reordered.append(name) }
                if r.writes > 10 { manyWrites += 1 }
                if r.memory.contains(where: { $0.kind == .browse }) { withQueries += 1 }
            }
        }
        for (name, captures) in inputs { try check(name, captures) }
        try withGeneratedCrowds("spilldec") { path, hosts in try check("crowd of \(hosts)", [path]) }
        XCTAssertEqual(problems, [], problems.prefix(10).joined(separator: "\n"))
        // Late timers: events read back out of decoding order (the merge of the writes put them back).
        XCTAssertFalse(reordered.isEmpty)
        print("inputs read back out of decoding order: \(reordered)")
        XCTAssertGreaterThan(manyWrites, inputs.count / 2)
        XCTAssertGreaterThanOrEqual(withQueries, 3)
    }

    /// Spilling while decoding: the engine's table of attribute buffers (shared by kept events that
    /// repeat them) lets go of the buffers of the events each write took to the file, so it holds none
    /// once decoding is over, where the in-memory run's holds thousands; the list read back is the
    /// in-memory one.
    func testSpillingWhileDecodingLetsTheSharingTableForgetTheWrittenEventsBuffers() throws {
        try withGeneratedCrowds("spillshare") { path, hosts in
            guard hosts == 600 else { return }
            let options = AnalysisSession.engineOptions(AnalysisSession.Configuration())
            let inMemory = Engine(options: options)
            inMemory.compactQueries = true
            let run = try PeerscopeRun.run(paths: [path], engine: inMemory)
            XCTAssertGreaterThan(inMemory.sharingTableBuffers, 1000)
            let engine = Engine(options: options)
            engine.compactQueries = true
            engine.spillSettings = Self.everything(window: 512)
            _ = try PeerscopeRun.run(paths: [path], engine: engine)
            XCTAssertEqual(engine.sharingTableBuffers, 0)
            var spilled: [PeerEvent] = []
            let spill = try XCTUnwrap(engine.takeSpilled())
            XCTAssertGreaterThan(spill.writeCount, 5)
            XCTAssertTrue(spill.forEachWithSeq { e, _ in spilled.append(e) })
            XCTAssertEqual(spilled, run.queryRuns.merged(run.events))
        }
    }

    /// Spilling starts past the threshold, not before: the query runs held until then are written in
    /// their decoding order (a member's place among the events), and the list read back is the in-memory
    /// one; below the threshold nothing is spilled.
    func testSpillingWhileDecodingStartsPastTheThresholdWithTheQueryRunsHeld() throws {
        try withGeneratedCrowds("spilldec") { path, hosts in
            let all = try Self.decodedBothWays([path], Self.everything(window: 16))
            for threshold in [all.memory.count / 3, all.memory.count / 2] {
                var s = Self.everything(window: 16)
                s.thresholdEvents = threshold
                let r = try Self.decodedBothWays([path], s)
                XCTAssertGreaterThan(r.writes, 2, "crowd of \(hosts)")
                XCTAssertEqual(r.spilled, r.memory, "crowd of \(hosts) from \(threshold)")
            }
            var never = Self.everything(window: 16)
            never.thresholdEvents = all.memory.count
            XCTAssertEqual(try Self.decodedBothWays([path], never).writes, 0)
        }
    }

    /// A write failing half-way through decoding (a full disk after some sorted writes): the events
    /// written come back and decoding goes on in memory; one note, nothing lost, the same list.
    func testAWriteFailingWhileDecodingBringsTheEventsBackWithOneNote() throws {
        var failures = 0
        try withGeneratedCrowds("spilldec") { path, hosts in
            for limit in [0, 5000, 60000] {
                var s = Self.everything(window: 8)
                s.failWritesAfter = limit
                let r = try Self.decodedBothWays([path], s)
                XCTAssertEqual(r.writes, 0)
                XCTAssertEqual(r.notes.count, 1, "crowd of \(hosts), limit \(limit)")
                XCTAssertTrue(r.notes.first?.contains("cannot write the temporary file") ?? false, "\(r.notes)")
                XCTAssertEqual(r.spilled, r.memory, "crowd of \(hosts), limit \(limit)")
                failures += 1
            }
        }
        XCTAssertEqual(failures, 6)
    }

    /// The last flush failing (every write still in the write buffer, the disk full at the end): the
    /// events come back once each (the window held them a second time: the review found them doubled).
    func testTheLastFlushFailingBringsEachEventBackOnce() throws {
        var runs = 0
        try withGeneratedCrowds("spilldec") { path, hosts in
            var s = Self.everything(window: 8, bufferBytes: 1 << 26)
            s.failWritesAfter = 0
            let r = try Self.decodedBothWays([path], s)
            XCTAssertEqual(r.notes.count, 1, "crowd of \(hosts)")
            XCTAssertTrue(r.notes.first?.contains("cannot write the temporary file") ?? false, "\(r.notes)")
            XCTAssertEqual(r.spilled.count, r.memory.count, "crowd of \(hosts)")
            XCTAssertEqual(r.spilled, r.memory, "crowd of \(hosts)")
            runs += 1
        }
        XCTAssertEqual(runs, 2)
    }

    /// The default rule while decoding: a capture is judged query-heavy only past a sample of events
    /// (`Engine.queryHeavySample` by default: a group session opens with discovery queries). The test
    /// crowds are smaller than the default sample (the decision is left to the end of decoding); with a
    /// sample they pass, they spill as they decode, and the group session does not.
    func testWhileDecodingQueryHeavyIsJudgedOnALargeEnoughSample() throws {
        try withGeneratedCrowds("spilldec") { path, hosts in
            var s = Self.everything(window: 1 << 14, bufferBytes: 1 << 20)
            s.onlyQueryHeavy = true
            let r = try Self.decodedBothWays([path], s)
            XCTAssertLessThan(r.memory.count, Engine.queryHeavySample)
            XCTAssertEqual(r.writes, 0, "crowd of \(hosts)")
            s.queryHeavySample = 2000
            let small = try Self.decodedBothWays([path], s)
            XCTAssertGreaterThan(small.writes, 0, "crowd of \(hosts)")
            XCTAssertEqual(small.spilled, small.memory)
        }
        let sample = Place.samples.appendingPathComponent("group-8.pcapng").path
        var s = Self.everything(window: 4)
        s.onlyQueryHeavy = true
        s.queryHeavySample = 300
        let group = try Self.decodedBothWays([sample], s)
        XCTAssertGreaterThan(group.memory.count, 300)
        XCTAssertEqual(group.writes, 0)
    }

    /// On a spilled input the resolved events' attributes stay in the file and are read from it by the
    /// detectors and the discovery section (`PackedEvents.init(attributesIn:)`): intact, the report is
    /// the in-memory one; a file cut, emptied or overwritten once the timelines are built gives the
    /// attributes not read as none and an input problem saying so (the report incomplete), never a
    /// crash, nor another record's attributes taken as the event's.
    func testAttributesReadFromASpillDamagedAfterTheTimelinesGiveAnInputProblem() throws {
        let sample = Place.samples.appendingPathComponent("group-8.pcapng").path
        let trace = try AnalysisSession(AnalysisOptions(captures: [sample])).decode(compactQueries: false).trace
        XCTAssertGreaterThan(trace.allEvents.filter { !$0.attrs.isEmpty }.count, 100)
        func spill() throws -> SpilledEvents {
            let s = try SpilledEvents(directory: NSTemporaryDirectory(), writeBufferSize: 64)
            s.readBufferSize = 64
            for e in trace.allEvents { try s.append(e) }
            try s.finishWriting()
            return s
        }
        var empty = trace
        empty.events = []
        empty.queryRuns = QueryRuns()
        let memory = JSONReportWriter.render(AnalysisSession.report(trace))
        let intact = try spill()
        let fromFile = AnalysisSession.report(empty, detectors: .defaults, spilled: intact, mapLargeBlocks: nil)
        XCTAssertTrue(fromFile.timelines.attributesFile === intact, "the attributes are read from the file")
        XCTAssertEqual(JSONReportWriter.render(fromFile), memory)
        XCTAssertTrue(fromFile.complete)
        XCTAssertNil(intact.recordReadError)

        let damages: [(String, (SpilledEvents) -> Void)] = [
            ("emptied", { XCTAssertEqual(ftruncate($0.fd, 0), 0) }),
            ("cut in half", { XCTAssertEqual(ftruncate($0.fd, off_t($0.bytesWritten / 2)), 0) }),
            ("overwritten with 0xFF", { s in
                let junk = [UInt8](repeating: 0xFF, count: s.bytesWritten)
                XCTAssertEqual(junk.withUnsafeBytes { pwrite(s.fd, $0.baseAddress, junk.count, 0) }, junk.count)
            }),
            ("shifted by one record", { s in
                // Every record where another was: each read finds a whole record, of another event.
                let size = s.bytesWritten
                var bytes = [UInt8](repeating: 0, count: size)
                XCTAssertEqual(bytes.withUnsafeMutableBytes { pread(s.fd, $0.baseAddress, size, 0) }, size)
                var starts: [Int] = []
                s.forEachWithOffset { _, at in starts.append(at) }
                let first = starts.count > 1 ? starts[1] : 0
                let moved = Array(bytes[first...]) + Array(bytes[..<first])
                XCTAssertEqual(moved.withUnsafeBytes { pwrite(s.fd, $0.baseAddress, moved.count, 0) }, moved.count)
            }),
        ]
        for (name, damage) in damages {
            let s = try spill()
            let report = AnalysisSession.report(empty, detectors: .defaults, onStage: { stage in
                if case .timelines = stage { damage(s) }
            }, spilled: s, mapLargeBlocks: nil)
            XCTAssertFalse(report.complete, name)
            XCTAssertEqual(report.inputProblems.count, 1, "\(name): \(report.inputProblems)")
            XCTAssertTrue(report.inputProblems.first?.hasSuffix("events were judged without the attributes not read") ?? false,
                          "\(name): \(report.inputProblems)")
            XCTAssertNotNil(s.recordReadError, name)
            // Writing the report and reading every event again stays safe.
            XCTAssertFalse(JSONReportWriter.render(report).isEmpty)
            for e in report.timelines.events { _ = e.event }
        }
    }

    /// On a spilled input the store holds no event's attributes, so an entry's detail would be the only
    /// holder of its event's whole buffer: it keeps only the detail keys instead, equal ones in one
    /// buffer, and reads the same detail as the in-memory timelines (whose entries share their events'
    /// whole buffers). Generated group with logs (corroboration replaces details) and a crowd.
    func testEntriesOfASpilledInputKeepOnlyTheirDetailKeysSharedAndReadTheSameDetails() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-details-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let (capture, logs) = try Self.writeGeneratedGroup(in: dir)
        func details(_ t: Timelines) -> [EventAttrs] {
            t.peers.flatMap(\.entries).compactMap { e in if case .attrs(let a) = e.detailSource { a } else { nil } }
        }
        func check(_ name: String, _ captures: [String], _ logs: [String], shareRatio: Int) throws {
            let memory = try AnalysisSession(SpillTests.configuration(spill: false)).with(captures, logs).finish().report.timelines
            let session = AnalysisSession(SpillTests.configuration(spill: true)).with(captures, logs)
            let spilled = try session.finish().report.timelines
            XCTAssertNotNil(session.spillPath, name)
            XCTAssertNotNil(spilled.attributesFile, name)
            XCTAssertEqual(spilled.peers.map { $0.entries.map(\.detail) }, memory.peers.map { $0.entries.map(\.detail) }, name)
            let whole = details(memory), kept = details(spilled)
            XCTAssertGreaterThan(whole.count, 20, name)
            XCTAssertTrue(whole.contains { a in a.keys.contains { !TimelineMapping.detailKeys.contains($0) } },
                          "\(name): in memory entries hold their events' whole buffers")
            XCTAssertFalse(kept.contains { a in a.keys.contains { !TimelineMapping.detailKeys.contains($0) } }, name)
            let nonEmpty = kept.filter { !$0.isEmpty }
            let buffers = Set(nonEmpty.map { a in a.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } })
            XCTAssertGreaterThan(nonEmpty.count, 10, name)
            XCTAssertLessThan(buffers.count * shareRatio, nonEmpty.count, "\(name): equal details share a buffer")
        }
        try check("group-8 with logs", [capture], logs, shareRatio: 1)
        try withGeneratedCrowds("details") { path, hosts in try check("crowd of \(hosts)", [path], [], shareRatio: 2) }
    }
}

private extension AnalysisSession {
    func with(_ captures: [String], _ logs: [String]) -> AnalysisSession {
        addCaptures(captures)
        _ = addLogs(logs)
        return self
    }
}

extension SpillTests {
    /// The generated 8-peer group (seed 7) written into `dir`: its capture and its logs' paths.
    static func writeGeneratedGroup(in dir: URL) throws -> (capture: String, logs: [String]) {
        let sim = try Simulator.run("group-8", options: SimulationOptions(seed: 7, peers: 8, format: .pcap))
        let capture = dir.appendingPathComponent("group.pcap").path
        try Data(sim.capture).write(to: URL(fileURLWithPath: capture))
        var logs: [String] = []
        for l in sim.logs {
            let path = dir.appendingPathComponent("group-\(l.slug).log").path
            try l.text.write(toFile: path, atomically: true, encoding: .utf8)
            logs.append(path)
        }
        return (capture, logs)
    }
}
