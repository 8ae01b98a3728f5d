import PeerscopeCore

/// `{"type":"handshake","deviceId":…,"platform":…}` (seed 000).
public final class AppHandshakePlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-handshake", summary: "App handshake message (JSON type \"handshake\")",
        claims: [.carried("app.json", key: "handshake")], messageTypes: ["handshake"])
    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let v = AppJSON.parse(input, ctx) else { return }
        var attrs: EventAttrs = [:]
        if let d = AppJSON.scalar(v["deviceId"]) { attrs[.deviceId] = d }
        if let p = AppJSON.scalar(v["platform"]) { attrs[.platform] = p }
        ctx.message("handshake", attrs.sorted { $0.key < $1.key }.map { ($0.key, AttrJSON.value($0.key, $0.value)) })
        guard ctx.wantsEvents else { return }
        let h = ctx.hints()
        ctx.event(.appHandshake, from: h.from, to: h.to, packed: attrs)
    }
}

/// `{"type":"handshake_response","status":"accepted"}` (seed 000: only `accepted` is success).
public final class AppHandshakeResponsePlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-handshake-response", summary: "App handshake response (JSON type \"handshake_response\")",
        claims: [.carried("app.json", key: "handshake_response")], messageTypes: ["handshake_response"])
    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let v = AppJSON.parse(input, ctx) else { return }
        var attrs: EventAttrs = [:]
        if let s = AppJSON.scalar(v["status"]) {
            attrs[.status] = s
            attrs[.accepted] = s == "accepted"
        }
        if let a = v["accepted"]?.boolValue { attrs[.accepted] = a }
        if let d = AppJSON.scalar(v["deviceId"]) { attrs[.deviceId] = d }
        ctx.message("handshake_response", attrs.sorted { $0.key < $1.key }.map { ($0.key, AttrJSON.value($0.key, $0.value)) })
        guard ctx.wantsEvents else { return }
        let h = ctx.hints()
        ctx.event(.appHandshakeResponse, from: h.from, to: h.to, packed: attrs)
    }
}

/// `{"type":"keep_alive","timestamp":<seconds since 1970>,"deviceId":…}` (seeds 000, 001).
public final class AppKeepAlivePlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-keepalive", summary: "App keep-alive (JSON type \"keep_alive\")",
        claims: [.carried("app.json", key: "keep_alive")], messageTypes: ["keep_alive"])
    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let v = AppJSON.parse(input, ctx) else { return }
        var attrs: EventAttrs = [:]
        if let d = AppJSON.scalar(v["deviceId"]) { attrs[.deviceId] = d }
        if let t = AppJSON.scalar(v["timestamp"]) { attrs[.timestamp] = t }
        if ctx.wantsMessages { ctx.message("keep_alive", writing: KeepAliveFields(deviceId: attrs[.deviceId], timestamp: v["timestamp"])) }
        guard ctx.wantsEvents else { return }
        let h = ctx.hints()
        ctx.event(.appKeepAlive, from: h.from, to: h.to, packed: attrs)
    }
}

/// A keep-alive's `peerscope decode` fields, written straight into the line (the most frequent app
/// message: no field list per message). `fields` is the reference the bytes must equal.
struct KeepAliveFields: MessageFieldsWriter {
    let deviceId: String?
    let timestamp: JSONValue?

    var fields: [(String, JSONValue)] {
        var f: [(String, JSONValue)] = []
        if let deviceId { f.append(("deviceId", .string(deviceId))) }
        if let timestamp { f.append(("timestamp", timestamp)) }
        return f
    }

    func writeMembers(to out: inout JSONBytes) {
        if let deviceId {
            out.key("deviceId")
            out.string(deviceId)
        }
        if let timestamp {
            out.key("timestamp")
            out.value(timestamp)
        }
    }
}

/// Chat messages `{"sender":…,"content":…,"timestamp":…}` (seed 002, JSONEncoder's default date:
/// seconds since 2001-01-01). The content is shown only with `showPayloads`; otherwise its length.
public final class AppChatPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-chat", summary: "App chat message (sender, content, timestamp; content hidden unless --show-payloads)",
        claims: [.carried("app.json", key: "chat")], messageTypes: ["chat"])
    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let v = AppJSON.parse(input, ctx) else { return }
        let content = v["content"]?.stringValue
        let size = content.map { $0.utf8.count } ?? 0
        var attrs: EventAttrs = [:]
        attrs[.size] = size
        if let s = AppJSON.scalar(v["sender"]) { attrs[.sender] = s }
        // Contents only when asked (--show-payloads); the timeline then shows each message.
        if ctx.options.showPayloads, let content { attrs[.content] = content }
        ctx.message("chat", {
            var f: [(String, JSONValue)] = []
            if let s = attrs[.sender] { f.append(("sender", .string(s))) }
            if let t = v["timestamp"] { f.append(("timestamp", t)) }
            f.append(("contentLength", .int(Int64(size))))
            if ctx.options.showPayloads, let content { f.append(("content", .string(content))) }
            return f
        }())
        guard ctx.wantsEvents else { return }
        let h = ctx.hints()
        ctx.event(.appChat, from: h.from, to: h.to, packed: attrs)
    }
}

/// Any other app JSON object: kept as its `type` name and the names of its keys (never values).
/// The fallback for `app.json` hand-offs: it takes the types no other app-message plugin claims.
public final class AppOtherPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-other", summary: "Other app JSON messages (type name and key names only)",
        claims: [.carried("app.json")], messageTypes: ["other"], priority: .fallback)
    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let v = AppJSON.parse(input, ctx) else { return }
        let type: String = switch v["type"] {
        case .string(let s)?: String(s.prefix(64))
        case nil: "(none)"
        default: "(non-string)"
        }
        ctx.message("other", [
            ("messageType", .string(type)),
            ("keys", .array((v.objectValue ?? []).prefix(32).map { .string(String($0.0.prefix(64))) })),
            ("size", .int(Int64(input.payload.count))),
        ])
        let h = ctx.hints()
        var attrs: EventAttrs = [:]
        attrs[.type] = type
        attrs[.size] = input.payload.count
        ctx.event(.appOther, from: h.from, to: h.to, packed: attrs)
    }
}
