import PeerscopeCore

/// A message type added from outside the library (the whole plugin file a contributor writes):
/// app JSON `{"type":"peer_state","state":"away"}`. Its catalogue entry is `eventKinds`; its registry
/// line is `PluginRegistry.decoders + [AppPeerStatePlugin.self]` in `EngineOptions.plugins`.
final class AppPeerStatePlugin: DecoderPlugin {
    static let descriptor = PluginDescriptor(
        id: "app-peer-state", summary: "App peer state (JSON type \"peer_state\")",
        claims: [.carried("app.json", key: "peer_state")], messageTypes: ["peer_state"])
    static let peerState: EventKind = "app.peer_state"
    static var eventKinds: [EventKindSpec] {
        [EventKindSpec(peerState, "the app said its peer's state", step: .fixed(TimelineStep(.keepAlive, "K")), role: .fixed(.traffic),
                       label: "peer state", attributes: [AttributeSpec("state")])]
    }

    init() {}

    func decode(_ input: PluginInput, _ ctx: PluginContext) {
        // The app JSON family parsed the object once and handed it on with the bytes.
        guard let v = input.parsed as? JSONValue, let state = v["state"]?.stringValue else { return }
        let h = ctx.hints()
        ctx.event(Self.peerState, from: h.from, to: h.to, attrs: [EventAttribute<String>.state.key: String(state.prefix(64))])
        ctx.message("peer_state", [("state", .string(String(state.prefix(64))))])
    }
}
