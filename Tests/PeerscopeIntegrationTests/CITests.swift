import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeReports
import PeerscopeSimulator
import PeerscopeTimeline

/// Issue 16: fingerprints, `diff`, `check --baseline`, suppressions, JSON Lines, fleets, SARIF schema.
final class CITests: XCTestCase {
    static let root = Place.packageRoot

    /// The samples with a capture and committed baselines, by name.
    static func sampleNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: Place.samples.path)
            .filter { $0.hasSuffix(".pcapng") }.map { String($0.dropLast(".pcapng".count)) }.sorted()
    }

    static func sampleLogs(_ name: String) -> [String] {
        let dir = Place.samples.appendingPathComponent("logs/\(name)")
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
            .filter { $0.hasSuffix(".log") }.sorted().map { dir.appendingPathComponent($0).path }
    }

    static func json(_ path: String) throws -> JSONValue {
        try JSONParser.parse(String(contentsOfFile: path, encoding: .utf8))
    }

    static func fingerprints(_ doc: JSONValue) -> [String] {
        (doc["findings"]?.arrayValue ?? []).compactMap { $0["fingerprint"]?.stringValue }.sorted()
    }

    // MARK: fingerprints

    func testSameScenarioWithTwoSeedsGivesTheSameFingerprints() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        var withFindings = 0
        for info in Simulator.scenarios {
            var prints: [[String]] = [], ids: [Set<String>] = []
            for seed: UInt64 in [3, 11] {
                let result = try Simulator.run(info.name, options: SimulationOptions(seed: seed))
                let capture = dir.appendingPathComponent("\(info.name)-\(seed).pcapng").path
                let logs = dir.appendingPathComponent("\(info.name)-\(seed)-logs").path
                try result.write(capturePath: capture, logDirectory: logs, expectedPath: nil)
                let logFiles = try FileManager.default.contentsOfDirectory(atPath: logs).sorted().map { logs + "/" + $0 }
                let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [capture], logs: logFiles))
                prints.append(FindingMarks(a.report).fingerprints.sorted())
                ids.append(Set(a.report.timelines.peers.compactMap(\.peer.idString)))
            }
            XCTAssertEqual(prints[0], prints[1], "\(info.name): seeds 3 and 11 gave different fingerprints")
            // The seed really changed the peers' identities: only the fingerprint ignores them.
            XCTAssertTrue(ids[0].isDisjoint(with: ids[1]), "\(info.name): both seeds drew the same peer IDs")
            if !prints[0].isEmpty { withFindings += 1 }
        }
        XCTAssertGreaterThanOrEqual(withFindings, 10)
    }

    func testFingerprintLeavesOutTimesButNotKindPeerOrPhase() throws {
        let r = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [Place.samples.appendingPathComponent("keepalive-timeout.pcapng").path])).report
        let ids = FindingIdentities(r)
        let f = try XCTUnwrap(r.findings.first)
        XCTAssertEqual(ids.basis(f), ["peerscope-fingerprint/1", "keepalive-timeout", "name:Bob's iPad", "name:Alice's iPhone", "app"])
        var later = f
        later.t += 3_600 * CaptureTime.second
        later.evidence = [.frame(input: 0, frame: 999)]
        XCTAssertEqual(ids.fingerprint(later), ids.fingerprint(f))
        var other = f
        other.details["level"] = "session"
        XCTAssertNotEqual(ids.fingerprint(other), ids.fingerprint(f))
        other = f
        other.kind = "handshake-timeout"
        XCTAssertNotEqual(ids.fingerprint(other), ids.fingerprint(f))
    }

    /// Identities are made when asked (no table of every peer's): each sample's peers get the identity
    /// its committed report gives them, a display name shared by two peers numbers the later one, and a
    /// peer the report does not know falls back to its label.
    func testPeerIdentitiesMadeWhenAskedMatchTheCommittedReports() throws {
        var shared = 0
        for name in try Self.sampleNames() {
            let capture = Place.samples.appendingPathComponent("\(name).pcapng").path
            let r = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [capture], logs: Self.sampleLogs(name))).report
            let ids = FindingIdentities(r)
            let doc = try Self.json(Place.samples.appendingPathComponent("expected/\(name).report.json").path)
            let want = (doc["peers"]?.arrayValue ?? []).compactMap { $0["identity"]?.stringValue }
            let got = r.timelines.peers.map { ids.identity($0.peer.ref) }
            XCTAssertEqual(got, want, name)
            XCTAssertFalse(got.isEmpty, name)
            let named = got.filter { $0.hasPrefix("name:") }
            XCTAssertEqual(Set(named).count, named.count, "\(name): two named peers share an identity")
            shared += got.filter { $0.hasSuffix("#2") }.count
        }
        XCTAssertGreaterThanOrEqual(shared, 1, "no sample has two peers of one display name")
        let r = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [Place.samples.appendingPathComponent("identity-collision.pcapng").path])).report
        let ids = FindingIdentities(r)
        XCTAssertEqual(ids.identity(.name("nobody here"), label: "Carol"), "name:Carol")
        XCTAssertEqual(ids.identity(nil), "unknown")
    }

    // MARK: diff

    func testDiffOfHealthyAndFailingSampleListsExactlyTheFailingFindingsAsNew() throws {
        let expected = Place.samples.appendingPathComponent("expected")
        let healthy = expected.appendingPathComponent("healthy-pair.report.json").path
        var checked = 0
        for name in try Self.sampleNames() where name != "healthy-pair" {
            let failing = expected.appendingPathComponent("\(name).report.json").path
            let want = Self.fingerprints(try Self.json(failing))
            guard !want.isEmpty else { continue }
            let r = try CLI.run(["diff", healthy, failing, "--format", "json"])
            XCTAssertEqual(r.status, 1, "\(name): \(r.stderr)")
            let d = try JSONParser.parse(r.stdout)
            let new = (d["findings"]?["new"]?.arrayValue ?? []).compactMap { $0["fingerprint"]?.stringValue }.sorted()
            XCTAssertEqual(new, want, name)
            XCTAssertEqual(d["findings"]?["fixed"]?.arrayValue?.count, 0, name)
            XCTAssertEqual(d["findings"]?["unchanged"]?.arrayValue?.count, 0, name)
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 10)
        // The other way round the failing sample's findings are fixed, nothing is new: exit 0.
        let back = try CLI.run(["diff", expected.appendingPathComponent("keepalive-timeout.report.json").path, healthy])
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertTrue(back.stdout.contains("0 new, 1 fixed, 0 unchanged"), back.stdout)
    }

    func testDiffListsPeersAndSessionsThatAppearedOrVanished() throws {
        let expected = Place.samples.appendingPathComponent("expected")
        let r = try CLI.run(["diff", expected.appendingPathComponent("healthy-pair.report.json").path,
                             expected.appendingPathComponent("identity-collision.report.json").path, "--format", "json"])
        let d = try JSONParser.parse(r.stdout)
        let appeared = (d["peers"]?["appeared"]?.arrayValue ?? []).compactMap(\.stringValue)
        XCTAssertEqual(appeared, ["name:Alice's iPhone#2"])
        XCTAssertEqual((d["peers"]?["vanished"]?.arrayValue ?? []).count, 0)
        XCTAssertEqual((d["sessions"]?["appeared"]?.arrayValue ?? []).compactMap(\.stringValue), ["name:Alice's iPhone#2 ~ name:Bob's iPad #1"])
        // Not a report: a usage error naming the file.
        let bad = try CLI.run(["diff", "Package.swift", expected.appendingPathComponent("healthy-pair.report.json").path])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("Package.swift: not a peerscope JSON report"), bad.stderr)
    }

    // MARK: check --baseline

    func testCheckBaselineFailsOnlyOnNewFindings() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = dir.appendingPathComponent("base.json").path
        // channel-error-icmp: one ICMP channel error. reconnect-storm: the same error and a storm (a warning).
        let made = try CLI.run(["check", "Samples/channel-error-icmp.pcapng", "-o", base])
        XCTAssertEqual(made.status, 1)
        let own = try CLI.run(["check", "Samples/channel-error-icmp.pcapng", "--baseline", base, "--fail-on", "warning"])
        XCTAssertEqual(own.status, 0, own.stderr)
        let more = try CLI.run(["check", "Samples/reconnect-storm.pcapng", "--baseline", base, "--fail-on", "warning"])
        XCTAssertEqual(more.status, 1, more.stderr)
        XCTAssertTrue(more.stderr.contains("1 new finding(s) at or above warning"), more.stderr)
        let doc = try JSONParser.parse(more.stdout)
        let states = (doc["findings"]?.arrayValue ?? []).map { "\($0["kind"]?.stringValue ?? ""):\($0["baselineState"]?.stringValue ?? "")" }
        XCTAssertEqual(states, ["channel-error:unchanged", "reconnect-storm:new"])

        // SARIF: baselineState on every result, and the baseline's finding a run lacks is `absent`.
        let sarif = try CLI.run(["check", "Samples/healthy-pair.pcapng", "--baseline", base, "--format", "sarif"])
        XCTAssertEqual(sarif.status, 0)
        let results = try JSONParser.parse(sarif.stdout)["runs"]?.arrayValue?.first?["results"]?.arrayValue ?? []
        XCTAssertEqual(results.map { $0["baselineState"]?.stringValue }, ["absent"])
        let sarif2 = try CLI.run(["check", "Samples/reconnect-storm.pcapng", "--baseline", base, "--format", "sarif"])
        let results2 = try JSONParser.parse(sarif2.stdout)["runs"]?.arrayValue?.first?["results"]?.arrayValue ?? []
        XCTAssertEqual(results2.map { $0["baselineState"]?.stringValue ?? "-" }, ["unchanged", "new"])

        // JUnit: the known error passes with the finding in system-out; the new warning fails.
        let junit = try CLI.run(["check", "Samples/reconnect-storm.pcapng", "--baseline", base, "--format", "junit", "--fail-on", "warning"])
        XCTAssertEqual(junit.status, 1)
        XCTAssertTrue(junit.stdout.contains("<testsuites name=\"peerscope\" tests=\"8\" failures=\"1\""), junit.stdout)
        let channel = try XCTUnwrap(junit.stdout.components(separatedBy: "<testsuite name=\"peerscope.channel-error\"").last)
        XCTAssertTrue(channel.hasPrefix(" tests=\"1\" failures=\"0\""), channel)
        XCTAssertTrue(channel.contains("<system-out>severity: error"), channel)
        XCTAssertTrue(channel.contains("baseline: unchanged (known in \(base))"), channel)

        // A baseline that is not a report is a usage error.
        let bad = try CLI.run(["check", "Samples/healthy-pair.pcapng", "--baseline", "Package.swift"])
        XCTAssertEqual(bad.status, 2)
    }

    // MARK: suppressions

    func testSuppressionsMatchedExpiredAndUnused() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = "Samples/keepalive-timeout.pcapng"
        let plain = try JSONParser.parse(try CLI.run(["check", capture]).stdout)
        let fp = try XCTUnwrap(plain["findings"]?.arrayValue?.first?["fingerprint"]?.stringValue)
        let list = dir.appendingPathComponent("suppressions.yml").path
        try """
            suppressions:
              - fingerprint: \(fp)
                reason: Bob's iPad is on the old build until the lab upgrade
                expires: 2027-03-31
              - kind: keepalive-timeout
                peer: "Bob*"
                reason: an old exception
                expires: 2026-01-31
              - kind: handshake-timeout
                reason: never happens here
            """.write(toFile: list, atomically: true, encoding: .utf8)
        let r = try CLI.run(["check", capture, "--suppress", list, "--today", "2026-06-01"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let doc = try JSONParser.parse(r.stdout)
        let f = try XCTUnwrap(doc["findings"]?.arrayValue?.first)
        XCTAssertEqual(f["suppressed"]?["reason"]?.stringValue, "Bob's iPad is on the old build until the lab upgrade")
        XCTAssertEqual(f["suppressed"]?["origin"]?.stringValue, "\(list): suppressions[1]")
        let s = try XCTUnwrap(doc["ci"]?["suppressions"])
        XCTAssertEqual(s["today"]?.stringValue, "2026-06-01")
        XCTAssertEqual(s["suppressed"]?.int64Value, 1)
        XCTAssertEqual(s["expired"]?.arrayValue?.map { $0["origin"]?.stringValue ?? "" }, ["\(list): suppressions[2]"])
        XCTAssertEqual(s["expired"]?.arrayValue?.first?["wouldMatch"]?.int64Value, 1)
        XCTAssertEqual(s["unused"]?.arrayValue?.map { $0["origin"]?.stringValue ?? "" }, ["\(list): suppressions[3]"])
        XCTAssertTrue(r.stderr.contains("warning: suppression \(list): suppressions[2] (keepalive-timeout, peer Bob*) expired on 2026-01-31"), r.stderr)
        XCTAssertTrue(r.stderr.contains("warning: suppression \(list): suppressions[3] (handshake-timeout) matched no finding"), r.stderr)

        // After its last day the first entry hides nothing: the finding fails the check again.
        let late = try CLI.run(["check", capture, "--suppress", list, "--today", "2027-04-01"])
        XCTAssertEqual(late.status, 1, late.stderr)
        XCTAssertNil(try JSONParser.parse(late.stdout)["findings"]?.arrayValue?.first?["suppressed"])
        // PEERSCOPE_TODAY stands for --today.
        let env = try CLI.run(["check", capture, "--suppress", list], prefix: ["/usr/bin/env", "PEERSCOPE_TODAY=2027-04-01"])
        XCTAssertEqual(env.status, 1, env.stderr)

        // SARIF keeps the suppressed result, with its justification; JUnit passes it.
        let sarif = try CLI.run(["check", capture, "--suppress", list, "--today", "2026-06-01", "--format", "sarif"])
        let result = try XCTUnwrap(try JSONParser.parse(sarif.stdout)["runs"]?.arrayValue?.first?["results"]?.arrayValue?.first)
        XCTAssertEqual(result["suppressions"]?.arrayValue?.first?["justification"]?.stringValue,
                       "Bob's iPad is on the old build until the lab upgrade")
        let junit = try CLI.run(["check", capture, "--suppress", list, "--today", "2026-06-01", "--format", "junit"])
        XCTAssertTrue(junit.stdout.contains("failures=\"0\""), junit.stdout)
        XCTAssertTrue(junit.stdout.contains("suppressed by \(list): suppressions[1]"), junit.stdout)

        // The same list as a section of peerscope.yml, beside detector settings.
        let config = dir.appendingPathComponent("peerscope.yml").path
        try ("thresholds:\n  keepalive-timeout.app: 6\n" + String(contentsOfFile: list, encoding: .utf8))
            .write(toFile: config, atomically: true, encoding: .utf8)
        let viaConfig = try CLI.run(["check", capture, "--config", config, "--today", "2026-06-01"])
        XCTAssertEqual(viaConfig.status, 0, viaConfig.stderr)
    }

    func testBadSuppressionEntriesAreUsageErrorsNamingTheEntry() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, String)] = [
            ("suppressions:\n  - kind: keepalive-timeout\n", "suppressions[1]: `reason` is required"),
            ("suppressions:\n  - kind: keepalive-timout\n    reason: x\n", "suppressions[1]: unknown kind `keepalive-timout`"),
            ("suppressions:\n  - reason: x\n", "suppressions[1]: give a `fingerprint`, or a `kind`"),
            ("suppressions:\n  - kind: keepalive-timeout\n    reason: x\n    expires: soon\n", "`expires` must be a date YYYY-MM-DD"),
            ("suppressions:\n  - fingerprint: 1234\n    reason: x\n", "`fingerprint` must be the 16 hex digits"),
            ("suppressions:\n  - kind: keepalive-timeout\n    reason: x\n    peers: Bob\n", "unknown key `peers`"),
        ]
        for (i, (text, message)) in cases.enumerated() {
            let file = dir.appendingPathComponent("s\(i).yml").path
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try CLI.run(["check", "Samples/healthy-pair.pcapng", "--suppress", file])
            XCTAssertEqual(r.status, 2, text)
            XCTAssertTrue(r.stderr.contains(file) && r.stderr.contains(message), "\(text): \(r.stderr)")
        }
    }

    // MARK: fleets

    /// A folder with every sample: `NAME.pcapng` and its device logs as `NAME.DEVICE.log`, half of
    /// them in a subfolder.
    static func makeFleet(_ dir: URL) throws -> [String] {
        let fm = FileManager.default
        var names: [String] = []
        for (i, name) in try sampleNames().enumerated() {
            let folder = i % 2 == 0 ? dir : dir.appendingPathComponent("more")
            try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            try fm.copyItem(at: Place.samples.appendingPathComponent("\(name).pcapng"), to: folder.appendingPathComponent("\(name).pcapng"))
            for log in sampleLogs(name) {
                let device = ((log as NSString).lastPathComponent as NSString).deletingPathExtension
                try fm.copyItem(atPath: log, toPath: folder.appendingPathComponent("\(name).\(device).log").path)
            }
            names.append(name)
        }
        return names
    }

    static func tree(_ dir: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let e = FileManager.default.enumerator(atPath: dir.path)
        while let rel = e?.nextObject() as? String {
            var isDir: ObjCBool = false
            let p = dir.appendingPathComponent(rel).path
            if FileManager.default.fileExists(atPath: p, isDirectory: &isDir), !isDir.boolValue {
                out[rel] = try Data(contentsOf: URL(fileURLWithPath: p))
            }
        }
        return out
    }

    func testFleetWithTwoJobsEqualsOneJob() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fleet = dir.appendingPathComponent("runs")
        let names = try Self.makeFleet(fleet)
        var outs: [[String: Data]] = [], stdouts: [String] = []
        for jobs in [1, 2] {
            let out = dir.appendingPathComponent("out\(jobs)")
            let r = try CLI.run(["check", "runs", "--recursive", "--jobs", "\(jobs)", "--output-dir", out.path, "--fail-on", "warning"], cwd: dir)
            XCTAssertEqual(r.status, 1, r.stderr)
            outs.append(try Self.tree(out))
            stdouts.append(r.stdout)
        }
        XCTAssertEqual(outs[0].count, names.count + 1)   // one report per capture and summary.json
        XCTAssertEqual(outs[0], outs[1], "--jobs 2 wrote different reports from --jobs 1")
        XCTAssertEqual(stdouts[0], stdouts[1])
        XCTAssertTrue(stdouts[0].contains("\(names.count) capture(s): "), stdouts[0])
        XCTAssertTrue(stdouts[0].contains("runs/more/declined-invitation.pcapng"), stdouts[0])
        // Each capture's report is what `check` of that capture and its logs alone gives.
        // (makeFleet alternates samples between runs/ and runs/more/, so find where it went.)
        let kaReport = try XCTUnwrap(outs[0].keys.first { $0 == "keepalive-timeout.json" || $0 == "more/keepalive-timeout.json" })
        let kaFolder = kaReport.hasPrefix("more/") ? "runs/more" : "runs"
        let single = try CLI.run(["check", "\(kaFolder)/keepalive-timeout.pcapng", "\(kaFolder)/keepalive-timeout.alices-iphone.log",
                                  "\(kaFolder)/keepalive-timeout.bobs-ipad.log"], cwd: dir)
        XCTAssertEqual(outs[0][kaReport], Data(single.stdout.utf8))
        // And the findings agree with the committed baselines (capture and logs analysed together).
        for name in names {
            let rel = try XCTUnwrap(outs[0].keys.first { $0.hasSuffix("\(name).json") && !$0.hasSuffix("summary.json") })
            let got = Self.fingerprints(try JSONParser.parse(String(decoding: try XCTUnwrap(outs[0][rel]), as: UTF8.self)))
            let want = Self.fingerprints(try Self.json(Place.samples.appendingPathComponent("expected/\(name).report.json").path))
            XCTAssertEqual(got, want, name)
        }
        // Without --recursive only the folder's own captures.
        let flat = try CLI.run(["check", "runs", "--jobs", "2"], cwd: dir)
        XCTAssertFalse(flat.stdout.contains("runs/more/"), flat.stdout)
        XCTAssertTrue(flat.stdout.contains("\((names.count + 1) / 2) capture(s): "), flat.stdout)
        // Reports of a fleet go to --output-dir; logs go beside their capture.
        XCTAssertEqual(try CLI.run(["check", "runs", "-o", "x.json"], cwd: dir).status, 2)
        let loose = try CLI.run(["check", "runs", "runs/keepalive-timeout.bobs-ipad.log"], cwd: dir)
        XCTAssertEqual(loose.status, 2)
        XCTAssertTrue(loose.stderr.contains("logs go beside their capture"), loose.stderr)
    }

    /// Writes the JSON Lines of every sample with `check --recursive` and returns the output folder.
    func jsonlFleet(_ dir: URL) throws -> URL {
        _ = try Self.makeFleet(dir.appendingPathComponent("runs"))
        let out = dir.appendingPathComponent("reports")
        let r = try CLI.run(["check", "runs", "--recursive", "--jobs", "2", "--format", "jsonl", "--output-dir", out.path], cwd: dir)
        XCTAssertEqual(r.status, 1, r.stderr)
        return out
    }

    func testJSONLinesRecordsValidateAgainstTheirSchema() throws {
        guard let (code, _) = python(["-c", "import jsonschema"]), code == 0 else {
            throw XCTSkip("python3 with jsonschema is not available")
        }
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = try jsonlFleet(dir)
        let script = """
            import json, sys, glob, collections, jsonschema
            report = json.load(open(sys.argv[1])); lines = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator.check_schema(lines)
            try:
                from referencing import Registry, Resource
                reg = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (report, lines)])
                v = jsonschema.Draft202012Validator(lines, registry=reg)
            except ImportError:  # jsonschema before 4.18 (Debian 12's)
                v = jsonschema.Draft202012Validator(lines, resolver=jsonschema.RefResolver.from_schema(lines, store={report["$id"]: report}))
            types = collections.Counter(); bad = 0
            for f in sorted(glob.glob(sys.argv[3] + "/**/*.jsonl", recursive=True)):
                for n, line in enumerate(open(f), 1):
                    rec = json.loads(line); types[rec["type"]] += 1
                    assert rec["schema"] == "peerscope.report/1"
                    for e in list(v.iter_errors(rec))[:2]:
                        bad += 1; print(f, n, e.message[:200])
            # A record of an unknown type, or a finding without its fingerprint, is refused.
            assert list(v.iter_errors({"type": "peer", "schema": "peerscope.report/1", "capture": "x"}))
            print(json.dumps(types, sort_keys=True))
            sys.exit(1 if bad else 0)
            """
        let (rc, text) = try XCTUnwrap(python(["-c", script, Self.root.appendingPathComponent("Schemas/peerscope.report.v1.schema.json").path,
                                               Self.root.appendingPathComponent("Schemas/peerscope.jsonl.v1.schema.json").path, out.path]))
        XCTAssertEqual(rc, 0, text)
        let counts = try JSONParser.parse(text.split(separator: "\n").last.map(String.init) ?? "{}")
        XCTAssertEqual(counts["report"]?.int64Value, Int64(try Self.sampleNames().count))
        XCTAssertGreaterThan(counts["timeline"]?.int64Value ?? 0, 100)
        XCTAssertGreaterThan(counts["finding"]?.int64Value ?? 0, 10)
        XCTAssertGreaterThan(counts["session"]?.int64Value ?? 0, 10)
    }

    /// The README's DuckDB query over a fleet's JSON Lines: which peers fail most.
    func testDuckDBQueryOfAFleetsJSONLines() throws {
        guard let (code, _) = python(["-c", "import duckdb"]), code == 0 else {
            throw XCTSkip("python3 with the duckdb package is not available (Scripts/setup installs it)")
        }
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try jsonlFleet(dir)
        let query = try Self.readmeQuery()
        let script = """
            import duckdb, json, os, sys
            os.chdir(sys.argv[1])
            print(json.dumps(duckdb.sql(sys.argv[2]).fetchall()))
            """
        let (rc, text) = try XCTUnwrap(python(["-c", script, dir.path, query]))
        XCTAssertEqual(rc, 0, text)
        let rows = try JSONParser.parse(text).arrayValue ?? []
        // Expected: error and critical findings per peer, counted from the committed JSON baselines.
        var want: [String: (Int, Set<String>)] = [:]
        for name in try Self.sampleNames() {
            let doc = try Self.json(Place.samples.appendingPathComponent("expected/\(name).report.json").path)
            for f in doc["findings"]?.arrayValue ?? [] where ["error", "critical"].contains(f["severity"]?.stringValue ?? "") {
                let peer = f["peer"]?.stringValue ?? "?"
                want[peer, default: (0, [])].0 += 1
                want[peer, default: (0, [])].1.insert(name)
            }
        }
        let got = rows.map { r in "\(r.arrayValue?[0].stringValue ?? "?") \(r.arrayValue?[1].int64Value ?? -1) \(r.arrayValue?[2].int64Value ?? -1)" }
        let expected = want.sorted { $0.value.0 != $1.value.0 ? $0.value.0 > $1.value.0 : $0.key < $1.key }
            .map { "\($0.key) \($0.value.0) \($0.value.1.count)" }
        XCTAssertEqual(got, expected)
        XCTAssertGreaterThanOrEqual(got.count, 3)
    }

    /// The SQL of the README's DuckDB example (the fenced `sql` block of "Using peerscope in CI").
    static func readmeQuery() throws -> String {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "## Using peerscope in CI").dropFirst().first)
        let block = try XCTUnwrap(section.components(separatedBy: "```sql\n").dropFirst().first?.components(separatedBy: "```").first)
        return block
    }

    /// The ready-made CI files use only options `check` has, and run it with a baseline, SARIF and JUnit.
    func testCIExamplesUseRealCheckOptions() throws {
        let help = try CLI.run(["check", "--help"]).stdout
        for file in ["github-actions.yml", "gitlab-ci.yml"] {
            let text = try String(contentsOf: Place.samples.appendingPathComponent("ci/\(file)"), encoding: .utf8)
            let commands = text.components(separatedBy: "peerscope check ").dropFirst()
            XCTAssertFalse(commands.isEmpty, file)
            var used: Set<String> = []
            for c in commands {
                let command = c.components(separatedBy: "\n").prefix(3).joined(separator: " ")
                for word in command.split(separator: " ") where word.hasPrefix("--") { used.insert(String(word)) }
            }
            for option in used { XCTAssertTrue(help.contains(option), "\(file): check has no \(option)") }
            XCTAssertTrue(used.isSuperset(of: ["--baseline", "--format"]), "\(file): \(used)")
            XCTAssertTrue(text.contains("sarif") && text.contains("junit"), file)
        }
    }

    // MARK: SARIF schema

    func testSARIFOfEverySampleValidatesAgainstTheOfficialSchema() throws {
        guard let (code, _) = python(["-c", "import jsonschema"]), code == 0 else {
            throw XCTSkip("python3 with jsonschema is not available")
        }
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        var files: [String] = []
        FileManager.default.changeCurrentDirectoryPath(Self.root.path)
        for name in try Self.sampleNames() {
            let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: ["Samples/\(name).pcapng"], logs: Self.sampleLogs(name)))
            let file = dir.appendingPathComponent("\(name).sarif").path
            try SARIFWriter.render(a.report).write(toFile: file, atomically: true, encoding: .utf8)
            files.append(file)
        }
        // With a baseline (new, unchanged and absent results) and suppressions.
        let base = dir.appendingPathComponent("base.json").path
        _ = try CLI.run(["check", "Samples/channel-error-icmp.pcapng", "-o", base])
        let list = dir.appendingPathComponent("s.yml").path
        try "- kind: reconnect-storm\n  reason: known\n".write(toFile: list, atomically: true, encoding: .utf8)
        for (i, capture) in ["Samples/reconnect-storm.pcapng", "Samples/healthy-pair.pcapng"].enumerated() {
            let file = dir.appendingPathComponent("ci-\(i).sarif").path
            let r = try CLI.run(["check", capture, "--baseline", base, "--suppress", list, "--format", "sarif", "-o", file])
            XCTAssertNotEqual(r.status, 2, r.stderr)
            files.append(file)
        }
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            v = jsonschema.Draft4Validator(schema)
            bad = 0
            for f in sys.argv[2:]:
                d = json.load(open(f))
                for e in list(v.iter_errors(d))[:3]:
                    bad += 1; print(f, list(e.absolute_path), e.message[:200])
            # The schema is really applied: a wrong baselineState and a missing message are refused.
            d = json.load(open(sys.argv[-1]))
            d["runs"][0]["results"][0]["baselineState"] = "gone"
            assert list(v.iter_errors(d)), "a bad baselineState passed"
            del d["runs"][0]["results"][0]["message"]
            assert len(list(v.iter_errors(d))) >= 2
            print(len(sys.argv) - 2, "files")
            sys.exit(1 if bad else 0)
            """
        let schema = Self.root.appendingPathComponent("Schemas/sarif/sarif-schema-2.1.0.json").path
        let (rc, text) = try XCTUnwrap(python(["-c", script, schema] + files))
        XCTAssertEqual(rc, 0, text)
        XCTAssertTrue(text.contains("\(files.count) files"), text)
    }

    func python(_ args: [String]) -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3"] + args
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-py-\(UUID().uuidString)")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: out) }
        guard let h = try? FileHandle(forWritingTo: out) else { return nil }
        p.standardOutput = h
        p.standardError = h
        do { try p.run() } catch { return nil }
        p.waitUntilExit()
        try? h.close()
        return (p.terminationStatus, (try? String(contentsOf: out, encoding: .utf8)) ?? "")
    }
}
