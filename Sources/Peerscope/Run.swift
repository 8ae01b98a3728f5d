import PeerscopeCore
import PeerscopeCapture

/// The outcome of reading inputs through the pipeline: counts, diagnostics and peer events.
public struct RunResult {
    /// Paths of the inputs, in the order given (Evidence.input indexes this).
    public var inputs: [String]
    public var stats: CaptureStats
    public var diagnostics: [Diagnostic]
    /// Peer events from every plugin (packets) and log plugin, ordered by capture time (with
    /// `queryRuns`, those not held in a run: see `QueryRuns` for the whole list).
    public var events: [PeerEvent]
    /// Browse queries held compactly (when the engine compacted them).
    public var queryRuns = QueryRuns()
    /// False when an input was cut short (truncated file, interrupted capture).
    public var complete: Bool
    /// One line per problem reading an input (`FILE: truncated at frame 120 (byte 40960)`).
    public var inputProblems: [String]
    /// What discovery and invitations taught about peers.
    public var directory: PeerDirectory
    /// Every diagnostic counted by id (`diagnostics` keeps only the first few of each).
    public var diagnosticCounts: [String: Int]
    /// Known packet loss: interface statistics in the files, snaplen cuts, live drops.
    public var losses: [CaptureLoss] = []

    public init(inputs: [String], stats: CaptureStats = CaptureStats(), diagnostics: [Diagnostic] = [],
                events: [PeerEvent] = [], complete: Bool = true, inputProblems: [String] = [],
                directory: PeerDirectory = PeerDirectory(), diagnosticCounts: [String: Int] = [:]) {
        self.diagnosticCounts = diagnosticCounts
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
    /// One line that names the file and the cause.
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { message }
}

public enum PeerscopeRun {
    /// Reads capture files through capture -> packets -> plugins, calling `onMessage` for each decoded
    /// message in capture order (several files are merged by time). Inputs that cannot be opened are
    /// reported in `inputProblems` and the rest are still analysed; only when none can be opened does
    /// it throw.
    public static func decode(paths: [String], options: DecodeOptions = DecodeOptions(wantsMessages: true),
                              collectEvents: Bool = true, progress: Progress? = nil,
                              onMessage: @escaping (DecodedMessage) -> Void = { _ in }) throws(InputError) -> RunResult {
        var engineOptions = EngineOptions(decode: options)
        engineOptions.collectEvents = collectEvents
        return try run(paths: paths, engine: Engine(options: engineOptions, onMessage: onMessage), progress: progress)
    }

    /// Told, now and then while reading, the bytes read so far and the total when known (the callback
    /// decides where, if anywhere, to show it).
    public struct Progress {
        public var report: (_ bytesRead: Int64, _ totalBytes: Int64?) -> Void
        public init(_ report: @escaping (_ bytesRead: Int64, _ totalBytes: Int64?) -> Void) { self.report = report }
    }

    /// Runs `engine` over the capture files at `paths`.
    public static func run(paths: [String], engine: Engine, progress: Progress? = nil) throws(InputError) -> RunResult {
        var problems: [String] = []
        var readers: [CaptureFileReader] = []
        var firstError: InputError?
        for (i, p) in paths.enumerated() {
            do {
                readers.append(try CaptureFileReader(path: p, input: i))
            } catch {
                let e = InputError(path: p, message: error.description)
                problems.append(e.description)
                engine.record(Diagnostic(id: "input.unreadable", severity: .error, message: error.description))
                if firstError == nil { firstError = e }
            }
        }
        if readers.isEmpty, let firstError { throw firstError }
        let reader = MergedCaptureReader(readers: readers, parallel: engine.options.parallelReading)
        if let progress {
            let total = reader.totalBytes
            var n = 0
            while let frame = reader.next() {
                engine.process(frame)
                n &+= 1
                if n & 0xFFF == 0 { progress.report(reader.bytesRead, total) }
            }
            progress.report(reader.bytesRead, total)
        } else {
            while let frame = reader.next() { engine.process(frame) }
        }
        // Non-fatal findings of the readers (out-of-range timestamps, ...).
        for d in reader.diagnostics { engine.record(d) }
        for p in reader.problems {
            problems.append(p.description)
            engine.record(p.diagnostic)
        }
        engine.finish()
        var result = RunResult(inputs: paths, stats: engine.stats, diagnostics: engine.diagnostics, events: engine.takeEvents(),
                               complete: problems.isEmpty, inputProblems: problems, directory: engine.directory,
                               diagnosticCounts: engine.diagnosticCounts)
        result.queryRuns = engine.takeQueryRuns()
        result.losses = reader.losses + engine.snaplenLosses(paths: paths) + engine.unseenDataLosses + engine.oneSidedLosses
        return result
    }
}
