import Foundation
import PeerscopeCore
import XCTest
@testable import PeerscopePlugins

/// Drives `DNSMessage.parse` with the mDNS payloads tshark extracts from every corpus capture, and
/// compares with tshark's reference decodes. Skips when tshark or ../shared is missing. (The same
/// comparison through the whole pipeline is `PeerscopeIntegrationTests/DiscoveryCorpusTests`.)
final class DNSCorpusTsharkTests: XCTestCase {
    static func tshark() -> String? {
        for p in ["/usr/bin/tshark", "/usr/local/bin/tshark", "/opt/homebrew/bin/tshark"]
        where FileManager.default.isExecutableFile(atPath: p) { return p }
        return nil
    }

    /// frame number -> UDP payload of every mDNS frame in `capture`.
    static func payloads(_ tshark: String, _ capture: URL) throws -> [(UInt64, Bytes)] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tshark)
        p.arguments = ["-r", capture.path, "-Y", "mdns", "-T", "fields", "-e", "frame.number", "-e", "udp.payload"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        var result: [(UInt64, Bytes)] = []
        for line in text.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard c.count >= 2, let f = UInt64(c[0]), let b = Bytes(hex: String(c[1])) else { continue }
            result.append((f, b))
        }
        return result
    }

    func testEveryCorpusMDNSFrameAgreesWithTshark() throws {
        guard let shared = CorpusReference.sharedDir else { throw XCTSkip("../shared not found") }
        guard let tshark = Self.tshark() else { throw XCTSkip("tshark not installed") }
        let refs = CorpusReference.references(shared)
        XCTAssertFalse(refs.isEmpty, "no reference decodes in corpus/ref")
        var total = 0, agreeing = 0
        var differences: [String] = []
        for (capture, jsonURL, tsvURL) in refs {
            let json = CorpusReference.loadJSON(jsonURL)
            let tsv = CorpusReference.loadTSV(tsvURL)
            let frames = try Self.payloads(tshark, capture)
            XCTAssertEqual(frames.count, json.count, "\(capture.lastPathComponent): frames tshark extracts vs reference")
            for (frame, payload) in frames {
                total += 1
                let (msg, problems) = DNSMessage.parse(payload)
                guard let msg else {
                    differences.append("\(capture.lastPathComponent) #\(frame): not decoded \(problems)")
                    continue
                }
                let ours = CorpusReference.recordKeys(msg.records.map { ($0.name.text, DNSType.mnemonic($0.type), "\($0.ttl)") })
                var diffs: [String] = []
                if let ref = json[frame], ref != ours {
                    diffs.append("records: tshark \(ref) ours \(ours)")
                } else if json[frame] == nil {
                    diffs.append("frame not in reference")
                }
                if let row = tsv[frame] {
                    diffs += CorpusReference.diffTSV(row, CorpusReference.tsvView(msg))
                }
                if diffs.isEmpty { agreeing += 1 } else {
                    differences.append("\(capture.lastPathComponent) #\(frame): " + diffs.joined(separator: "; "))
                }
            }
        }
        let pct = total == 0 ? 0 : Double(agreeing) * 100 / Double(total)
        print("mDNS corpus agreement (parser): \(agreeing)/\(total) frames = \(pct)%")
        XCTAssertGreaterThan(total, 500)
        XCTAssertEqual(agreeing, total, "differences:\n" + differences.prefix(30).joined(separator: "\n"))
    }
}
