import Foundation
import Peerscope
import PeerscopeCore
import PeerscopeSimulator
@testable import PeerscopeTimeline
import XCTest

/// `TimelineBuilder.finish` moves what the timelines keep (entries, milestones, histories, the boxes
/// entries and resolved events share) out of the freed working state's way: only where each piece sits
/// may change, never a value nor which pieces share a box.
final class TimelineCompactionTests: XCTestCase {
    static func timelines(_ trace: EventTrace, relocating: Bool) -> Timelines {
        let b = TimelineBuilder(detectors: .defaults)
        b.relocatesOnFinish = relocating
        b.add(contentsOf: trace.events, queryRuns: trace.queryRuns)
        let last = max(trace.stats.lastT ?? Int64.min, trace.lastEventT ?? Int64.min)
        return b.finish(at: last == Int64.min ? trace.stats.lastT : last)
    }

    /// Every field of every peer, entry, instance and resolved event of the relocated timelines equals
    /// the one built in place; where `check` fails, the two differ.
    func compare(_ name: String, _ trace: EventTrace, _ problems: inout [String]) -> Int {
        let moved = Self.timelines(trace, relocating: true), kept = Self.timelines(trace, relocating: false)
        func check(_ ok: Bool, _ what: @autoclosure () -> String) { if !ok { problems.append("\(name): \(what())") } }
        check(moved.peers.count == kept.peers.count, "peer count")
        for (a, b) in zip(moved.peers, kept.peers) {
            check(a.peer == b.peer, "peer \(b.peer.label)")
            check(a.entries == b.entries, "entries of \(b.peer.label)")
            // `==` leaves out nothing the report reads; the evidence and corroboration once more as lists.
            check(a.entries.map(\.evidence) == b.entries.map(\.evidence), "evidence of \(b.peer.label)")
            check(a.entries.map(\.corroboration) == b.entries.map(\.corroboration), "corroboration of \(b.peer.label)")
            check(a.history == b.history, "history of \(b.peer.label)")
            check(a.sessions == b.sessions, "sessions of \(b.peer.label)")
            check(a.entries.capacity == a.entries.count, "\(b.peer.label): entries without slack")
        }
        check(moved.sessions == kept.sessions, "instances")
        check(moved.sessions.map(\.history) == kept.sessions.map(\.history), "instance histories")
        check(moved.events.count == kept.events.count, "resolved event count")
        for (a, b) in zip(moved.events, kept.events) {
            check(a.index == b.index && a.from == b.from && a.to == b.to && a.session == b.session && a.state == b.state
                  && a.establishedBefore == b.establishedBefore && a.secureBefore == b.secureBefore
                  && a.dtlsStartedBefore == b.dtlsStartedBefore, "resolved event \(b.index)")
        }
        // One box per peer and per instance across links and sides, one link box per peer, counterpart
        // and session, one sides box per triple: the sharing survives the move.
        var peerBoxes: [PeerRef: ObjectIdentifier] = [:], sessionBoxes: [SessionKey: ObjectIdentifier] = [:]
        func same(_ p: Shared<PeerRef>?) {
            guard let p else { return }
            let id = ObjectIdentifier(p)
            check(peerBoxes[p.value, default: id] == id, "\(p.value): one peer box")
            peerBoxes[p.value] = id
        }
        func same(_ s: Shared<SessionKey>?) {
            guard let s else { return }
            let id = ObjectIdentifier(s)
            check(sessionBoxes[s.value, default: id] == id, "\(s.value): one instance box")
            sessionBoxes[s.value] = id
        }
        for p in moved.peers {
            var links: [String: ObjectIdentifier] = [:]
            for x in p.entries {
                same(x.counterpartBox)
                same(x.sessionBox)
                let k = "\(String(describing: x.counterpart))|\(String(describing: x.session))"
                let id = ObjectIdentifier(x.link)
                check(links[k, default: id] == id, "\(p.peer.label) \(k): one link box")
                links[k] = id
            }
        }
        for si in moved.sessions {
            for m in si.milestones where m.by.map({ moved.timeline($0) != nil }) ?? false { same(m.byBox) }
        }
        var sides: [String: ObjectIdentifier] = [:]
        for r in moved.events {
            same(r.fromBox)
            same(r.toBox)
            same(r.sessionBox)
            let k = "\(String(describing: r.from))|\(String(describing: r.to))|\(String(describing: r.session))"
            let id = ObjectIdentifier(r.sides)
            check(sides[k, default: id] == id, "\(k): one sides box")
            sides[k] = id
        }
        return moved.peers.reduce(0) { $0 + $1.entries.count }
    }

    func testRelocatedTimelinesEqualTheOnesBuiltInPlaceOnEverySampleAndCorpusInput() throws {
        var problems: [String] = []
        var entries = 0
        for g in try EventCatalogueTests.inputGroups() {
            let trace = try AnalysisSession(AnalysisOptions(captures: g.captures, logs: g.logs)).decode(compactQueries: true).trace
            entries += compare((g.captures + g.logs).joined(separator: " "), trace, &problems)
        }
        XCTAssertEqual(problems, [], problems.prefix(20).joined(separator: "\n"))
        XCTAssertGreaterThan(entries, 1000)
    }

    /// Generated group sessions (the bench's kind of file), with their devices' logs (entries
    /// corroborated by log lines) and without.
    func testRelocatedTimelinesEqualTheOnesBuiltInPlaceOnGeneratedGroups() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-compaction-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var problems: [String] = []
        var entries = 0, corroborated = 0
        for seed in [UInt64(1), 7, 23] {
            let sim = try Simulator.run("group-8", options: SimulationOptions(seed: seed, peers: 8, format: .pcap))
            let capture = dir.appendingPathComponent("group-\(seed).pcap").path
            try Data(sim.capture).write(to: URL(fileURLWithPath: capture))
            var logs: [String] = []
            for l in sim.logs {
                let path = dir.appendingPathComponent("group-\(seed)-\(l.slug).log").path
                try l.text.write(toFile: path, atomically: true, encoding: .utf8)
                logs.append(path)
            }
            for withLogs in [false, true] {
                let trace = try AnalysisSession(AnalysisOptions(captures: [capture], logs: withLogs ? logs : []))
                    .decode(compactQueries: true).trace
                entries += compare("group-8 seed \(seed)\(withLogs ? " with logs" : "")", trace, &problems)
                if withLogs {
                    corroborated += Self.timelines(trace, relocating: true).peers.flatMap(\.entries).filter { !$0.corroboration.isEmpty }.count
                }
            }
        }
        XCTAssertEqual(problems, [], problems.prefix(20).joined(separator: "\n"))
        XCTAssertGreaterThan(entries, 1000)
        XCTAssertGreaterThan(corroborated, 0, "some entries carry log lines beside their frames")
    }

    /// On a spilled input (read in time order) the builder lets go of browse folds no later query can
    /// continue (`BrowseFolds.dropExpired`): the timelines, the resolved events and what was folded into
    /// each are the same as when every fold is kept to the end, with a short fold gap (most folds expire,
    /// and are let go from the first one on) and with analysis's own.
    func testDroppingExpiredBrowseFoldsLeavesTheTimelinesAsTheyWere() throws {
        try withGeneratedCrowds("foldexp") { path, hosts in
            let trace = try AnalysisSession(AnalysisOptions(captures: [path])).decode(compactQueries: false).trace
            let events = trace.allEvents
            func build(dropping: Bool, gap: Nanos) throws -> (Timelines, dropped: Int) {
                let s = try SpilledEvents(directory: NSTemporaryDirectory())
                for e in events { try s.append(e) }
                try s.finishWriting()
                XCTAssertTrue(s.inTimeOrder)
                let b = TimelineBuilder(detectors: .defaults)
                b.browseFoldGap = gap
                b.dropsExpiredFolds = dropping
                b.expiredFoldsFloor = 1
                b.add(spilled: s)
                let t = b.finish(at: trace.stats.lastT)
                XCTAssertEqual(b.spillReadErrors, [])
                return (t, b.expiredFoldsDropped)
            }
            for gap in [2 * CaptureTime.second, 300 * CaptureTime.second] {
                let name = "crowd of \(hosts), gap \(gap)"
                let (a, dropped) = try build(dropping: true, gap: gap)
                let (b, none) = try build(dropping: false, gap: gap)
                XCTAssertEqual(none, 0, name)
                if gap < 10 * CaptureTime.second { XCTAssertGreaterThan(dropped, 100, name) }
                XCTAssertEqual(a.peers.map(\.peer), b.peers.map(\.peer), name)
                XCTAssertEqual(a.peers.map(\.entries), b.peers.map(\.entries), name)
                XCTAssertEqual(a.peers.map(\.history), b.peers.map(\.history), name)
                XCTAssertEqual(a.events.count, b.events.count, name)
                XCTAssertLessThan(a.events.count, events.count, "\(name): queries were folded")
                for (x, y) in zip(a.events, b.events) {
                    guard x.index == y.index, x.from == y.from, x.to == y.to, x.state == y.state, x.event == y.event,
                          x.count == y.count, x.lastEvidence == y.lastEvidence else {
                        XCTFail("\(name): resolved event \(y.index) differs")
                        break
                    }
                }
            }
        }
    }
}
