import Foundation
import PeerscopeCore

// The seeds' own `print` lines (seeds 000-003) and the Diffusion back-off example (seed 004).

func appKind(forType type: String) -> EventKind {
    switch type {
    case "handshake": .appHandshake
    case "handshake_response": .appHandshakeResponse
    case "keep_alive", "keepalive", "ping", "pong": .appKeepAlive
    case "chat", "message": .appChat
    default: .appOther
    }
}

/// The `type` of a printed JSON dictionary, never its other contents:
/// `["type": "keep_alive", …]` (Swift) or `{ type = "keep_alive"; … }` (NSDictionary) or `{"type":"x"}`.
func printedType(_ s: String) -> String? {
    for key in ["\"type\": \"", "\"type\":\"", "type = \"", "type = "] {
        if let r = s.range(of: key) {
            let v = s[r.upperBound...].prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
            if !v.isEmpty { return String(v) }
        }
    }
    return nil
}

public struct AppStateLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-state"
    static let summary = "The apps' prints of MCSession state changes (seeds 000-002)"
    static let example = "Peer Alice changed state: 2"
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer %@ changed state: %d") { c, _ in
            LogMatch(kind: .stateChange, from: PeerHint(displayName: c[0]), attrs: ["to": PeerText.sessionState(c[1]), "via": "app"])
        },
        LogRule(format: "Peer connected: %@") { c, _ in
            LogMatch(kind: .stateChange, from: PeerHint(displayName: c[0]), attrs: ["to": "Connected", "via": "app"])
        },
        LogRule(format: "Peer connecting: %@") { c, _ in
            LogMatch(kind: .stateChange, from: PeerHint(displayName: c[0]), attrs: ["to": "Connecting", "via": "app"])
        },
        LogRule(format: "Peer disconnected: %@") { c, _ in
            LogMatch(kind: .stateChange, from: PeerHint(displayName: c[0]), attrs: ["to": "Not Connected", "via": "app"])
        },
        LogRule(format: "%@ 연결 중...") { c, _ in
            LogMatch(kind: .stateChange, from: PeerHint(displayName: c[0]), attrs: ["to": "Connecting", "via": "app"])
        },
    ]
}

public struct AppTimeoutLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-timeout"
    static let summary = "The app's own handshake and keep-alive timeouts (seed 000)"
    static let example = "Keep-alive timeout for peer: Alice"
    static let ruleList: [LogRule] = [
        LogRule(format: "Handshake timeout for peer: %@") { c, _ in
            LogMatch(kind: .appTimeout, from: PeerHint(displayName: c[0]), attrs: ["what": "handshake"])
        },
        LogRule(format: "Keep-alive timeout for peer: %@") { c, _ in
            LogMatch(kind: .appTimeout, from: PeerHint(displayName: c[0]), attrs: ["what": "keep_alive"])
        },
    ]
}

public struct AppDuplicateLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-duplicate"
    static let summary = "The app ignored (and disconnected) a duplicate connection (seed 000)"
    static let example = "Ignoring duplicate connection from Alice"
    static let ruleList: [LogRule] = [
        LogRule(format: "Ignoring duplicate connection from %@") { c, _ in
            LogMatch(kind: .appDuplicateIgnored, from: PeerHint(displayName: c[0]))
        },
    ]
}

public struct AppHandshakeLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-handshake"
    static let summary = "The app's handshake and messages as it prints them (type only, never contents)"
    static let example = "Sent handshake to Alice"
    static let ruleList: [LogRule] = [
        LogRule(format: "Sent handshake to %@") { c, _ in
            LogMatch(kind: .appHandshake, to: PeerHint(displayName: c[0]), attrs: ["direction": "sent"])
        },
        LogRule(format: "Handshake accepted, waiting for channel stabilization...") { _, _ in
            LogMatch(kind: .appHandshakeResponse, attrs: ["direction": "received", "status": "accepted"])
        },
        LogRule(format: "Handshake rejected") { _, _ in
            LogMatch(kind: .appHandshakeResponse, attrs: ["direction": "received", "status": "rejected"])
        },
        LogRule(format: "Received data from %@: %@") { c, _ in
            let type = printedType(c[1]) ?? "unknown"
            var a = ["direction": "received"]
            if appKind(forType: type) == .appOther { a["type"] = type }
            return LogMatch(kind: appKind(forType: type), from: PeerHint(displayName: c[0]), attrs: a)
        },
        LogRule(format: "Unknown message type: %@") { c, _ in
            LogMatch(kind: .appOther, attrs: ["type": String(c[0].prefix(40)), "direction": "received"])
        },
    ]
}

public struct AppSendErrorLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-send-error"
    static let summary = "The app's failed sends and connection errors (seeds 000, 002)"
    static let example = "Failed to send keep-alive: Error Domain=MCSession Code=1 \"Peers (Alice) not connected\""
    static func err(_ s: String) -> String { String(s.trimmingSpaces.prefix(200)) }

    /// The peer an MCSession send error names: `Peers (Bob's iPhone) not connected` or
    /// `Peer Bob not connected` (MCErrorDomain code 1). Several peers (`(A, B)`) name none.
    static func notConnectedPeer(_ s: String) -> PeerHint {
        for (open, close) in [("Peers (", ") not connected"), ("Peer (", ") not connected"), ("Peer ", " not connected")] {
            guard let a = s.range(of: open), let b = s.range(of: close, range: a.upperBound..<s.endIndex) else { continue }
            let name = String(s[a.upperBound..<b.lowerBound]).trimmingSpaces
            if name.isEmpty || name.contains(", ") { return .unknown }
            return PeerHint(displayName: name)
        }
        return .unknown
    }

    static let ruleList: [LogRule] = [
        // The device that wrote the log failed to send (`from` = the log owner); `to` is the peer it names.
        LogRule(format: "Failed to send handshake: %@") { c, _ in
            LogMatch(kind: .sendError, to: notConnectedPeer(c[0]), attrs: ["layer": "app", "what": "handshake", "error": err(c[0])])
        },
        LogRule(format: "Failed to send keep-alive: %@") { c, _ in
            LogMatch(kind: .sendError, to: notConnectedPeer(c[0]), attrs: ["layer": "app", "what": "keep_alive", "error": err(c[0])])
        },
        LogRule(format: "파일 전송 실패: %@") { c, _ in
            LogMatch(kind: .sendError, attrs: ["layer": "app", "what": "file", "error": err(c[0])])
        },
        LogRule(format: "Connection error: %@") { c, _ in LogMatch(kind: .logAppError, attrs: ["error": err(c[0])]) },
    ]
}

public struct AppDisconnectLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-disconnect"
    static let summary = "The app disconnecting from a peer (seed 000)"
    static let example = "Disconnecting from peer: Alice"
    static let ruleList: [LogRule] = [
        LogRule(format: "Disconnecting from peer: %@") { c, _ in
            LogMatch(kind: .disconnected, from: PeerHint(displayName: c[0]), attrs: ["via": "app"])
        },
    ]
}

public struct AppProgressLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-progress"
    static let summary = "The seeds' progress chatter: understood, no event"
    static let example = "Waiting for channels to establish..."
    static let ruleList: [LogRule] = [
        "Waiting for channels to establish...", "Initial channel establishment delay completed", "Starting handshake process",
        "Preparing to send handshake...", "Sending handshake...", "Channel stabilization delay completed",
        "Starting keep-alive exchange", "파일 수신 시작: %@", "파일 수신 완료: %@",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

public struct AppDiscoveryLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-discovery"
    static let summary = "The app's prints of its browser delegate: found and lost peers (spec §2.3 \"Browser found\")"
    static let example = "Browser found peer: Bob's iPhone"
    static let ruleList: [LogRule] = [
        LogRule(format: "Browser found peer: %@") { c, _ in
            LogMatch(kind: .found, from: PeerHint(displayName: c[0].trimmingSpaces), attrs: ["via": "app"])
        },
        LogRule(format: "Browser lost peer: %@") { c, _ in
            LogMatch(kind: .lost, from: PeerHint(displayName: c[0].trimmingSpaces), attrs: ["via": "app"])
        },
    ]
}

public struct AppInvitationLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-invitation"
    static let summary = "The app's prints of invitations: \"Inviting X\" (spec §2.3), received, declined"
    static let example = "Inviting Bob's iPhone"
    static let ruleList: [LogRule] = [
        // The log's device asks MPC to invite X (`from` = the log owner). Not `invitation.invite`: the
        // invitation itself follows on the wire and in the invitee's log (`Got invite from peer[…]`),
        // and the app's print, ~50 ms earlier, would count as a second invitation in the same direction
        // (the duplicate-connection detector would then see crossing invitations twice).
        LogRule(format: "Inviting %@") { c, _ in
            LogMatch(kind: .logInviting, to: PeerHint(displayName: c[0].trimmingSpaces), attrs: ["via": "app"], context: .invitationRemoteIsTo)
        },
        // MPC's own lines beside these carry the events (`Got invite from peer[…]`, `Invitation declined`);
        // the prints only tell who the invitation is with.
        LogRule(format: "Received invitation from %@") { c, _ in
            LogMatch(kind: nil, from: PeerHint(displayName: c[0].trimmingSpaces), context: .invitationRemoteIsFrom)
        },
        LogRule(format: "User declined the invitation from %@") { c, _ in
            LogMatch(kind: nil, from: PeerHint(displayName: c[0].trimmingSpaces), context: .invitationRemoteIsFrom)
        },
        LogRule(format: "Declining invitation from %@: %@") { c, _ in
            LogMatch(kind: nil, from: PeerHint(displayName: c[0].trimmingSpaces), context: .invitationRemoteIsFrom)
        },
        LogRule(format: "Invitation to %@ was declined") { _, _ in .consumed },
    ]
}

public struct AppLifecycleLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-app-lifecycle"
    static let summary = "The app's lifecycle prints (background, resign active, chat ended): understood, no event"
    static let example = "Application did enter background"
    static let ruleList: [LogRule] = [
        "Application will resign active", "Application did enter background", "Application will enter foreground",
        "Application did become active", "User ended the chat",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

// MARK: - Diffusion back-off reconnection (seed 004)

public struct DiffusionSessionStateLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-diffusion-state"
    static let summary = "Diffusion session state changes and session lifecycle (seed 004)"
    static let example = "DiffusionManagerWithReconnectionStrategy: Session State Change: to 'Recovering Reconnect' from 'Failing'"
    static let ruleList: [LogRule] = [
        LogRule(format: "Session State Change: to '%@' from '%@'") { c, _ in
            LogMatch(kind: .stateChange, attrs: ["from": c[1], "to": c[0], "session": "diffusion"])
        },
        LogRule(format: "DiffusionManagerWithReconnectionStrategy: session opened [%@]") { c, _ in
            LogMatch(kind: .logSessionOpened, attrs: ["session": "diffusion", "sessionID": c[0]])
        },
        LogRule(format: "DiffusionManagerWithReconnectionStrategy: no session detected. Creating a new one") { _, _ in .consumed },
        LogRule(format: "DiffusionManagerWithReconnectionStrategy: setting up %@") { _, _ in .consumed },
        LogRule(format: "DiffusionManagerWithReconnectionStrategy: ping successful (%dms)") { c, _ in
            LogMatch(kind: .appKeepAlive, attrs: ["session": "diffusion", "rttMs": c[0], "direction": "received"])
        },
        LogRule(format: "Application: %@") { _, _ in .consumed },
    ]
}

public struct DiffusionReconnectLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-diffusion-reconnect"
    static let summary = "Back-off reconnection attempts with attempt number and delay (seed 004)"
    static let example = "BackOffReconnectionStrategy --> session wishes to reconnect. Current state of strategy --> attempt:[2] delay:[1] maxDelay:[5]"
    static let ruleList: [LogRule] = [
        LogRule(format: "BackOffReconnectionStrategy --> session wishes to reconnect. Current state of strategy --> attempt:[%d] delay:[%d] maxDelay:[%d]") { c, _ in
            LogMatch(kind: .reconnectAttempt, attrs: ["attempt": c[0], "delay": c[1], "maxDelay": c[2], "session": "diffusion"])
        },
        LogRule(format: "BackOffReconnectionStrategy --> attempt starting now") { _, _ in
            LogMatch(kind: .logReconnectStart, attrs: ["session": "diffusion"])
        },
        LogRule(format: "BackOffReconnectionStrategy --> elapsed time since last attempt: %f") { _, _ in .consumed },
    ]
}

public struct NetworkSocketLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-network-socket"
    static let summary = "Network.framework/CFNetwork socket errors around reconnects (seed 004)"
    static let example = "nw_socket_handle_socket_event [C2.1:1] Socket SO_ERROR [61: Connection refused]"
    static func kind(_ errno: String) -> EventKind {
        switch errno { case "61": .tcpRefused; case "54": .tcpReset; default: .logSocketError }
    }
    static let ruleList: [LogRule] = [
        LogRule(format: "nw_socket_handle_socket_event [%@] Socket SO_ERROR [%d: %@]") { c, _ in
            LogMatch(kind: kind(c[1]), attrs: ["errno": c[1], "error": c[2], "connection": c[0]])
        },
        LogRule(format: "TCP Conn %p Failed : error %d:%d [%d]") { c, _ in
            LogMatch(kind: .logSocketError, attrs: ["errno": c[3], "layer": "tcp"])
        },
        LogRule(format: "SocketStream read error [%p]: %d %d") { c, _ in
            LogMatch(kind: .logSocketError, attrs: ["domain": c[1], "errno": c[2], "layer": "stream"])
        },
        LogRule(format: "nw_connection_get_connected_socket [%@] Client called nw_connection_get_connected_socket on unconnected nw_connection") { _, _ in .consumed },
    ]
}
