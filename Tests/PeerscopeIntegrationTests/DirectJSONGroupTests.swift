import Foundation
import Peerscope
import PeerscopeCore
@testable import PeerscopeReports
import PeerscopeSimulator
import PeerscopeTimeline
import XCTest

/// The JSON report's timelines written straight into bytes (an entry's evidence from its two ends, a
/// detail without values for attributes holding no detail key): on generated group files (the bench's
/// kind of input, with and without the devices' logs, one capture and three merged) the bytes are
/// still the value tree's.
final class DirectJSONGroupTests: XCTestCase {
    func testGeneratedGroupReportsAreTheValueTreesBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-directjson-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var captures: [String] = [], logs: [String] = []
        for seed in [UInt64(1), 7, 23] {
            let sim = try Simulator.run("group-8", options: SimulationOptions(seed: seed, peers: 8, format: .pcap))
            let capture = dir.appendingPathComponent("group-\(seed).pcap").path
            try Data(sim.capture).write(to: URL(fileURLWithPath: capture))
            captures.append(capture)
            for l in sim.logs {
                let path = dir.appendingPathComponent("group-\(seed)-\(l.slug).log").path
                try l.text.write(toFile: path, atomically: true, encoding: .utf8)
                logs.append(path)
            }
        }
        var twoEnds = 0, entries = 0
        // One capture with its logs, then all three together.
        for (c, l) in [([captures[0]], logs.filter { $0.contains("group-1-") }), (captures, [])] {
            let r = try AnalysisSession(AnalysisOptions(captures: c, logs: l)).finish().report
            XCTAssertEqual(JSONReportWriter.render(r), JSONReportWriter.json(r).prettyText + "\n", "\(c.count) captures")
            var compact: [UInt8] = []
            JSONReportWriter.write(r, pretty: false) { compact += $0 }
            XCTAssertEqual(String(decoding: compact, as: UTF8.self), JSONReportWriter.json(r).jsonText + "\n", "\(c.count) captures")
            XCTAssertEqual(JSONReportWriter.marksOf(r, FindingIdentities(r)).fingerprints, FindingMarks(r).fingerprints)
            for p in r.timelines.peers {
                for e in p.entries {
                    let ends = e.evidenceEnds
                    XCTAssertEqual([ends.first] + (ends.last.map { [$0] } ?? []), e.evidence)
                    if ends.last != nil { twoEnds += 1 }
                    entries += 1
                }
            }
        }
        // The writer's marks come from the identities it makes anyway: the fingerprints `FindingMarks` makes.
        for name in ["keepalive-timeout", "channel-error-reset", "declined-invitation"] {
            let r = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [Place.samples.appendingPathComponent("\(name).pcapng").path])).report
            XCTAssertGreaterThan(r.findings.count, 0, name)
            XCTAssertEqual(JSONReportWriter.marksOf(r, FindingIdentities(r)).fingerprints, FindingMarks(r).fingerprints, name)
        }
        XCTAssertGreaterThan(entries, 1000)
        XCTAssertGreaterThan(twoEnds, 100, "runs with a first and a last frame")
    }
}
