import PeerscopeCore

/// The one explicit list of decoder plugins, in dispatch order (earlier plugins probe first).
/// `peerscope plugins` prints it; a test checks ids are unique and every plugin claims something.
public enum PluginRegistry {
    public static var decoders: [any DecoderPlugin.Type] {
        [
        ]
    }
}
