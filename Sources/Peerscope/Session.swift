import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports
import PeerscopeTimeline

/// A step of an analysis, reported as it ends (the bench times them; see `AnalysisSession.onStage`).
public enum AnalysisStage: Sendable {
    /// Captures read and decoded: frames seen, events kept, occurrences folded into runs.
    case decoded(frames: UInt64, events: Int, folded: Int)
    /// Logs read: lines and the events they gave.
    case logsRead(lines: Int, events: Int)
    /// Per-peer timelines and sessions built.
    case timelines(peers: Int, sessions: Int, entries: Int)
    /// Detectors run.
    case findings(Int)
}

/// One analysis, from inputs to the report model: what `analyze`, `check`, `capture` and the bench
/// run, and what an app embedding peerscope calls.
///
/// ```swift
/// let session = AnalysisSession(AnalysisSession.Configuration())
/// session.add(["capture.pcapng", "device.log"])      // sorted into captures and logs
/// let analysis = try session.finish()                  // analysis.report: the report model
/// ```
///
/// Inputs are capture files, log files, or frames fed one at a time (live capture: `addLiveInput`
/// then `feed`). Evidence indexes inputs in the order captures (files or live inputs), then logs.
/// A session holds no global state: sessions may run in parallel, one session per thread. Time in
/// the analysis is capture time, never the wall clock.
public final class AnalysisSession {
    /// How to analyse: decoding, log reading and detector settings. Sendable: one configuration may
    /// serve many sessions at once.
    public struct Configuration: Sendable {
        public var engine: EngineOptions
        public var logOptions: LogOptions
        public var detectors: DetectorConfig
        /// Linux (glibc): from the start of decoding on (and before each report's timeline stage), large
        /// blocks are mapped on their own and unmapped when freed, which keeps a long capture's peak memory
        /// down (see `setDefaultMmapThreshold`). This is a setting of the whole process (`mallopt`, made as
        /// decoding starts and again before the timeline stage; the same value each time): an app embedding peerscope
        /// that tunes its own allocator, or minds the extra `mmap` calls in its other work, sets it
        /// false. Default true (the `peerscope` command and the bench keep it). No effect elsewhere.
        public var keepLargeBlocksMapped: Bool

        /// Kept events that would take more than this many bytes on the heap (as plain events) are written to
        /// a temporary file and read back in order by the timeline stage (`SpilledEvents`): memory then
        /// follows what the decoders and the timelines keep, not the capture's length. Capture files spill
        /// while decoding (`Engine.SpillSettings`: the engine keeps a window of recent events); live
        /// inputs once decoding is over. The report is the same either way. `Int.max`: never. Default
        /// `defaultSpillBytes`.
        public var spillBytes: Int = AnalysisSession.defaultSpillBytes
        /// Where the temporary file goes: nil is `TMPDIR` (else /tmp), never beside the inputs. A folder that
        /// cannot take it leaves the events in memory, with a note (`AnalysisSession.onNote`).
        public var spillDirectory: String?
        /// Bytes the spill writes and reads at a time (tests make it tiny, so every event crosses buffers).
        public var spillBufferBytes = 1 << 20
        /// Spill only a list whose query runs hold more events than the list itself (browse queries, most of
        /// which the timeline stage folds away). Elsewhere the in-memory path packs the list into the
        /// timeline store and frees it before any entry exists, so the heap holds each event once anyway,
        /// and reading the events back would only copy their attributes again (on the bench's group file:
        /// 24 bytes more per timeline entry). While decoding this is judged at every frame from the moment
        /// `Engine.queryHeavySample` events are held (a group session's first events are mostly discovery
        /// queries) until the capture turns query-heavy, which starts spilling; else at the end.
        /// False spills any list past `spillBytes` (tests).
        public var spillOnlyQueryHeavy = true
        /// Spilling while decoding (capture files): events the engine gathers before each write, beyond
        /// those a coalescer run may still change (see `Engine.SpillSettings`). Tests make it tiny, so that
        /// a capture is written in many sorted writes.
        public var spillWindowEvents = 1 << 14

        public init(engine: EngineOptions = EngineOptions(), logOptions: LogOptions = LogOptions(),
                    detectors: DetectorConfig = .defaults, keepLargeBlocksMapped: Bool = true) {
            self.engine = engine
            self.logOptions = logOptions
            self.detectors = detectors
            self.keepLargeBlocksMapped = keepLargeBlocksMapped
        }
    }

    /// 8 MiB (about 70,000 plain events, just past the sample `Engine.queryHeavySample` on which a capture
    /// is judged query-heavy while decoding: the bench's mDNS files spill early in decoding, the samples
    /// and the group files do not), or `PEERSCOPE_SPILL_BYTES` when set to a number.
    public static var defaultSpillBytes: Int {
        if let v = ProcessInfo.processInfo.environment["PEERSCOPE_SPILL_BYTES"], let n = Int(v), n >= 0 { return n }
        return 8 << 20
    }

    /// Where a spill goes when the configuration names no folder: `TMPDIR`, else /tmp.
    public static var temporaryDirectory: String {
        if let d = ProcessInfo.processInfo.environment["TMPDIR"], !d.isEmpty { return d }
        return "/tmp"
    }

    /// Told things worth a line on standard error that change nothing in the report (the CLI prints them):
    /// events kept in memory because the temporary file could not be written. Also kept in `notes`.
    public var onNote: ((String) -> Void)?
    /// The notes given to `onNote` so far.
    public private(set) var notes: [String] = []
    /// Where the last `finish` spilled its events (the file is already unlinked), nil when it did not.
    public private(set) var spillPath: String?

    public let configuration: Configuration
    /// Called as each stage ends (same thread as `finish`).
    public var onStage: ((AnalysisStage) -> Void)?
    /// Told now and then how far reading the capture files got (bytes read, total): progress.
    public var progress: PeerscopeRun.Progress?

    /// Capture files, in input order (read and merged by time in `finish`).
    public private(set) var captures: [String] = []
    /// Log files, in input order (their input indexes follow the captures').
    public private(set) var logs: [String] = []
    /// Live inputs (`live:en0`), fed frame by frame.
    public private(set) var liveInputs: [String] = []
    private var problems: [String] = []
    /// Replaced by an empty one once `finish` has decoded (the decoders' state goes before the timelines).
    private var engine: Engine
    private var liveCapture: LiveCaptureStats?
    private var finished = false
    /// What sets the mmap threshold when `configuration.keepLargeBlocksMapped` (tests count the calls).
    var setMmapThreshold: () -> Void = AnalysisSession.setDefaultMmapThreshold

    /// `onMessage` receives each decoded message as it is decoded (`--decode`); set
    /// `configuration.engine.decode.wantsMessages` to get them.
    public init(_ configuration: Configuration = Configuration(), onMessage: @escaping (DecodedMessage) -> Void = { _ in }) {
        self.configuration = configuration
        engine = Engine(options: AnalysisSession.engineOptions(configuration), onMessage: onMessage)
    }

    /// Creates a session for `options` with its captures and logs already added.
    public convenience init(_ options: AnalysisOptions) {
        self.init(Configuration(engine: options.engine, logOptions: options.logOptions, detectors: options.detectors))
        captures = options.captures
        logs = options.logs
    }

    // MARK: inputs

    /// File name endings that say "capture": such a file is read as a capture whatever its bytes, so
    /// a text file named `x.pcapng` is "not a capture file", never a log.
    public static let captureExtensions = [".pcap", ".pcapng", ".cap", ".gz"]

    /// Adds files given without saying what they are: files named like captures are captures; the
    /// others are sorted by their first bytes (pcap, pcapng and gzip signatures are captures, text is
    /// a log; see `PeerscopeAnalysis.classify`). Order is kept within captures and within logs.
    public func add(_ paths: [String]) {
        let named = paths.filter { p in Self.captureExtensions.contains { p.lowercased().hasSuffix($0) } }
        let (sorted, texts) = PeerscopeAnalysis.classify(paths.filter { !named.contains($0) })
        let captureSet = Set(named + sorted)
        captures += paths.filter { captureSet.contains($0) }
        logs += texts
    }

    /// Adds files given as logs (`--log`). One that is really a capture (pcap, pcapng or gzip
    /// signature) is read as the capture it is; the returned notes say so, one line each.
    @discardableResult
    public func addLogs(_ paths: [String]) -> [String] {
        var notes: [String] = []
        for l in paths {
            if let kind = PeerscopeAnalysis.captureSignature(l) {
                notes.append("\(l): given with --log but it is a \(kind) capture; reading it as a capture")
                if !captures.contains(l) { captures.append(l) }
            } else {
                logs.append(l)
            }
        }
        return notes
    }

    /// Adds capture files, read whatever their names.
    public func addCaptures(_ paths: [String]) { captures += paths }

    /// Adds a live input named `name` (`live:en0`) and returns the input index its frames must carry
    /// (`FrameInfo.input`). Live inputs come before logs; do not mix them with capture files.
    public func addLiveInput(_ name: String) -> Int {
        liveInputs.append(name)
        return liveInputs.count - 1
    }

    /// Feeds one frame of a live input (frames in capture order across live inputs).
    public func feed(_ frame: RawFrame) { engine.process(frame) }

    /// Notes a problem with an input that cut it short (a live capture's write error): the report
    /// says it and is marked incomplete.
    public func noteInputProblem(_ message: String) { problems.append(message) }

    /// A live capture's account of itself: per-interface counts (`stats.capture`) and the loss
    /// windows (kernel or interface drops between two statistics readings: findings resting on silence
    /// inside one are uncertain); any loss makes the report incomplete.
    public func noteLiveCapture(_ stats: LiveCaptureStats) { liveCapture = stats }

    /// Events kept so far from live frames, and the latest capture time fed.
    public var liveEventCount: Int { engine.events.count }
    public var liveLastT: Nanos? { engine.stats.lastT }

    /// The report of the live frames fed so far (no logs), leaving the session running: what
    /// `capture --follow` looks at. Costs an analysis of the events kept so far.
    public func provisionalReport() -> Report {
        var events = engine.events
        Engine.sortByTime(&events)
        let trace = EventTrace(inputs: liveInputs, stats: engine.stats, events: events)
        return Self.report(trace, detectors: configuration.detectors, mapLargeBlocks: mapLargeBlocks)
    }

    // MARK: finishing

    /// Reads what is left (capture files, logs), builds the timelines, runs the detectors and returns
    /// the report. Inputs that cannot be read are reported (`report.inputProblems`, `complete` false)
    /// and the rest still analysed; it throws only when no input at all can be read.
    public func finish() throws(InputError) -> Analysis {
        if let trace = eventTrace {
            guard captures.isEmpty, logs.isEmpty, liveInputs.isEmpty else {
                throw InputError(path: trace, message: "\(trace): an event trace is analysed alone, without captures or logs")
            }
            finished = true
            let t = try Self.readTrace(trace)
            onStage?(.decoded(frames: t.stats.frames, events: t.events.count, folded: 0))
            let report = Self.report(consume t, detectors: configuration.detectors, onStage: onStage, mapLargeBlocks: mapLargeBlocks)
            return Analysis(report: report, run: RunResult(inputs: report.inputs, stats: report.stats, complete: report.complete,
                                                           inputProblems: report.inputProblems), logs: nil)
        }
        var decoded = try decode(compactQueries: true, spillWhileDecoding: true)
        let decodingSpill = engine.takeSpilled()
        let spillTried = engine.spillTried
        // Decoding is over: its state (trackers, streams, the slices of read buffers they keep) goes
        // before the timelines are built, not when the session goes.
        engine = Engine(options: engine.options)
        AnalysisSession.returnFreedMemory()
        // The trace moves into the report: `decoded` letting go of its events keeps a large capture's
        // list held once (the timeline builder adopts it instead of copying it).
        var trace = decoded.trace
        decoded.trace.events = []
        decoded.trace.queryRuns = QueryRuns()
        let spill: SpilledEvents?
        if let decodingSpill {
            spill = withLogLines(decodingSpill, &trace)
            spillPath = spill?.path
        } else {
            // A spill given up while decoding is not tried again (its note said why).
            spill = spillTried ? nil : spillIfLarge(&trace)
        }
        let report = Self.report(consume trace, detectors: configuration.detectors, onStage: onStage, spilled: spill,
                                 mapLargeBlocks: mapLargeBlocks)
        return Analysis(report: report, run: decoded.run, logs: decoded.logs)
    }

    /// Moves the trace's events to a temporary file when they pass `configuration.spillBytes` (and are in
    /// time order, as decoding leaves them): inputs that did not spill while decoding (live inputs; a
    /// capture judged query-heavy only at the end). On any failure the events stay in the trace, with a note:
    /// none is lost.
    private func spillIfLarge(_ trace: inout EventTrace) -> SpilledEvents? {
        let n = trace.events.count + trace.queryRuns.count
        let (bytes, over) = n.multipliedReportingOverflow(by: MemoryLayout<PeerEvent>.stride)
        guard n > 0, over || bytes > configuration.spillBytes else { return nil }
        guard !configuration.spillOnlyQueryHeavy || trace.queryRuns.count > trace.events.count else { return nil }
        let directory = configuration.spillDirectory ?? AnalysisSession.temporaryDirectory
        let spill: SpilledEvents
        do {
            spill = try SpilledEvents(directory: directory, writeBufferSize: configuration.spillBufferBytes)
            spill.readBufferSize = configuration.spillBufferBytes
            spill.failWritesAfter = spillWriteLimit
            if trace.queryRuns.isEmpty {
                for e in trace.events { try spill.append(e) }
            } else {
                for e in trace.queryRuns.mergedSequence(trace.events) { try spill.append(e) }
            }
            try spill.finishWriting()
        } catch {
            note("\(error.message); keeping the events in memory")
            return nil
        }
        // Read back in the order written: a list out of time order (never from decoding) stays in memory.
        guard spill.inTimeOrder else { return nil }
        spillPath = spill.path
        trace.events = []
        trace.queryRuns = QueryRuns()
        return spill
    }

    /// Tests: the spill's writes fail past this many bytes (a full disk).
    var spillWriteLimit: Int?

    /// The events spilled while decoding with the trace's log lines among them (the trace holds only
    /// those then): the list `readLogs` makes in memory, capture and log events sorted by time then
    /// evidence, ties in the order capture events (by time, then decoding order) then log lines. Written
    /// to a second file, read and written one time at a time. On a failed write the list is made in
    /// memory as `readLogs` makes it (with a note) and nil returned.
    private func withLogLines(_ spill: SpilledEvents, _ trace: inout EventTrace) -> SpilledEvents? {
        guard !trace.events.isEmpty else { return spill }
        let logLines = trace.events
        func before(_ a: PeerEvent, _ b: PeerEvent) -> Bool { a.t != b.t ? a.t < b.t : a.evidence < b.evidence }
        do throws(SpilledEvents.SpillError) {
            let out = try SpilledEvents(directory: configuration.spillDirectory ?? AnalysisSession.temporaryDirectory,
                                        writeBufferSize: configuration.spillBufferBytes)
            out.readBufferSize = configuration.spillBufferBytes
            out.failWritesAfter = spillWriteLimit
            var next = 0
            var group: [PeerEvent] = []
            func writeGroup() throws(SpilledEvents.SpillError) {
                // The capture's events of one time, by evidence (stable), log lines slotted in before each.
                let sorted = group.indices.sorted { a, b in
                    group[a].evidence != group[b].evidence ? group[a].evidence < group[b].evidence : a < b
                }
                for i in sorted {
                    while next < logLines.count, before(logLines[next], group[i]) {
                        try out.append(logLines[next])
                        next += 1
                    }
                    try out.append(group[i])
                }
                group.removeAll(keepingCapacity: true)
            }
            var failure: SpilledEvents.SpillError?
            spill.forEach { e in
                guard failure == nil else { return }
                do throws(SpilledEvents.SpillError) {
                    if let g = group.first, g.t != e.t { try writeGroup() }
                    group.append(e)
                } catch { failure = error }
            }
            if let failure { throw failure }
            try writeGroup()
            while next < logLines.count {
                try out.append(logLines[next])
                next += 1
            }
            try out.finishWriting()
            if let why = spill.readError {
                trace.inputProblems.append("\(why); the timelines miss the events not read")
                trace.complete = false
            }
            spill.close()
            trace.events = []
            return out
        } catch {
            note("\(error.message); keeping the events in memory")
        }
        var events: [PeerEvent] = []
        events.reserveCapacity(spill.count + logLines.count)
        spill.forEach { events.append($0) }
        if let why = spill.readError {
            trace.inputProblems.append("\(why); the timelines miss the events not read")
            trace.complete = false
        }
        spill.close()
        events += logLines
        events.sort(by: before)
        trace.events = events
        return nil
    }

    private func note(_ message: String) {
        notes.append(message)
        onNote?(message)
    }

    /// What decoding the inputs gave: the event trace (everything the stages after decoding read),
    /// the run's counts and directory, and what the logs taught (unknown lines...).
    public struct Decoded {
        public var trace: EventTrace
        /// The run without its events (they are in `trace`).
        public var run: RunResult
        public var logs: LogReadResult?
    }

    /// Reads the inputs (captures, live frames fed so far, logs) up to the event trace, without
    /// timelines or detectors: what `peerscope decode --events` writes. `compactQueries`: the capture
    /// files' browse queries are held in `trace.queryRuns` (the events the trace stands for are the
    /// same: see `QueryRuns`); false keeps every event in `trace.events`. Logs, and live inputs, keep
    /// every event in `trace.events` either way.
    public func decode(compactQueries: Bool = false) throws(InputError) -> Decoded {
        try decode(compactQueries: compactQueries, spillWhileDecoding: false)
    }

    /// `decode`; `spillWhileDecoding` (analysis of capture files): past `configuration.spillBytes` the
    /// engine writes kept events to a temporary file as it goes (`Engine.SpillSettings`; take it with
    /// `engine.takeSpilled()`). The trace then holds only the log lines, if any.
    func decode(compactQueries: Bool, spillWhileDecoding: Bool) throws(InputError) -> Decoded {
        precondition(!finished, "an AnalysisSession finishes once")
        finished = true
        // Capture files: before the decoders' first table, so that the threshold never rises while
        // decoding (a table grown past it and freed, a dictionary's old storage, is unmapped instead of
        // left in the heap). Live frames were decoded as they were fed.
        if liveInputs.isEmpty, !captures.isEmpty { mapLargeBlocks?() }
        if liveInputs.isEmpty { engine.compactQueries = compactQueries }
        if spillWhileDecoding, liveInputs.isEmpty, !captures.isEmpty {
            engine.spillSettings = Engine.SpillSettings(
                directory: configuration.spillDirectory ?? AnalysisSession.temporaryDirectory,
                thresholdEvents: configuration.spillBytes / MemoryLayout<PeerEvent>.stride,
                onlyQueryHeavy: configuration.spillOnlyQueryHeavy, windowEvents: configuration.spillWindowEvents,
                bufferBytes: configuration.spillBufferBytes, failWritesAfter: spillWriteLimit)
        }
        var run: RunResult
        if !liveInputs.isEmpty {
            engine.finish()
            run = RunResult(inputs: liveInputs, stats: engine.stats, diagnostics: engine.diagnostics,
                            events: engine.takeEvents(), complete: problems.isEmpty, inputProblems: problems,
                            directory: engine.directory, diagnosticCounts: engine.diagnosticCounts)
            run.losses = (liveCapture?.losses ?? []) + engine.snaplenLosses(paths: liveInputs) + engine.unseenDataLosses + engine.oneSidedLosses
            if let live = liveCapture {
                run.stats.capture = live
                if !live.complete { run.complete = false }
            }
        } else if captures.isEmpty {
            engine.finish()
            run = RunResult(inputs: [], directory: engine.directory)
        } else {
            do {
                run = try PeerscopeRun.run(paths: captures, engine: engine, progress: progress)
            } catch {
                if logs.isEmpty { throw error }
                // Logs may still tell the story: carry on with them.
                engine.finish()
                run = RunResult(inputs: captures, complete: false, inputProblems: [error.description],
                                directory: engine.directory)
            }
        }
        for n in engine.spillNotes { note(n) }
        if let why = engine.spillReadError {
            // Events written before a failed write that could not be read back: the report says so.
            run.inputProblems.append("\(why); the timelines miss the events not read")
            run.complete = false
        }
        let spilledCount = engine.spilled?.count ?? 0
        onStage?(.decoded(frames: run.stats.frames, events: run.events.count + run.queryRuns.count + spilledCount,
                          folded: engine.foldedEvents))
        return try Self.readLogs(run, captureNames: liveInputs.isEmpty ? captures : liveInputs, logs: logs,
                                 configuration: configuration, onStage: onStage)
    }

    /// The report when no input at all could be read (`finish` threw `error`): an empty report that
    /// says so, for the caller to write before exiting. Every input counts as a capture.
    public func unreadableAnalysis(_ error: InputError) throws(InputError) -> Analysis {
        let inputs = (liveInputs.isEmpty ? captures : liveInputs) + logs + (eventTrace.map { [$0] } ?? [])
        let run = RunResult(inputs: inputs,
                            diagnostics: [Diagnostic(id: "input.unreadable", severity: .error, message: error.description)],
                            complete: false, inputProblems: [error.description], directory: PeerDirectory(),
                            diagnosticCounts: ["input.unreadable": 1])
        let decoded = try Self.readLogs(run, captureNames: inputs, logs: [], configuration: configuration, onStage: nil)
        return Analysis(report: Self.report(decoded.trace, detectors: configuration.detectors, onStage: nil, mapLargeBlocks: mapLargeBlocks), run: decoded.run,
                        logs: decoded.logs)
    }

    // MARK: event traces

    /// An event trace to analyse instead of captures and logs (`peerscope analyze --events FILE`).
    public private(set) var eventTrace: String?

    /// Analyses the event trace at `path` (written by `peerscope decode --events`): the report is the
    /// one analysing the trace's inputs gives. A trace is analysed alone.
    public func addEventTrace(_ path: String) { eventTrace = path }

    static func readTrace(_ path: String) throws(InputError) -> EventTrace {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw InputError(path: path, message: "\(path): \(why)")
        }
        do { return try EventTrace.read([UInt8](data), path: path) } catch {
            throw InputError(path: path, message: error.description)
        }
    }

    /// What this session's reports call to keep large blocks mapped: nothing when the configuration says not to.
    private var mapLargeBlocks: (() -> Void)? { configuration.keepLargeBlocksMapped ? setMmapThreshold : nil }

    /// Timelines, then detectors, then the report model, from what decoding gave.
    /// `foldBrowseQueries` false keeps every browse query its own resolved event (the report is the
    /// same; `PEERSCOPE_NO_FOLDING=1` does it too). `keepLargeBlocksMapped`: as the configuration's.
    public static func report(_ trace: consuming EventTrace, detectors: DetectorConfig = .defaults,
                              onStage: ((AnalysisStage) -> Void)? = nil, foldBrowseQueries: Bool = true,
                              keepLargeBlocksMapped: Bool = true) -> Report {
        let map: (() -> Void)? = keepLargeBlocksMapped ? { AnalysisSession.setDefaultMmapThreshold() } : nil
        return report(consume trace, detectors: detectors, onStage: onStage, foldBrowseQueries: foldBrowseQueries, spilled: nil,
                      mapLargeBlocks: map)
    }

    /// `report`, with the trace's events in `spilled` instead of in the trace (see `SpilledEvents`), calling
    /// `mapLargeBlocks` (if any) before the timeline stage.
    static func report(_ trace: consuming EventTrace, detectors: DetectorConfig = .defaults,
                       onStage: ((AnalysisStage) -> Void)? = nil, foldBrowseQueries: Bool = true,
                       spilled: SpilledEvents? = nil, mapLargeBlocks: (() -> Void)?) -> Report {
        // From here on a large block is mapped on its own and unmapped when freed (see
        // `Configuration.keepLargeBlocksMapped`).
        mapLargeBlocks?()
        var t = trace
        let last = max(t.stats.lastT ?? Int64.min, t.lastEventT ?? Int64.min, spilled?.lastT ?? Int64.min)
        let endT = last == Int64.min ? t.stats.lastT : last
        let builder = TimelineBuilder(detectors: detectors)
        if !foldBrowseQueries || ProcessInfo.processInfo.environment["PEERSCOPE_NO_FOLDING"] == "1" {
            builder.foldBrowseQueries = false
        }
        builder.add(contentsOf: t.events, queryRuns: t.queryRuns)
        if let spilled { builder.add(spilled: spilled) }
        // The builder holds the events now: the trace letting go keeps them held once (the builder
        // edits them in place instead of copying a large capture's list).
        t.events = []
        t.queryRuns = QueryRuns()
        let timelines = builder.finish(at: endT)
        for why in builder.spillReadErrors {
            // The timelines miss what could not be read back: the report says so (never a silent loss).
            t.inputProblems.append("\(why); the timelines miss the events not read")
            t.complete = false
        }
        // The file and its tables go before the detectors run, unless the events' attributes are read
        // from it (then it goes with the timelines; only its writing tables go now).
        if let spilled {
            if timelines.attributesFile === spilled {
                spilled.dropWriteTables()
                // The boxes its tables keep made go too (see `dropBoxCaches`): the pages they pin go back below.
                spilled.dropBoxCaches()
            } else {
                spilled.close()
            }
        }
        // The builder's working state (per peer and session) is gone: its pages go back before the
        // detectors allocate.
        returnFreedMemory()
        onStage?(.timelines(peers: timelines.peers.count, sessions: timelines.sessions.count,
                            entries: timelines.peers.reduce(0) { $0 + $1.entries.count }))
        // A finding resting on silence where the capture is known to have lost packets is uncertain.
        // So is one resting on silence on a flow of which only one direction was captured.
        let oneSided = CaptureQuality.oneSidedFlows(timelines)
        let findings = CaptureQuality.qualify(DetectorSuite.run(timelines: timelines, config: detectors, end: endT),
                                              losses: t.losses + oneSided, timelines: timelines)
        onStage?(.findings(findings.count))
        var report = Report(inputs: t.inputs, complete: t.complete, inputProblems: t.inputProblems, stats: t.stats,
                            diagnostics: t.diagnostics, timelines: timelines, findings: findings,
                            config: detectors)
        report.diagnosticTotals = t.diagnosticTotals
        if let why = timelines.attributesFile?.recordReadError {
            // The detectors and the discovery section read attributes from the file: one that could not
            // be read was taken as none, and the report says so (never a silent loss).
            report.inputProblems.append("\(why); events were judged without the attributes not read")
            report.complete = false
        }
        // `complete` keeps its meaning (every input read to its end); what the capture missed is in
        // `captureLosses` and in the findings' confidence.
        report.captureLosses = (t.losses + oneSided).sorted { ($0.start, $0.end, $0.reason.rawValue) < ($1.start, $1.end, $1.reason.rawValue) }
        return report
    }

    /// Gives memory freed by a finished stage back to the system (glibc keeps freed pages of its heap
    /// resident; the next stage's allocations do not always fit in them). Elsewhere nothing to do.
    static func returnFreedMemory() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        if let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(f, to: Trim.self)(0)
        }
        #endif
    }

    /// Keeps glibc's threshold for mapping a block on its own at its default (128 KiB) instead of letting
    /// it rise. glibc raises it to the size of any mapped block freed (up to 32 MiB): once decoding has
    /// grown and freed a table, or the timeline stage lets go of the decoded list, every list and table
    /// below that size (the decoders' tables, the resolved events, long timelines, the detectors'
    /// tables, the findings) comes from the heap, and the pieces freed among the ones that stay keep
    /// their pages resident. Mapped on their own they go back whole when freed. Setting the threshold
    /// once turns the raising off for the process (which is why it can be turned off:
    /// `Configuration.keepLargeBlocksMapped`). Elsewhere nothing to do.
    static func setDefaultMmapThreshold() {
        #if canImport(Glibc)
        typealias Option = @convention(c) (Int32, Int32) -> Int32
        // M_MMAP_THRESHOLD (malloc.h)
        if let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            _ = unsafeBitCast(f, to: Option.self)(-3, 128 * 1024)
        }
        #endif
    }

    /// The engine settings for an analysis: steady traffic is coalesced only within gaps shorter than
    /// any silence the keep-alive detector is configured to find.
    public static func engineOptions(_ c: Configuration) -> EngineOptions {
        var e = c.engine
        let app = c.detectors.nanos("keepalive-timeout.app")
        let session = c.detectors.nanos("keepalive-timeout.session")
        // Identity facts (discovery refreshes) are judged by no detector: their runs are not cut.
        for (kind, gap) in e.coalesceGaps where !kind.isIn("identity") {
            // App keep-alives are judged on both clocks; session traffic on the session one.
            let limit = kind == .appKeepAlive ? min(app, session) : session
            e.coalesceGaps[kind] = min(gap, max(0, limit))
        }
        return e
    }

    /// Adds the logs to a finished capture run. The run's events move into the trace; the returned
    /// `run.events` is empty, so a large capture's events are held once.
    private static func readLogs(_ capture: consuming RunResult, captureNames: [String], logs: [String],
                                 configuration: Configuration, onStage: ((AnalysisStage) -> Void)?) throws(InputError) -> Decoded {
        var run = capture
        run.inputs = captureNames + logs
        var events = run.events
        run.events = []     // one reference: the timeline builder adopts the list without copying it
        var queryRuns = run.queryRuns
        run.queryRuns = QueryRuns()
        var logResult: LogReadResult?
        var logPaths: [(Int, String)] = []
        for (i, p) in logs.enumerated() {
            if FileManager.default.isReadableFile(atPath: p) {
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: p, isDirectory: &isDir), isDir.boolValue {
                    run.inputProblems.append("\(p): is a directory, not a log file")
                    run.complete = false
                    continue
                }
                logPaths.append((captureNames.count + i, p))
            } else {
                let why = FileManager.default.fileExists(atPath: p) ? "cannot read the file (permission denied)" : "no such file"
                run.inputProblems.append("\(p): \(why)")
                run.complete = false
            }
        }
        if captureNames.isEmpty && logPaths.isEmpty && !logs.isEmpty {
            throw InputError(path: logs[0], message: run.inputProblems.first ?? "\(logs[0]): cannot read")
        }
        // Read the readable logs together (dates are shared between them), keeping their input indexes.
        var logOptions = configuration.logOptions
        // Time-only and untimed log lines are anchored on the capture when there is one.
        if logOptions.referenceTime == nil { logOptions.referenceTime = run.stats.firstT }
        if !logPaths.isEmpty {
            do {
                var all = LogReadResult()
                // Contiguous runs of indexes read together; a gap (unreadable file) splits the run.
                var group: [(Int, String)] = []
                func flush() throws(LogInputError) {
                    guard let first = group.first else { return }
                    let r = try LogAnalyzer.read(paths: group.map(\.1), firstInput: first.0, options: logOptions,
                                                 directory: run.directory)
                    all.merge(r)
                    group = []
                }
                for entry in logPaths {
                    if let last = group.last, last.0 + 1 != entry.0 { try flush() }
                    group.append(entry)
                }
                try flush()
                run.stats.logLines &+= UInt64(max(0, all.lines))
                run.stats.logInputs &+= UInt64(all.formats.count)
                run.stats.logEntries &+= UInt64(max(0, all.entries))
                for (format, n) in all.unknownCounts { run.stats.logUnknown[format, default: 0] &+= UInt64(max(0, n)) }
                for (plugin, n) in all.recognized { run.stats.logRecognized[plugin, default: 0] &+= UInt64(max(0, n)) }
                if let cf = run.stats.firstT, let cl = run.stats.lastT, !all.zonelessInputs.isEmpty {
                    for (input, _) in all.zonelessInputs {
                        let path = input < run.inputs.count ? run.inputs[input] : ""
                        let ts = all.events.lazy.filter { if case .logLine(let i, _) = $0.evidence { i == input } else { false } }.map(\.t)
                        guard let lf = ts.min(), let ll = ts.max(),
                              let hours = PeerscopeAnalysis.wholeHoursOff(log: lf...ll, capture: cf...cl) else { continue }
                        let tz = (hours > 0 ? "+" : "-") + (abs(hours) < 10 ? "0" : "") + "\(abs(hours)):00"
                        for k in all.problems.indices where all.problems[k].id == "log.time.no_zone" && all.problems[k].message.hasPrefix(path + ":") {
                            all.problems[k].message += "; read as UTC its times are \(abs(hours)) h \(hours > 0 ? "after" : "before") the capture's "
                                + "(a whole number of hours: most likely local time; try --tz \(tz))"
                        }
                    }
                }
                // Only the first few problems of each id are listed per log, and the run's per-id
                // limit applies to them as to the capture's: counts are the true totals.
                let collector = DiagnosticCollector(keptPerID: configuration.engine.diagnosticsKeptPerID,
                                                    continuing: run.diagnostics, totals: run.diagnosticCounts)
                collector.absorb(kept: all.problems, totals: all.problemTotals)
                run.diagnostics = collector.kept
                run.diagnosticCounts = collector.totals
                onStage?(.logsRead(lines: all.lines, events: all.events.count))
                logResult = all
                // Log lines go between the capture's events by time and evidence: the runs' members
                // are put back in the list first (a capture read with logs holds its queries in full).
                if !queryRuns.isEmpty {
                    events = queryRuns.merged(events)
                    queryRuns = QueryRuns()
                }
                events += all.allEvents
                events.sort { a, b in a.t != b.t ? a.t < b.t : a.evidence < b.evidence }
            } catch {
                throw InputError(path: error.path, message: error.description)
            }
        }
        var trace = EventTrace(inputs: run.inputs, complete: run.complete, inputProblems: run.inputProblems, stats: run.stats,
                               diagnostics: run.diagnostics, diagnosticTotals: run.diagnosticCounts,
                               events: consume events)
        trace.queryRuns = queryRuns
        trace.losses = run.losses
        return Decoded(trace: trace, run: run, logs: logResult)
    }
}
