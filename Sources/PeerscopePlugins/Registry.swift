import PeerscopeCore

/// The one explicit list of decoder plugins, in dispatch order: for a payload several plugins could
/// take, the earlier one probes first. `peerscope plugins` prints it; a test checks that ids are
/// unique and that every plugin claims something.
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
            GCKOtherPlugin.self,  // after the typed GCK plugins
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
            AppOtherPlugin.self,  // claims every app.json hand-off: must stay last
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
