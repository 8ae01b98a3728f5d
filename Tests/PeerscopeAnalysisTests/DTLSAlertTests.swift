import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// DTLS alerts: wording and severity by level; an unreadable (encrypted) alert is judged by what follows.
final class DTLSAlertSeverityTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    private func alert(_ attrs: [String: String], thenTraffic: Bool) -> Finding? {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.dtlsApplicationData, from: 1, to: 5, every: 1, A, B)
        s.packet(.dtlsAlert, 5.5, B, A, attrs: attrs)
        if thenTraffic { s.repeating(.dtlsApplicationData, from: 6, to: 9, every: 1, A, B) }
        return s.findings(end: 10).of("channel-error").first { $0.details["case"] == "dtls-alert" }
    }

    func testReadableAlertsBySeverity() throws {
        let fatal = try XCTUnwrap(alert(["level": "fatal", "description": "handshake_failure"], thenTraffic: true))
        XCTAssertEqual(fatal.severity, .error)
        XCTAssertEqual(fatal.peer, "Bob")
        XCTAssertTrue(fatal.message.contains("sent a DTLS fatal alert (handshake_failure)"), fatal.message)
        let numericFatal = try XCTUnwrap(alert(["level": "2", "description": "bad_record_mac"], thenTraffic: true))
        XCTAssertEqual(numericFatal.severity, .error)
        let warn = try XCTUnwrap(alert(["level": "warning", "description": "no_renegotiation"], thenTraffic: false))
        XCTAssertEqual(warn.severity, .warning)
        XCTAssertTrue(warn.message.contains("DTLS warning alert (no_renegotiation)"), warn.message)
        let close = try XCTUnwrap(alert(["level": "warning", "description": "close_notify"], thenTraffic: false))
        XCTAssertEqual(close.severity, .info)
    }

    func testEncryptedAlertIsFatalWhenSilenceFollows() throws {
        let attrs = ["level": "encrypted", "description": "encrypted alert"]
        let dead = try XCTUnwrap(alert(attrs, thenTraffic: false))
        XCTAssertEqual(dead.severity, .error)
        XCTAssertEqual(dead.details["followedBy"], "silence")
        XCTAssertTrue(dead.message.contains("an encrypted DTLS alert (level and description unreadable)"), dead.message)
        XCTAssertFalse(dead.message.contains("encrypted encrypted"), dead.message)
        let alive = try XCTUnwrap(alert(attrs, thenTraffic: true))
        XCTAssertEqual(alive.severity, .warning)
        XCTAssertEqual(alive.details["followedBy"], "traffic")
    }
}
