import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeReports
import PeerscopeSimulator
import PeerscopeTimeline

/// Issue 13: analysis holds browse queries in compact runs (`QueryRuns`) between decoding and the
/// timeline stage. The runs stand for exactly the events decoding keeps without them: the merged list
/// equals the plain one event for event (order, times, evidence, hints, attributes), the written trace
/// is the same, and so are the reports, on every sample (with its logs), every corpus capture,
/// generated crowds, and scripts emitted out of time order with equal timestamps everywhere.
final class QueryRunsTests: XCTestCase {
    struct Outcome: Equatable {
        var text: String
        var json: String
    }

    static func report(_ trace: EventTrace) -> Outcome {
        let r = AnalysisSession.report(trace)
        return Outcome(text: TextReportWriter.render(r, colour: false, showAllTimeline: true), json: JSONReportWriter.render(r))
    }

    static func lines(_ trace: EventTrace) -> [String] {
        var out: [String] = []
        trace.write(payloads: false) { out.append($0.jsonText) }
        return out
    }

    func decode(_ captures: [String], logs: [String] = [], compact: Bool) throws -> EventTrace {
        try AnalysisSession(AnalysisOptions(captures: captures, logs: logs)).decode(compactQueries: compact).trace
    }

    /// The compact trace of `captures` against the plain one; returns (members, runs).
    @discardableResult
    func check(_ name: String, _ captures: [String], logs: [String] = [], _ problems: inout [String]) throws -> (Int, Int) {
        let compact = try decode(captures, logs: logs, compact: true), plain = try decode(captures, logs: logs, compact: false)
        XCTAssertTrue(plain.queryRuns.isEmpty)
        if compact.allEvents != plain.events { problems.append("\(name): merged events differ from the plain list") }
        if compact.eventCount != plain.events.count { problems.append("\(name): event count \(compact.eventCount) vs \(plain.events.count)") }
        if compact.lastEventT != plain.events.last?.t { problems.append("\(name): last event time differs") }
        if Self.lines(compact) != Self.lines(plain) { problems.append("\(name): written traces differ") }
        if Self.report(compact) != Self.report(plain) { problems.append("\(name): reports differ") }
        return (compact.queryRuns.count, compact.queryRuns.runCount)
    }

    func testCompactTraceStandsForThePlainOneOnEverySampleAndCorpusInput() throws {
        var problems: [String] = []
        var members = 0
        for g in try EventCatalogueTests.inputGroups() {
            members += try check((g.captures + g.logs).joined(separator: " "), g.captures, logs: g.logs, &problems).0
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        if (try? Place.requireShared()) != nil { XCTAssertGreaterThan(members, 0, "the corpus has browse queries held in runs") }
    }

    func testCompactTraceStandsForThePlainOneOnGeneratedCrowds() throws {
        var problems: [String] = []
        try withGeneratedCrowds("qruns") { path, _ in
            let (members, runs) = try check(path, [path], &problems)
            XCTAssertGreaterThan(members, 2 * runs, "\(path): queries repeat within runs (\(members) members in \(runs) runs)")
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
    }

    /// `forEachMemberByTime` (how spilling while decoding writes the members held when it starts)
    /// gives exactly the members sorted by time, then decoding order (`pos + seq`), as the engine did
    /// before with a list of them all, on the runs of generated crowds taken in the middle of decoding;
    /// decoding orders are distinct (no ties), and it stops when asked.
    func testMembersByTimeAreTheMembersSortedByTimeThenDecodingOrder() throws {
        try withGeneratedCrowds("qrunsorder") { path, hosts in
            let engine = Engine(options: AnalysisSession.engineOptions(AnalysisSession.Configuration()))
            engine.compactQueries = true
            let reader = try CaptureFileReader(path: path)
            while let f = reader.next() { engine.process(f) }
            let runs = engine.queryRuns
            XCTAssertGreaterThan(runs.runCount, 10, "crowd of \(hosts)")
            var sorted: [(event: PeerEvent, order: Int)] = []
            runs.forEachMember { e, pos, seq in sorted.append((e, pos + seq)) }
            sorted.sort { $0.event.t != $1.event.t ? $0.event.t < $1.event.t : $0.order < $1.order }
            var merged: [(event: PeerEvent, order: Int)] = []
            runs.forEachMemberByTime { e, order in
                merged.append((e, order))
                return true
            }
            XCTAssertEqual(merged.count, runs.count)
            XCTAssertEqual(merged.map(\.order), sorted.map(\.order), "crowd of \(hosts)")
            XCTAssertEqual(merged.map(\.event), sorted.map(\.event), "crowd of \(hosts)")
            XCTAssertEqual(Set(merged.map(\.order)).count, merged.count)
            // Run after run is not time order on these inputs (the merge is doing something).
            var runOrder: [Nanos] = []
            runs.forEachMember { e, _, _ in runOrder.append(e.t) }
            XCTAssertNotEqual(runOrder, sorted.map(\.event.t))
            var n = 0
            runs.forEachMemberByTime { _, _ in
                n += 1
                return n < 5
            }
            XCTAssertEqual(n, 5)
        }
    }

    /// `QueryRuns.add` finds a query's open run by a hash of its key and then compares the key field by
    /// field (issue 13: no key built per query). With every key's hash masked to four values or to one
    /// (collisions everywhere), the runs are the same ones and the merged list is the plain list, on
    /// generated crowds and every sample and corpus capture; runs are closed as they go idle meanwhile.
    func testKeyHashCollisionsChangeNoRunAndNoEvent() throws {
        var problems: [String] = []
        var members = 0
        func feed(_ name: String, _ plain: [PeerEvent]) {
            var outcomes: [(runs: Int, members: Int, merged: [PeerEvent])] = []
            for mask in [-1, 3, 0] {
                var runs = QueryRuns(keyHashMask: mask)
                var main: [PeerEvent] = []
                for e in plain {
                    runs.closeIdle(at: e.t, idle: 60 * Self.second)
                    if e.kind == .browse, runs.add(e, kept: main.count) { continue }
                    main.append(e)
                }
                runs.settle(events: main, preSort: nil)
                outcomes.append((runs.runCount, runs.count, runs.merged(main)))
            }
            members += outcomes[0].members
            if outcomes[0].merged != plain { problems.append("\(name): merged list differs from the plain one") }
            for o in outcomes.dropFirst() where o.runs != outcomes[0].runs || o.merged != outcomes[0].merged {
                problems.append("\(name): colliding hashes give \(o.runs) runs, not \(outcomes[0].runs), or other events")
            }
        }
        try withGeneratedCrowds("qhash") { path, _ in feed(path, try decode([path], compact: false).events) }
        XCTAssertGreaterThan(members, 1000)
        for g in try EventCatalogueTests.inputGroups() where g.logs.isEmpty {
            feed(g.captures.joined(separator: " "), try decode(g.captures, compact: false).events)
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
    }

    // MARK: - Scripts through the engine's collector

    static let a = IPAddress("10.0.0.5")!, a6 = IPAddress("fe80::5")!, b = IPAddress("10.0.0.9")!, mcast = IPAddress("224.0.0.251")!
    static let x: UInt64 = 0x1_0000_0001, y: UInt64 = 0x1_0000_0002
    static let second = CaptureTime.second

    /// The events decoding keeps from `emitted` (in emission order), with and without query runs: the
    /// engine's own collector, fed directly.
    static func collect(_ emitted: [PeerEvent]) -> (compact: EventTrace, plain: EventTrace) {
        func run(_ compact: Bool) -> EventTrace {
            let engine = Engine()
            engine.compactQueries = compact
            for e in emitted { engine.context.onEvent(e) }
            engine.finish()
            var trace = EventTrace(inputs: ["script"], events: engine.takeEvents())
            trace.queryRuns = engine.takeQueryRuns()
            return trace
        }
        return (run(true), run(false))
    }

    /// A script built to put queries next to everything that shares their time or address: queries
    /// from `a` (two questions per frame), from `a6` and from `b` at the same instants; X announced at
    /// `a` and `a6`, its goodbye from `a6` at a query's time, Y announced at `a` at a query's time; X's
    /// identity facts (dropped from the list by the timeline stage) at query times; expiries emitted
    /// late (a timer firing after later frames) with the time of queries already kept; some queries
    /// naming X's peer ID (the resolver learns from them); a query whose time goes back.
    static func script() -> [PeerEvent] {
        var out: [PeerEvent] = []
        var frame: UInt64 = 0
        func flow(_ src: IPAddress) -> FlowKey { FlowKey(.udp, Endpoint(src, 5353), Endpoint(mcast, 5353)) }
        func query(_ t: Int64, _ src: IPAddress, _ services: [String], id: UInt64? = nil) {
            frame += 1
            for s in services {
                out.append(PeerEvent(kind: .browse, t: t, evidence: .frame(input: 0, frame: frame),
                                     from: PeerHint(peerID: id, endpoint: Endpoint(src, 5353)), flow: flow(src), source: "mdns",
                                     attrs: ["service": s, "qu": "false", "querier": "\(src)"]))
            }
        }
        func about(_ kind: EventKind, _ t: Int64, _ id: UInt64, _ name: String, at addr: IPAddress, late: Bool = false) {
            if !late { frame += 1 }
            let inst = PeerIdentity.idString(id)
            out.append(PeerEvent(kind: kind, t: t, evidence: .frame(input: 0, frame: frame),
                                 from: PeerHint(peerID: id, displayName: name, address: addr), flow: kind == .expired ? nil : flow(addr),
                                 source: "mdns", attrs: ["service": "_demo._tcp.local", "instance": inst, "displayName": name]))
        }
        func fact(_ t: Int64, _ id: UInt64, _ addr: IPAddress) {
            out.append(PeerEvent(kind: .identityLearned, t: t, evidence: .frame(input: 0, frame: frame),
                                 from: PeerHint(peerID: id, address: addr), source: "mdns"))
        }
        for step in 0 ... 40 {
            let t = Int64(step) * 5 * second
            query(t, a, ["_demo._tcp.local", "_other._tcp.local"], id: step > 12 && step < 20 ? x : nil)
            query(t, b, ["_demo._tcp.local"])
            if step % 2 == 0 { query(t, a6, ["_demo._tcp.local"]) }
            if step == 5 { about(.announced, t, x, "Xavier", at: a); fact(t, x, a); about(.announced, t, x, "Xavier", at: a6) }
            if step == 9 { query(t, a, ["_demo._tcp.local"]) }   // the same question again in the same instant
            if step == 11 { about(.goodbye, t, x, "Xavier", at: a6) }
            if step == 14 { about(.expired, t - 10 * second, y, "Yvonne", at: b, late: true) }   // a timer, after later frames
            if step == 17 { about(.announced, t, y, "Yvonne", at: a); fact(t, y, a) }
            if step == 23 { about(.expired, t - 5 * second, x, "Xavier", at: a, late: true) }   // at a query's time, kept after it
            if step == 30 { query(t - 3 * second, b, ["_demo._tcp.local"]) }   // time goes back
            if step == 31 { about(.goodbye, t, y, "Yvonne", at: a) }
        }
        return out
    }

    func compareScript(_ name: String, _ emitted: [PeerEvent], _ problems: inout [String]) -> QueryRuns {
        let (compact, plain) = Self.collect(emitted)
        XCTAssertTrue(plain.queryRuns.isEmpty)
        if compact.allEvents != plain.events {
            let m = compact.allEvents, p = plain.events
            let i = (0 ..< min(m.count, p.count)).first { m[$0] != p[$0] } ?? min(m.count, p.count)
            problems.append("\(name): merged list differs at \(i) of \(p.count): \(i < m.count ? "\(m[i].kind) \(m[i].t) \(m[i].evidence)" : "-") vs \(i < p.count ? "\(p[i].kind) \(p[i].t) \(p[i].evidence)" : "-")")
        }
        if Self.lines(compact) != Self.lines(plain) { problems.append("\(name): written traces differ") }
        if Self.report(compact) != Self.report(plain) { problems.append("\(name): reports differ") }
        return compact.queryRuns
    }

    func testScriptOutOfTimeOrderWithEqualTimesGivesTheSameEventsAndReport() {
        var problems: [String] = []
        let runs = compareScript("script", Self.script(), &problems)
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        XCTAssertGreaterThan(runs.count, 3 * runs.runCount, "the queries were held in runs")
    }

    /// The script's events emitted in many shuffled orders (neighbours swapped, times kept): whatever
    /// the engine keeps, in whatever order its sort leaves it, the runs give it back.
    func testShuffledEmissionOrdersGiveTheSameEventsAndReport() {
        var rng = SimRandom(seed: 0x5EED)
        var problems: [String] = []
        let base = Self.script()
        for round in 0 ..< 40 {
            var e = base
            for _ in 0 ..< e.count / 3 {
                let i = Int(rng.next() % UInt64(e.count - 1))
                e.swapAt(i, i + 1)
            }
            // Some times pulled to a neighbour's (more ties, more out of order).
            for _ in 0 ..< 10 {
                let i = Int(rng.next() % UInt64(e.count - 1))
                e[i].t = e[i + 1].t
                e[i].lastT = e[i].t
            }
            _ = compareScript("round \(round)", e, &problems)
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
    }

    /// The runs' encoding on its own: members come back exactly (times whole in microseconds or not,
    /// frames and places), a member that would go back in time starts a new run, and dropping events
    /// moves members' places.
    func testRunsGiveBackTheirMembersAndFollowRemovedEvents() {
        var runs = QueryRuns()
        let hint = PeerHint(endpoint: Endpoint(Self.a, 5353))
        func q(_ t: Int64, _ frame: UInt64) -> PeerEvent {
            PeerEvent(kind: .browse, t: t, evidence: .frame(input: 0, frame: frame), from: hint, source: "mdns", attrs: ["service": "_s._tcp.local"])
        }
        let main = (0 ..< 4).map { i in PeerEvent(kind: .announced, t: Int64(i) * 10 * Self.second, evidence: .frame(input: 0, frame: UInt64(i * 100)), source: "mdns") }
        let members = [q(1, 1), q(1_000_001, 2), q(10 * Self.second, 150), q(10 * Self.second + 7, 151), q(5, 152), q(35 * Self.second, 400)]
        let kept = [0, 1, 1, 2, 2, 4]
        for (e, k) in zip(members, kept) { XCTAssertTrue(runs.add(e, kept: k)) }
        XCTAssertEqual(runs.count, 6)
        XCTAssertEqual(runs.runCount, 2, "the member going back in time starts a run")
        XCTAssertFalse(runs.add(PeerEvent(kind: .browse, t: 0, evidence: .logLine(input: 1, line: 3), source: "log"), kept: 0))
        runs.settle(events: main, preSort: nil)
        let merged = runs.merged(main)
        XCTAssertEqual(merged.count, 10)
        XCTAssertEqual(merged.map(\.t), merged.map(\.t).sorted(), "in time order")
        XCTAssertEqual(Set(merged.filter { $0.kind == .browse }.map(\.evidence)), Set(members.map(\.evidence)))
        var dropped = runs
        dropped.removeEvents(at: [1, 2])
        let expected = merged.filter { !($0.kind == .announced && ($0.t == 10 * Self.second || $0.t == 20 * Self.second)) }
        XCTAssertEqual(dropped.merged([main[0], main[3]]), expected)
    }
}

