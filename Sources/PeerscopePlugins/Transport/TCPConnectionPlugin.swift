import PeerscopeCore

/// TCP connection events: opened (SYN + established), refused (RST answering a SYN), reset (by whom),
/// closed. Attributes the two ends through the directory and says whether the connection touched a
/// known MPC endpoint (an advertiser's SRV port, or an invitation-channel end learnt from a Hello).
public final class TCPConnectionPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "tcp-connection",
        summary: "TCP connection events: opened, refused, reset, closed",
        claims: [.tcpEvents],
        messageTypes: ["syn", "opened", "refused", "reset", "fin", "closed", "gap", "idle_evicted"],
        diagnostics: [DiagnosticSpec("state_overflow", .warning, "more TCP connections than the plugin tracks; the oldest are forgotten")])

    /// Connections remembered at once; beyond that the oldest state is dropped.
    public static let maxConnections = 65_536

    struct State {
        var synT: Nanos?
        var openedT: Nanos?
        var firstFin: TCPDirection?
        var resetBy: TCPDirection?
    }

    private var states: [UInt64: State] = [:]

    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard case .tcpEvent(let conn, let dir, let event) = input.delivery else { return }
        var s = states[conn.id] ?? State()
        let client = ctx.directory.hint(for: conn.client)
        let server = ctx.directory.hint(for: conn.server)
        // `from` sent the segment that caused the event.
        let (from, to) = dir == .toServer ? (client, server) : (server, client)
        var attrs: [String: String] = .typed([.client: conn.client.description, .server: conn.server.description])
        if let known = mpcAttribute(conn, ctx) { attrs[.invitation] = known }
        let sender = dir == .toServer ? "client" : "server"
        var fields: [(String, JSONValue)] = [("connection", .uint(conn.id)), ("client", .string(conn.client.description)),
                                             ("server", .string(conn.server.description))]
        if let p = client.peerID { fields.append(("clientPeer", .string(PeerIdentity.idString(p)))) }
        if let p = server.peerID { fields.append(("serverPeer", .string(PeerIdentity.idString(p)))) }
        var forget = false
        switch event {
        case .syn:
            s.synT = s.synT ?? input.t
        case .established:
            guard s.openedT == nil else { break }
            s.openedT = input.t
            attrs[.sawSYN] = conn.sawSYN
            if let syn = s.synT { attrs[.handshakeNs] = String(input.t &- syn) }
            ctx.event(.tcpOpened, from: client, to: server, attrs: attrs)
        case .refused:
            attrs[.by] = sender
            ctx.event(.tcpRefused, from: from, to: to, attrs: attrs)
            forget = true
        case .reset:
            s.resetBy = dir
            attrs[.by] = sender
            if let o = s.openedT { attrs[.durationNs] = String(input.t &- o) }
            ctx.event(.tcpReset, from: from, to: to, attrs: attrs)
        case .fin:
            s.firstFin = s.firstFin ?? dir
            fields.append(("by", .string(sender)))
        case .closed:
            if let r = s.resetBy {
                attrs[.how] = "reset"
                attrs[.by] = r == .toServer ? "client" : "server"
            } else if let f = s.firstFin {
                attrs[.how] = "fin"
                attrs[.by] = f == .toServer ? "client" : "server"
            } else {
                attrs[.how] = "unknown"
            }
            if let o = s.openedT { attrs[.durationNs] = String(input.t &- o) }
            let closer = attrs[.by] == "server" ? (server, client) : (client, server)
            ctx.event(.tcpClosed, from: closer.0, to: closer.1, attrs: attrs)
            forget = true
        case .gap:
            fields.append(("direction", .string(dir.rawValue)))
        case .idleEvicted:
            forget = true
        }
        for (k, v) in attrs.sorted(by: { $0.key < $1.key }) where k != "client" && k != "server" {
            fields.append((k, AttrJSON.value(k, v)))
        }
        ctx.message(event.rawValue == "established" ? "opened" : event.rawValue, fields)
        if forget {
            states[conn.id] = nil
        } else {
            if states[conn.id] == nil, states.count >= Self.maxConnections {
                ctx.diagnose("state_overflow", "more than \(Self.maxConnections) open connections; connection state dropped",
                             severity: .info)
                states.removeAll(keepingCapacity: true)
            }
            states[conn.id] = s
        }
    }

    /// "true" when either end is an endpoint the directory knows exactly for a peer (an advertiser's SRV
    /// port from discovery, an invitation-channel end learnt from a Hello or invite); nil otherwise.
    private func mpcAttribute(_ conn: TCPConnectionInfo, _ ctx: PluginContext) -> String? {
        func exact(_ e: Endpoint) -> Bool {
            guard let id = ctx.directory.peerID(for: e) else { return false }
            return ctx.directory.entries[id]?.endpoints.contains(e) ?? false
        }
        return exact(conn.server) || exact(conn.client) ? "true" : nil
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        states.removeAll()
    }
}
