import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopePlugins
import PeerscopeReports
import PeerscopeTimeline

/// Issue 14, item 4: a plugin framework that owns the plumbing. Registry order means nothing, and a
/// new message type is one plugin file, one catalogue entry and one registry line.
final class PluginFrameworkTests: XCTestCase {
    /// A deterministic shuffle (64-bit LCG), so a failure can be replayed.
    static func shuffled<T>(_ a: [T], seed: UInt64) -> [T] {
        var a = a, s = seed
        for i in stride(from: a.count - 1, to: 0, by: -1) {
            s = s &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            a.swapAt(i, Int((s >> 33) % UInt64(i + 1)))
        }
        return a
    }

    /// Every sample analysed with the registry reversed and shuffled gives the committed reports, byte
    /// for byte: fallbacks are declared (`.fallback`), not placed last.
    func testShuffledRegistryGivesByteIdenticalReportsOnEverySample() throws {
        FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        let dir = Place.samples.appendingPathComponent("expected")
        let orders: [(String, [any DecoderPlugin.Type])] = [
            ("reversed", PluginRegistry.decoders.reversed()),
            ("shuffle 1", Self.shuffled(PluginRegistry.decoders, seed: 1)),
            ("shuffle 2", Self.shuffled(PluginRegistry.decoders, seed: 0x5EED)),
        ]
        XCTAssertNotEqual(orders[1].1.map { $0.descriptor.id }, PluginRegistry.decoders.map { $0.descriptor.id })
        var checked = 0
        for s in try GoldenTests.scenarios() {
            guard let txt = try? String(contentsOf: dir.appendingPathComponent("\(s.name).report.txt"), encoding: .utf8),
                  let json = try? String(contentsOf: dir.appendingPathComponent("\(s.name).report.json"), encoding: .utf8)
            else { continue }
            for (name, plugins) in orders {
                let a = try PeerscopeAnalysis.analyze(AnalysisOptions(captures: [s.capture], engine: EngineOptions(plugins: plugins)))
                XCTAssertEqual(TextReportWriter.render(a.report, colour: false, showAllTimeline: false), txt, "\(s.name), \(name)")
                XCTAssertEqual(JSONReportWriter.render(a.report), json, "\(s.name), \(name)")
            }
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 14, "every sample")
    }

    // MARK: A new message type from outside the library

    /// Ethernet + IPv4 + UDP around `payload` (checksums left zero: the decoder does not need them).
    static func udpFrame(_ payload: [UInt8], from src: UInt8, _ sport: UInt16, to dst: UInt8, _ dport: UInt16) -> [UInt8] {
        func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        let eth: [UInt8] = [2, 0, 0, 0, 0, dst, 2, 0, 0, 0, 0, src, 0x08, 0x00]
        let ip: [UInt8] = [0x45, 0] + be16(28 + payload.count) + [0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, src, 10, 0, 0, dst]
        let udp: [UInt8] = be16(Int(sport)) + be16(Int(dport)) + be16(8 + payload.count) + [0, 0]
        return eth + ip + udp + payload
    }

    /// Two devices exchanging app JSON over UDP, a `peer_state` message among them: the events
    /// (`decode`) and the report (`finish`).
    static func analyze(plugins: [any DecoderPlugin.Type]) throws -> (events: [PeerEvent], report: Report) {
        try (feed(plugins).decode().trace.events, feed(plugins).finish().report)
    }

    static func feed(_ plugins: [any DecoderPlugin.Type]) -> AnalysisSession {
        let session = AnalysisSession(AnalysisSession.Configuration(engine: EngineOptions(plugins: plugins)))
        let input = session.addLiveInput("test")
        let messages = [#"{"type":"handshake","deviceId":"A"}"#, #"{"type":"peer_state","state":"away"}"#,
                        #"{"type":"peer_state","state":"back"}"#]
        for (i, m) in messages.enumerated() {
            let bytes = udpFrame(Array(m.utf8), from: 1, 50000, to: 2, 50001)
            let t = 1_700_000_000 * CaptureTime.second + Nanos(i) * CaptureTime.second
            session.feed(RawFrame(info: FrameInfo(input: input, number: UInt64(i + 1), t: t, capturedLength: bytes.count,
                                                  originalLength: bytes.count, linkType: LinkType.ethernet), data: Bytes(bytes)))
        }
        return session
    }

    func testANewMessageTypeIsOnePluginFileOneCatalogueEntryAndOneRegistryLine() throws {
        // Before: the library does not know `peer_state`; the app family's fallback takes it.
        let before = try Self.analyze(plugins: PluginRegistry.decoders)
        XCTAssertEqual(before.events.filter { $0.kind == .appOther }.map { $0.attrs["type"] }, ["peer_state", "peer_state"])

        // After: the one registry line.
        let after = try Self.analyze(plugins: PluginRegistry.decoders + [AppPeerStatePlugin.self])
        let states = after.events.filter { $0.kind == AppPeerStatePlugin.peerState }
        XCTAssertEqual(states.map { $0[.state] }, ["away", "back"])
        XCTAssertEqual(states.map(\.source), ["app-peer-state", "app-peer-state"])
        XCTAssertTrue(after.events.filter { $0.kind == .appOther }.isEmpty)
        // The catalogue entry is what the stages read: declared attributes, timeline step and label.
        XCTAssertEqual(states.flatMap(EventCatalogue.problems), [])
        let entries = after.report.timelines.peers.flatMap(\.entries).filter { $0.kind == AppPeerStatePlugin.peerState }
        XCTAssertFalse(entries.isEmpty)
        XCTAssertEqual(Set(entries.map(\.state)), [.keepAlive], "the step its catalogue entry declares")
        XCTAssertTrue(TextReportWriter.render(after.report, colour: false, showAllTimeline: true).contains("peer state"),
                      "the report writer reads the entry's label")
    }
}
