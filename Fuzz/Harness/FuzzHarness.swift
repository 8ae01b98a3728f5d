// One entry point per fuzz target: hostile bytes in, nothing out but "did not trap, did not hang".
// libFuzzer drives these from Fuzz/Main (built only by Scripts/fuzz, with -sanitize=fuzzer); the
// normal test suite replays the committed regression corpus through the same functions
// (Tests/PeerscopeFuzzTests), so every crash found stays fixed.

import CZlib
import Foundation
import PeerscopeCapture
import PeerscopeCore
import PeerscopeLogs
import PeerscopePackets
import PeerscopePlugins

public enum FuzzTarget: String, CaseIterable, Sendable {
    /// pcap and pcapng files, raw or gzip-compressed (first byte odd: the rest is gzipped first).
    case captureFile = "capture-file"
    /// Link, IP (with fragment reassembly), UDP, TCP (with stream reassembly), ICMP errors.
    case packets
    /// The mDNS/DNS message parser and the discovery plugin.
    case mdns
    /// Binary property lists and the invitation messages built on them.
    case plist
    /// The invitation channel: TCP stream framing, Hello, connection data.
    case invitation
    /// GCK session traffic: STUN, DTLS, GCK and app JSON over UDP and TCP.
    case session
    /// Log files in every format, through the built-in log plugins.
    case logs
    /// User pattern files (YAML, regexes) and log lines through them.
    case patterns
}

public enum FuzzHarness {
    /// Runs one input through one target.
    public static func run(_ target: FuzzTarget, _ data: [UInt8]) {
        switch target {
        case .captureFile: captureFile(data)
        case .packets: packets(data)
        case .mdns: mdns(data)
        case .plist: plist(data)
        case .invitation: invitation(data)
        case .session: session(data)
        case .logs: logs(data)
        case .patterns: patterns(data)
        }
    }

    // MARK: - capture files

    /// A per-process scratch file (libFuzzer runs one input at a time per process).
    static let scratch: String = {
        let dir = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        return (dir as NSString).appendingPathComponent("peerscope-fuzz-\(getpid()).cap")
    }()

    static func captureFile(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let body = Array(data.dropFirst())
        if first & 1 == 1 {
            guard let g = gzopen(scratch, "wb") else { return }
            _ = body.withUnsafeBytes { gzwrite(g, $0.baseAddress, UInt32(body.count)) }
            gzclose(g)
        } else {
            FileManager.default.createFile(atPath: scratch, contents: Data(body))
        }
        defer { unlink(scratch) }
        guard let r = try? CaptureFileReader(path: scratch) else { return }
        var n = 0
        while let f = r.next() {
            n += 1
            _ = f.data.count
            if n > 100_000 { break }
        }
        _ = r.problem
    }

    // MARK: - packets

    static let links: [UInt32] = [LinkType.ethernet, LinkType.null, LinkType.loop, LinkType.raw, LinkType.linuxSLL,
                                  LinkType.linuxSLL2, LinkType.pktap, LinkType.ieee80211, LinkType.radiotap, LinkType.ppp,
                                  LinkType.ipv6]

    /// Splits the input into chunks: [1-byte selector][2-byte length][bytes]... (the last takes the rest).
    static func chunks(_ data: [UInt8], max: Int = 512) -> [(UInt8, [UInt8])] {
        var out: [(UInt8, [UInt8])] = []
        var i = 0
        while i < data.count, out.count < max {
            let sel = data[i]
            i += 1
            var len = data.count - i
            if i + 2 <= data.count {
                len = Swift.min(Int(data[i]) << 8 | Int(data[i + 1]), data.count - i - 2)
                i += 2
            }
            out.append((sel, Array(data[i ..< i + len])))
            i += len
        }
        return out
    }

    static func packets(_ data: [UInt8]) {
        var opts = PacketOptions()
        opts.tcpBufferLimit = 4096
        opts.maxReassemblies = 16
        opts.maxConnections = 32
        let d = PacketDecoder(options: opts)
        var t: Nanos = 1_700_000_000 * CaptureTime.second
        var n: UInt64 = 0
        for (sel, bytes) in chunks(data) {
            n += 1
            // Time moves by the selector's high bits: sometimes far enough to expire state.
            t += Nanos(sel >> 4) * Nanos(sel >> 4) * 100 * CaptureTime.millisecond
            let link = links[Int(sel & 0x0F) % links.count]
            let info = FrameInfo(input: 0, number: n, t: t, capturedLength: bytes.count, originalLength: bytes.count, linkType: link)
            d.decode(RawFrame(info: info, data: Bytes(bytes)), { _ in }, { _ in })
            d.advance(to: t, { _ in })
        }
        d.finish(at: t + 3600 * CaptureTime.second, { _ in })
    }

    // MARK: - plugins

    /// A pipeline with every decoder plugin, its outputs consumed.
    final class Pipe {
        let pipeline: PluginPipeline
        var t: Nanos = 1_700_000_000 * CaptureTime.second
        var n: UInt64 = 0
        init() {
            let ctx = PluginContext(directory: PeerDirectory(), options: DecodeOptions(showPayloads: true, wantsMessages: true))
            ctx.onMessage = { m in _ = m.json(includeInput: false).jsonText }
            ctx.onEvent = { _ in }
            ctx.onDiagnostic = { _ in }
            pipeline = PluginPipeline(plugins: PluginRegistry.decoders, context: ctx)
        }
        func frame(_ count: Int, dt: Nanos = CaptureTime.millisecond) -> FrameInfo {
            n += 1
            t += dt
            return FrameInfo(input: 0, number: n, t: t, capturedLength: count, originalLength: count, linkType: LinkType.ethernet)
        }
        func udp(_ b: [UInt8], _ src: Endpoint, _ dst: Endpoint) {
            pipeline.process(.udp(frame: frame(b.count + 42), flow: FlowKey(.udp, src, dst), payload: Bytes(b)))
        }
        func tcp(_ b: [UInt8], _ conn: TCPConnectionInfo, _ dir: TCPDirection) {
            pipeline.process(.tcpData(frame: frame(b.count + 54), connection: conn, direction: dir, payload: Bytes(b)))
        }
        func end(_ conn: TCPConnectionInfo?) {
            if let conn { pipeline.process(.tcpEvent(frame: frame(54), connection: conn, direction: .toServer, event: .fin)) }
            pipeline.tick(t + 60 * CaptureTime.second)
            pipeline.finish(t + 3600 * CaptureTime.second)
        }
    }

    static let a = Endpoint(.v4(0xC0A8_0114), 50123), b = Endpoint(.v4(0xC0A8_010A), 56076)
    static let mdnsA = Endpoint(.v4(0xC0A8_0114), 5353), mdnsGroup = Endpoint(.v4(0xE000_00FB), 5353)

    static func mdns(_ data: [UInt8]) {
        _ = DNSMessage.parse(Bytes(data))
        let p = Pipe()
        for (_, bytes) in chunks(data, max: 64) { p.udp(bytes, mdnsA, mdnsGroup) }
        p.end(nil)
    }

    static func plist(_ data: [UInt8]) {
        _ = try? BinaryPlist.decode(Bytes(data))
        _ = try? BinaryPlist.decode(Bytes(data), maxDepth: 4)
        _ = InvitationMessage.parse(Bytes(data))
    }

    static func invitation(_ data: [UInt8]) {
        _ = InvitationHello.parse(Bytes(data))
        _ = SerializedPeerID.parse(Bytes(data))
        _ = InvitationFrameHeader(Bytes(data))
        let p = Pipe()
        let conn = TCPConnectionInfo(id: 1, client: a, server: b, sawSYN: true)
        for (sel, bytes) in chunks(data, max: 128) { p.tcp(bytes, conn, sel & 1 == 0 ? .toServer : .toClient) }
        p.end(conn)
    }

    static func session(_ data: [UInt8]) {
        let p = Pipe()
        let gckA = Endpoint(.v4(0xC0A8_0114), 16402), gckB = Endpoint(.v4(0xC0A8_010A), 16402)
        let conn = TCPConnectionInfo(id: 2, client: Endpoint(.v4(0xC0A8_0114), 60000), server: Endpoint(.v4(0xC0A8_010A), 8080), sawSYN: true)
        for (sel, bytes) in chunks(data, max: 128) {
            switch sel % 4 {
            case 0: p.udp(bytes, gckA, gckB)
            case 1: p.udp(bytes, gckB, gckA)
            case 2: p.tcp(bytes, conn, .toServer)
            default: p.tcp(bytes, conn, .toClient)
            }
        }
        p.end(conn)
    }

    // MARK: - logs

    static func logs(_ data: [UInt8]) {
        var options = LogOptions()
        options.collectUnknown = true
        if let first = data.first, first & 0x80 != 0 {
            let formats = LogFormat.allCases
            options.format = formats[Int(first & 0x7F) % formats.count]
        }
        _ = LogAnalyzer.read(bytes: data, path: "fuzz.log", input: 0, options: options, directory: PeerDirectory(),
                             engine: LogEngine.builtin)
    }

    /// [YAML patterns file] 0x00 [log text].
    static func patterns(_ data: [UInt8]) {
        let split = data.firstIndex(of: 0) ?? data.count
        let yaml = String(decoding: data[..<split], as: UTF8.self)
        let log = split < data.count ? Array(data[(split + 1)...]) : Array("Lobby timeout for Bob\n".utf8)
        guard let (user, _) = try? UserPatternPlugin.parse(yaml: yaml, file: "fuzz.yml") else { return }
        // Only the user patterns: the built-in plugins are the `logs` target's (and cost a compile per input).
        let engine = LogEngine(plugins: user)
        _ = LogAnalyzer.read(bytes: log, path: "fuzz.log", input: 0, options: LogOptions(), directory: PeerDirectory(), engine: engine)
    }
}
