import PeerscopeCore
import PeerscopeCapture
import PeerscopeLogs
import PeerscopePackets
import PeerscopePlugins

/// What this build of peerscope knows: its plugins (and, for `peerscope plugins`, what they bind to).
public enum PeerscopeInfo {
    public static var decoderPlugins: [PluginDescriptor] { PluginRegistry.decoders.map { $0.descriptor } }

    /// The diagnostics the analysis itself reports (inputs that cannot be read at all).
    public static let analysisDiagnostics = DiagnosticLayer(
        name: "analysis", summary: "sorting and opening the inputs",
        diagnostics: [.id("input.unreadable", .error, "an input that cannot be opened or is not a capture; the others are analysed")])

    /// Every diagnostic this build may report, by layer in data-flow order: capture readers, packet
    /// layers, decoder plugins (each declares its own; listed here with their full ids), log reading,
    /// the analysis.
    public static var diagnosticLayers: [DiagnosticLayer] {
        // A protocol family's shared ids (`gck.bad_crc`) are declared by each of its plugins: listed once.
        var seen: Set<String> = []
        let plugins = decoderPlugins.flatMap { p in
            p.diagnostics.map { DiagnosticSpec.id($0.fullID(plugin: p.id), $0.severity, $0.meaning) }
        }.filter { seen.insert($0.problem).inserted }
        // The pipeline's own, reported under the id of the plugin whose hand-off nested too deep.
        let pipeline = PluginPipeline.diagnostics.map { DiagnosticSpec.id("*." + $0.problem, $0.severity, $0.meaning) }
        return [CaptureDiagnostics.layer, PacketDiagnostics.layer,
                DiagnosticLayer(name: "plugins", summary: "decoder plugins (see each plugin above)", diagnostics: plugins + pipeline),
                LogDiagnostics.layer, analysisDiagnostics]
    }

    /// The declaration of diagnostic `id`, in whichever layer declares it; nil when none does.
    public static func declaration(of id: String) -> (layer: String, spec: DiagnosticSpec)? {
        for l in diagnosticLayers {
            if let s = l.spec(for: id) { return (l.name, s) }
        }
        return nil
    }
}
