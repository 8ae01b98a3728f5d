import PeerscopeCore

/// The diagnostics the capture readers report (pcap, pcapng, gzip).
public enum CaptureDiagnostics {
    public static let layer = DiagnosticLayer(
        name: "capture", summary: "reading capture files (pcap, pcapng, gzip) and live capture",
        diagnostics: [
            .id("capture.truncated", .error, "a capture file that ends inside a record or block; the frames before it are read"),
            .id("capture.corrupt", .error, "a record or block that cannot be right; reading stops there"),
            .id("capture.read-error", .error, "the file could not be read to its end"),
            .id("capture.timestamp.shifted", .warning, "an interface's timestamps outside 1677-2262, shifted to start at 1970 (spacing kept)"),
            .id("capture.timestamp.clamped", .warning, "a timestamp outside 1677-2262, clamped to the range"),
        ])
}
