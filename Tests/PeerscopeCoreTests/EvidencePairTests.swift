import PeerscopeCore
import XCTest

/// Events and timeline entries keep their first and last evidence packed: what goes in comes back,
/// at every edge of the packed range and beyond it (boxed).
final class EvidencePairTests: XCTestCase {
    func testEveryEvidenceRoundTrips() {
        let edgeInputs = [0, 1, 2, Int(Int32.max) - 2, Int(Int32.max) - 1, Int(Int32.max), Int(UInt32.max), Int.max]
        var values: [Evidence] = []
        for i in edgeInputs {
            for f: UInt64 in [0, 1, 0xFFFF_FFFF, 1 << 63, .max] { values.append(.frame(input: i, frame: f)) }
            for l in [0, 1, -1, Int.min, Int.max] { values.append(.logLine(input: i, line: l)) }
        }
        for first in values {
            let single = EvidencePair(first)
            XCTAssertEqual(single.first, first)
            XCTAssertNil(single.last, "\(first): no last evidence given, none read back")
            for last in values.prefix(40) + values.suffix(15) {
                let p = EvidencePair(first, last)
                XCTAssertEqual(p.first, first)
                XCTAssertEqual(p.last, last)
                // Reached another way (from a boxed pair, through the setters): one value, one representation.
                var q = EvidencePair(.logLine(input: Int.max, line: -1), .frame(input: Int.max, frame: UInt64.max))
                q.first = first
                q.last = last
                XCTAssertEqual(p, q, "one value, one representation")
                XCTAssertEqual(p.hashValue, q.hashValue)
            }
        }
    }

    func testPairsDifferWhenTheirEvidenceDiffers() {
        // A frame and a line with the same input and number, an input apart, a last or none.
        XCTAssertNotEqual(EvidencePair(.frame(input: 0, frame: 5)), EvidencePair(.logLine(input: 0, line: 5)))
        XCTAssertNotEqual(EvidencePair(.frame(input: 0, frame: 5)), EvidencePair(.frame(input: 1, frame: 5)))
        XCTAssertNotEqual(EvidencePair(.frame(input: 0, frame: 5)), EvidencePair(.frame(input: 0, frame: 5), .frame(input: 0, frame: 5)))
        // An input at the top of the packed range next to one just past it (boxed).
        let top = Int(Int32.max) - 1
        XCTAssertNotEqual(EvidencePair(.logLine(input: top, line: 1)), EvidencePair(.logLine(input: top + 1, line: 1)))
        XCTAssertEqual(EvidencePair(.logLine(input: top + 1, line: 1)).first, .logLine(input: top + 1, line: 1))
    }

    func testSettingEitherEndKeepsTheOther() {
        var p = EvidencePair(.frame(input: 3, frame: 10))
        p.last = .frame(input: 3, frame: 99)
        XCTAssertEqual(p.first, .frame(input: 3, frame: 10))
        p.first = .logLine(input: Int.max, line: 7)      // boxed now
        XCTAssertEqual(p.last, .frame(input: 3, frame: 99))
        XCTAssertEqual(p.first, .logLine(input: Int.max, line: 7))
        p.first = .frame(input: 0, frame: 1)             // packed again
        XCTAssertEqual(p, EvidencePair(.frame(input: 0, frame: 1), .frame(input: 3, frame: 99)))
        p.last = nil
        XCTAssertNil(p.last)
        XCTAssertEqual(p, EvidencePair(.frame(input: 0, frame: 1)))
    }

    func testEventsReadTheirEvidenceAsWritten() {
        var e = PeerEvent(kind: .gckHeartbeat, t: 1, evidence: .frame(input: 0, frame: 4), source: "gck-heartbeat")
        XCTAssertEqual(e.evidence, .frame(input: 0, frame: 4))
        XCTAssertNil(e.lastEvidence)
        e.lastEvidence = .frame(input: 0, frame: 40)
        e.evidence = .logLine(input: 2, line: 9)
        XCTAssertEqual(e.evidence, .logLine(input: 2, line: 9))
        XCTAssertEqual(e.lastEvidence, .frame(input: 0, frame: 40))
        XCTAssertLessThanOrEqual(MemoryLayout<EvidencePair>.size, 25)
        XCTAssertLessThanOrEqual(MemoryLayout<PeerEvent>.stride, 120, "the pair saves 16 bytes per event")
    }
}
