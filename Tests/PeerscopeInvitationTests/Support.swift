import Foundation
import PeerscopeCore
@testable import PeerscopePlugins

/// A bitwise zlib CRC-32, independent of Core's table version.
func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        c ^= UInt32(b)
        for _ in 0 ..< 8 { c = c & 1 != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
    }
    return ~c
}

func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(v & 0xFFFF_FFFF)) }
func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
func le32(_ v: UInt32) -> [UInt8] { be32(v).reversed() }

/// An invitation-channel frame with a correct CRC (unless `crc` is given).
func frame(_ type: UInt16, flags: UInt16 = 0, seq: UInt32, body: [UInt8] = [], crc: UInt32? = nil) -> [UInt8] {
    let zeroed = be16(type) + be16(flags) + be32(UInt32(body.count)) + [0, 0, 0, 0] + be32(seq)
    let c = crc ?? referenceCRC32(zeroed + body)
    return be16(type) + be16(flags) + be32(UInt32(body.count)) + be32(c) + be32(seq) + body
}

func helloBody(id: String, name: String, flags: UInt32 = 6) -> [UInt8] {
    let s = Array((id + "+" + name).utf8) + [0]
    return be32(flags) + be16(UInt16(s.count)) + s
}

/// `serializedRepresentation` of an MCPeerID.
func serializedPeer(_ id: UInt64, _ name: String) -> [UInt8] {
    let n = Array(name.utf8)
    return be64(id) + [UInt8(n.count)] + n
}

/// A tiny binary-plist writer for test inputs (one object per value, no sharing).
indirect enum PV {
    case int(Int64), bool(Bool), data([UInt8]), str(String), dict([(String, PV)]), array([PV])
}

func bplist(_ root: PV) -> [UInt8] {
    var objects: [[UInt8]] = []
    var refsToPatch: [(obj: Int, refs: [Int])] = []
    func count(_ marker: UInt8, _ n: Int) -> [UInt8] {
        if n < 15 { return [marker | UInt8(n)] }
        if n < 256 { return [marker | 0xF, 0x10, UInt8(n)] }
        return [marker | 0xF, 0x11] + be16(UInt16(n))
    }
    func add(_ v: PV) -> Int {
        let index = objects.count
        objects.append([])
        switch v {
        case .int(let i):
            if i >= 0 && i < 256 { objects[index] = [0x10, UInt8(i)] }
            else if i >= 0 && i < 65536 { objects[index] = [0x11] + be16(UInt16(i)) }
            else { objects[index] = [0x13] + be64(UInt64(bitPattern: i)) }
        case .bool(let b): objects[index] = [b ? 0x09 : 0x08]
        case .data(let d): objects[index] = count(0x40, d.count) + d
        case .str(let s):
            if s.utf8.allSatisfy({ $0 < 0x80 }) {
                objects[index] = count(0x50, s.utf8.count) + Array(s.utf8)
            } else {
                let u = Array(s.utf16)
                objects[index] = count(0x60, u.count) + u.flatMap { be16($0) }
            }
        case .array(let a):
            let refs = a.map { add($0) }
            objects[index] = count(0xA0, a.count)
            refsToPatch.append((index, refs))
        case .dict(let d):
            let keys = d.map { add(.str($0.0)) }
            let vals = d.map { add($0.1) }
            objects[index] = count(0xD0, d.count)
            refsToPatch.append((index, keys + vals))
        }
        return index
    }
    _ = add(root)
    let refSize = objects.count < 256 ? 1 : 2
    for (o, refs) in refsToPatch {
        objects[o] += refs.flatMap { refSize == 1 ? [UInt8($0)] : be16(UInt16($0)) }
    }
    var out = Array("bplist00".utf8)
    var offsets: [Int] = []
    for o in objects { offsets.append(out.count); out += o }
    let tableAt = out.count
    let offSize = tableAt < 256 ? 1 : tableAt < 65536 ? 2 : 4
    for o in offsets {
        out += offSize == 1 ? [UInt8(o)] : offSize == 2 ? be16(UInt16(o)) : be32(UInt32(o))
    }
    out += [0, 0, 0, 0, 0, 0, UInt8(offSize), UInt8(refSize)]
    out += be64(UInt64(objects.count)) + be64(0) + be64(UInt64(tableAt))
    return out
}

/// Connection data: one 0x80 segment with IPv4 (stored reversed) and IPv6 addresses and one
/// 16-byte little-endian entry per address.
func connectionData(flags: UInt8, participant: UInt32, v4: [(String, UInt16)], v6: [(String, UInt16)]) -> [UInt8] {
    var payload: [UInt8] = [UInt8(v4.count << 4 | v6.count)]
    for (a, _) in v4 { payload += a.split(separator: ".").map { UInt8($0) ?? 0 }.reversed() }
    for (a, _) in v6 {
        guard case .v6(let hi, let lo, _) = IPAddress(a) else { continue }
        payload += be64(hi) + be64(lo)
    }
    for (i, (_, port)) in v4.enumerated() {
        payload += [0x61] + le32(participant) + le32(0xA1B2_C3D4) + [0x5A, 0, 0, 0, 0x80 | UInt8(i)] + le16(port)
    }
    for (i, (_, port)) in v6.enumerated() {
        payload += [0x61] + le32(participant) + le32(0x0BAD_F00D) + [0x0A, 0, 0, 0, 0x90 | UInt8(i)] + le16(port)
    }
    return [0x80, flags] + be16(UInt16(payload.count + 4)) + payload
}

/// Runs units through a pipeline of the given plugins and collects what comes out.
final class Harness {
    let context: PluginContext
    let pipeline: PluginPipeline
    var events: [PeerEvent] = []
    /// The identity facts (`identity.*` events), apart from the steps in `events`.
    var facts: [PeerEvent] = []
    var messages: [DecodedMessage] = []
    var diagnostics: [Diagnostic] = []
    var frameNumber: UInt64 = 0
    var t: Nanos = 1_700_000_000 * CaptureTime.second

    init(_ plugins: [any DecoderPlugin.Type] = PluginRegistry.invitation + PluginRegistry.transport, showPayloads: Bool = false) {
        context = PluginContext(directory: PeerDirectory(), options: DecodeOptions(showPayloads: showPayloads, wantsMessages: true))
        pipeline = PluginPipeline(plugins: plugins, context: context)
        context.onEvent = { [unowned self] e in
            if e.kind.isIn("identity") { self.facts.append(e) } else { self.events.append(e) }
        }
        context.onMessage = { [unowned self] in self.messages.append($0) }
        context.onDiagnostic = { [unowned self] in self.diagnostics.append($0) }
    }

    func nextFrame() -> FrameInfo {
        frameNumber += 1
        t += CaptureTime.millisecond
        return FrameInfo(input: 0, number: frameNumber, t: t, capturedLength: 100, originalLength: 100, linkType: LinkType.ethernet)
    }

    func send(_ conn: TCPConnectionInfo, _ dir: TCPDirection, _ bytes: [UInt8]) {
        pipeline.process(.tcpData(frame: nextFrame(), connection: conn, direction: dir, payload: Bytes(bytes)))
    }

    /// Sends `bytes` in pieces of `chunk` bytes, one delivery (and frame) each.
    func send(_ conn: TCPConnectionInfo, _ dir: TCPDirection, _ bytes: [UInt8], chunk: Int) {
        var i = 0
        while i < bytes.count {
            send(conn, dir, Array(bytes[i ..< min(bytes.count, i + chunk)]))
            i += chunk
        }
    }

    func tcpEvent(_ conn: TCPConnectionInfo, _ dir: TCPDirection, _ e: TCPEvent) {
        pipeline.process(.tcpEvent(frame: nextFrame(), connection: conn, direction: dir, event: e))
    }

    func events(_ kind: EventKind) -> [PeerEvent] { events.filter { $0.kind == kind } }
    func diagnostics(_ id: String) -> [Diagnostic] { diagnostics.filter { $0.id == id } }
    func messages(_ type: String) -> [DecodedMessage] { messages.filter { $0.type == type } }
}

func endpoint(_ s: String, _ port: UInt16) -> Endpoint {
    Endpoint(IPAddress(s) ?? .v4(0), port)
}

/// `../shared` beside the package root, or `PEERSCOPE_SHARED`.
func sharedDirectory() -> URL? {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    var dir = root.deletingLastPathComponent().appendingPathComponent("shared")
    if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"], !env.isEmpty { dir = URL(fileURLWithPath: env) }
    return FileManager.default.fileExists(atPath: dir.path) ? dir : nil
}
