import Foundation
@testable import Peerscope
@testable import PeerscopeCore
import PeerscopeReports
import PeerscopeSimulator
import XCTest

/// Kept events spilled to a temporary file once decoding is over (`SpilledEvents`,
/// `Configuration.spillBytes`): the timeline stage reads them back in passes, and the report is the one
/// the in-memory run gives, on every input.
final class SpillTests: XCTestCase {
    /// A configuration that spills everything (threshold 0) through buffers of 64 bytes, so that every
    /// event crosses write and read buffers many times over; or never spills.
    static func configuration(spill: Bool, directory: String? = nil) -> AnalysisSession.Configuration {
        var c = AnalysisSession.Configuration()
        c.spillBytes = spill ? 0 : Int.max
        c.spillBufferBytes = 64
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
        let sim = try Simulator.run("group-8", options: SimulationOptions(seed: 7, peers: 8, format: .pcap))
        let capture = dir.appendingPathComponent("group.pcap").path
        try Data(sim.capture).write(to: URL(fileURLWithPath: capture))
        var logs: [String] = []
        for l in sim.logs {
            let path = dir.appendingPathComponent("group-\(l.slug).log").path
            try l.text.write(toFile: path, atomically: true, encoding: .utf8)
            logs.append(path)
        }
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
            XCTAssertEqual(AnalysisSession.defaultSpillBytes, 64 << 20)
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
}
