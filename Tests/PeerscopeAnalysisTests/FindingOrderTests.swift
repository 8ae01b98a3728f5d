import PeerscopeCore
import PeerscopeDetectors
import PeerscopeSimulator
import XCTest

/// `foldLogFindings` gives back a list already in report order as it is when no log finding folds
/// (sorting it would give the same list), and sorts any other.
final class FindingOrderTests: XCTestCase {
    func testFoldingWithoutLogFindingsGivesTheSortedList() {
        var rng = SimRandom(seed: 15)
        let kinds = ["keepalive-timeout", "duplicate-connection", "channel-error"], peers = ["Alice", "Bob", "peer 0ab"]
        var kept = 0, sortedInput = 0
        for round in 0 ..< 300 {
            var fs: [Finding] = []
            for i in 0 ..< Int.random(in: 0 ... 24, using: &rng) {
                // Few times, kinds and peers: ties the key decides; now and then a repeated key (ties throughout).
                let key = Int.random(in: 0 ... 9, using: &rng) == 0 ? "same" : "k\(i)"
                fs.append(Finding(kind: kinds[Int.random(in: 0 ..< kinds.count, using: &rng)], severity: .warning,
                                  peer: peers[Int.random(in: 0 ..< peers.count, using: &rng)], peerID: nil,
                                  t: Int64.random(in: 0 ... 3, using: &rng), message: "m\(i)", evidence: [], key: key,
                                  details: ["n": String(i)]))
            }
            let sorted = fs.sorted(by: Finding.reportOrder)
            XCTAssertEqual(DetectorSuite.foldLogFindings(sorted), sorted, "round \(round), sorted input")
            XCTAssertEqual(DetectorSuite.foldLogFindings(fs), sorted, "round \(round)")
            if fs == sorted { sortedInput += 1 } else { kept += 1 }
        }
        XCTAssertGreaterThan(kept, 100, "inputs out of order are sorted")
        XCTAssertGreaterThan(sortedInput, 10)
    }
}
