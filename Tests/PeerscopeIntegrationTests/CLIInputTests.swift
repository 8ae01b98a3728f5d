import Foundation
import XCTest

/// Inputs and settings the command must not take silently: captures given as logs, empty logs,
/// zone-less log times, out-of-range thresholds, bad pattern files, simulator output paths.
final class CLIInputTests: XCTestCase {
    var capture: String { Place.samples.appendingPathComponent("keepalive-timeout.pcapng").path }
    var logDir: URL { Place.samples.appendingPathComponent("logs/keepalive-timeout") }

    func testCaptureGivenAsLogIsReadAsACapture() throws {
        let asLog = try CLI.run(["check", "--log", capture, "--format", "json", "-o", "/dev/null", "--fail-on", "error"])
        let plain = try CLI.run(["check", capture, "--format", "json", "-o", "/dev/null", "--fail-on", "error"])
        XCTAssertEqual(asLog.status, plain.status, asLog.stderr)
        XCTAssertEqual(plain.status, 1, "the keep-alive sample has error findings: \(plain.stderr)")
        XCTAssertTrue(asLog.stderr.contains("\(capture): given with --log but it is a pcapng capture; reading it as a capture"), asLog.stderr)
        XCTAssertFalse(asLog.stderr.contains("binary"), asLog.stderr)
    }

    func testLiveCaptureRefusesACaptureGivenAsLogBeforeOpeningAnything() throws {
        let d = try CLI.tempDir()
        let w = d.appendingPathComponent("w.pcapng").path
        let r = try CLI.run(["capture", "-i", "lo", "--duration", "1", "--write", w, "--log", capture])
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("\(capture): given with --log but it is a pcapng capture"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: w))
    }

    func testEmptyLogIsTheSameNoteOnBothPaths() throws {
        let d = try CLI.tempDir()
        let f = d.appendingPathComponent("empty.log")
        FileManager.default.createFile(atPath: f.path, contents: Data())
        let positional = try CLI.run(["analyze", f.path, "--format", "json"])
        let explicit = try CLI.run(["analyze", "--log", f.path, "--format", "json"])
        for r in [positional, explicit] {
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stderr.contains("\(f.path): empty file: no log lines"), r.stderr)
            XCTAssertFalse(r.stderr.contains("not a capture"), r.stderr)
        }
    }

    /// The keep-alive sample's logs written as `log show --style compact` by a Mac at UTC+1: local
    /// times without a zone.
    func compactLogs(offsetHours: Int) throws -> [String] {
        let d = try CLI.tempDir()
        var out: [String] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: logDir.path).filter { $0.hasSuffix(".log") }.sorted()
        for name in files {
            let text = try String(contentsOf: logDir.appendingPathComponent(name), encoding: .utf8)
            var lines: [String] = []
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime]
            for l in text.split(separator: "\n", omittingEmptySubsequences: false) {
                // Xcode console: `2026-11-22 10:00:00.123456+0000 App[pid:tid] message`
                guard l.count > 31, let date = iso.date(from: String(l.prefix(19)).replacingOccurrences(of: " ", with: "T") + "Z"),
                      l.dropFirst(26).hasPrefix("+0000 ") else { lines.append(String(l)); continue }
                let local = date.addingTimeInterval(TimeInterval(offsetHours * 3600))
                let f = DateFormatter()
                f.timeZone = TimeZone(secondsFromGMT: 0)
                f.locale = Locale(identifier: "en_US_POSIX")
                f.dateFormat = "yyyy-MM-dd HH:mm:ss"
                let frac = l.dropFirst(19).prefix(4)   // ".123"
                let rest = l.dropFirst(32)
                let proc = rest.prefix { $0 != "[" }
                var msg = String(rest.drop { $0 != " " }.dropFirst())
                // MPC's lines carry their subsystem and category in compact style.
                if msg.hasPrefix("["), let close = msg.firstIndex(of: "]") {
                    let cat = msg[msg.index(after: msg.startIndex)..<close]
                    msg = "(MultipeerConnectivity) [com.apple.multipeerconnectivity:\(cat)]" + msg[msg.index(after: close)...]
                }
                lines.append("\(f.string(from: local))\(frac) Df \(proc)[1311:59cf9] \(msg)")
            }
            let p = d.appendingPathComponent(name.replacingOccurrences(of: ".log", with: ".compact.log"))
            try ("Timestamp               Ty Process[PID:TID]\n" + lines.joined(separator: "\n")).write(to: p, atomically: true, encoding: .utf8)
            out.append(p.path)
        }
        return out
    }

    func testZonelessLogTimesWarnAndTzPlacesThem() throws {
        let logs = try compactLogs(offsetHours: 1)
        let args = ["analyze", capture] + logs.flatMap { ["--log", $0] } + ["--format", "json"]
        let bare = try CLI.run(args)
        XCTAssertEqual(bare.status, 0, bare.stderr)
        XCTAssertTrue(bare.stderr.contains("carry no time zone and were read as UTC"), bare.stderr)
        XCTAssertTrue(bare.stderr.contains("1 h after the capture's") && bare.stderr.contains("--tz +01:00"), bare.stderr)

        for tz in ["+01:00", "+0100", "UTC+1"] {
            let fixed = try CLI.run(args + ["--tz", tz])
            XCTAssertEqual(fixed.status, 0, fixed.stderr)
            XCTAssertFalse(fixed.stderr.contains("no time zone"), "\(tz): \(fixed.stderr)")
            let j = try JSONSerialization.jsonObject(with: Data(fixed.stdout.utf8)) as? [String: Any]
            let findings = (j?["findings"] as? [[String: Any]]) ?? []
            XCTAssertFalse(findings.contains { ($0["kind"] as? String) == "duplicate-connection" }, "\(tz): \(findings)")
        }
        // November in Paris is UTC+1 as well.
        let paris = try CLI.run(args + ["--tz", "Europe/Paris"])
        XCTAssertFalse(paris.stderr.contains("no time zone"), paris.stderr)
        let bareJSON = try JSONSerialization.jsonObject(with: Data(bare.stdout.utf8)) as? [String: Any]
        let parisJSON = try JSONSerialization.jsonObject(with: Data(paris.stdout.utf8)) as? [String: Any]
        // Read an hour off, the logs tell of sessions the capture never saw (a second instance of the pair).
        XCTAssertNotEqual((bareJSON?["sessions"] as? [Any])?.count, (parisJSON?["sessions"] as? [Any])?.count)

        let bad = try CLI.run(args + ["--tz", "Mars/Olympus"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("--tz"), bad.stderr)
    }

    func testThresholdsOutOfRangeAreUsageErrors() throws {
        for t in ["keepalive-timeout.app=-5", "keepalive-timeout.app=0", "handshake-timeout.ice=-1s", "reconnect-storm.count=2.5"] {
            let r = try CLI.run(["analyze", capture, "--threshold", t])
            XCTAssertEqual(r.status, 2, "\(t): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(t), r.stderr)
        }
        // 0 turns the capture-gap rule off, as documented.
        XCTAssertEqual(try CLI.run(["analyze", capture, "--threshold", "keepalive-timeout.capture-gap=0", "-o", "/dev/null"]).status, 0)
        let d = try CLI.tempDir()
        let cfg = d.appendingPathComponent("peerscope.yml")
        try "thresholds:\n  keepalive-timeout.session: 0\n".write(to: cfg, atomically: true, encoding: .utf8)
        let c = try CLI.run(["analyze", capture, "--config", cfg.path])
        XCTAssertEqual(c.status, 2, c.stderr)
        XCTAssertTrue(c.stderr.contains(cfg.path) && c.stderr.contains("keepalive-timeout.session"), c.stderr)
    }

    func testBadPatternsFilesAreUsageErrors() throws {
        let d = try CLI.tempDir()
        let log = logDir.appendingPathComponent("alices-iphone.log").path
        func run(_ yaml: String?) throws -> CLIResult {
            let p = d.appendingPathComponent("p-\(UUID().uuidString).yml")
            if let yaml { try yaml.write(to: p, atomically: true, encoding: .utf8) }
            return try CLI.run(["analyze", "--log", log, "--patterns", p.path, "-o", "/dev/null"])
        }
        let regex = try run("patterns:\n  - id: broken\n    regex: 'Lobby (timeout'\n    kind: app.timeout\n")
        XCTAssertEqual(regex.status, 2, regex.stderr)
        XCTAssertTrue(regex.stderr.contains("broken") && regex.stderr.contains("bad regex"), regex.stderr)
        XCTAssertTrue(regex.stderr.contains(d.path), regex.stderr)
        let kind = try run("patterns:\n  - id: lobby\n    regex: 'Lobby timeout'\n    kind: lobby.gone\n")
        XCTAssertEqual(kind.status, 2, kind.stderr)
        XCTAssertTrue(kind.stderr.contains("lobby") && kind.stderr.contains("unknown kind `lobby.gone`"), kind.stderr)
        let missing = try run(nil)
        XCTAssertEqual(missing.status, 2, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("cannot read"), missing.stderr)
        XCTAssertEqual(try run("patterns:\n  - id: lobby\n    regex: 'Lobby timeout'\n    kind: app.timeout\n").status, 0)
        XCTAssertEqual(try run("patterns:\n  - id: lobby\n    regex: 'Lobby timeout'\n    kind: user.lobby_gone\n").status, 0)
        let typo = try run("patterns:\n  - id: lobby\n    regex: 'Lobby timeout'\n    kind: app.timout\n")
        XCTAssertEqual(typo.status, 2, typo.stderr)
    }

    func testSimulateDoesNotCreateParentsAndSaysWhy() throws {
        let d = try CLI.tempDir()
        let target = d.appendingPathComponent("missing/x.pcapng").path
        let r = try CLI.run(["simulate", "healthy-pair", "-o", target])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: d.appendingPathComponent("missing").path))
        XCTAssertTrue(r.stderr.contains(target) && r.stderr.contains("no such directory"), r.stderr)
        XCTAssertFalse(r.stderr.contains("NSCocoaErrorDomain"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
    }

    func testCaptureWithDecodeKeepsStdoutJSONLinesAndPrintsTheReportOnStderr() throws {
        guard geteuid() == 0 else { throw XCTSkip("live capture needs root (CI runs as root)") }
        let lo = CLI.loopback
        let r = try CLI.run(["capture", "-i", lo, "--filter", "udp port 9", "--decode", "--duration", "1", "--format", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for line in r.stdout.split(separator: "\n") {
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), String(line))
        }
        XCTAssertFalse(r.stdout.contains("peerscope.report/1"), r.stdout)
        XCTAssertTrue(r.stderr.contains("peerscope.report/1"), "the final report goes to stderr: \(r.stderr)")
    }

    func testShowUnknownMasksMessageContentsUnlessShowPayloads() throws {
        let d = try CLI.tempDir()
        let f = d.appendingPathComponent("app.log")
        try """
        2026-01-15 10:00:00.050000+0000 ChatApp[1311:367865] Received chat message: meet me at the north gate
        2026-01-15 10:00:01.050000+0000 ChatApp[1311:367865] Draft saved "see you at 5"
        2026-01-15 10:00:02.050000+0000 ChatApp[1311:367865] Lobby of Bob's iPad is full, note 'top secret'
        """.write(to: f, atomically: true, encoding: .utf8)
        let masked = try CLI.run(["analyze", "--log", f.path, "--show-unknown", "-o", "/dev/null"])
        XCTAssertEqual(masked.status, 0, masked.stderr)
        XCTAssertTrue(masked.stderr.contains("app.log:1:"), masked.stderr)
        XCTAssertFalse(masked.stderr.contains("north gate"), masked.stderr)
        XCTAssertFalse(masked.stderr.contains("see you at 5"), masked.stderr)
        XCTAssertTrue(masked.stderr.contains("Received chat message:"), masked.stderr)
        XCTAssertTrue(masked.stderr.contains("Lobby of Bob's iPad is full, note '<10 chars>'"), masked.stderr)
        XCTAssertFalse(masked.stderr.contains("top secret"), masked.stderr)
        let shown = try CLI.run(["analyze", "--log", f.path, "--show-unknown", "--show-payloads", "-o", "/dev/null"])
        XCTAssertTrue(shown.stderr.contains("north gate") && shown.stderr.contains("see you at 5"), shown.stderr)
    }
}
