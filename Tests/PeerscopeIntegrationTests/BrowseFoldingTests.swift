import Foundation
import XCTest
import Peerscope
import PeerscopeCore
@testable import PeerscopeReports
import PeerscopeSimulator
import PeerscopeTimeline

/// Issue 13: browse queries that continue a run are folded into one resolved event in the timeline
/// stage (`BrowseFolds`), and nothing downstream can tell. Every sample (with its logs), every corpus
/// capture and generated crowded captures give byte-identical text (full timelines) and JSON reports
/// with folding on and off, while folding really happened; and a script built to break a naive fold
/// (one address announced by X, X's goodbye from another address, then Y announced at the address,
/// queries throughout) keeps its runs split where the unfolded analysis splits them.
final class BrowseFoldingTests: XCTestCase {
    struct Outcome {
        var text: String
        var json: String
        var resolvedEvents: Int
    }

    static func report(_ trace: EventTrace, fold: Bool) -> Outcome {
        let r = AnalysisSession.report(trace, foldBrowseQueries: fold)
        return Outcome(text: TextReportWriter.render(r, colour: false, showAllTimeline: true), json: JSONReportWriter.render(r),
                       resolvedEvents: r.timelines.events.count)
    }

    /// Compares the folded and unfolded reports of one decoded trace; returns the resolved events
    /// (folded, unfolded).
    func compare(_ name: String, _ trace: EventTrace, _ problems: inout [String]) -> (Int, Int) {
        let folded = Self.report(trace, fold: true), plain = Self.report(trace, fold: false)
        for (what, a, b) in [("text", folded.text, plain.text), ("json", folded.json, plain.json)] where a != b {
            problems.append("\(name) \(what) differs at \(firstDifferingLine(a, b, ("folded", "unfolded")))")
        }
        return (folded.resolvedEvents, plain.resolvedEvents)
    }

    func decode(_ captures: [String], logs: [String] = []) throws -> EventTrace {
        try AnalysisSession(AnalysisOptions(captures: captures, logs: logs)).decode().trace
    }

    func testFoldingChangesNoReportOnAnySampleOrCorpusInput() throws {
        var problems: [String] = []
        var folded = 0, plain = 0
        for g in try EventCatalogueTests.inputGroups() {
            let (f, p) = compare((g.captures + g.logs).joined(separator: " "), try decode(g.captures, logs: g.logs), &problems)
            folded += f
            plain += p
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        // The samples alone have no browse query continuing a run (the generated crowds below fold
        // many); the corpus captures do, so with `../shared` present the fold must have happened.
        if (try? Place.requireShared()) != nil {
            XCTAssertLessThan(folded, plain, "some browse queries in the corpus continue a run")
        }
    }

    func testFoldingChangesNoReportOnGeneratedCrowdedCaptures() throws {
        var problems: [String] = []
        try withGeneratedCrowds("fold") { path, hosts in
            let (f, p) = compare(path, try decode([path]), &problems)
            print("\(path): \(p) resolved events unfolded, \(f) folded")
            XCTAssertLessThan(f * (hosts < 100 ? 2 : 4), p * 3, "\(path): browse queries continue runs (\(f) resolved events folded, \(p) not)")
        }
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
    }

    // MARK: - A script built to break a naive fold

    static let a = IPAddress("10.0.0.5")!, a6 = IPAddress("fe80::5")!, mcast = IPAddress("224.0.0.251")!
    static let x: UInt64 = 0x1_0000_0001, y: UInt64 = 0x1_0000_0002
    static let second = CaptureTime.second

    /// Queries from `a` every 10 s (two questions per frame) and from `a6` every 20 s; X announced at
    /// `a` (25 s) and at `a6`; X's goodbye from `a6` only (55 s); Y announced at `a` (85 s).
    static func script(queriesUntil end: Int = 150) -> [PeerEvent] {
        var events: [PeerEvent] = []
        var frame: UInt64 = 0
        func ev(_ kind: EventKind, _ t: Int, _ from: PeerHint, _ src: IPAddress, attrs: [String: String]) {
            frame += 1
            let flow = FlowKey(.udp, Endpoint(src, 5353), Endpoint(mcast, 5353))
            events.append(PeerEvent(kind: kind, t: Int64(t) * second, evidence: .frame(input: 0, frame: frame), from: from,
                                    flow: flow, source: "mdns", attrs: attrs))
        }
        func query(_ t: Int, _ src: IPAddress, services: [String]) {
            frame += 1
            let flow = FlowKey(.udp, Endpoint(src, 5353), Endpoint(mcast, 5353))
            for s in services {
                events.append(PeerEvent(kind: .browse, t: Int64(t) * second, evidence: .frame(input: 0, frame: frame),
                                        from: PeerHint(endpoint: Endpoint(src, 5353)), flow: flow, source: "mdns",
                                        attrs: ["service": s, "qu": "false", "querier": "\(src)"]))
            }
        }
        func announce(_ kind: EventKind, _ t: Int, _ id: UInt64, _ name: String, at addr: IPAddress) {
            let inst = PeerIdentity.idString(id)
            ev(kind, t, PeerHint(peerID: id, displayName: name, address: addr), addr,
               attrs: ["service": "_demo._tcp.local", "instance": inst, "instanceName": inst + "._demo._tcp.local",
                       "peerID": inst, "displayName": name])
        }
        var t = 0
        while t <= end {
            if t == 30 { announce(.announced, 25, x, "Xavier", at: a); announce(.announced, 26, x, "Xavier", at: a6) }
            if t == 60 { announce(.goodbye, 55, x, "Xavier", at: a6) }
            if t == 90 { announce(.announced, 85, y, "Yvonne", at: a) }
            query(t, a, services: ["_demo._tcp.local", "_other._tcp.local"])
            if t % 20 == 0 { query(t + 1, a6, services: ["_demo._tcp.local"]) }
            t += 10
        }
        events.sort { $0.t < $1.t }
        return events
    }

    func trace(_ events: [PeerEvent]) -> EventTrace { EventTrace(inputs: ["script"], events: events) }

    func testQueriesAcrossAGoodbyeFromAnotherAddressAndANewHostKeepTheirRunsSplit() throws {
        var problems: [String] = []
        let events = Self.script()
        let (f, p) = compare("script", trace(events), &problems)
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        XCTAssertLessThan(f, p, "queries were folded")
        // What the unfolded analysis shows, and the folded one too: X's queries from `a` before its
        // goodbye (from `a6`) and after it are two runs; after Y's announcement they are Y's.
        let r = AnalysisSession.report(trace(events))
        let browsing = { (id: UInt64) in r.timelines.timeline(.id(id))?.entries.filter { $0.kind == .browse } ?? [] }
        let xRuns = browsing(Self.x), yRuns = browsing(Self.y)
        XCTAssertEqual(xRuns.count, 2, "X's browse runs: \(xRuns.map { ($0.t / Self.second, $0.lastT / Self.second, $0.count) })")
        XCTAssertEqual(xRuns.first?.lastT, 50 * Self.second, "the first run ends at the last query before the goodbye")
        XCTAssertEqual(xRuns.last?.t, 60 * Self.second)
        XCTAssertEqual(yRuns.first?.t, 90 * Self.second, "queries from `a` after Y's announcement are Y's")
        // The resolved events of `a`'s _demo queries: one per run of each peer and service (never across
        // the goodbye or the new host), the run's first query first.
        let demo = r.timelines.events.filter {
            $0.kind == .browse && $0.event.from.address == Self.a && $0.event[.service] == "_demo._tcp.local"
        }
        XCTAssertEqual(demo.map { $0.t / Self.second }, [0, 60, 90], "one event per run, at its first query")
        XCTAssertEqual(demo.map(\.event.count), [6, 3, 7])
        XCTAssertEqual(demo.map { $0.event.lastT / Self.second }, [50, 80, 150])
    }

    func testAFoldNeverSpansAPauseLongerThanTheCaptureGapNorAFlowAnICMPErrorQuotes() throws {
        var events = Self.script()
        // A 400 s pause in `a`'s queries: the keep-alive detector's capture holes (300 s) must stay visible.
        for i in events.indices where events[i].t > 100 * Self.second { events[i].t += 400 * Self.second; events[i].lastT = events[i].t }
        var problems: [String] = []
        _ = compare("paused script", trace(events), &problems)
        let r = AnalysisSession.report(trace(events))
        let demo = r.timelines.events.filter { $0.kind == .browse && $0.event.from.address == Self.a && $0.event[.service] == "_demo._tcp.local" }
        for e in demo {
            XCTAssertFalse(e.t <= 100 * Self.second && e.event.lastT > 100 * Self.second, "a fold spans the 400 s pause: \(e.t) ... \(e.event.lastT)")
        }
        // An ICMP error quoting `a6`'s query flow: `a6`'s queries are never folded.
        let quoted = FlowKey(.udp, Endpoint(Self.a6, 5353), Endpoint(Self.mcast, 5353))
        events.append(PeerEvent(kind: .icmpUnreachable, t: 45 * Self.second, evidence: .frame(input: 0, frame: 999),
                                from: PeerHint(address: Self.mcast), to: PeerHint(address: Self.a6), flow: quoted, source: "icmp"))
        events.sort { $0.t < $1.t }
        _ = compare("script with ICMP", trace(events), &problems)
        XCTAssertEqual(problems, [], problems.joined(separator: "\n"))
        let withICMP = AnalysisSession.report(trace(events))
        let fromA6 = withICMP.timelines.events.filter { $0.kind == .browse && $0.event.from.address == Self.a6 }
        XCTAssertFalse(fromA6.isEmpty)
        XCTAssertEqual(fromA6.map(\.event.count), Array(repeating: 1, count: fromA6.count))
    }
}

final class DiscoverySectionServiceNameTests: XCTestCase {
    /// The byte-wise check reads service types as `String.contains` did.
    func testServiceTypesAreRecognisedAsBefore() {
        for s in ["_demo._tcp.local", "_x._udp", "_a._tcpx", "_a.b._udp.local", "_._tcp"] {
            XCTAssertTrue(DiscoverySection.looksLikeService(s), s)
        }
        for s in ["demo._tcp.local", "_demo.tcp.local", "_demo._tc", "", "_", "_demo._TCP.local", "_é._ucp", "_d_tcp"] {
            XCTAssertFalse(DiscoverySection.looksLikeService(s), s)
        }
    }
}
