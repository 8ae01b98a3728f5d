import Foundation
import XCTest

/// Issue 13: `analyze` and `decode` show progress (bytes read, rate, time left) on standard error when
/// it is a terminal, erase it when done, and never put it anywhere else: not in a pipe, not in a file,
/// not in the JSON. The terminal is a real pseudo-terminal made by `script` (util-linux).
final class ProgressTests: XCTestCase {
    let sample = "Samples/group-8.pcapng"

    /// Runs `command` under `script`, which gives it a pseudo-terminal; returns what the terminal showed.
    func underTerminal(_ command: String) throws -> String {
        #if os(Linux)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            throw XCTSkip("script (util-linux) is not installed: no pseudo-terminal to test progress on")
        }
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let typescript = dir.appendingPathComponent("typescript").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        p.arguments = ["-q", "-e", "-c", command, typescript]
        p.currentDirectoryURL = Place.packageRoot
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, command)
        return String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: typescript))) ?? Data(), as: UTF8.self)
        #else
        throw XCTSkip("the pseudo-terminal test uses util-linux script")
        #endif
    }

    func testAnalyzeShowsProgressOnATerminalAndKeepsItOutOfTheJSON() throws {
        let bin = try CLI.requireBinary().path
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("report.json").path
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: sample)[.size] as? Int)
        let screen = try underTerminal("'\(bin)' analyze \(sample) --format json -o '\(json)'")
        // Bytes read of the total, percentage and rate, drawn in place and erased at the end.
        let total = String(format: "%.1f MB", Double(size) / 1e6)
        XCTAssertTrue(screen.contains("peerscope: read \(total) of \(total) (100 %), "), screen)
        XCTAssertTrue(screen.contains(" MB/s"), screen)
        XCTAssertTrue(screen.contains("\r\u{1B}[K"), "the line is redrawn and erased in place")
        XCTAssertTrue(screen.components(separatedBy: "\r\u{1B}[K").last?.contains("peerscope: read") == false,
                      "the last thing drawn erases the progress line")
        // The report file is the JSON alone.
        let report = try String(contentsOfFile: json, encoding: .utf8)
        XCTAssertFalse(report.contains("peerscope: read"))
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(report.utf8)))
    }

    func testDecodeShowsProgressOnATerminalWhileItsLinesGoToAFile() throws {
        let bin = try CLI.requireBinary().path
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lines = dir.appendingPathComponent("out.jsonl").path
        let screen = try underTerminal("'\(bin)' decode \(sample) > '\(lines)'")
        XCTAssertTrue(screen.contains("peerscope: read "), screen)
        let text = try String(contentsOfFile: lines, encoding: .utf8)
        XCTAssertFalse(text.contains("peerscope: read"))
        let parsed = text.split(separator: "\n").filter { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil }
        XCTAssertGreaterThan(parsed.count, 100)
        XCTAssertEqual(parsed.count, text.split(separator: "\n").count, "every line is JSON")
        // Decoding to the terminal itself: a progress line would garble the lines on the screen, so none
        // is drawn among them. (util-linux script sometimes replays a stray byte run of the previous
        // session before the first line, and may cut the last line short, so only what follows the
        // first line is checked.)
        let onScreen = try underTerminal("'\(bin)' decode \(sample)")
        let first = try XCTUnwrap(onScreen.range(of: "{\"frame\":1,"), "the lines are on the screen")
        XCTAssertFalse(onScreen[first.lowerBound...].contains("peerscope: read"))
    }

    func testNoProgressWhenStandardErrorIsNotATerminal() throws {
        for args in [["analyze", sample, "--format", "json"], ["decode", sample], ["analyze", sample]] {
            let r = try CLI.run(args)
            XCTAssertEqual(r.status, 0)
            XCTAssertFalse(r.stderr.contains("peerscope: read"), args.joined(separator: " "))
            XCTAssertFalse(r.stderr.contains("\u{1B}[K"), args.joined(separator: " "))
            XCTAssertFalse(r.stdout.contains("peerscope: read"), args.joined(separator: " "))
        }
    }
}
