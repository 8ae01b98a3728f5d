import Foundation
import PeerscopeCore
import PeerscopePlugins
import XCTest
import PeerscopeSimulator

/// Drives plugins through `PluginPipeline` with transport units built by hand and records what they report.
final class Harness {
    static var session: [any DecoderPlugin.Type] { [
        STUNPlugin.self, DTLSPlugin.self,
        GCKHelloPlugin.self, GCKDDPlugin.self, GCKLSAPlugin.self, GCKLSAACKPlugin.self,
        GCKDataPlugin.self, GCKHeartbeatPlugin.self, GCKOtherPlugin.self,
    ] }
    static var app: [any DecoderPlugin.Type] { [
        AppJSONPlugin.self, AppHandshakePlugin.self, AppHandshakeResponsePlugin.self, AppKeepAlivePlugin.self,
        AppChatPlugin.self, AppOtherPlugin.self,
    ] }
    static var all: [any DecoderPlugin.Type] { session + app }

    let pipeline: PluginPipeline
    var messages: [DecodedMessage] = []
    var events: [PeerEvent] = []
    /// The identity facts (`identity.*` events), apart from the steps in `events`.
    var facts: [PeerEvent] = []
    var diagnostics: [Diagnostic] = []
    var frameNumber: UInt64 = 0
    var t: Nanos = 1_763_795_000 * CaptureTime.second
    var lastTick: Nanos

    init(_ plugins: [any DecoderPlugin.Type] = Harness.all, showPayloads: Bool = false,
         directory: PeerDirectory = PeerDirectory(), wantsMessages: Bool = true) {
        let ctx = PluginContext(directory: directory, options: DecodeOptions(showPayloads: showPayloads, wantsMessages: wantsMessages))
        pipeline = PluginPipeline(plugins: plugins, context: ctx)
        lastTick = t
        ctx.onMessage = { [unowned self] in self.messages.append($0) }
        ctx.onEvent = { [unowned self] e in
            if e.kind.isIn("identity") { self.facts.append(e) } else { self.events.append(e) }
        }
        ctx.onDiagnostic = { [unowned self] in self.diagnostics.append($0) }
    }

    func nextFrame(_ n: Int, dt: Nanos) -> FrameInfo {
        frameNumber += 1
        t += dt
        if t - lastTick >= CaptureTime.second {
            pipeline.tick(t)
            lastTick = t
        }
        return FrameInfo(input: 0, number: frameNumber, t: t, capturedLength: n, originalLength: n, linkType: LinkType.ethernet)
    }

    func udp(_ bytes: [UInt8], _ src: Endpoint, _ dst: Endpoint, dt: Nanos = CaptureTime.millisecond) {
        let f = nextFrame(bytes.count + 42, dt: dt)
        pipeline.process(.udp(frame: f, flow: FlowKey(.udp, src, dst), payload: Bytes(bytes)))
    }

    func tcp(_ bytes: [UInt8], _ conn: TCPConnectionInfo, _ dir: TCPDirection, dt: Nanos = CaptureTime.millisecond) {
        let f = nextFrame(bytes.count + 54, dt: dt)
        pipeline.process(.tcpData(frame: f, connection: conn, direction: dir, payload: Bytes(bytes)))
    }

    func tcpEvent(_ e: TCPEvent, _ conn: TCPConnectionInfo, _ dir: TCPDirection) {
        let f = nextFrame(54, dt: CaptureTime.millisecond)
        pipeline.process(.tcpEvent(frame: f, connection: conn, direction: dir, event: e))
    }

    func finish(after: Nanos = 0) {
        t += after
        pipeline.finish(t)
    }

    func events(_ kind: EventKind) -> [PeerEvent] { events.filter { $0.kind == kind } }
    func diagnostics(prefix: String) -> [Diagnostic] { diagnostics.filter { $0.id.hasPrefix(prefix) } }
    var warnings: [Diagnostic] { diagnostics.filter { $0.severity >= .warning } }
    var allText: String {
        (messages.map { $0.json(includeInput: false).jsonText } + events.map { "\($0.attrs)" } + diagnostics.map(\.line))
            .joined(separator: "\n")
    }
}

func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> IPAddress {
    .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d))
}

enum Shared {
    /// `../shared` beside the package root (from `#filePath`), or `$PEERSCOPE_SHARED`.
    static func url(_ rel: String, file: StaticString = #filePath) throws -> URL {
        let base: URL
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"], !env.isEmpty {
            base = URL(fileURLWithPath: env)
        } else {
            base = URL(fileURLWithPath: "\(file)").deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("../shared")
        }
        let u = base.appendingPathComponent(rel).standardizedFileURL
        guard FileManager.default.fileExists(atPath: u.path) else { throw XCTSkip("shared file \(rel) not found") }
        return u
    }

    /// The plaintext GCK session vectors: one datagram per line.
    static func gckSession() throws -> [[UInt8]] {
        let text = try String(contentsOf: url("corpus/mpc-vectors/gck-plaintext-session.hex"), encoding: .utf8)
        return try text.split(whereSeparator: \.isNewline).map { line in
            try XCTUnwrap(Bytes(hex: String(line)), "bad hex line").array
        }
    }

    /// UDP payloads of a little-endian pcap with Ethernet frames (IPv4/IPv6), with their flows.
    static func pcapUDP(_ rel: String) throws -> [(FlowKey, [UInt8])] {
        let d = [UInt8](try Data(contentsOf: url(rel)))
        let b = Bytes(d)
        guard b.u32le(0) == 0xA1B2_C3D4 || b.u32le(0) == 0xA1B2_3C4D, b.u32le(20) == 1 else {
            throw XCTSkip("\(rel): not a little-endian Ethernet pcap")
        }
        var out: [(FlowKey, [UInt8])] = []
        var o = 24
        while let cl = b.u32le(o + 8), let pkt = b.slice(o + 16, Int(cl)) {
            o += 16 + Int(cl)
            guard let et = pkt.u16be(12) else { continue }
            var src: IPAddress, dst: IPAddress, l4: Bytes
            if et == 0x0800, let vihl = pkt.byte(14), pkt.byte(23) == 17 {
                let ip = pkt.suffix(from: 14)
                guard let s = IPAddress(v4: ip, at: 12), let t = IPAddress(v4: ip, at: 16) else { continue }
                src = s; dst = t
                l4 = ip.suffix(from: Int(vihl & 0x0F) * 4)
            } else if et == 0x86DD, pkt.byte(20) == 17 {
                let ip = pkt.suffix(from: 14)
                guard let s = IPAddress(v6: ip, at: 8), let t = IPAddress(v6: ip, at: 24) else { continue }
                src = s; dst = t
                l4 = ip.suffix(from: 40)
            } else { continue }
            guard let sp = l4.u16be(0), let dp = l4.u16be(2), let ul = l4.u16be(4), ul >= 8,
                  let payload = l4.slice(8, Int(ul) - 8) else { continue }
            out.append((FlowKey(.udp, Endpoint(src, sp), Endpoint(dst, dp)), payload.array))
        }
        return out
    }
}

/// Independent checksum implementations (bitwise), so tests do not lean on the code under test.
enum TestCRC {
    static func crc16ARC(_ bytes: [UInt8]) -> UInt16 {
        var c: UInt16 = 0
        for b in bytes {
            c ^= UInt16(b)
            for _ in 0 ..< 8 { c = c & 1 != 0 ? (c >> 1) ^ 0xA001 : c >> 1 }
        }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0 ..< 8 { c = c & 1 != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
        }
        return ~c
    }

    /// Sets bytes 6-7 of a GCK packet to its CRC-16/ARC (computed with the field zeroed).
    static func sealGCK(_ p: inout [UInt8]) {
        guard p.count >= 8 else { return }
        p[6] = 0; p[7] = 0
        let c = crc16ARC(p)
        p[6] = UInt8(c >> 8); p[7] = UInt8(c & 0xFF)
    }
}

/// Draws for fuzz-style tests, from the simulator's deterministic generator (SplitMix64).
extension SimRandom {
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}

extension JSONValue {
    var text: String { jsonText }
}

extension DecodedMessage {
    func field(_ k: String) -> JSONValue? { fields.first { $0.0 == k }?.1 }
}
