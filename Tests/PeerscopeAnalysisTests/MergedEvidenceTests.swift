import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// A capture merged with logs: the finding keeps the packet wording and time and cites both the
/// frames and the log lines.
final class MergedEvidenceTests: XCTestCase {
    let A = Script.alice, B = Script.bob
    let bobP = PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321))

    /// The app's 10 s timer starts a moment before its first check leaves, so its "timed out" and
    /// "giving up" lines (which end the session) come just before 10 s after the first frame.
    func testGiveUpLineBeforeTheTimerOnCaptureTimeKeepsThePacketFinding() throws {
        let s = Script()
        var frames: [Evidence] = []
        for t in [0.05, 0.15, 0.35, 0.75, 1.55, 3.15, 4.75, 6.35, 7.95, 9.55] { frames.append(s.packet(.iceRequest, t, A, B)) }
        let timedOut = s.log(.iceTimeout, 10.0, bobP, attrs: ["state": "ICE"])
        let gaveUp = s.log(.gckGivingUp, 10.0001, bobP)
        s.repeating(.announced, from: 10.5, to: 14, every: 1, Script.carol, .unknown)
        let f = s.findings(end: 14).of("handshake-timeout")
        XCTAssertEqual(f.count, 1, f.map(\.message).joined(separator: "\n"))
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertFalse(x.message.hasPrefix("log:"), x.message)
        XCTAssertTrue(x.message.contains("ICE connectivity checks from Alice to Bob not answered within 10s"), x.message)
        XCTAssertEqual(x.t, Script.at(10.05), "the timer's time from the first check")
        XCTAssertEqual(x.details["outcome"], "unanswered")
        XCTAssertEqual(x.details["confirmedByLog"], "true")
        XCTAssertTrue(x.evidence.contains(frames[0]), "\(x.evidence)")
        XCTAssertTrue(x.evidence.contains(timedOut))
        XCTAssertTrue(x.evidence.contains(gaveUp))

        // Without a log saying the timer fired, a session ending before 10 s is not a timeout.
        let g = Script()
        for t in [0.05, 0.15, 0.35] { g.packet(.iceRequest, t, A, B) }
        g.log(.disconnected, 9.9, B, A)
        XCTAssertTrue(g.findings(end: 14).of("handshake-timeout").isEmpty)
    }

    func testKeepAliveSilenceCitesFramesAsWellAsLogLines() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        var bobFrames: [Evidence] = []
        for t in stride(from: 1.0, through: 29, by: 2) {
            s.packet(.appKeepAlive, t, A, B)
            s.log(.appKeepAlive, t + 0.0005, A, B)
        }
        for t in stride(from: 1.5, through: 9.5, by: 2) {
            bobFrames.append(s.packet(.appKeepAlive, t, B, A))
            s.log(.appKeepAlive, t + 0.0005, B, A)     // Alice's log: received from Bob
        }
        let f = s.findings(end: 30).of("keepalive-timeout").filter { $0.details["level"] == "app" }
        XCTAssertEqual(f.count, 1, f.map(\.message).joined(separator: "\n"))
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertTrue(x.evidence.contains(try XCTUnwrap(bobFrames.last)), "Bob's last keep-alive frame: \(x.evidence)")
        XCTAssertTrue(x.evidence.contains { if case .logLine = $0 { true } else { false } }, "and the log line")
    }
}
