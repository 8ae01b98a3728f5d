import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeReports

/// Issue 14: one analysis session API serves `analyze`, `check`, `capture` and the bench.
final class SessionTests: XCTestCase {
    func sample(_ name: String) -> String { Self.sample(name) }
    static func sample(_ name: String) -> String { Place.samples.appendingPathComponent(name).path }

    func testSessionSortsInputsIntoCapturesAndLogs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-session-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = sample("healthy-pair.pcapng")
        let log = dir.appendingPathComponent("device.log").path
        try "2026-01-15 10:00:00.000 Browser found peer: Bob\n".write(toFile: log, atomically: true, encoding: .utf8)
        // A text file named like a capture stays a capture (the reader says it is not one).
        let misnamed = dir.appendingPathComponent("notes.pcap").path
        try "just text\n".write(toFile: misnamed, atomically: true, encoding: .utf8)
        // A capture without a capture name is sorted by its bytes.
        let unnamed = dir.appendingPathComponent("capture.bin").path
        try FileManager.default.copyItem(atPath: capture, toPath: unnamed)

        let s = AnalysisSession()
        s.add([log, misnamed, unnamed])
        XCTAssertEqual(s.captures, [misnamed, unnamed])
        XCTAssertEqual(s.logs, [log])
        // A capture given as a log is read as a capture, with a note naming it.
        let notes = s.addLogs([capture])
        XCTAssertEqual(s.captures, [misnamed, unnamed, capture])
        XCTAssertEqual(notes, ["\(capture): given with --log but it is a pcapng capture; reading it as a capture"])
        let a = try s.finish()
        XCTAssertEqual(a.report.inputs, [misnamed, unnamed, capture, log], "captures first, then logs")
        XCTAssertFalse(a.report.complete, "the misnamed text file is no capture")
        XCTAssertEqual(a.report.stats.logLines, 1)
    }

    /// Issue 11: display names the capture taught (mDNS, invitation plists) anchor app prints that name a
    /// peer bare, with no keyword; a name the capture does not know leaves its line unknown and listed.
    func testNamesFromTheCaptureAnchorBareNamePrints() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-anchor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("device.log").path
        try """
        2026-01-15 10:00:01.000 Bob's iPad connected
        2026-01-15 10:00:02.000 Carol's iPad connected
        2026-01-15 10:00:03.000 Alice's iPhone is now notConnected

        """.write(toFile: log, atomically: true, encoding: .utf8)
        var c = AnalysisSession.Configuration()
        c.logOptions.collectUnknown = true
        let s = AnalysisSession(c)
        s.add([sample("healthy-pair.pcapng"), log])
        let a = try s.finish()
        let events = try XCTUnwrap(a.logs).events
        XCTAssertEqual(events.map(\.kind), [.stateChange, .stateChange])
        XCTAssertEqual(events.map { $0.from.displayName }, ["Bob's iPad", "Alice's iPhone"])
        XCTAssertEqual(events.compactMap { $0.attrs["to"] }, ["Connected", "Not Connected"])
        XCTAssertEqual(a.logs?.unknownLines.map(\.line), [2], "Carol's iPad is not in the capture")

        // The log alone knows no name: all three lines stay unknown.
        var c2 = AnalysisSession.Configuration()
        c2.logOptions.collectUnknown = true
        let alone = AnalysisSession(c2)
        alone.add([log])
        let b = try alone.finish()
        XCTAssertEqual(b.logs?.events.count, 0)
        XCTAssertEqual(b.logs?.unknownLines.map(\.line), [1, 2, 3])
    }

    /// Frames fed one at a time (as live capture does) give the report the file gives.
    func testFedFramesGiveTheFilesReport() throws {
        let path = sample("reconnect-storm.pcapng")
        let file = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [path]))

        let s = AnalysisSession()
        let input = s.addLiveInput(path)
        XCTAssertEqual(input, 0)
        let reader = try CaptureFileReader(path: path, input: input)
        var frames = 0
        while let f = reader.next() {
            s.feed(f)
            frames += 1
        }
        let live = try s.finish()
        XCTAssertGreaterThan(frames, 50)
        XCTAssertFalse(file.report.findings.isEmpty)
        XCTAssertEqual(JSONReportWriter.render(live.report), JSONReportWriter.render(file.report))
    }

    /// Sessions share nothing: many at once give what each gives alone.
    func testParallelSessionsGiveTheSerialReports() throws {
        let names = ["healthy-pair", "duplicate-connection", "keepalive-timeout", "channel-error-icmp"]
        let config = AnalysisSession.Configuration()
        @Sendable func run(_ name: String) -> String {
            let s = AnalysisSession(config)
            s.add([Self.sample("\(name).pcapng")])
            s.add(((try? FileManager.default.contentsOfDirectory(atPath: Self.sample("logs/\(name)"))) ?? [])
                .sorted().map { Self.sample("logs/\(name)/\($0)") })
            return (try? s.finish()).map { JSONReportWriter.render($0.report) } ?? "unreadable"
        }
        let serial = names.map(run)
        let results = Results(count: names.count * 2)
        DispatchQueue.concurrentPerform(iterations: names.count * 2) { i in
            results.set(i, run(names[i % names.count]))
        }
        for i in 0 ..< names.count * 2 {
            XCTAssertEqual(results.get(i), serial[i % names.count], names[i % names.count])
        }
        XCTAssertFalse(serial.contains("unreadable"))
    }

    func testStagesAreReportedInOrder() throws {
        let s = AnalysisSession()
        s.add([sample("keepalive-timeout.pcapng")])
        s.add(try FileManager.default.contentsOfDirectory(atPath: sample("logs/keepalive-timeout")).sorted()
            .map { sample("logs/keepalive-timeout/\($0)") })
        var stages: [String] = []
        s.onStage = { stage in
            switch stage {
            case .decoded(let frames, let events, _): stages.append("decoded \(frames > 0) \(events > 0)")
            case .logsRead(let lines, _): stages.append("logs \(lines > 0)")
            case .timelines(let peers, _, _): stages.append("timelines \(peers > 0)")
            case .findings(let n): stages.append("findings \(n > 0)")
            }
        }
        _ = try s.finish()
        XCTAssertEqual(stages, ["decoded true true", "logs true", "timelines true", "findings true"])
    }
}

/// Results written from several threads, one slot each.
private final class Results: @unchecked Sendable {
    private var values: [String?]
    private let lock = NSLock()
    init(count: Int) { values = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ v: String) { lock.lock(); values[i] = v; lock.unlock() }
    func get(_ i: Int) -> String? { lock.lock(); defer { lock.unlock() }; return values[i] }
}
