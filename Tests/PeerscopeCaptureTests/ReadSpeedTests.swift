import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest

/// Measures read speed on the file named by PEERSCOPE_CAPTURE_BENCH (skipped otherwise; meaningful
/// only in a release build: `swift test -c release -Xswiftc -enable-testing --filter ReadSpeed`).
final class ReadSpeedTests: XCTestCase {
    func testReadSpeed() throws {
        guard let path = ProcessInfo.processInfo.environment["PEERSCOPE_CAPTURE_BENCH"] else {
            throw XCTSkip("set PEERSCOPE_CAPTURE_BENCH to a capture file to measure")
        }
        for round in 0 ..< 3 {
            let clock = ContinuousClock.now
            let r = try CaptureFileReader(path: path)
            var n = 0
            var sum = 0
            while let f = r.next() {
                n &+= 1
                sum &+= f.data.count &+ Int(f.data.byte(0) ?? 0)
            }
            let d = ContinuousClock.now - clock
            let s = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            print("round \(round): \(n) frames, \(sum) bytes in \(d): \(Int(Double(n) / s)) frames/s")
            XCTAssertNil(r.problem)
        }
    }
}
