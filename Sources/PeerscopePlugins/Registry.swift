import PeerscopeCore

/// The one explicit list of decoder plugins. Its order means nothing: the pipeline asks claimants by
/// claim priority (fallbacks last), then id, and a test shuffles this list and gets the same reports.
/// `peerscope plugins` prints it; a test checks that ids are unique and that every plugin claims
/// something. Plugins from outside the library: `PluginRegistry.decoders + [MyPlugin.self]` in
/// `EngineOptions.plugins` (their event kinds in `DecoderPlugin.eventKinds`).
public enum PluginRegistry {
    public static var decoders: [any DecoderPlugin.Type] {
        discovery + invitation + session + appMessages + transport
    }

    // MARK: Discovery (mDNS / DNS-SD)

    static var discovery: [any DecoderPlugin.Type] {
        [
            MDNSPlugin.self,
        ]
    }

    // MARK: Invitation channel (TCP framing, binary-plist messages)

    static var invitation: [any DecoderPlugin.Type] {
        [
            InvitationFramingPlugin.self,
            InviteMessagePlugin.self,
            InviteResponsePlugin.self,
            InviteConnectPlugin.self,
        ]
    }

    // MARK: Session transport (ICE/STUN, DTLS, GCK packets)

    static var session: [any DecoderPlugin.Type] {
        [
            STUNPlugin.self,
            DTLSPlugin.self,
            GCKHelloPlugin.self,
            GCKDDPlugin.self,
            GCKLSAPlugin.self,
            GCKLSAACKPlugin.self,
            GCKDataPlugin.self,
            GCKHeartbeatPlugin.self,
            GCKOtherPlugin.self,
        ]
    }

    // MARK: App messages (the seeds' JSON)

    static var appMessages: [any DecoderPlugin.Type] {
        [
            AppJSONPlugin.self,
            AppHandshakePlugin.self,
            AppHandshakeResponsePlugin.self,
            AppKeepAlivePlugin.self,
            AppChatPlugin.self,
            AppOtherPlugin.self,
        ]
    }

    // MARK: Transport events (TCP connections, ICMP errors)

    static var transport: [any DecoderPlugin.Type] {
        [
            TCPConnectionPlugin.self,
            ICMPErrorPlugin.self,
        ]
    }
}
