import Foundation
import XCTest

/// Issue #11: every finding explains itself.
final class ExplainTests: XCTestCase {
    func testExplainNamesRuleThresholdTimelineLossAndWhatWouldClearIt() throws {
        let r = try CLI.run(["explain", "keepalive-timeout", "Samples/keepalive-lossy-capture.pcapng"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = r.stdout
        XCTAssertTrue(out.contains("Finding #1: ERROR keepalive-timeout  Bob's iPad"), out)
        XCTAssertTrue(out.contains("Rule that fired\n  keepalive-timeout: "), out)
        XCTAssertTrue(out.contains("keepalive-timeout.app = 6s"), out)
        // The entry holding the finding's evidence (Bob's last keep-alive, frame 65) is shown.
        XCTAssertTrue(out.contains("keep-alive x5 until +11.698s -> Alice's iPhone [#1]  (app-keepalive; frame 44 .. frame 65)"), out)
        XCTAssertFalse(out.contains("(mdns; frame 3)"), "entries far from the finding are left out")
        XCTAssertTrue(out.contains("What the capture could not see\n  33 packets dropped by the kernel"), out)
        XCTAssertTrue(out.contains("confidence: uncertain"), out)
        XCTAssertTrue(out.contains("What would have cleared it\n  any keep-alive"), out)
    }

    func testKeysByIndexAndFingerprintAndAMissingKey() throws {
        let first = try CLI.run(["explain", "#1", "Samples/duplicate-beside-reconnect.pcapng"])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.contains("case overlap-traffic"), first.stdout)
        XCTAssertTrue(first.stdout.contains("session grace = 1s"), first.stdout)
        let print = try XCTUnwrap(first.stdout.components(separatedBy: "fingerprint: ").dropFirst().first?.prefix(16))
        let byPrint = try CLI.run(["explain", String(print.prefix(8)), "Samples/duplicate-beside-reconnect.pcapng"])
        XCTAssertEqual(byPrint.stdout, first.stdout)
        let none = try CLI.run(["explain", "flapping", "Samples/healthy-pair.pcapng"])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no finding matches flapping"), none.stderr)
    }
}
