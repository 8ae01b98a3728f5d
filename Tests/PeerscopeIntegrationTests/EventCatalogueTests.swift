import Foundation
import XCTest
import Peerscope
import PeerscopeCore

/// Issue 14: every kind an analysis emits is declared in the event catalogue, with its attributes.
/// Runs every sample (capture and device logs), every corpus capture and the spec's real log lines.
final class EventCatalogueTests: XCTestCase {
    /// Input groups: each sample with its logs, each corpus capture, the spec (read as a log).
    static func inputGroups() throws -> [(captures: [String], logs: [String])] {
        var groups: [(captures: [String], logs: [String])] = []
        let dir = Place.samples
        for f in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where f.hasSuffix(".pcapng") {
            let logDir = dir.appendingPathComponent("logs/\(f.dropLast(".pcapng".count))")
            let logs = ((try? FileManager.default.contentsOfDirectory(atPath: logDir.path)) ?? [])
                .filter { $0.hasSuffix(".log") }.sorted().map { logDir.appendingPathComponent($0).path }
            groups.append(([dir.appendingPathComponent(f).path], logs))
        }
        if let shared = Place.shared {
            let corpus = shared.appendingPathComponent("corpus")
            for f in ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()
            where f.hasSuffix(".pcap") || f.hasSuffix(".pcapng") {
                groups.append(([corpus.appendingPathComponent(f).path], []))
            }
            let spec = shared.appendingPathComponent("spec/mpc-wire-and-logs.md").path
            if FileManager.default.fileExists(atPath: spec) { groups.append(([], [spec])) }
        }
        return groups
    }

    func testEveryEmittedKindAndAttributeIsDeclared() throws {
        var problems: Set<String> = []
        var kinds: Set<EventKind> = []
        for g in try Self.inputGroups() {
            let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: g.captures, logs: g.logs))
            for e in a.report.timelines.events {
                kinds.insert(e.event.kind)
                problems.formUnion(EventCatalogue.problems(e.event))
            }
        }
        XCTAssertEqual(problems.sorted(), [], "declare these in Sources/PeerscopeCore/EventCatalogue+Kinds.swift")
        // The check would pass vacuously without events: the samples alone emit dozens of kinds.
        XCTAssertGreaterThan(kinds.count, 40)
    }

    func testAnUndeclaredKindOrAttributeIsReported() {
        let ev = Evidence.frame(input: 0, frame: 1)
        XCTAssertEqual(EventCatalogue.problems(PeerEvent(kind: "gck.brand_new", t: 0, evidence: ev, source: "x")),
                       ["kind `gck.brand_new` (from x) is not in the event catalogue"])
        XCTAssertEqual(EventCatalogue.problems(PeerEvent(kind: .gckHello, t: 0, evidence: ev, source: "x",
                                                         attrs: ["flags": "1", "colour": "red"])),
                       ["kind `gck.hello` (from x): attribute `colour` is not declared in the event catalogue"])
        XCTAssertEqual(EventCatalogue.problems(PeerEvent(kind: .announced, t: 0, evidence: ev, source: "x",
                                                         attrs: ["info.anything": "1"])), [])
        // User kinds keep free-form attributes.
        XCTAssertEqual(EventCatalogue.problems(PeerEvent(kind: "user.lobby", t: 0, evidence: ev, source: "x",
                                                         attrs: ["whatever": "1"])), [])
    }
}
