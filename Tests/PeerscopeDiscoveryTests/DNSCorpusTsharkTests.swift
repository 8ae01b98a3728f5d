import Foundation
import PeerscopeCore
import XCTest
import PeerscopePlugins

/// Drives `DNSMessage.parse` with the mDNS payloads tshark extracts from every corpus capture, and
/// compares with tshark's reference decodes. Skips when tshark or ../shared is missing. (The same
/// comparison through the whole pipeline is `PeerscopeIntegrationTests/DiscoveryCorpusTests`.)
final class DNSCorpusTsharkTests: XCTestCase {
    static func tshark() -> String? {
        for p in ["/usr/bin/tshark", "/usr/local/bin/tshark", "/opt/homebrew/bin/tshark"]
        where FileManager.default.isExecutableFile(atPath: p) { return p }
        return nil
    }

    struct Frame {
        var number: UInt64
        var payload: Bytes
        var t: Nanos
        var flow: FlowKey?
    }

    /// frame number -> UDP payload of every mDNS frame in `capture`.
    static func payloads(_ tshark: String, _ capture: URL) throws -> [(UInt64, Bytes)] {
        try frames(tshark, capture).map { ($0.number, $0.payload) }
    }

    /// Every mDNS frame in `capture` with its payload, time and flow, as tshark reads them.
    static func frames(_ tshark: String, _ capture: URL) throws -> [Frame] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tshark)
        p.arguments = ["-r", capture.path, "-Y", "mdns", "-T", "fields", "-e", "frame.number", "-e", "udp.payload",
                       "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ipv6.src", "-e", "ip.dst", "-e", "ipv6.dst",
                       "-e", "udp.srcport", "-e", "udp.dstport"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        var result: [Frame] = []
        for line in text.split(separator: "\n") {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count >= 9, let f = UInt64(c[0]), let b = Bytes(hex: c[1]) else { continue }
            let t = CaptureTime.nanos(seconds: Double(c[2]) ?? 0)
            let src = IPAddress(c[3].isEmpty ? c[4] : c[3]), dst = IPAddress(c[5].isEmpty ? c[6] : c[5])
            var flow: FlowKey? = nil
            if let src, let dst, let sp = UInt16(c[7]), let dp = UInt16(c[8]) {
                flow = FlowKey(.udp, Endpoint(src, sp), Endpoint(dst, dp))
            }
            result.append(Frame(number: f, payload: b, t: t, flow: flow))
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

    /// The same frames through `PluginPipeline` + `MDNSPlugin`: the `decode` messages agree with the
    /// reference too, the real traffic raises no diagnostics, and discovery events come out.
    func testPluginMessagesOnTheCorpusAgreeWithTshark() throws {
        guard let shared = CorpusReference.sharedDir else { throw XCTSkip("../shared not found") }
        guard let tshark = Self.tshark() else { throw XCTSkip("tshark not installed") }
        var total = 0, agreeing = 0
        var differences: [String] = []
        var eventCounts: [EventKind: Int] = [:]
        var services: Set<String> = []
        for (capture, jsonURL, tsvURL) in CorpusReference.references(shared) {
            let json = CorpusReference.loadJSON(jsonURL)
            let tsv = CorpusReference.loadTSV(tsvURL)
            let ctx = PluginContext(options: DecodeOptions(wantsMessages: true))
            let pipeline = PluginPipeline(plugins: PluginRegistry.decoders, context: ctx)
            var messages: [UInt64: DecodedMessage] = [:]
            var diagnostics: [Diagnostic] = []
            ctx.onMessage = { messages[$0.frame.number] = $0 }
            ctx.onDiagnostic = { diagnostics.append($0) }
            ctx.onEvent = { eventCounts[$0.kind, default: 0] += 1 }
            var last: Nanos = 0
            for f in try Self.frames(tshark, capture) {
                guard let flow = f.flow else { continue }
                if f.t > last + CaptureTime.second { pipeline.tick(f.t); last = f.t }
                let info = FrameInfo(input: 0, number: f.number, t: f.t, capturedLength: f.payload.count,
                                     originalLength: f.payload.count, linkType: LinkType.ethernet)
                pipeline.process(.udp(frame: info, flow: flow, payload: f.payload))
            }
            pipeline.finish(last)
            XCTAssertEqual(diagnostics.map(\.line), [], capture.lastPathComponent)
            for frame in json.keys.sorted() {
                total += 1
                guard let m = messages[frame] else {
                    differences.append("\(capture.lastPathComponent) #\(frame): no message")
                    continue
                }
                let view = CorpusReference.messageView(m)
                var diffs: [String] = []
                if view.records != json[frame] { diffs.append("records: tshark \(json[frame] ?? []) ours \(view.records)") }
                if let row = tsv[frame] { diffs += CorpusReference.diffTSV(row, view.row) }
                if diffs.isEmpty { agreeing += 1 } else {
                    differences.append("\(capture.lastPathComponent) #\(frame): " + diffs.joined(separator: "; "))
                }
            }
            if let plugin = pipeline.plugins.compactMap({ $0 as? MDNSPlugin }).first {
                for s in plugin.summary().services { services.insert(s.type) }
            }
        }
        print("mDNS corpus agreement (plugin messages): \(agreeing)/\(total); events \(eventCounts.sorted { $0.key < $1.key })")
        XCTAssertEqual(agreeing, total, "differences:\n" + differences.prefix(30).joined(separator: "\n"))
        // MANIFEST lists these service types among those seen.
        for s in ["_googlecast._tcp.local", "_companion-link._tcp.local", "_raop._tcp.local", "_ipp._tcp.local"] {
            XCTAssertTrue(services.contains(s), "\(s) not in \(services.sorted())")
        }
        XCTAssertGreaterThan(eventCounts[.browse] ?? 0, 0)
        XCTAssertGreaterThan(eventCounts[.announced] ?? 0, 0)
        XCTAssertGreaterThan(eventCounts[.resolved] ?? 0, 0)
    }
}
