import PeerscopeCore
@testable import PeerscopeDetectors
import XCTest

/// The timeout detectors' hole lookups (binary searches) against the scans they replaced, on holes
/// collected the detectors' way from random time-ordered events.
final class CaptureHolesTests: XCTestCase {
    /// Holes as the handshake- and keepalive-timeout detectors collect them.
    static func holes(_ events: [(t: Nanos, lastT: Nanos)], gap: Nanos) -> [(Nanos, Nanos)] {
        var holes: [(Nanos, Nanos)] = []
        var lastSeen: Nanos?
        for e in events {
            if let l = lastSeen, gap > 0, e.t > l, e.t &- l > gap { holes.append((l, e.t)) }
            lastSeen = max(lastSeen ?? e.lastT, e.lastT)
        }
        return holes
    }

    func testLookupsFindWhatTheScansFind() {
        var rng = SystemRandomNumberGenerator()
        var checked = 0, inside = 0, found = 0
        for round in 0..<200 {
            // Events a few units apart, now and then a long pause, some spanning a run (lastT > t).
            var events: [(t: Nanos, lastT: Nanos)] = []
            var t: Nanos = 0
            for _ in 0..<Int.random(in: 0...60, using: &rng) {
                t += Bool.random(using: &rng) && round % 3 == 0 ? 0 : Nanos.random(in: 0...12, using: &rng)
                if Int.random(in: 0..<6, using: &rng) == 0 { t += Nanos.random(in: 10...40, using: &rng) }
                let span = Int.random(in: 0..<4, using: &rng) == 0 ? Nanos.random(in: 0...30, using: &rng) : 0
                events.append((t, t + span))
            }
            let holes = Self.holes(events, gap: Nanos.random(in: 1...15, using: &rng))
            // Every time in range, the holes' ends included.
            for q in -2...(t + 45) {
                let scan = holes.contains { q > $0.0 && q < $0.1 }
                XCTAssertEqual(CaptureHoles.contains(q, holes), scan, "t \(q) in \(holes)")
                HandshakeTimeoutDetector.inHole(q, holes) == scan ? () : XCTFail("inHole \(q) in \(holes)")
                if scan { inside += 1 }
                for len in [0, 1, 5, 17, 60] {
                    let end = q + Nanos(len)
                    let first = holes.first { $0.0 >= q && $0.0 < end }
                    let got = CaptureHoles.first(startingIn: q, end, holes)
                    XCTAssertTrue(first?.0 == got?.0 && first?.1 == got?.1, "\(q)..<\(end) in \(holes): \(String(describing: got))")
                    if first != nil { found += 1 }
                    checked += 1
                }
            }
        }
        // The random holes did exercise both answers.
        XCTAssertGreaterThan(inside, 100)
        XCTAssertGreaterThan(found, 100)
        XCTAssertGreaterThan(checked, found)
    }
}
