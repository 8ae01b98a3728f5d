import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline
import XCTest

/// Thresholds at their edges: a GCK Hello timer, session-level silence at exactly 15 s.
final class TimerEdgeTests: XCTestCase {
    let A = Script.alice, B = Script.bob

    func testUnansweredGCKHelloBecomesATimeoutAfterTenSeconds() throws {
        let s = Script()
        s.packet(.iceRequest, 0, A, B)
        s.packet(.iceSuccess, 0.01, B, A)
        s.packet(.gckHello, 0.1, A, B)
        s.packet(.gckHello, 2.1, A, B)
        s.packet(.gckHello, 6.1, A, B)
        // Traffic elsewhere keeps the input running well past the 10 s timer.
        s.repeating(.announced, from: 0, to: 20, every: 1, Script.carol, .unknown)
        let f = s.findings(end: 20).of("handshake-timeout")
        XCTAssertEqual(f.count, 1, f.map(\.message).joined(separator: "\n"))
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.details["phase"], "gck")
        XCTAssertEqual(x.peer, "Bob", "the side that never answered")
        XCTAssertEqual(x.severity, .error)
        XCTAssertEqual(x.details["outcome"], "unanswered")
        XCTAssertEqual(x.t, Script.at(10.1), "stamped when the 10 s timer fires")
        XCTAssertEqual(x.details["requests"], "3")

        // The same Hellos answered at 10.1 s exactly are in time; at 10.2 s late.
        for (answer, expected) in [(10.1, 0), (10.2, 1)] {
            let g = Script()
            g.packet(.iceRequest, 0, A, B)
            g.packet(.iceSuccess, 0.01, B, A)
            g.packet(.gckHello, 0.1, A, B)
            g.packet(.gckHello, answer, B, A)
            let late = g.findings(end: 20).of("handshake-timeout")
            XCTAssertEqual(late.count, expected, "answer at \(answer) s")
            if expected == 1 { XCTAssertEqual(late.first?.severity, .warning) }
        }
    }

    func testSessionSilenceOfExactlyFifteenSecondsIsNotFlaggedJustOverIs() throws {
        func run(gap: Double) -> [Finding] {
            let s = Script()
            s.connect(A, B, at: 0)
            s.repeating(.gckHeartbeat, from: 1, to: 40, every: 5, A, B)
            s.packet(.gckHeartbeat, 1, B, A)
            s.packet(.gckHeartbeat, 1 + gap, B, A)
            s.repeating(.gckHeartbeat, from: 1 + gap + 5, to: 40, every: 5, B, A)
            return s.findings(end: 40).of("keepalive-timeout")
        }
        XCTAssertEqual(run(gap: 15).count, 0, "15.000 s is not > 15 s")
        let f = run(gap: 15.001)
        XCTAssertEqual(f.count, 1)
        let x = try XCTUnwrap(f.first)
        XCTAssertEqual(x.peer, "Bob")
        XCTAssertEqual(x.details["level"], "session")
        XCTAssertEqual(x.details["outcome"], "recovered")
        XCTAssertEqual(x.severity, .warning)
        XCTAssertEqual(x.t, Script.at(16))
    }
}
