import PeerscopeCore

/// The outcome of reading inputs through the pipeline: counts, diagnostics and peer events.
public struct RunResult {
    /// Paths of the inputs, in the order given (Evidence.input indexes this).
    public var inputs: [String]
    public var stats: CaptureStats
    public var diagnostics: [Diagnostic]
    /// Peer events from every plugin (packets) and log plugin, ordered by capture time.
    public var events: [PeerEvent]
    /// False when an input was cut short (truncated file, interrupted capture).
    public var complete: Bool
    /// One line per problem reading an input (`FILE: truncated at frame 120 (byte 40960)`).
    public var inputProblems: [String]
    /// What discovery and invitations taught about peers.
    public var directory: PeerDirectory

    public init(inputs: [String], stats: CaptureStats = CaptureStats(), diagnostics: [Diagnostic] = [],
                events: [PeerEvent] = [], complete: Bool = true, inputProblems: [String] = [],
                directory: PeerDirectory = PeerDirectory()) {
        self.inputs = inputs
        self.stats = stats
        self.diagnostics = diagnostics
        self.events = events
        self.complete = complete
        self.inputProblems = inputProblems
        self.directory = directory
    }
}

/// An input that cannot be read at all (missing, unreadable, not a capture).
public struct InputError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String { "\(path): \(reason)" }
}

public enum PeerscopeRun {
    /// Reads capture files through capture -> packets -> plugins, calling `onMessage` for each decoded
    /// message in capture order (several files are merged by time).
    public static func decode(paths: [String], options: DecodeOptions = DecodeOptions(wantsMessages: true),
                              onMessage: (DecodedMessage) -> Void = { _ in }) throws(InputError) -> RunResult {
        // Wired up once the capture and packet layers land (see issue 2).
        throw InputError(path: paths.first ?? "", reason: "the pipeline is not wired yet")
    }
}
