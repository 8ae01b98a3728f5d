import Foundation
import XCTest

/// Hostile inputs meet a limit and a diagnostic, never a crash, a hang or a swap storm: each test
/// asserts the diagnostic, the exit status, and bounded time and peak memory of the `peerscope` run.
final class ResourceLimitTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try CLI.tempDir() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    /// Runs `peerscope args` under a fresh python3 parent that reports the child's peak RSS (KiB).
    func measured(_ args: [String]) throws -> (result: CLIResult, seconds: Double, peakMiB: Double) {
        let script = "import resource,subprocess,sys; r=subprocess.run(sys.argv[1:]); "
            + "sys.stderr.write('\\nPEAK_KIB=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"
        let start = Date()
        // CLI.run puts the binary after the prefix: python3 -c SCRIPT <binary> args...
        let r = try CLI.run(args, timeout: 300, prefix: ["/usr/bin/env", "python3", "-c", script])
        let seconds = Date().timeIntervalSince(start)
        if r.status == 127 && !r.stderr.contains("PEAK_KIB=") { throw XCTSkip("python3 is needed to measure a child's peak memory") }
        let tail = r.stderr.components(separatedBy: "PEAK_KIB=").last ?? ""
        let kib = Double(tail.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines)) ?? Double.infinity
        return (r, seconds, kib / 1024)
    }

    func json(_ path: URL) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
    }

    func diagnosticCount(_ report: [String: Any], _ id: String) -> Int? {
        ((report["diagnostics"] as? [String: Any])?["counts"] as? [String: Any])?[id] as? Int
    }

    /// A pcap header and 256 MiB of zeros, gzipped to about 250 KB: 16 million empty frames if read
    /// whole. Reading stops at the ratio limit, the report says it is incomplete and why, and the count
    /// of truncated link headers is the true one, not the rate limit's 1000.
    func testGzipBombStopsAtTheRatioLimit() throws {
        let bomb = dir.appendingPathComponent("bomb.pcap.gz")
        let header = #"\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\001\000\000\000"#
        let make = try CLI.run([], prefix: ["/bin/sh", "-c", "{ printf '\(header)'; head -c 268435456 /dev/zero; } | gzip -1 > '\(bomb.path)'"])
        XCTAssertEqual(make.status, 0, make.stderr)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: bomb.path)[.size] as? Int)
        XCTAssertLessThan(size, 2 << 20)
        let out = dir.appendingPathComponent("r.json")
        let (r, seconds, peak) = try measured(["analyze", bomb.path, "--format", "json", "-o", out.path])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("decompression bomb") && r.stderr.contains(bomb.path), r.stderr)
        let report = try json(out)
        XCTAssertEqual(report["complete"] as? Bool, false)
        // 32 MiB inflated before the check: ~2 million 16-byte empty records, each a truncated header.
        let truncated = try XCTUnwrap(diagnosticCount(report, "eth.truncated"),
                                      "\((report["diagnostics"] as? [String: Any])?["counts"] ?? "none")")
        XCTAssertGreaterThan(truncated, 1_000_000, "the true count, not the rate limit")
        XCTAssertLessThan(truncated, 4_000_000, "reading stopped near the limit")
        XCTAssertLessThan(seconds, 120)
        XCTAssertLessThan(peak, 300, "peak RSS \(peak) MiB")
        print("gzip bomb: \(String(format: "%.1f", seconds)) s, peak \(String(format: "%.0f", peak)) MiB, \(truncated) truncated headers counted")
    }

    /// Block and record lengths in the gigabytes: refused by the reader at once (no allocation).
    func testGigabyteBlockAndRecordLengths() throws {
        var pcap: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 1, 0, 0, 0]
        pcap += [0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0xFF, 0xFF, 0x7F, 0xF0, 0xFF, 0xFF, 0x7F] + [UInt8](repeating: 0x41, count: 64)
        var pcapng: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 28, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0,
                               0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 28, 0, 0, 0]
        pcapng += [1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 20, 0, 0, 0]
        pcapng += [6, 0, 0, 0, 0x00, 0x00, 0x00, 0x40] + [UInt8](repeating: 0x42, count: 64)  // EPB of 1 GiB
        var unknownBlock = Array(pcapng[0 ..< 48])
        unknownBlock += [0xAD, 0x0B, 0, 0, 0xF0, 0xFF, 0xFF, 0x7F] + [UInt8](repeating: 0x43, count: 64)  // 2 GiB custom block
        for (name, bytes) in [("huge-record.pcap", pcap), ("huge-epb.pcapng", pcapng), ("huge-block.pcapng", unknownBlock)] {
            let f = dir.appendingPathComponent(name)
            try Data(bytes).write(to: f)
            let (r, seconds, peak) = try measured(["analyze", f.path, "--format", "json", "-o", dir.appendingPathComponent("\(name).json").path])
            XCTAssertEqual(r.status, 3, "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(f.path), r.stderr)
            XCTAssertTrue(["exceeds", "absurd", "ends inside"].contains { r.stderr.contains($0) }, "\(name): \(r.stderr)")
            XCTAssertLessThan(seconds, 30)
            XCTAssertLessThan(peak, 100, "\(name): peak RSS \(peak) MiB")
        }
    }

    /// One log line of 200 MB with no newline: cut where it is loaded, so memory stays near a normal run.
    func testHugeLogLineIsCutWithBoundedMemory() throws {
        let log = dir.appendingPathComponent("huge.log")
        let make = try CLI.run([], prefix: ["/bin/sh", "-c", "{ printf '2026-01-01 10:00:00.000 App[1:2] '; head -c 209715200 /dev/zero | tr '\\0' x; } > '\(log.path)'"])
        XCTAssertEqual(make.status, 0, make.stderr)
        let out = dir.appendingPathComponent("r.json")
        let (r, seconds, peak) = try measured(["analyze", "--log", log.path, "--tz", "UTC", "--format", "json", "-o", out.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let report = try json(out)
        XCTAssertEqual(diagnosticCount(report, "log.line.too_long"), 1)
        let text = try String(contentsOf: out, encoding: .utf8)
        XCTAssertTrue(text.contains("line of 209715233 bytes cut to 16384"), "the diagnostic gives the line's real length")
        XCTAssertLessThan(peak, 150, "peak RSS \(peak) MiB (646 MB for a 300 MB line before)")
        XCTAssertLessThan(seconds, 120)
        print("200 MB log line: \(String(format: "%.1f", seconds)) s, peak \(String(format: "%.0f", peak)) MiB")
    }

    /// Billion laughs: nine levels of ten aliases. Refused at once, naming the file (exit 2).
    func testYAMLAliasBombsAreRefused() throws {
        var yaml = "a0: &a0 [lol]\n"
        for i in 1 ... 9 {
            yaml += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        let config = dir.appendingPathComponent("bomb.yml")
        try Data(("thresholds: {}\n" + yaml).utf8).write(to: config)
        let patterns = dir.appendingPathComponent("bomb-patterns.yml")
        try Data(("patterns: []\n" + yaml).utf8).write(to: patterns)
        let sample = Place.samples.appendingPathComponent("healthy-pair.pcapng").path
        for args in [["analyze", sample, "--config", config.path], ["analyze", sample, "--patterns", patterns.path]] {
            let (r, seconds, peak) = try measured(args)
            XCTAssertEqual(r.status, 2, r.stderr)
            XCTAssertTrue(r.stderr.contains("more than 16 aliases") && r.stderr.contains(args[3]), r.stderr)
            XCTAssertLessThan(seconds, 20)
            XCTAssertLessThan(peak, 100)
        }
        // Deep nesting is refused too (a stack overflow in the YAML reader otherwise).
        let deep = dir.appendingPathComponent("deep.yml")
        try Data(("thresholds: " + String(repeating: "[", count: 100_000)).utf8).write(to: deep)
        let r = try CLI.run(["analyze", sample, "--config", deep.path])
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("nesting deeper than 64 levels"), r.stderr)
    }

    /// `(a+)+$` on lines of 40 `a`s and a `!`: each doubling `a` doubled the time (11 s for one line).
    /// The pattern gives up on each line after a fixed number of steps, and after 20 such lines it is
    /// no longer tried; the other patterns still see every line.
    func testCatastrophicBacktrackingIsBoundedPerLine() throws {
        let patterns = dir.appendingPathComponent("slow.yml")
        try Data("patterns:\n  - id: slow\n    regex: '(a+)+$'\n    kind: app.other\n  - id: lobby\n    regex: 'Lobby timeout for (?<displayName>.+)$'\n    kind: app.timeout\n".utf8)
            .write(to: patterns)
        let log = dir.appendingPathComponent("app.log")
        var text = ""
        for i in 0 ..< 30 { text += "2026-01-01 10:00:\(10 + i).000 App[1:2] " + String(repeating: "a", count: 40) + "!\n" }
        text += "2026-01-01 10:01:00.000 App[1:2] Lobby timeout for Bob\n"
        try Data(text.utf8).write(to: log)
        let out = dir.appendingPathComponent("r.json")
        let (r, seconds, _) = try measured(["analyze", "--log", log.path, "--tz", "UTC", "--patterns", patterns.path, "--format", "json", "-o", out.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let report = try json(out)
        XCTAssertEqual(diagnosticCount(report, "log.pattern.gave_up"), 20)
        XCTAssertEqual(diagnosticCount(report, "log.pattern.retired"), 1)
        let s = try String(contentsOf: out, encoding: .utf8)
        XCTAssertTrue(s.contains("pattern log-user-slow gave up on this line"), s)
        XCTAssertTrue(s.contains("app.timeout"), "the other pattern still matched its line")
        XCTAssertLessThan(seconds, 60, "30 lines of (a+)+$")
        print("(a+)+$ on 30 lines: \(String(format: "%.2f", seconds)) s")
    }
}
