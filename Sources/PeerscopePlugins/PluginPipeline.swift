import PeerscopeCore

/// Routes transport units to decoder plugins by their claims: a port table, then heuristic probes;
/// TCP connections are pinned to the first plugin that accepts their first bytes; hand-offs go to the
/// plugins that claim the carrier. It knows nothing about any particular protocol.
///
/// - Registry order means nothing: plugins are ordered by claim priority (`.fallback` last), then id.
/// - A protocol family (`ProtocolFamily`, GCK) is probed once per datagram; its classification picks
///   the one member plugin for the message type.
/// - Streams of a `StreamFramingPlugin` are buffered here, one bounded `StreamBuffer` per direction
///   (in the manner of swift-nio's `ByteToMessageDecoder`): the plugin's framer cuts frames, the
///   pipeline hands each frame (bytes and parsed value) to the plugin, forwards TCP gaps and ends.
public final class PluginPipeline {
    public let context: PluginContext
    /// The plugins, ordered by claim priority then id (not by the order they were given in).
    public let plugins: [any DecoderPlugin]
    public let descriptors: [PluginDescriptor]

    /// Probe slots: `0..<plugins.count` are plugins, `plugins.count + k` is family `k`.
    private var udpByPort: [UInt16: [Int]] = [:]
    private var tcpByPort: [UInt16: [Int]] = [:]
    private var udpHeuristic: [Int] = []
    private var tcpHeuristic: [Int] = []
    private var carriedBy: [String: [(key: String?, index: Int)]] = [:]
    private var tcpEventPlugins: [Int] = []
    private var icmpPlugins: [Int] = []
    private let families: [any ProtocolFamily.Type]
    /// Per family: the member plugin of each message type, and the fallback member.
    private var familyMembers: [[String: Int]]
    private var familyFallback: [Int?]
    /// Per plugin: the plugin as a stream framer, when it frames its streams.
    private let framers: [(any StreamFramingPlugin)?]
    private let limits: [StreamLimits]
    private var probes: [UInt64]

    /// A class, so a connection's entry in `streams` is a reference whatever the state: most
    /// connections of a busy capture are never claimed, and an inline `Pending` (two buffers) made
    /// every entry of the table that large.
    private final class Pending {
        var toServer = StreamBuffer()
        var toClient = StreamBuffer()
        var rejectedToServer = false
        var rejectedToClient = false
    }

    /// One direction of a framed stream: the buffer, its framer, bytes still to discard.
    private final class FramedDirection {
        var buffer = StreamBuffer()
        let framer: any StreamFramer
        var skip = 0
        var stopped = false
        init(_ framer: any StreamFramer) { self.framer = framer }
    }

    private final class Framed {
        let plugin: Int
        let toServer: FramedDirection
        let toClient: FramedDirection
        init(plugin: Int, toServer: FramedDirection, toClient: FramedDirection) {
            self.plugin = plugin
            self.toServer = toServer
            self.toClient = toClient
        }
        subscript(_ dir: TCPDirection) -> FramedDirection { dir == .toServer ? toServer : toClient }
    }

    private enum StreamState {
        case pending(Pending)
        case owned(Int)
        case framed(Framed)
        case unclaimed
    }
    private var streams: [UInt64: StreamState] = [:]
    /// Bytes per entry of the per-connection stream table (a test keeps it one reference and a tag).
    static var streamStateStride: Int { MemoryLayout<StreamState>.stride }
    /// Bytes a stream may buffer while plugins ask for more before deciding.
    public var probeLimit = 512
    private var handOffDepth = 0
    public var maxHandOffDepth = 4

    /// Frames in which each plugin decoded something (counted once per frame).
    public var framesPerPlugin: [String: UInt64] {
        var out: [String: UInt64] = [:]
        for (i, n) in frameCounts.enumerated() where n > 0 { out[descriptors[i].id, default: 0] &+= n }
        return out
    }
    /// Per plugin index: frames counted, and the last frame counted (input, number).
    private var frameCounts: [UInt64]
    private var lastCounted: [(input: Int, number: UInt64)?]
    /// Units no plugin took, by kind (`udp`, `tcp`).
    public private(set) var unclaimed: [String: UInt64] = [:]

    /// How often each plugin's probe and each family's probe ran (by plugin or family id).
    public var probeCounts: [String: UInt64] {
        var d: [String: UInt64] = [:]
        for (s, n) in probes.enumerated() where n > 0 {
            d[s < plugins.count ? descriptors[s].id : families[s - plugins.count].id] = n
        }
        return d
    }

    public init(plugins given: [any DecoderPlugin.Type], context: PluginContext) {
        self.context = context
        let types = given.sorted { ($0.descriptor.priority, $0.descriptor.id) < ($1.descriptor.priority, $1.descriptor.id) }
        plugins = types.map { $0.init() }
        descriptors = types.map { $0.descriptor }
        frameCounts = Array(repeating: 0, count: types.count)
        lastCounted = Array(repeating: nil, count: types.count)
        framers = plugins.map { $0 as? any StreamFramingPlugin }
        limits = framers.map { f in f.map { type(of: $0).streamLimits } ?? StreamLimits(maxBuffered: .max, overflowProblem: "") }
        var fams: [any ProtocolFamily.Type] = []
        for t in types { if let f = t.family, !fams.contains(where: { $0.id == f.id }) { fams.append(f) } }
        families = fams
        familyMembers = Array(repeating: [:], count: fams.count)
        familyFallback = Array(repeating: nil, count: fams.count)
        probes = Array(repeating: 0, count: types.count + fams.count)
        for t in types { EventCatalogue.register(t.eventKinds) }

        func add(_ claim: Claim, _ slot: Int) {
            switch claim {
            case .udpPorts(let r): for p in r { udpByPort[p, default: []].append(slot) }
            case .tcpPorts(let r): for p in r { tcpByPort[p, default: []].append(slot) }
            case .udpHeuristic: udpHeuristic.append(slot)
            case .tcpHeuristic: tcpHeuristic.append(slot)
            case .carried(let c, let k): carriedBy[c, default: []].append((k, slot))
            case .tcpEvents: tcpEventPlugins.append(slot)
            case .icmpErrors: icmpPlugins.append(slot)
            case .member(let f, let k):
                guard let fi = fams.firstIndex(where: { $0.id == f }) else { return }
                if let k { familyMembers[fi][k] = familyMembers[fi][k] ?? slot } else { familyFallback[fi] = familyFallback[fi] ?? slot }
            }
        }
        // Plugins first (in their order: priority, id), then the families' own claims.
        for (i, d) in descriptors.enumerated() { for claim in d.claims { add(claim, i) } }
        for (k, f) in fams.enumerated() { for claim in f.claims { add(claim, types.count + k) } }
        // A carrier's keyed claimants before its any-key ones; fallbacks (already last by order) stay last.
        for (c, list) in carriedBy {
            carriedBy[c] = list.enumerated().sorted { a, b in
                let pa = descriptors[a.element.index].priority, pb = descriptors[b.element.index].priority
                if pa != pb { return pa < pb }
                if (a.element.key == nil) != (b.element.key == nil) { return a.element.key != nil }
                return a.offset < b.offset
            }.map(\.element)
        }
        context.onHandOff = { [unowned self] carrier, key, payload, parsed, outer, parent in
            self.handOff(carrier: carrier, key: key, payload: payload, parsed: parsed, outer: outer, parent: parent)
        }
    }

    private func candidates(_ table: [UInt16: [Int]], _ heuristics: [Int], _ a: UInt16, _ b: UInt16) -> [Int] {
        var out: [Int] = []
        if let x = table[a] { out += x }
        if a != b, let y = table[b] { for i in y where !out.contains(i) { out.append(i) } }
        for i in heuristics where !out.contains(i) { out.append(i) }
        return out
    }

    private func count(_ index: Int, _ frame: FrameInfo) {
        if let last = lastCounted[index], last.input == frame.input, last.number == frame.number { return }
        lastCounted[index] = (frame.input, frame.number)
        frameCounts[index] &+= 1
    }

    private func run(_ index: Int, _ input: PluginInput) {
        let savedPlugin = context.currentPlugin
        let savedInput = context.currentInput
        context.currentPlugin = descriptors[index].id
        context.currentInput = input
        plugins[index].decode(input, context)
        context.currentPlugin = savedPlugin
        context.currentInput = savedInput
        count(index, input.frame)
    }

    /// Offers a datagram to a probe slot (a plugin's probe, or a family's one probe and its member).
    @inline(__always)
    private func offer(_ slot: Int, _ input: PluginInput) -> Bool {
        probes[slot] &+= 1
        if slot < plugins.count {
            guard plugins[slot].probe(input) == .accept else { return false }
            run(slot, input)
            return true
        }
        let f = slot - plugins.count
        guard case .member(let key, let parsed) = families[f].classify(input),
              let m = familyMembers[f][key] ?? familyFallback[f] else { return false }
        var member = input
        member.parsed = parsed
        run(m, member)
        return true
    }

    public func process(_ unit: TransportUnit) {
        context.now = unit.frame.t
        switch unit {
        case .udp(let frame, let flow, let payload):
            let input = PluginInput(frame: frame, delivery: .datagram, flow: flow, payload: payload)
            // Hot path: no candidate list is built; port claims first (either port), then heuristics.
            let a = udpByPort[flow.src.port], b = flow.dst.port == flow.src.port ? nil : udpByPort[flow.dst.port]
            if let a { for s in a where offer(s, input) { return } }
            if let b { for s in b where !(a?.contains(s) ?? false) && offer(s, input) { return } }
            for s in udpHeuristic where !(a?.contains(s) ?? false) && !(b?.contains(s) ?? false) && offer(s, input) { return }
            unclaimed["udp", default: 0] &+= 1

        case .tcpData(let frame, let conn, let dir, let payload):
            deliverStream(frame: frame, conn: conn, dir: dir, payload: payload)

        case .tcpEvent(let frame, let conn, let dir, let event):
            let input = PluginInput(frame: frame, delivery: .tcpEvent(conn, dir, event), flow: conn.flow(dir),
                                    connection: (conn, dir), payload: .empty)
            for i in tcpEventPlugins { run(i, input) }
            if event == .gap, case .framed(let f) = streams[conn.id] { gap(f, f[dir], input) }
            if event == .closed || event == .idleEvicted || event == .refused {
                switch streams[conn.id] {
                case .owned(let i)?:
                    context.currentPlugin = descriptors[i].id
                    plugins[i].streamEnded(conn, context)
                    context.currentPlugin = ""
                case .framed(let f)?:
                    end(f, atEndOfInput: false)
                    context.currentPlugin = descriptors[f.plugin].id
                    plugins[f.plugin].streamEnded(conn, context)
                    context.currentPlugin = ""
                default: break
                }
                streams[conn.id] = nil
            }

        case .icmpError(let frame, let info):
            let input = PluginInput(frame: frame, delivery: .icmpError(info), flow: info.quoted, payload: .empty)
            for i in icmpPlugins { run(i, input) }
        }
    }

    private func deliverStream(frame: FrameInfo, conn: TCPConnectionInfo, dir: TCPDirection, payload: Bytes) {
        let state = streams[conn.id] ?? .pending(Pending())
        switch state {
        case .owned(let i):
            run(i, PluginInput(frame: frame, delivery: .stream(conn, dir), flow: conn.flow(dir), connection: (conn, dir), payload: payload))
        case .framed(let f):
            count(f.plugin, frame)
            feed(f, dir, frame: frame, conn: conn, payload: payload)
        case .unclaimed:
            unclaimed["tcp", default: 0] &+= 1
        case .pending(let p):
            if dir == .toServer ? p.rejectedToServer : p.rejectedToClient {
                unclaimed["tcp", default: 0] &+= 1
                return
            }
            if dir == .toServer { p.toServer.append(payload) } else { p.toClient.append(payload) }
            let buffered = dir == .toServer ? p.toServer : p.toClient
            let probeInput = PluginInput(frame: frame, delivery: .stream(conn, dir), flow: conn.flow(dir),
                                         connection: (conn, dir), payload: buffered.bytes)
            var waiting = false
            for i in candidates(tcpByPort, tcpHeuristic, conn.client.port, conn.server.port) {
                probes[i] &+= 1
                switch plugins[i].probe(probeInput) {
                case .accept:
                    // Deliver what the other direction buffered first, then this direction's bytes.
                    let other = dir == .toServer ? p.toClient : p.toServer
                    if let framer = framers[i] {
                        let f = Framed(plugin: i, toServer: FramedDirection(framer.makeFramer(conn, .toServer)),
                                       toClient: FramedDirection(framer.makeFramer(conn, .toClient)))
                        streams[conn.id] = .framed(f)
                        count(i, frame)
                        if !other.isEmpty { feed(f, dir.reversed, frame: frame, conn: conn, payload: other.bytes) }
                        feed(f, dir, frame: frame, conn: conn, payload: buffered.bytes)
                        return
                    }
                    streams[conn.id] = .owned(i)
                    if !other.isEmpty {
                        run(i, PluginInput(frame: frame, delivery: .stream(conn, dir.reversed), flow: conn.flow(dir.reversed),
                                           connection: (conn, dir.reversed), payload: other.bytes))
                    }
                    run(i, probeInput)
                    return
                case .needMoreBytes: waiting = true
                case .reject: continue
                }
            }
            if waiting && buffered.count < probeLimit {
                p.toServer.detach()
                p.toClient.detach()
                streams[conn.id] = .pending(p)
                return
            }
            // This direction cannot be claimed; the other may still identify the connection.
            unclaimed["tcp", default: 0] &+= 1
            if dir == .toServer { p.rejectedToServer = true; p.toServer = StreamBuffer() } else { p.rejectedToClient = true; p.toClient = StreamBuffer() }
            p.toServer.detach()
            p.toClient.detach()
            streams[conn.id] = p.rejectedToServer && p.rejectedToClient ? .unclaimed : .pending(p)
        }
    }

    // MARK: Framed streams

    /// Sets the plugin and input diagnostics are reported under while a framer works; restores after.
    private func withFramer(_ plugin: Int, _ input: PluginInput?, _ body: () -> Void) {
        let savedPlugin = context.currentPlugin, savedInput = context.currentInput
        context.currentPlugin = descriptors[plugin].id
        context.currentInput = input
        body()
        context.currentPlugin = savedPlugin
        context.currentInput = savedInput
    }

    /// Appends a delivery to its direction's buffer and cuts and decodes every whole frame in it.
    private func feed(_ f: Framed, _ dir: TCPDirection, frame: FrameInfo, conn: TCPConnectionInfo, payload: Bytes) {
        let d = f[dir]
        guard !d.stopped else { return }
        d.buffer.lastFrame = frame
        var p = payload
        if d.skip > 0 {
            let n = min(d.skip, p.count)
            d.skip -= n
            d.buffer.advance(by: n)
            p = p.suffix(from: n)
        }
        d.buffer.append(p)
        let raw = PluginInput(frame: frame, delivery: .stream(conn, dir), flow: conn.flow(dir), connection: (conn, dir), payload: payload)
        let i = f.plugin
        withFramer(i, raw) {
            cutting: while !d.stopped && d.skip == 0 {
                switch d.framer.frame(d.buffer, context) {
                case .needMore:
                    break cutting
                case .frame(let length, let range, let parsed):
                    guard length > 0, length <= d.buffer.count else { break cutting }
                    let r = range ?? 0 ..< length
                    let bytes = d.buffer.bytes.slice(r.lowerBound, r.count) ?? .empty
                    let offset = d.buffer.offset + r.lowerBound
                    d.buffer.consume(length)
                    run(i, PluginInput(frame: frame, delivery: .stream(conn, dir), flow: conn.flow(dir), connection: (conn, dir),
                                       payload: bytes, parsed: parsed, streamOffset: offset))
                case .skip(let n):
                    guard n > 0 else { break cutting }
                    d.skip = n - d.buffer.consume(n)
                case .giveUp:
                    stop(d)
                }
            }
            // A partial frame waits in storage of its own, never in the reader's block.
            d.buffer.detach()
            let limit = limits[i]
            if !d.stopped && d.buffer.count > limit.maxBuffered {
                context.diagnose(limit.overflowProblem,
                                 "more than \(limit.maxBuffered) bytes without a complete frame; direction no longer decoded",
                                 offset: d.buffer.offset, severity: .error)
                stop(d)
            }
        }
    }

    private func stop(_ d: FramedDirection) {
        d.stopped = true
        d.buffer = StreamBuffer()
        d.skip = 0
    }

    /// Bytes of a direction were lost before capture: the framer decides whether what is buffered goes.
    private func gap(_ f: Framed, _ d: FramedDirection, _ input: PluginInput) {
        guard !d.stopped else { return }
        withFramer(f.plugin, input) {
            if d.framer.gap(d.buffer, context) {
                d.buffer.clear()
                d.skip = 0
            }
        }
    }

    /// The stream is over: each direction's framer sees what was left unframed.
    private func end(_ f: Framed, atEndOfInput: Bool) {
        withFramer(f.plugin, nil) {
            for d in [f.toServer, f.toClient] where !d.stopped {
                d.framer.end(d.buffer, atEndOfInput: atEndOfInput, context)
            }
        }
    }

    // MARK: Hand-offs

    /// What the pipeline itself may report, under the id of the plugin handing a payload on.
    public static let diagnostics = [DiagnosticSpec("handoff.depth", .warning, "payloads nested too deep; the inner one is skipped")]

    private func handOff(carrier: String, key: String?, payload: Bytes, parsed: (any Sendable)?, outer: PluginInput, parent: String) {
        guard let claimants = carriedBy[carrier], handOffDepth < maxHandOffDepth else {
            if handOffDepth >= maxHandOffDepth {
                context.diagnose("handoff.depth", "payloads nested more than \(maxHandOffDepth) deep; inner payload skipped")
            }
            return
        }
        let input = PluginInput(frame: outer.frame, delivery: .carried(carrier: carrier, key: key, parent: parent),
                                flow: outer.flow, connection: outer.connection, payload: payload, parsed: parsed)
        handOffDepth += 1
        defer { handOffDepth -= 1 }
        for (k, i) in claimants where k == nil || k == key {
            probes[i] &+= 1
            if plugins[i].probe(input) == .accept {
                run(i, input)
                return
            }
        }
    }

    // MARK: Time

    /// Capture time moved on.
    public func tick(_ t: Nanos) {
        context.now = t
        for (i, p) in plugins.enumerated() {
            context.currentPlugin = descriptors[i].id
            context.currentInput = nil
            p.tick(t, context)
        }
        context.currentPlugin = ""
    }

    /// End of input: each plugin's framed streams end (by connection id), then the plugin finishes.
    public func finish(_ t: Nanos) {
        context.now = t
        var framed: [Int: [(UInt64, Framed)]] = [:]
        for (id, s) in streams { if case .framed(let f) = s { framed[f.plugin, default: []].append((id, f)) } }
        for (i, p) in plugins.enumerated() {
            for (_, f) in (framed[i] ?? []).sorted(by: { $0.0 < $1.0 }) { end(f, atEndOfInput: true) }
            context.currentPlugin = descriptors[i].id
            context.currentInput = nil
            p.finish(t, context)
        }
        streams = streams.filter { if case .framed = $0.value { false } else { true } }
        context.currentPlugin = ""
    }
}
