import Foundation
import XCTest
import PeerscopeCore
import PeerscopePlugins

/// The `peerscope` command as users and CI run it: errors, exit codes, decode order.
final class CLIErrorTests: XCTestCase {
    func testMissingFile() throws {
        let r = try CLI.run(["analyze", "/nonexistent/capture.pcapng"])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("/nonexistent/capture.pcapng: no such file"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)")
    }

    func testDirectoryIsNotReadable() throws {
        let d = try CLI.tempDir()
        let r = try CLI.run(["analyze", d.path])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains(d.path) && r.stderr.contains("cannot read"), r.stderr)
    }

    func testUnreadableFile() throws {
        let d = try CLI.tempDir()
        let f = d.appendingPathComponent("secret.pcapng")
        try FileManager.default.copyItem(at: Place.samples.appendingPathComponent("healthy-pair.pcapng"), to: f)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: f.path)
        // Root reads anything: drop to an unprivileged user for this check when we are root.
        var prefix: [String] = []
        if geteuid() == 0 {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { throw XCTSkip("needs setpriv to drop root") }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: d.path)
            prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        }
        let r = try CLI.run(["analyze", f.path], cwd: d, prefix: prefix)
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains(f.path) && r.stderr.contains("ermission denied"), r.stderr)
    }

    func testNotACaptureFile() throws {
        let d = try CLI.tempDir()
        let f = d.appendingPathComponent("notes.txt")
        try "hello, this is text\n".write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["decode", f.path])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("\(f.path): not a capture file"), r.stderr)
    }

    func testTextNamedLikeACaptureIsNotACapture() throws {
        let d = try CLI.tempDir()
        for name in ["x.pcapng", "x.pcap", "X.CAP", "x.pcap.gz"] {
            let f = d.appendingPathComponent(name)
            try "hello\n".write(to: f, atomically: true, encoding: .utf8)
            let r = try CLI.run(["check", f.path, "--fail-on", "warning"])
            XCTAssertEqual(r.status, 3, "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("\(f.path): not a capture file"), r.stderr)
        }
        // Text under any other name is still a log.
        let log = d.appendingPathComponent("x.log")
        try "hello\n".write(to: log, atomically: true, encoding: .utf8)
        let r = try CLI.run(["check", log.path, "--fail-on", "warning"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try JSONParser.parse(r.stdout)["stats"]?["logLines"]?.int64Value, 1)
    }

    func testTruncatedCaptureKeepsResultsUpToTheCut() throws {
        let sample = try Data(contentsOf: Place.samples.appendingPathComponent("keepalive-timeout.pcapng"))
        let d = try CLI.tempDir()
        let f = d.appendingPathComponent("cut.pcapng")
        try sample.prefix(sample.count * 2 / 3 + 7).write(to: f)
        let full = try CLI.run(["analyze", "--format", "json", Place.samples.appendingPathComponent("keepalive-timeout.pcapng").path])
        let r = try CLI.run(["analyze", "--format", "json", f.path])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("\(f.path): truncated in frame"), r.stderr)
        let fullDoc = try JSONParser.parse(full.stdout)
        let doc = try JSONParser.parse(r.stdout)
        XCTAssertEqual(doc["complete"], .bool(false))
        let frames = doc["stats"]?["frames"]?.int64Value ?? 0
        let allFrames = fullDoc["stats"]?["frames"]?.int64Value ?? 0
        XCTAssertGreaterThan(frames, 0)
        XCTAssertLessThan(frames, allFrames)
        // The message names the first frame that could not be read: the one after those counted.
        XCTAssertTrue(r.stderr.contains("truncated in frame \(frames + 1)"), r.stderr)
    }

    func testUsageErrorsExitTwo() throws {
        XCTAssertEqual(try CLI.run(["analyze"]).status, 2)
        XCTAssertEqual(try CLI.run(["check", "x.pcap", "--fail-on", "loud"]).status, 2)
        let t = try CLI.run(["analyze", "x.pcap", "--threshold", "no-such.threshold=3"])
        XCTAssertEqual(t.status, 2)
        XCTAssertTrue(t.stderr.contains("unknown threshold"), t.stderr)
        XCTAssertEqual(try CLI.run(["frobnicate"]).status, 2)
        XCTAssertEqual(try CLI.run(["decode", "x.pcap", "--plugin", "nope"]).status, 2)
    }

    func testUnknownInterfaceListsRealOnes() throws {
        let r = try CLI.run(["capture", "-i", "nosuchif0", "--count", "1"])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("nosuchif0: no such capture interface; available:"), r.stderr)
        #if os(Linux)
        XCTAssertTrue(r.stderr.contains("lo"), r.stderr)
        #endif
    }

    func testFilterRejectedByLibpcapIsQuoted() throws {
        guard geteuid() == 0 else { throw XCTSkip("opening an interface needs root here") }
        let r = try CLI.run(["capture", "-i", loopback, "--filter", "udp portt 99", "--count", "1"])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("capture filter \"udp portt 99\" rejected by libpcap: "), r.stderr)
        XCTAssertTrue(r.stderr.contains("syntax error"), r.stderr)
    }

    func testNoPermissionToCaptureSaysHowToGrantIt() throws {
        var prefix: [String] = []
        if geteuid() == 0 {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { throw XCTSkip("needs setpriv to drop root") }
            prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
        }
        let r = try CLI.run(["capture", "-i", loopback, "--count", "1"], cwd: URL(fileURLWithPath: "/tmp"), prefix: prefix)
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("permission denied capturing packets"), r.stderr)
        #if os(Linux)
        // The real path of the binary that ran, not a shell expression.
        XCTAssertTrue(r.stderr.contains("setcap cap_net_raw,cap_net_admin=eip \(CLI.binary.resolvingSymlinksInPath().path)"), r.stderr)
        XCTAssertFalse(r.stderr.contains("$("), r.stderr)
        #endif
    }

    var loopback: String {
        #if os(Linux)
        "lo"
        #else
        "lo0"
        #endif
    }
}

final class CLICheckTests: XCTestCase {
    func sample(_ s: String) -> String { Place.samples.appendingPathComponent("\(s).pcapng").path }

    func testCheckExitCodesAndReportIsAlwaysWritten() throws {
        let d = try CLI.tempDir()
        let clean = d.appendingPathComponent("clean.json")
        let r0 = try CLI.run(["check", sample("healthy-pair"), "--fail-on", "warning", "--output", clean.path])
        XCTAssertEqual(r0.status, 0, r0.stderr)
        XCTAssertEqual(try JSONParser.parse(String(contentsOf: clean, encoding: .utf8))["findings"], .array([]))

        let bad = d.appendingPathComponent("bad.json")
        let r1 = try CLI.run(["check", sample("keepalive-timeout"), "--fail-on", "error", "--output", bad.path])
        XCTAssertEqual(r1.status, 1, r1.stderr)
        let doc = try JSONParser.parse(String(contentsOf: bad, encoding: .utf8))
        XCTAssertEqual(doc["findings"]?.arrayValue?.first?["kind"], "keepalive-timeout")

        // The same finding does not fail a stricter bar.
        XCTAssertEqual(try CLI.run(["check", sample("keepalive-timeout"), "--fail-on", "critical"]).status, 0)
        // Ignoring the detector makes it clean.
        XCTAssertEqual(try CLI.run(["check", sample("keepalive-timeout"), "--ignore", "keepalive-timeout"]).status, 0)
        // A threshold above the silence makes it clean too.
        XCTAssertEqual(try CLI.run(["check", sample("keepalive-timeout"), "--threshold", "keepalive-timeout.app=30"]).status, 0)

        let missing = d.appendingPathComponent("missing.json")
        let r3 = try CLI.run(["check", "/nonexistent.pcap", "--output", missing.path])
        XCTAssertEqual(r3.status, 3)
        // The report is written even when no input could be read, and says why.
        let missingDoc = try JSONParser.parse(String(contentsOf: missing, encoding: .utf8))
        XCTAssertEqual(missingDoc["complete"], .bool(false))
        XCTAssertEqual(missingDoc["inputProblems"], .array(["/nonexistent.pcap: no such file"]))
        XCTAssertEqual(missingDoc["findings"], .array([]))
        let text = d.appendingPathComponent("missing.txt")
        let r4 = try CLI.run(["analyze", "/nonexistent.pcap", "--output", text.path])
        XCTAssertEqual(r4.status, 3)
        XCTAssertTrue(try String(contentsOf: text, encoding: .utf8).contains("/nonexistent.pcap: no such file"))
        XCTAssertTrue(r4.stderr.contains("/nonexistent.pcap: no such file"), r4.stderr)
        XCTAssertEqual(try CLI.run(["check", sample("healthy-pair"), "--fail-on", "bogus"]).status, 2)
    }

    func testCheckWritesSARIFAndJUnit() throws {
        let s = try CLI.run(["check", sample("channel-error-reset"), "--format", "sarif"])
        XCTAssertEqual(s.status, 1)
        let sarif = try JSONParser.parse(s.stdout)
        XCTAssertEqual(sarif["version"], "2.1.0")
        let j = try CLI.run(["check", sample("channel-error-reset"), "--format", "junit"])
        XCTAssertEqual(j.status, 1)
        XCTAssertTrue(j.stdout.contains("<testsuites") && j.stdout.contains("<failure"), j.stdout)
        // The dashboard agrees with the exit status: nothing at or above --fail-on, no failing case.
        let lenient = try CLI.run(["check", sample("channel-error-reset"), "--format", "junit", "--fail-on", "critical"])
        XCTAssertEqual(lenient.status, 0)
        XCTAssertFalse(lenient.stdout.contains("<failure"), lenient.stdout)
        XCTAssertTrue(lenient.stdout.contains("<system-out>"), "the findings are still listed")
    }
}

final class CLIDecodeTests: XCTestCase {
    /// Issue 4: a capture with a whole session prints each step in order.
    func testDecodeShowsEverySessionStepInOrder() throws {
        let r = try CLI.run(["decode", Place.samples.appendingPathComponent("healthy-pair.pcapng").path])
        XCTAssertEqual(r.status, 0, r.stderr)
        var first: [String: Int] = [:]
        var lastT: Int64 = .min
        for (i, line) in r.stdout.split(separator: "\n").enumerated() {
            let m = try JSONParser.parse(String(line))
            let key = "\(m["plugin"]?.stringValue ?? "?")/\(m["type"]?.stringValue ?? "?")"
            if first[key] == nil { first[key] = i }
            let t = m["t"]?.int64Value ?? 0
            XCTAssertGreaterThanOrEqual(t, lastT, "capture-time order")
            lastT = t
            XCTAssertNotNil(m["frame"]?.int64Value)
            XCTAssertNil(m["content"], "chat content is hidden by default")
        }
        let steps = ["mpc-invitation/hello", "mpc-invitation/accept", "mpc-invite/invite", "mpc-invite-response/invite-response",
                     "mpc-invite-connect/invite-connect", "stun/binding-request", "stun/binding-success", "gck-hello/hello",
                     "gck-dd/dd", "gck-lsa/lsa", "app-handshake/handshake", "app-handshake-response/handshake_response"]
        let positions = steps.map { first[$0] ?? -1 }
        XCTAssertFalse(positions.contains(-1), "missing steps: \(zip(steps, positions).filter { $0.1 < 0 }.map(\.0))")
        XCTAssertEqual(positions, positions.sorted(), "steps out of order: \(zip(steps, positions).map { "\($0.0)@\($0.1)" })")
        for later in ["gck-heartbeat/heartbeat", "app-keepalive/keep_alive", "app-chat/chat"] {
            XCTAssertGreaterThan(first[later] ?? -1, first["gck-hello/hello"] ?? .max, later)
        }
        let shown = try CLI.run(["decode", "--show-payloads", "--plugin", "app-chat",
                                 Place.samples.appendingPathComponent("healthy-pair.pcapng").path])
        XCTAssertTrue(shown.stdout.contains("\"content\""), "--show-payloads shows chat text")
        XCTAssertFalse(r.stdout.contains(chatText(in: shown.stdout) ?? "\u{0}"), "the default output never carries the chat text")
    }

    func chatText(in jsonl: String) -> String? {
        for line in jsonl.split(separator: "\n") {
            if let c = (try? JSONParser.parse(String(line)))?["content"]?.stringValue, c.count > 3 { return c }
        }
        return nil
    }

    func testHelpHasExamplesForEveryCommand() throws {
        for c in ["analyze", "check", "capture", "decode", "plugins", "simulate"] {
            let r = try CLI.run([c, "--help"])
            XCTAssertEqual(r.status, 0, c)
            XCTAssertTrue(r.stdout.contains("Examples:") || r.stdout.contains("EXAMPLES"), "\(c) --help has examples")
        }
        let capture = try CLI.run(["capture", "--help"]).stdout
        XCTAssertTrue(capture.contains("udp portrange 16384-16402"), "capture --help documents the default filter")
        // decode --help: its jq example names a real message type (types are lowercase), and it says
        // where malformed packets go (only with --diagnostics, on standard output).
        let decode = try CLI.run(["decode", "--help"]).stdout
        XCTAssertTrue(decode.contains(#"select(.type == "heartbeat")"#), decode)
        XCTAssertTrue(GCKHeartbeatPlugin.descriptor.messageTypes.contains("heartbeat"))
        XCTAssertTrue(decode.contains("only with --diagnostics"), decode)
        XCTAssertFalse(decode.contains("malformed packets) go to standard error"), decode)
    }
}
