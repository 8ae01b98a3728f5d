import PeerscopeCore

/// Routes transport units to decoder plugins by their claims: a port table, then heuristic probes;
/// TCP connections are pinned to the first plugin that accepts their first bytes; hand-offs go to the
/// plugins that claim the carrier. It knows nothing about any particular protocol.
public final class PluginPipeline {
    public let context: PluginContext
    public let plugins: [any DecoderPlugin]
    public let descriptors: [PluginDescriptor]

    private var udpByPort: [UInt16: [Int]] = [:]
    private var tcpByPort: [UInt16: [Int]] = [:]
    private var udpHeuristic: [Int] = []
    private var tcpHeuristic: [Int] = []
    private var carriedBy: [String: [(key: String?, index: Int)]] = [:]
    private var tcpEventPlugins: [Int] = []
    private var icmpPlugins: [Int] = []

    private struct Pending {
        var toServer: [UInt8] = []
        var toClient: [UInt8] = []
        var rejectedToServer = false
        var rejectedToClient = false
    }
    private enum StreamState {
        case pending(Pending)
        case owned(Int)
        case unclaimed
    }
    private var streams: [UInt64: StreamState] = [:]
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

    public init(plugins types: [any DecoderPlugin.Type], context: PluginContext) {
        self.context = context
        plugins = types.map { $0.init() }
        descriptors = types.map { $0.descriptor }
        frameCounts = Array(repeating: 0, count: types.count)
        lastCounted = Array(repeating: nil, count: types.count)
        for (i, d) in descriptors.enumerated() {
            for claim in d.claims {
                switch claim {
                case .udpPorts(let r): for p in r { udpByPort[p, default: []].append(i) }
                case .tcpPorts(let r): for p in r { tcpByPort[p, default: []].append(i) }
                case .udpHeuristic: udpHeuristic.append(i)
                case .tcpHeuristic: tcpHeuristic.append(i)
                case .carried(let c, let k): carriedBy[c, default: []].append((k, i))
                case .tcpEvents: tcpEventPlugins.append(i)
                case .icmpErrors: icmpPlugins.append(i)
                }
            }
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

    private func run(_ index: Int, _ input: PluginInput) {
        let savedPlugin = context.currentPlugin
        let savedInput = context.currentInput
        context.currentPlugin = descriptors[index].id
        context.currentInput = input
        plugins[index].decode(input, context)
        context.currentPlugin = savedPlugin
        context.currentInput = savedInput
        if let last = lastCounted[index], last.input == input.frame.input, last.number == input.frame.number { return }
        lastCounted[index] = (input.frame.input, input.frame.number)
        frameCounts[index] &+= 1
    }

    public func process(_ unit: TransportUnit) {
        context.now = unit.frame.t
        switch unit {
        case .udp(let frame, let flow, let payload):
            let input = PluginInput(frame: frame, delivery: .datagram, flow: flow, payload: payload)
            // Hot path: no candidate list is built; port claims first (either port), then heuristics.
            let a = udpByPort[flow.src.port], b = flow.dst.port == flow.src.port ? nil : udpByPort[flow.dst.port]
            if let a { for i in a where plugins[i].probe(input) == .accept { run(i, input); return } }
            if let b { for i in b where !(a?.contains(i) ?? false) && plugins[i].probe(input) == .accept { run(i, input); return } }
            for i in udpHeuristic where !(a?.contains(i) ?? false) && !(b?.contains(i) ?? false) && plugins[i].probe(input) == .accept {
                run(i, input)
                return
            }
            unclaimed["udp", default: 0] &+= 1

        case .tcpData(let frame, let conn, let dir, let payload):
            deliverStream(frame: frame, conn: conn, dir: dir, payload: payload)

        case .tcpEvent(let frame, let conn, let dir, let event):
            let input = PluginInput(frame: frame, delivery: .tcpEvent(conn, dir, event), flow: conn.flow(dir),
                                    connection: (conn, dir), payload: .empty)
            for i in tcpEventPlugins { run(i, input) }
            if event == .closed || event == .idleEvicted || event == .refused {
                if case .owned(let i) = streams[conn.id] {
                    context.currentPlugin = descriptors[i].id
                    plugins[i].streamEnded(conn, context)
                    context.currentPlugin = ""
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
        case .unclaimed:
            unclaimed["tcp", default: 0] &+= 1
        case .pending(var p):
            if dir == .toServer ? p.rejectedToServer : p.rejectedToClient {
                unclaimed["tcp", default: 0] &+= 1
                return
            }
            if dir == .toServer { p.toServer.append(contentsOf: payload.array) } else { p.toClient.append(contentsOf: payload.array) }
            let buffered = dir == .toServer ? p.toServer : p.toClient
            let probeInput = PluginInput(frame: frame, delivery: .stream(conn, dir), flow: conn.flow(dir),
                                         connection: (conn, dir), payload: Bytes(buffered))
            var waiting = false
            for i in candidates(tcpByPort, tcpHeuristic, conn.client.port, conn.server.port) {
                switch plugins[i].probe(probeInput) {
                case .accept:
                    streams[conn.id] = .owned(i)
                    // Deliver what the other direction buffered first, then this direction's bytes.
                    let other = dir == .toServer ? p.toClient : p.toServer
                    if !other.isEmpty {
                        run(i, PluginInput(frame: frame, delivery: .stream(conn, dir.reversed), flow: conn.flow(dir.reversed),
                                           connection: (conn, dir.reversed), payload: Bytes(other)))
                    }
                    run(i, probeInput)
                    return
                case .needMoreBytes: waiting = true
                case .reject: continue
                }
            }
            if waiting && buffered.count < probeLimit {
                streams[conn.id] = .pending(p)
                return
            }
            // This direction cannot be claimed; the other may still identify the connection.
            unclaimed["tcp", default: 0] &+= 1
            if dir == .toServer { p.rejectedToServer = true; p.toServer = [] } else { p.rejectedToClient = true; p.toClient = [] }
            streams[conn.id] = p.rejectedToServer && p.rejectedToClient ? .unclaimed : .pending(p)
        }
    }

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
        for (k, i) in claimants where (k == nil || k == key) && plugins[i].probe(input) == .accept {
            run(i, input)
            return
        }
    }

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

    /// End of input.
    public func finish(_ t: Nanos) {
        context.now = t
        for (i, p) in plugins.enumerated() {
            context.currentPlugin = descriptors[i].id
            context.currentInput = nil
            p.finish(t, context)
        }
        context.currentPlugin = ""
    }
}
