import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopePlugins

/// Issue 14: each decoder plugin declares its diagnostics (id, severity, one-line meaning), and
/// every diagnostic a plugin reports is one it declared.
final class DeclaredDiagnosticsTests: XCTestCase {
    /// The plugin diagnostics among `ds` that no plugin declares.
    static func undeclared(_ ds: [Diagnostic]) -> [String] {
        let plugins = PluginRegistry.decoders.map { $0.descriptor }
        var out: Set<String> = []
        for d in ds {
            if d.id.hasSuffix("." + "handoff.depth") { continue }   // the pipeline's own, under the parent's id
            let owners = plugins.filter { d.id.hasPrefix($0.id + ".") || $0.diagnostics.contains { $0.absolute && $0.problem == d.id } }
            guard !owners.isEmpty || d.id.hasPrefix("gck.") else { continue }   // a layer's (tcp., ipv4., capture., log.)
            if !owners.contains(where: { $0.declares(diagnostic: d.id) }) { out.insert(d.id) }
        }
        return out.sorted()
    }

    /// Every sample capture with its UDP and TCP payload bytes flipped (seeded, so the same each
    /// run), fed through an analysis session: malformed messages of every family.
    func testEveryPluginDiagnosticOnMalformedInputIsDeclared() throws {
        var all: [Diagnostic] = []
        let dir = Place.samples
        var rng: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return rng >> 33
        }
        for f in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where f.hasSuffix(".pcapng") {
            for variant in 0 ..< 3 {
                let s = AnalysisSession()
                _ = s.addLiveInput(f)
                let reader = try CaptureFileReader(path: dir.appendingPathComponent(f).path, input: 0)
                while let frame = reader.next() {
                    var bytes = frame.data.array
                    // Past Ethernet + IPv4 + UDP headers: flip a few payload bytes, or cut the frame.
                    if bytes.count > 46 {
                        let flips = 1 + Int(next() % UInt64(2 + variant))
                        for _ in 0 ..< flips {
                            let i = 42 + Int(next() % UInt64(bytes.count - 42))
                            bytes[i] ^= UInt8(truncatingIfNeeded: 1 + next() % 255)
                        }
                    }
                    var info = frame.info
                    if variant == 2, bytes.count > 60, next() % 4 == 0 {
                        bytes.removeLast(Int(next() % UInt64(bytes.count - 50)))
                        info.capturedLength = bytes.count
                        info.originalLength = bytes.count
                    }
                    s.feed(RawFrame(info: info, data: Bytes(bytes)))
                }
                all += try s.finish().report.diagnostics
            }
        }
        let pluginIDs = Set(all.map(\.id)).filter { id in PluginRegistry.decoders.contains { id.hasPrefix($0.descriptor.id + ".") } || id.hasPrefix("gck.") }
        XCTAssertGreaterThan(pluginIDs.count, 10, "the flipped bytes reach many plugins: \(pluginIDs.sorted())")
        XCTAssertEqual(Self.undeclared(all), [], "declare these in the plugin's descriptor (`diagnostics:`)")
    }

    func testEveryDeclaredDiagnosticHasAMeaningAndIsDeclaredOnce() {
        for p in PluginRegistry.decoders.map({ $0.descriptor }) {
            XCTAssertEqual(Set(p.diagnosticIDs).count, p.diagnosticIDs.count, p.id)
            for d in p.diagnostics { XCTAssertFalse(d.meaning.isEmpty, d.fullID(plugin: p.id)) }
        }
        let icmp = PluginRegistry.decoders.map { $0.descriptor }.first { $0.id == "icmp-error" }
        XCTAssertEqual(icmp?.diagnosticIDs, ["icmp-error.no_quoted_flow"])
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "icmp-error.made_up", message: "x")]), ["icmp-error.made_up"])
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "mdns.name.loop", message: "x")]), [], "a declared family")
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "tcp.truncated", message: "x")]), [], "a layer's, not a plugin's")
    }

    func testPluginsCommandListsDiagnostics() throws {
        let r = try CLI.run(["plugins"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.contains("diagnostic icmp-error.no_quoted_flow (info): an ICMP error whose quoted packet cannot be read"))
        XCTAssertTrue(r.stdout.contains("diagnostic gck.bad_crc (warning)"))
    }
}
