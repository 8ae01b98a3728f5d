import PeerscopeCore
import PeerscopePlugins

/// What this build of peerscope knows: its plugins (and, for `peerscope plugins`, what they bind to).
public enum PeerscopeInfo {
    public static var decoderPlugins: [PluginDescriptor] { PluginRegistry.decoders.map { $0.descriptor } }
}
