import Foundation
import XCTest

/// Outputs never destroy inputs, and every write error is an error: the cases users met (a report
/// written over the only copy of a capture, `--output /dev/full` exiting 0, `--write` replacing a
/// capture unasked), each asserting the exit status, the message and that the input's bytes are unchanged.
final class OutputSafetyTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try CLI.tempDir() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// A private copy of a sample capture (the test may try to destroy it).
    func copySample(_ name: String = "healthy-pair.pcapng", as target: String? = nil) throws -> (path: String, bytes: Data) {
        let src = Place.samples.appendingPathComponent(name)
        let dst = dir.appendingPathComponent(target ?? name)
        try FileManager.default.copyItem(at: src, to: dst)
        return (dst.path, try Data(contentsOf: dst))
    }

    func assertUnchanged(_ file: (path: String, bytes: Data), _ r: CLIResult, file f: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try? Data(contentsOf: URL(fileURLWithPath: file.path)), file.bytes, "\(file.path) was changed: \(r.stderr)", file: f, line: line)
    }

    /// Temporary files of the safe writer left in the folder (there must be none after any run).
    func leftovers() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.contains(".peerscope-") }
    }

    func testReportOverItsOwnInputIsRefused() throws {
        let cap = try copySample()
        for spelling in [cap.path, dir.appendingPathComponent("./healthy-pair.pcapng").path, "./healthy-pair.pcapng"] {
            let r = try CLI.run(["analyze", cap.path, "--output", spelling], cwd: dir)
            XCTAssertEqual(r.status, 2, r.stderr)
            XCTAssertTrue(r.stderr.contains("--output \(spelling)") && r.stderr.contains(cap.path) && r.stderr.contains("refusing to overwrite"), r.stderr)
            assertUnchanged(cap, r)
        }
        XCTAssertEqual(leftovers(), [])
    }

    func testHardAndSymbolicLinksToTheInputAreRefused() throws {
        let cap = try copySample()
        let hard = dir.appendingPathComponent("hard.txt").path, soft = dir.appendingPathComponent("soft.txt").path
        XCTAssertEqual(link(cap.path, hard), 0)
        XCTAssertEqual(symlink(cap.path, soft), 0)
        for out in [hard, soft] {
            let r = try CLI.run(["check", cap.path, "--format", "json", "-o", out])
            XCTAssertEqual(r.status, 2, r.stderr)
            XCTAssertTrue(r.stderr.contains("--output \(out) is the same file as the input \(cap.path)"), r.stderr)
            assertUnchanged(cap, r)
        }
    }

    func testReportOverALogConfigOrPatternsFileIsRefused() throws {
        let cap = try copySample()
        let log = dir.appendingPathComponent("device.log")
        try Data("12:00:00.000 hello\n".utf8).write(to: log)
        let logBytes = try Data(contentsOf: log)
        let patterns = dir.appendingPathComponent("p.yml")
        try Data("patterns:\n  - id: lobby\n    regex: 'Lobby timeout'\n    kind: app.timeout\n".utf8).write(to: patterns)
        let pBytes = try Data(contentsOf: patterns)
        let r1 = try CLI.run(["analyze", cap.path, "--log", log.path, "-o", log.path])
        XCTAssertEqual(r1.status, 2, r1.stderr)
        XCTAssertTrue(r1.stderr.contains("--output \(log.path) is also an input"), r1.stderr)
        XCTAssertEqual(try Data(contentsOf: log), logBytes)
        let r2 = try CLI.run(["analyze", cap.path, "--patterns", patterns.path, "-o", patterns.path])
        XCTAssertEqual(r2.status, 2, r2.stderr)
        XCTAssertEqual(try Data(contentsOf: patterns), pBytes)
        assertUnchanged(cap, r2)
    }

    /// A baseline compared against is an input too: `check --baseline b.json -o b.json` and
    /// `diff old new -o old` are refused before anything is written.
    func testBaselineAndDiffInputsAreNotOverwritten() throws {
        let cap = try copySample()
        let base = dir.appendingPathComponent("base.json")
        XCTAssertEqual(try CLI.run(["check", cap.path, "-o", base.path, "--fail-on", "critical"]).status, 0)
        let baseBytes = try Data(contentsOf: base)
        let r1 = try CLI.run(["check", cap.path, "--baseline", base.path, "-o", base.path])
        XCTAssertEqual(r1.status, 2, r1.stderr)
        XCTAssertTrue(r1.stderr.contains("--output \(base.path) is also an input"), r1.stderr)
        let r2 = try CLI.run(["diff", base.path, base.path, "-o", "./base.json"], cwd: dir)
        XCTAssertEqual(r2.status, 2, r2.stderr)
        XCTAssertEqual(try Data(contentsOf: base), baseBytes)
    }

    func testSimulateRefusesExpectedOntoItsOwnCapture() throws {
        let out = dir.appendingPathComponent("sim.pcapng").path
        let r = try CLI.run(["simulate", "healthy-pair", "-o", out, "--expected", "./sim.pcapng"], cwd: dir)
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("--expected ./sim.pcapng") && r.stderr.contains(out), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
    }

    func testFullDeviceIsAnErrorNamingThePathAndReason() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { throw XCTSkip("/dev/full exists on Linux only") }
        let cap = try copySample()
        for args in [["analyze", cap.path, "--output", "/dev/full"], ["check", cap.path, "-o", "/dev/full"],
                     ["analyze", cap.path, "--format", "json", "-o", "/dev/full"]] {
            let r = try CLI.run(args)
            XCTAssertEqual(r.status, 3, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("/dev/full: cannot write: No space left on device"), r.stderr)
            assertUnchanged(cap, r)
        }
        // Standard output on a full disk too (`peerscope analyze x > /dev/full`).
        let r = try CLI.run([cap.path], prefix: ["/bin/sh", "-c", "exec \"$0\" analyze \"$1\" > /dev/full"])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("standard output: cannot write: No space left on device"), r.stderr)
        let decode = try CLI.run([cap.path], prefix: ["/bin/sh", "-c", "exec \"$0\" decode \"$1\" > /dev/full"])
        XCTAssertEqual(decode.status, 3, decode.stderr)
        XCTAssertTrue(decode.stderr.contains("standard output: cannot write: No space left on device"), decode.stderr)
    }

    /// A file size limit makes the system accept part of a write, then refuse the rest (EFBIG): the
    /// report is not renamed into place and the old report stays whole.
    func testShortWriteLeavesTheOldReportAndNoTemporaryFile() throws {
        let cap = try copySample("group-8.pcapng")
        let report = dir.appendingPathComponent("report.json")
        try Data("old report\n".utf8).write(to: report)
        // ulimit -f counts 1024-byte blocks in bash and 512-byte blocks in POSIX sh: either is far below the report.
        let r = try CLI.run([cap.path, report.path], prefix: ["/bin/sh", "-c", "ulimit -f 4; exec \"$0\" analyze \"$1\" --format json -o \"$2\""])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("\(report.path): cannot write: File too large"), r.stderr)
        XCTAssertEqual(try String(contentsOf: report, encoding: .utf8), "old report\n")
        XCTAssertEqual(leftovers(), [])
        assertUnchanged(cap, r)
    }

    /// A report replaces the old one whole, keeps its permissions and leaves no temporary file.
    func testReportReplacesTheOldOneWhole() throws {
        let cap = try copySample()
        let report = dir.appendingPathComponent("report.txt")
        try Data("old".utf8).write(to: report)
        XCTAssertEqual(chmod(report.path, 0o640), 0)
        let r = try CLI.run(["analyze", cap.path, "-o", report.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let text = try String(contentsOf: report, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("peerscope") || text.contains("Summary") || text.count > 500, text)
        XCTAssertFalse(text.hasPrefix("old"))
        let mode = (try FileManager.default.attributesOfItem(atPath: report.path)[.posixPermissions] as? Int) ?? 0
        XCTAssertEqual(mode, 0o640)
        XCTAssertEqual(leftovers(), [])
    }

    /// A killed run's temporary report is removed by the next run onto that output, and standard error says so.
    func testADeadRunsTemporaryReportIsRemovedAndSaid() throws {
        let cap = try copySample()
        let report = dir.appendingPathComponent("report.json")
        let stale = dir.appendingPathComponent(".report.json.peerscope-Ab12Cd")
        try Data("{\"half\":".utf8).write(to: stale)
        let r = try CLI.run(["analyze", cap.path, "--format", "json", "-o", report.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("removed \(stale.path)") && r.stderr.contains("ended without finishing"), r.stderr)
        XCTAssertEqual(leftovers(), [])
        assertUnchanged(cap, r)
    }

    /// A killed run's temporary capture is kept under a visible name (here `simulate --output`), and said.
    func testADeadRunsTemporaryCaptureIsKeptUnderAVisibleNameAndSaid() throws {
        let frames = try copySample()
        let stale = dir.appendingPathComponent(".sim.pcapng.peerscope-Ab12Cd")
        try frames.bytes.write(to: stale)
        let out = dir.appendingPathComponent("sim.pcapng")
        let r = try CLI.run(["simulate", "healthy-pair", "-o", out.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let recovered = dir.appendingPathComponent("sim.recovered-Ab12Cd.pcapng")
        XCTAssertTrue(r.stderr.contains("recovered \(recovered.path)"), r.stderr)
        XCTAssertEqual(try Data(contentsOf: recovered), frames.bytes)
        XCTAssertEqual(leftovers(), [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: out.path))
    }

    /// EPIPE on a named pipe given as --output is an error naming it; on standard output it ends quietly.
    func testBrokenPipes() throws {
        let cap = try copySample("group-8.pcapng")
        let fifo = dir.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // The reader takes one byte and goes away: the rest of the report meets a closed pipe.
        let toFifo = try CLI.run([cap.path, fifo], prefix: ["/bin/sh", "-c", "head -c 1 \"$2\" > /dev/null & exec \"$0\" analyze \"$1\" --format json -o \"$2\""])
        XCTAssertEqual(toFifo.status, 3, toFifo.stderr)
        XCTAssertTrue(toFifo.stderr.contains("\(fifo): cannot write: Broken pipe"), toFifo.stderr)
        let toHead = try CLI.run([cap.path], prefix: ["/bin/sh", "-c", "\"$0\" analyze \"$1\" --format json | head -c 10 >/dev/null"])
        XCTAssertEqual(toHead.status, 0, toHead.stderr)
        XCTAssertEqual(toHead.stderr, "", "a closed standard output ends quietly")
        assertUnchanged(cap, toFifo)
    }

    /// `--write` onto an existing file: refused before the interface is opened, unless --force or --append.
    func testLiveWriteOntoAnExistingCaptureNeedsForceOrAppend() throws {
        let cap = try copySample()
        let r = try CLI.run(["capture", "-i", "lo", "--duration", "1", "--write", cap.path])
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("--write \(cap.path) already exists; give --force to replace it or --append to add to it"), r.stderr)
        assertUnchanged(cap, r)
        let both = try CLI.run(["capture", "-i", "lo", "--write", cap.path, "--force", "--append"])
        XCTAssertEqual(both.status, 2, both.stderr)
        // --append onto something that is not pcapng is refused too.
        let text = dir.appendingPathComponent("notes.pcapng")
        try Data("not a capture\n".utf8).write(to: text)
        let notPcapng = try CLI.run(["capture", "-i", "lo", "--duration", "1", "--write", text.path, "--append"])
        XCTAssertEqual(notPcapng.status, 2, notPcapng.stderr)
        XCTAssertTrue(notPcapng.stderr.contains("\(text.path): cannot append: it is not a pcapng file"), notPcapng.stderr)
        XCTAssertEqual(try Data(contentsOf: text), Data("not a capture\n".utf8))
        // A capture that cannot start leaves neither the file nor a temporary file.
        let fresh = dir.appendingPathComponent("new.pcapng")
        let noIface = try CLI.run(["capture", "-i", "no-such-interface0", "--duration", "1", "--write", fresh.path])
        XCTAssertEqual(noIface.status, 3, noIface.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh.path))
        XCTAssertEqual(leftovers(), [])
        // --write onto a --log input is refused by identity, whatever the flags.
        let log = dir.appendingPathComponent("d.log")
        try Data("hello\n".utf8).write(to: log)
        let ontoLog = try CLI.run(["capture", "-i", "lo", "--write", log.path, "--force", "--log", log.path])
        XCTAssertEqual(ontoLog.status, 2, ontoLog.stderr)
        XCTAssertTrue(ontoLog.stderr.contains("--write \(log.path) is also an input"), ontoLog.stderr)
    }

    func testLiveAppendAddsASectionAndForceReplaces() throws {
        guard geteuid() == 0 else { throw XCTSkip("live capture needs root (CI runs as root)") }
        let lo = CLI.loopback
        let cap = try copySample()
        let appended = try CLI.run(["capture", "-i", lo, "--filter", "udp port 9", "--duration", "1", "--write", cap.path, "--append",
                                    "-o", "/dev/null"])
        XCTAssertEqual(appended.status, 0, appended.stderr)
        let after = try Data(contentsOf: URL(fileURLWithPath: cap.path))
        XCTAssertGreaterThan(after.count, cap.bytes.count)
        XCTAssertEqual(after.prefix(cap.bytes.count), cap.bytes, "appending keeps every old byte")
        XCTAssertEqual(Array(after[cap.bytes.count ..< cap.bytes.count + 4]), [0x0A, 0x0D, 0x0D, 0x0A], "a new section header")
        let reread = try CLI.run(["analyze", cap.path, "--format", "json", "-o", "/dev/null"])
        XCTAssertEqual(reread.status, 0, "the appended file still reads whole: \(reread.stderr)")
        let forced = try CLI.run(["capture", "-i", lo, "--filter", "udp port 9", "--duration", "1", "--write", cap.path, "--force",
                                  "-o", "/dev/null"])
        XCTAssertEqual(forced.status, 0, forced.stderr)
        let replaced = try Data(contentsOf: URL(fileURLWithPath: cap.path))
        XCTAssertLessThan(replaced.count, cap.bytes.count)
        XCTAssertEqual(Array(replaced.prefix(4)), [0x0A, 0x0D, 0x0D, 0x0A])
        XCTAssertEqual(leftovers(), [])
    }
}
