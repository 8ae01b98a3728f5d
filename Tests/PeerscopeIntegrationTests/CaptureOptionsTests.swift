import Foundation
import XCTest

/// `peerscope capture` options that are refused before any interface is opened (no root needed).
final class CaptureOptionsTests: XCTestCase {
    func testBadCaptureOptionsAreUsageErrorsNamingTheOption() throws {
        var cases: [([String], String)] = [
            (["-i", "lo", "--ring", "3:10"], "--ring needs --write"),
            (["-i", "lo", "--write", "/tmp/never.pcapng", "--ring", "3"], "--ring must be FILES:MEGABYTES"),
            (["-i", "lo", "--write", "/tmp/never.pcapng", "--ring", "0:10"], "--ring must be FILES:MEGABYTES"),
            (["-i", "lo", "-B", "0"], "--buffer-size must be a positive size"),
            (["-i", "lo", "-B", "12X"], "--buffer-size must be a positive size"),
            (["-i", "lo", "-B", "4096"], "--buffer-size must be a positive size"),
            (["-i", "any", "-i", "lo"], "-i any already captures every interface"),
            (["-i", "lo", "-i", "lo"], "an interface is given twice"),
            (["-i", "lo", "--follow", "--decode"], "--follow and --decode both print to standard output"),
            (["-i", "lo", "--queue-packets", "0"], "--queue-packets must be at least 1"),
            (["-i", "lo", "--snaplen", "10"], "--snaplen must be between 64 and 262144"),
            (["--duration", "1"], "Missing expected argument '--interface"),
        ]
        #if !os(macOS)
        cases.append((["-i", "pktap,en0,awdl0"], "PKTAP exists only on macOS"))
        #endif
        for (args, message) in cases {
            let r = try CLI.run(["capture"] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/never.pcapng"))
        }
    }

    func testHelpStatesTheMeasuredDefaultsAndExitCodes() throws {
        let r = try CLI.run(["capture", "--help"])
        XCTAssertEqual(r.status, 0)
        let help = r.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for needle in ["kernel buffer 32 MiB (-B)", "kept 152,558 packets at 32 MiB", "snap length 65535", "immediate mode off", "Exit status: 0 when stopped by --duration, --count, SIGINT or SIGTERM",
                       "3 when the capture could not start, when every interface went away", "--ring FILES:MEGABYTES", "--follow"] {
            XCTAssertTrue(help.contains(needle), "help lacks \(needle)")
        }
    }
}
