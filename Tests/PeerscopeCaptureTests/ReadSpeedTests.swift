import CPcap
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

            // The same loop through libpcap, for a ratio that survives a busy machine.
            var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
            let c2 = ContinuousClock.now
            guard let p = pcap_open_offline(path, &errbuf) else { continue }
            var hdr: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            var m = 0
            var sum2 = 0
            while pcap_next_ex(p, &hdr, &data) == 1, let h = hdr?.pointee {
                m &+= 1
                sum2 &+= Int(h.caplen) &+ Int(data?.pointee ?? 0)
            }
            pcap_close(p)
            let d2 = ContinuousClock.now - c2
            let s2 = Double(d2.components.seconds) + Double(d2.components.attoseconds) / 1e18
            print("round \(round): libpcap \(m) frames, \(sum2) bytes in \(d2): \(Int(Double(m) / s2)) frames/s; ours/libpcap time \(String(format: "%.2f", s / s2))")
        }
    }
}
