import PeerscopeCore

/// The one explicit list of built-in log plugins, in matching order: for a line several rules could
/// take, the earlier plugin wins. `peerscope plugins` prints it; a test checks ids are unique.
public enum LogPluginRegistry {
    public static var builtins: [any LogPlugin] { mpc + legacy + app + diffusion + shapes }

    /// Descriptors of the built-in plugins (id, summary, what each matches, an example line).
    public static var plugins: [LogPluginDescriptor] { builtins.map(\.descriptor) }

    // MARK: MultipeerConnectivity's own lines (spec §2.2, mapping §2.3)

    static var mpc: [any LogPlugin] {
        [
            MPCGivingUpLogPlugin(),
            MPCICETimeoutLogPlugin(),
            MPCDTLSTimeoutLogPlugin(),
            MPCGCKTimeoutLogPlugin(),
            MPCTimeoutIgnoredLogPlugin(),
            MPCICEScheduledLogPlugin(),
            MPCDTLSFailedLogPlugin(),
            MPCDTLSEstablishedLogPlugin(),
            MPCRetransmitLogPlugin(),
            MPCDTLSSendErrorLogPlugin(),
            MPCUDPSendErrorLogPlugin(),
            MPCDisconnectLogPlugin(),
            MPCChannelClosedLogPlugin(),
            MPCStateChangeLogPlugin(),
            MPCEncryptionLogPlugin(),
            MPCSessionInitLogPlugin(),
            MPCMeshFailedLogPlugin(),
            MPCSessionSendErrorLogPlugin(),
            MPCPeerFoundLogPlugin(),
            MPCPeerCreatedLogPlugin(),
            MPCAdvertisingLogPlugin(),
            MPCInvitationStreamEndLogPlugin(),
            MPCPeerLostLogPlugin(),
            MPCInviteLogPlugin(),
            MPCInviteResponseLogPlugin(),
            MPCInviteTimeoutLogPlugin(),
            MPCConnectionDecisionLogPlugin(),
            MPCStaleIdentifierLogPlugin(),
            MPCPermissionLogPlugin(),
            MPCPrepareConnectionLogPlugin(),
            MPCConnectPeerLogPlugin(),
            MPCPacketErrorLogPlugin(),
            MPCSocketSetupLogPlugin(),
            MPCGCKSendLogPlugin(),
            MPCInvitationConnectionLogPlugin(),
            MPCInvitationFramesLogPlugin(),
            MPCConnectionSetupLogPlugin(),
            MPCRoutingLogPlugin(),
            MPCSessionEventsLogPlugin(),
            MPCBrowsingLogPlugin(),
        ]
    }

    // MARK: Older iOS (AVConference ICE, GameKit failover)

    static var legacy: [any LogPlugin] {
        [
            ViceroyICELogPlugin(),
            GCKFailoverLogPlugin(),
        ]
    }

    // MARK: The seeds' app prints

    static var app: [any LogPlugin] {
        [
            AppStateLogPlugin(),
            AppTimeoutLogPlugin(),
            AppDuplicateLogPlugin(),
            AppHandshakeLogPlugin(),
            AppSendErrorLogPlugin(),
            AppDisconnectLogPlugin(),
            AppProgressLogPlugin(),
            AppDiscoveryLogPlugin(),
            AppInvitationLogPlugin(),
            AppLifecycleLogPlugin(),
        ]
    }

    // MARK: The Diffusion back-off reconnection example (seed 004)

    static var diffusion: [any LogPlugin] {
        [
            DiffusionSessionStateLogPlugin(),
            DiffusionReconnectLogPlugin(),
            NetworkSocketLogPlugin(),
        ]
    }

    // MARK: App prints in the apps' own words (after every exact shape above)

    static var shapes: [any LogPlugin] {
        [
            AppStateShapesLogPlugin(),
            AppBrowserShapesLogPlugin(),
            AppInvitationShapesLogPlugin(),
        ]
    }
}
