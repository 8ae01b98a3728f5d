import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeSimulator

/// Issue 13, `peerscope decode` of group captures: GCK Data and Heartbeat and STUN messages write their
/// members straight into bytes (`GCKDataFields`, `GCKHeartbeatFields`, `STUNFields`) instead of building
/// a field list per message. The bytes must be those of the field list (`fields`, the list the old
/// writers built): checked here on every message of generated group captures (several seeds and peer
/// counts, with and without `--show-payloads`); random STUN messages are in `STUNFieldsTests`.
final class GCKFieldsTests: XCTestCase {
    func testDirectGCKAndSTUNWritersWriteTheFieldListsBytesOnGeneratedGroupCaptures() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-gckfields-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var written: [String: Int] = [:]
        var mismatches: [String] = []
        for (seed, peers) in [(1 as UInt64, 8), (2, 3), (7, 5)] {
            let r = try Simulator.run("group-8", options: SimulationOptions(seed: seed, peers: peers, format: .pcap))
            let path = dir.appendingPathComponent("group-\(seed).pcap").path
            try Data(r.capture).write(to: URL(fileURLWithPath: path))
            for show in [false, true] {
                var options = EngineOptions(decode: DecodeOptions(showPayloads: show, wantsMessages: true))
                options.collectEvents = false
                let engine = Engine(options: options) { m in
                    guard let w = m.writer else { return }
                    let name = String(describing: type(of: w))
                    guard ["GCKDataFields", "GCKHeartbeatFields", "STUNFields"].contains(name) else { return }
                    written[name, default: 0] += 1
                    for input in [false, true] {
                        var line = JSONBytes()
                        m.writeJSONLine(to: &line, includeInput: input)
                        let tree = m.json(includeInput: input).jsonText + "\n"
                        if line.bytes != Array(tree.utf8), mismatches.count < 5 {
                            mismatches.append("direct: \(String(decoding: line.bytes, as: UTF8.self))list:   \(tree)")
                        }
                    }
                }
                _ = try PeerscopeRun.run(paths: [path], engine: engine)
            }
        }
        XCTAssertEqual(mismatches, [], mismatches.joined(separator: "\n"))
        // Each writer really ran, on many messages.
        for name in ["GCKDataFields", "GCKHeartbeatFields", "STUNFields"] {
            XCTAssertGreaterThan(written[name, default: 0], 50, "\(name): \(written)")
        }
    }
}
