import Foundation
import XCTest
@testable import PeerscopeSimulator

/// Scenario output: determinism, the committed samples, logs against findings, and tshark's view.
final class ScenarioTests: XCTestCase {
    // MARK: determinism

    func testSameSeedGivesByteIdenticalOutput() throws {
        for name in ["healthy-pair", "group-8", "reconnect-storm"] {
            let a = try Simulator.run(name, options: SimulationOptions(seed: 42))
            let b = try Simulator.run(name, options: SimulationOptions(seed: 42))
            XCTAssertEqual(a.capture, b.capture, name)
            XCTAssertEqual(a.logs.map(\.text), b.logs.map(\.text), name)
            XCTAssertEqual(a.expectedJSON(), b.expectedJSON(), name)
        }
    }

    func testDifferentSeedGivesDifferentJitter() throws {
        let a = try Simulator.run("healthy-pair", options: SimulationOptions(seed: 1))
        let b = try Simulator.run("healthy-pair", options: SimulationOptions(seed: 2))
        XCTAssertNotEqual(a.capture, b.capture)
        // Timing differs, not just identifiers: compare the frame time lists.
        let ta = try PcapngTimes.read(a.capture), tb = try PcapngTimes.read(b.capture)
        XCTAssertFalse(ta.isEmpty)
        XCTAssertNotEqual(ta.map { $0 - ta[0] }, tb.map { $0 - tb[0] })
        // Both still start at the fixed epoch's day and hour, never at the wall clock.
        XCTAssertEqual(ta[0] / 3_600_000_000_000, simulationEpochNanos / 3_600_000_000_000)
    }

    // MARK: committed samples

    func testCommittedSamplesMatchTheSimulator() throws {
        let samples = TestSupport.samplesDirectory
        if ProcessInfo.processInfo.environment["PEERSCOPE_REGENERATE_SAMPLES"] == "1" {
            try Simulator.writeSamples(to: samples.path)
        }
        guard FileManager.default.fileExists(atPath: samples.path) else { return XCTFail("Samples/ missing: run Scripts/regenerate-samples") }
        let tmp = try TestSupport.tempDirectory("samples")
        defer { try? FileManager.default.removeItem(at: tmp) }
        try Simulator.writeSamples(to: tmp.path)
        let fm = FileManager.default
        guard let files = fm.enumerator(atPath: tmp.path)?.compactMap({ $0 as? String }) else { return XCTFail("no files") }
        var compared = 0
        for rel in files {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: tmp.appendingPathComponent(rel).path, isDirectory: &isDir), !isDir.boolValue else { continue }
            let fresh = try Data(contentsOf: tmp.appendingPathComponent(rel))
            let committed = try? Data(contentsOf: samples.appendingPathComponent(rel))
            XCTAssertEqual(committed, fresh, "Samples/\(rel) differs from the simulator's output: run Scripts/regenerate-samples")
            compared += 1
        }
        XCTAssertGreaterThanOrEqual(compared, Simulator.scenarios.count * 3)
        // Nothing stale: every committed file but the README is one the simulator writes. The golden
        // report baselines in Samples/expected/ are written by the golden tests, not the simulator.
        let committed = (fm.enumerator(atPath: samples.path)?.compactMap { $0 as? String } ?? []).filter { !$0.hasPrefix("expected/") }
        let fresh = Set(files)
        for rel in committed where rel != "README.md" && (rel.hasSuffix(".pcapng") || rel.hasSuffix(".json") || rel.hasSuffix(".log")) {
            XCTAssertTrue(fresh.contains(rel), "Samples/\(rel) is not written by the simulator any more")
        }
    }

    // MARK: logs and findings

    func testEveryScenarioWritesConsistentLogsAndFindings() throws {
        let linePattern = try NSRegularExpression(pattern: #"^2026-01-15 \d\d:\d\d:\d\d\.\d{6}\+0000 ChatApp\[\d+:\d+\] .+$"#)
        let kinds: Set<String> = ["handshake-timeout", "keepalive-timeout", "duplicate-connection", "channel-error", "reconnect-storm", "declined-invitation"]
        for s in Simulator.scenarios {
            let r = try Simulator.run(s.name)
            XCTAssertEqual(r.logs.count, r.devices.count, s.name)
            XCTAssertEqual(Set(r.logs.map(\.slug)).count, r.logs.count, "\(s.name): one log file per device")
            let start = simulationEpochNanos
            let end = start + Int64(r.durationSeconds * 1e9) + 60_000_000_000
            for log in r.logs {
                let lines = log.text.split(separator: "\n").map(String.init)
                XCTAssertFalse(lines.isEmpty, "\(s.name)/\(log.slug)")
                var previous = ""
                for line in lines {
                    let ns = line as NSString
                    XCTAssertNotNil(linePattern.firstMatch(in: line, range: NSRange(location: 0, length: ns.length)), "\(s.name): \(line)")
                    let stamp = String(line.prefix(26))
                    XCTAssertLessThanOrEqual(previous, stamp, "\(s.name)/\(log.slug): out of order at \(line)")
                    previous = stamp
                }
            }
            for f in r.findings {
                XCTAssertTrue(kinds.contains(f.kind), f.kind)
                XCTAssertTrue(f.time >= start && f.time <= end, "\(s.name): finding time outside the scenario")
                let peer = try XCTUnwrap(r.devices.first { $0.idString == f.peerIdString }, "\(s.name): finding names an unknown peer")
                XCTAssertEqual(peer.name, f.peer)
                XCTAssertEqual(peer.participant, f.participant)
                XCTAssertNotEqual(f.observer, "")
                if f.kind == "handshake-timeout" { XCTAssertNotNil(f.phase, s.name) }
                // Every log named as evidence exists and mentions the peer at fault (name or participant ID).
                for ev in f.evidence where ev.hasPrefix("log:") {
                    let slug = String(ev.dropFirst(4))
                    let text = try XCTUnwrap(r.logs.first { $0.slug == slug }?.text, "\(s.name): \(ev)")
                    XCTAssertTrue(text.contains(f.participant) || text.contains(f.peer), "\(s.name): \(ev) never mentions \(f.peer)")
                }
            }
            if s.name.hasPrefix("healthy") || s.name == "group-8" { XCTAssertEqual(r.findings.count, 0, s.name) }
            else { XCTAssertGreaterThan(r.findings.count, 0, s.name) }
        }
    }

    func testLogsCarryTheFrameworkSignatureOfEachFinding() throws {
        // The MPC format strings (spec §2.2) and the seeds' prints, filled in for the peer at fault.
        func observerLog(_ r: SimulationResult, _ f: ExpectedFinding) throws -> String {
            let slug = try XCTUnwrap(f.evidence.first { $0.hasPrefix("log:") }).dropFirst(4)
            return try XCTUnwrap(r.logs.first { $0.slug == slug }).text
        }
        let ice = try Simulator.run("handshake-timeout-ice")
        let fi = try XCTUnwrap(ice.findings.first)
        let iceLog = try observerLog(ice, fi)
        XCTAssertTrue(iceLog.contains("[GCKSession] ICE timeout expired for participant [\(fi.participant)] on channel [0] state [ICE]."))
        XCTAssertTrue(iceLog.contains("[GCKSession] Not in connected state, so giving up for participant [\(fi.participant)] on channel [0]."))
        let dtls = try Simulator.run("handshake-timeout-dtls")
        let fdt = try XCTUnwrap(dtls.findings.first)
        XCTAssertEqual(fdt.phase, "dtls")
        XCTAssertTrue(try observerLog(dtls, fdt).contains(
            "[GCKSession] DTLS Handshake timeout expired for participant [\(fdt.participant)] on channel [0] DTLS state [DTLSNotConnected]."))
        let keep = try Simulator.run("keepalive-timeout")
        let fk = try XCTUnwrap(keep.findings.first)
        XCTAssertTrue(try observerLog(keep, fk).contains("Keep-alive timeout for peer: \(fk.peer)"))
        let app = try Simulator.run("handshake-timeout-app")
        let fa = try XCTUnwrap(app.findings.first)
        XCTAssertEqual(fa.phase, "app")
        XCTAssertTrue(try observerLog(app, fa).contains("Handshake timeout for peer: \(fa.peer)"))
        let dup = try Simulator.run("duplicate-connection")
        let fd = try XCTUnwrap(dup.findings.first)
        XCTAssertTrue(try observerLog(dup, fd).contains("Ignoring duplicate connection from \(fd.peer)"))
        let col = try Simulator.run("identity-collision")
        let fc = try XCTUnwrap(col.findings.first { $0.kind == "declined-invitation" })
        let fdup = try XCTUnwrap(col.findings.first { $0.kind == "duplicate-connection" }, "one name, two peer IDs")
        XCTAssertEqual(fdup.peer, fc.observer)
        XCTAssertNotEqual(fdup.peerIdString, col.devices.first { $0.name == fc.observer }?.idString, "the later of the two")
        XCTAssertTrue(try observerLog(col, fc).contains("Handle declined invitation from peer with peerID [\(fc.peer),\(fc.participant)]."))
        let decliner = try XCTUnwrap(col.logs.first { $0.device == fc.peer })
        XCTAssertTrue(decliner.text.contains("Invitation declined (accept=0, session=(null))."))
        XCTAssertEqual(col.devices.filter { $0.name == fc.observer }.count, 2, "two devices share the inviter's display name")
        XCTAssertEqual(col.devices.filter { $0.idString == fc.observerIdString }.count, 1)
    }

    func testOptionsAreValidated() {
        XCTAssertThrowsError(try Simulator.run("no-such-scenario"))
        XCTAssertThrowsError(try Simulator.run("healthy-pair", options: SimulationOptions(peers: 3)))
        XCTAssertThrowsError(try Simulator.run("group-8", options: SimulationOptions(peers: 9)))
        XCTAssertNoThrow(try Simulator.run("group-8", options: SimulationOptions(peers: 3)))
    }

    func testGroupPeerCountAndClassicPcap() throws {
        let r = try Simulator.run("group-8", options: SimulationOptions(peers: 4, format: .pcap))
        XCTAssertEqual(r.devices.count, 4)
        XCTAssertEqual(Array(r.capture.prefix(4)), [0xD4, 0xC3, 0xB2, 0xA1], "classic pcap magic, little-endian")
        let full = try Simulator.run("group-8")
        XCTAssertEqual(full.devices.count, 8)
        XCTAssertEqual(Set(full.interfaces.map(\.linkType.rawValue)), [1, 113], "one pcapng with two link types")
    }
}

/// A minimal pcapng walk for the tests (EPB timestamps, microsecond resolution).
enum PcapngTimes {
    struct Bad: Error {}
    static func read(_ b: [UInt8]) throws -> [Int64] {
        func u32(_ o: Int) throws -> UInt32 {
            guard o + 4 <= b.count else { throw Bad() }
            return UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3]) << 24
        }
        var off = 0
        var out: [Int64] = []
        while off + 12 <= b.count {
            let type = try u32(off), len = Int(try u32(off + 4))
            guard len >= 12 else { throw Bad() }
            if type == 6 {
                let ts = UInt64(try u32(off + 12)) << 32 | UInt64(try u32(off + 16))
                out.append(Int64(ts) * 1000)
            }
            off += len
        }
        return out
    }
}
