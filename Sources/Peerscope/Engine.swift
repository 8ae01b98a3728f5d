import Foundation
import PeerscopeCore
import PeerscopeCapture
import PeerscopePackets
import PeerscopePlugins

/// Settings for one pass through capture -> packets -> plugins.
public struct EngineOptions: Sendable {
    public var decode: DecodeOptions
    public var packets: PacketOptions
    /// The decoder plugins (any order: the pipeline orders claimants by priority, then id). Plugins
    /// from outside the library: `PluginRegistry.decoders + [MyPlugin.self]`.
    public var plugins: [any DecoderPlugin.Type]
    /// Keep peer events (analysis needs them; `decode` does not).
    public var collectEvents: Bool
    /// Diagnostics kept in full per id; the rest are counted.
    public var diagnosticsKeptPerID: Int
    /// How often plugins and flow tables see capture time move on.
    public var tickInterval: Nanos
    /// Steady traffic repeating on a flow within its kind's gap is kept as one event (see
    /// `EventCoalescer`); empty keeps every event. Analysis sets each gap no longer than the silence
    /// its detectors judge in that kind of traffic.
    public var coalesceGaps: [EventKind: Nanos]
    /// Several capture files: read each on its own thread (decoding stays on one, in capture-time
    /// order across the files): the results are those of a serial read.
    public var parallelReading = true
    /// How often (capture time) the coalescer forgets runs that can no longer continue. Pruning only
    /// frees memory: a run past its gap is never continued whether or not it was forgotten, so every
    /// interval gives the same events (`HotPathTests`). Pruning at every tick cost a third of decoding
    /// on the group file (a scan of every open run each captured second).
    public var coalescerPruneInterval: Nanos = 16 * CaptureTime.second
    /// A kept event whose attributes repeat the bytes of one kept shortly before shares that buffer
    /// (`EventAttrsSharing`) instead of holding its own copy: the events are equal either way.
    public var shareAttributes = true

    public init(decode: DecodeOptions = DecodeOptions(), packets: PacketOptions = PacketOptions(),
                plugins: [any DecoderPlugin.Type] = PluginRegistry.decoders, collectEvents: Bool = true,
                diagnosticsKeptPerID: Int = 50, tickInterval: Nanos = CaptureTime.second,
                coalesceGaps: [EventKind: Nanos] = EventCoalescer.defaultGaps) {
        self.coalesceGaps = coalesceGaps
        self.decode = decode
        self.packets = packets
        self.plugins = plugins
        self.collectEvents = collectEvents
        self.diagnosticsKeptPerID = diagnosticsKeptPerID
        self.tickInterval = tickInterval
    }
}

/// The streaming core shared by file analysis and live capture: frames go in one at a time, in
/// capture order; messages go out as they are decoded; counts, diagnostics and events accumulate.
/// Memory depends on active flows and on the events kept, not on the number of frames.
public final class Engine {
    public let options: EngineOptions
    public let context: PluginContext
    public let pipeline: PluginPipeline
    private let packets: PacketDecoder

    public private(set) var stats = CaptureStats()
    /// The one collector of the run's diagnostics: capture readers, packet layers and plugins report
    /// into it, under one per-id limit.
    public let collector: DiagnosticCollector
    /// The first `diagnosticsKeptPerID` diagnostics of each id, in order.
    public var diagnostics: [Diagnostic] { collector.kept }
    /// Every diagnostic counted by id.
    public var diagnosticCounts: [String: Int] { collector.totals }
    public private(set) var events: [PeerEvent] = []
    /// Browse queries kept compactly instead of in `events` when `compactQueries` (see `QueryRuns`).
    public private(set) var queryRuns = QueryRuns()
    /// Keep browse queries in `queryRuns` (set before the first frame; analysis of capture files does).
    /// The events they stand for are those kept without it (`events` merged with `queryRuns`).
    public var compactQueries = false
    /// Open query runs idle this long (capture time) are closed when the coalescer prunes: the next
    /// query of theirs starts a new run (a few bytes more), and the table stays with active queriers.
    public static let queryRunIdle: Nanos = 600 * CaptureTime.second
    private var coalescer: EventCoalescer
    /// Recently kept attribute buffers, shared by kept events that repeat them.
    /// (Repeats come far apart on a crowded network, a host announcing again among thousands of others:
    /// 65,536 slots keep most of them; a slot holds a kept event's buffer, alive anyway.)
    private var attrsSharing = EventAttrsSharing(slotCount: 1 << 16)
    /// Recent browse queries' attribute buffers: a query that opens a query run holds the buffer of an
    /// equal query kept before (a querier asks the same few questions all capture long, and its run is
    /// closed and opened again after each pause), instead of one of its own per run.
    private var queryAttrsSharing = EventAttrsSharing(slotCount: 1 << 16)
    /// Kept events whose attributes took a buffer already held (see `EngineOptions.shareAttributes`).
    public var sharedAttributes: Int { attrsSharing.shared }
    /// Attribute buffers the sharing table holds now (tests: spilling lets them go with each write).
    var sharingTableBuffers: Int { attrsSharing.heldBuffers }
    /// Occurrences folded into earlier events by the coalescer.
    public var foldedEvents: Int { coalescer.folded }

    /// Spilling kept events while decoding (issue 13): once the events kept (and the query runs' members)
    /// pass `thresholdEvents`, they leave the heap for a temporary file (`SpilledEvents`) while decoding
    /// goes on. The engine keeps a window: an event is written once no open coalescer run points at it
    /// (it can no longer change), in sorted writes of at least `windowEvents` (each sorted by time, then
    /// decoding order, which the file merges on reading). Browse queries are plain events from then on.
    /// Reading the file gives exactly the list `finish` would have kept in memory.
    public struct SpillSettings: Sendable {
        /// Where the file goes (never beside the inputs).
        public var directory: String
        /// Spilling starts once more than this many events (query members included) are kept.
        public var thresholdEvents: Int
        /// Only when the query runs hold more events than the list (see `Configuration.spillOnlyQueryHeavy`).
        public var onlyQueryHeavy: Bool
        /// Events the window gathers (beyond those still open) before a write.
        public var windowEvents: Int
        /// The file's write and read buffers.
        public var bufferBytes: Int
        /// Tests: writes fail past this many bytes (a full disk).
        public var failWritesAfter: Int?
        /// Events held before `onlyQueryHeavy` is judged (see `Engine.queryHeavySample`).
        public var queryHeavySample = Engine.queryHeavySample

        public init(directory: String, thresholdEvents: Int, onlyQueryHeavy: Bool, windowEvents: Int, bufferBytes: Int,
                    failWritesAfter: Int? = nil) {
            self.directory = directory
            self.thresholdEvents = thresholdEvents
            self.onlyQueryHeavy = onlyQueryHeavy
            self.windowEvents = windowEvents
            self.bufferBytes = bufferBytes
            self.failWritesAfter = failWritesAfter
        }
    }

    /// Events held before `SpillSettings.onlyQueryHeavy` is judged while decoding (about 8 MB of plain
    /// events): below it the decision is left to the end of decoding, as without spilling while decoding.
    public static let queryHeavySample = 1 << 16

    /// Set before the first frame to spill while decoding (analysis of capture files); nil: never.
    public var spillSettings: SpillSettings?
    /// The events written so far (after `finish`: every kept event, `events` and `queryRuns` empty).
    public private(set) var spilled: SpilledEvents?
    /// Whether spilling began (even if it was given up after a failed write).
    public private(set) var spillTried = false
    /// Why spilling was given up (the events stayed or came back in memory): one line each.
    public private(set) var spillNotes: [String] = []
    /// Why events written could not all be read back after a failed write (they are missing).
    public private(set) var spillReadError: String?
    /// Decoding order (`seq`) of each event of the window (`events`) while spilling.
    private var seqs: [Int] = []
    private var nextSeq = 0
    /// The window is written when it holds this many events.
    private var flushAt = 0

    /// Frames cut by the snapshot length, per input: first and last time, how many.
    private var truncated: [Int: (first: Nanos, last: Nanos, count: Int)] = [:]

    /// Snaplen cuts as capture-loss windows (one per input), sources named by `paths`.
    public func snaplenLosses(paths: [String]) -> [CaptureLoss] {
        truncated.keys.sorted().compactMap { i in
            guard let w = truncated[i] else { return nil }
            return CaptureLoss(reason: .snaplen, start: w.first, end: w.last, count: w.count, source: i < paths.count ? paths[i] : nil)
        }
    }

    /// TCP data acknowledged or skipped over but never captured: one loss per connection (count =
    /// bytes), read once the engine finished.
    public var unseenDataLosses: [CaptureLoss] { packets.unseenDataLosses }
    /// TCP connections of which only one direction was captured (their flow set): read once finished.
    public var oneSidedLosses: [CaptureLoss] { packets.oneSidedLosses }

    private var lastTick: Nanos?
    /// Capture time the coalescer last forgot its finished runs.
    private var lastPrune: Nanos = .min
    private var lastT: Nanos = 0
    private var finished = false

    public init(options: EngineOptions = EngineOptions(), onMessage: @escaping (DecodedMessage) -> Void = { _ in }) {
        var options = options
        // The switch the tests use to show that fast paths change nothing.
        if !DecodeOptions.fastPathsAllowedByEnvironment {
            options.decode.fastPaths = false
            options.packets.sweepByDeadlines = false
        }
        // The bench's serial row: several files read one after the other on the decoding thread.
        if ProcessInfo.processInfo.environment["PEERSCOPE_SERIAL_READING"] == "1" { options.parallelReading = false }
        self.options = options
        coalescer = EventCoalescer(gaps: options.coalesceGaps)
        collector = DiagnosticCollector(keptPerID: options.diagnosticsKeptPerID)
        context = PluginContext(directory: PeerDirectory(), options: options.decode)
        pipeline = PluginPipeline(plugins: options.plugins, context: context)
        packets = PacketDecoder(options: options.packets, diagnostics: collector)
        context.onMessage = onMessage
        context.onDiagnostic = { [unowned self] d in self.record(d) }
        if options.collectEvents {
            context.onEvent = { [unowned self] e in self.collect(e) }
        } else {
            // Nobody keeps events (`decode` prints messages): none is built.
            context.wantsEvents = false
        }
    }

    public var directory: PeerDirectory { context.directory }

    /// Keeps one decoded event: a browse query in its run (when compacting), else through the coalescer.
    private func collect(_ e: PeerEvent) {
        if compactQueries, spilled == nil, e.kind == .browse, coalescer.gaps[e.kind] == nil,
           queryRuns.add(sharingQueryAttributes(e), kept: events.count) {
            // What the coalescer does with an event of a kind it never folds: closes its flow's runs.
            if let flow = e.flow { coalescer.closeRuns(on: flow) }
            return
        }
        let n = events.count
        coalescer.add(e, to: &events)
        // Kept (not folded into a run): its attributes may share a buffer already held.
        if options.shareAttributes, events.count > n { attrsSharing.share(&events[n].attrs) }
        if spilled != nil, events.count > n {
            seqs.append(nextSeq)
            nextSeq &+= 1
        }
    }

    /// `e` holding the buffer of an earlier query with the same attributes, when the table has one
    /// (the event is equal either way).
    private func sharingQueryAttributes(_ e: PeerEvent) -> PeerEvent {
        guard options.shareAttributes else { return e }
        var e = e
        queryAttrsSharing.share(&e.attrs)
        return e
    }

    /// Hands the spilled events over (after `finish`; nil when nothing was spilled) and forgets them.
    public func takeSpilled() -> SpilledEvents? {
        defer { spilled = nil }
        return spilled
    }

    /// Hands the collected events over and forgets them (so they are held once, not twice).
    public func takeEvents() -> [PeerEvent] {
        defer { events = [] }
        return events
    }

    /// Hands the query runs over (after `finish`: settled against the sorted `events`) and forgets them.
    public func takeQueryRuns() -> QueryRuns {
        defer { queryRuns = QueryRuns() }
        return queryRuns
    }

    /// Record a diagnostic from any layer (also used for input problems).
    public func record(_ d: Diagnostic) { collector.record(d) }

    /// Feed one frame (frames must come in capture order across all inputs).
    public func process(_ frame: RawFrame) {
        let t = frame.info.t
        stats.count(frame.info)
        if frame.info.capturedLength < frame.info.originalLength {
            let i = frame.info.input
            if let w = truncated[i] {
                truncated[i] = (min(w.first, t), max(w.last, t), w.count &+ 1)
            } else {
                truncated[i] = (t, t, 1)
            }
        }
        let counted = collector.count
        if t > lastT { lastT = t }
        if let last = lastTick {
            if t &- last >= options.tickInterval {
                tick(t)
            }
        } else {
            lastTick = t
        }
        // The packet layer's diagnostics were counted (and admitted) when found: kept here as they come.
        packets.decode(frame, { [pipeline] unit in pipeline.process(unit) }, { [collector] d in collector.keep(d) })
        if collector.count != counted { stats.framesWithDiagnostics &+= 1 }
        if let s = spillSettings {
            if spilled != nil {
                if events.count >= flushAt { writeWindow(final: false) }
            } else if !spillTried, events.count &+ queryRuns.count > s.thresholdEvents {
                // Query-heavy is judged on a sample large enough to say what the capture is (a group
                // session opens with discovery: its first events are mostly queries).
                if !s.onlyQueryHeavy
                    || (events.count &+ queryRuns.count > s.queryHeavySample && queryRuns.count > events.count) {
                    startSpilling(s)
                }
            }
        }
    }

    // MARK: spilling while decoding

    /// Creates the file and writes what is held: the query runs' members (one sorted write), then the
    /// window. A file that cannot be made leaves everything in memory, with a note.
    private func startSpilling(_ s: SpillSettings) {
        spillTried = true
        let spill: SpilledEvents
        do { spill = try SpilledEvents(directory: s.directory, writeBufferSize: s.bufferBytes) } catch {
            spillNotes.append("\(error.message); keeping the events in memory")
            return
        }
        spill.readBufferSize = s.bufferBytes
        spill.failWritesAfter = s.failWritesAfter
        // Decoding order of what is held: a member's is `pos + seq`; an event's, its index plus the
        // members kept before it (those of `pos <= index`).
        var positions: [Int] = []
        positions.reserveCapacity(queryRuns.count)
        queryRuns.forEachMemberPosition { positions.append($0) }
        positions.sort()
        seqs = []
        seqs.reserveCapacity(events.count)
        var k = 0
        for i in events.indices {
            while k < positions.count, positions[k] <= i { k += 1 }
            seqs.append(i &+ k)
        }
        nextSeq = events.count &+ positions.count
        positions = []
        // The members in order of time, then decoding order, as they come off the runs (never all held
        // as events at once: at the threshold that list and its sort were the decoding stage's peak).
        var failure: SpilledEvents.SpillError?
        spill.beginSortedWrite()
        queryRuns.forEachMemberByTime { e, seq in
            do throws(SpilledEvents.SpillError) { try spill.append(e, seq: seq) } catch {
                failure = error
                return false
            }
            return true
        }
        if let failure {
            spillNotes.append("\(failure.message); keeping the events in memory")
            seqs = []
            return
        }
        spill.endSortedWrite()
        spilled = spill
        queryRuns = QueryRuns()
        // Browse queries are plain events from now on: the runs' table of buffers is of no more use.
        queryAttrsSharing = EventAttrsSharing(slotCount: 1)
        writeWindow(final: false)
    }

    /// Writes the window's events that can no longer change (at the end: all of them) as one sorted write
    /// and keeps the rest. A failed write brings every event back into memory (`takeBack`).
    private func writeWindow(final: Bool) {
        guard let spill = spilled, let s = spillSettings else { return }
        // Events open runs point at may still change: they stay (never pruned here, so that spilling
        // changes nothing in what the coalescer folds).
        let keep = final ? [] : coalescer.openIndexes.filter { $0 < events.count }
        var out: [Int] = []
        out.reserveCapacity(events.count - keep.count)
        var k = 0
        for i in events.indices {
            if k < keep.count, keep[k] == i { k += 1 } else { out.append(i) }
        }
        out.sort { a, b in events[a].t != events[b].t ? events[a].t < events[b].t : seqs[a] < seqs[b] }
        do {
            spill.beginSortedWrite()
            for i in out { try spill.append(events[i], seq: seqs[i]) }
            spill.endSortedWrite()
        } catch {
            takeBack(error.message)
            return
        }
        if final {
            // Every event is in the ended write now (`keep` is empty): a failed flush brings them back
            // from the write buffer, once; the window must not hold them a second time.
            events = []
            seqs = []
            do { try spill.finishWriting() } catch {
                takeBack(error.message)
                return
            }
        }
        events = keep.map { events[$0] }
        seqs = keep.map { seqs[$0] }
        coalescer.moveIndexes { i in
            // `keep` is sorted: the first index holding `i` or more.
            var lo = 0, hi = keep.count
            while lo < hi {
                let mid = lo + (hi - lo) / 2
                if keep[mid] >= i { hi = mid } else { lo = mid + 1 }
            }
            return lo < keep.count && keep[lo] == i ? lo : nil
        }
        flushAt = keep.count &+ max(1, s.windowEvents, keep.count)
        // The events written took their buffers with them: the table would pin them (see `forgetBuffers`).
        attrsSharing.forgetBuffers()
    }

    /// A write failed: the events written come back from the file and join the window, in decoding order
    /// (as if nothing had been spilled), with a note. Spilling stops for this run.
    private func takeBack(_ why: String) {
        guard let spill = spilled else { return }
        spilled = nil
        spill.stopWriting()
        spillNotes.append("\(why); keeping the events in memory")
        var all: [(event: PeerEvent, seq: Int, window: Int)] = []
        all.reserveCapacity(spill.count &+ events.count)
        if !spill.forEachWithSeq({ e, seq in all.append((e, seq, -1)) }) {
            spillReadError = spill.readError
        }
        spill.close()
        for (i, e) in events.enumerated() { all.append((e, seqs[i], i)) }
        all.sort { $0.seq < $1.seq }
        var place = [Int](repeating: -1, count: events.count)
        for (j, x) in all.enumerated() where x.window >= 0 { place[x.window] = j }
        events = all.map(\.event)
        all = []
        seqs = []
        coalescer.moveIndexes { i in i < place.count && place[i] >= 0 ? place[i] : nil }
    }

    private func tick(_ t: Nanos) {
        lastTick = t
        packets.advance(to: t, { [pipeline] unit in pipeline.process(unit) }, { [collector] d in collector.keep(d) })
        pipeline.tick(t)
        if lastPrune == .min || t &- lastPrune >= options.coalescerPruneInterval {
            lastPrune = t
            coalescer.prune(at: t, events: events)
            queryRuns.closeIdle(at: t, idle: Engine.queryRunIdle)
        }
    }

    /// End of input: flush flows and plugin timers at the last capture time.
    public func finish() {
        guard !finished else { return }
        finished = true
        packets.finish(at: lastT, { [pipeline] unit in pipeline.process(unit) }, { [collector] d in collector.keep(d) })
        pipeline.finish(lastT)
        stats.plugins = pipeline.framesPerPlugin
        stats.undecoded = pipeline.unclaimed
        // Spilling: the whole window goes (nothing can change any more).
        if spilled != nil { writeWindow(final: true) }
        // Plugins may report timer events (expiry) after later frames: keep events in time order.
        let preSort = Engine.sortByTimeKeepingOrder(&events, wanted: !queryRuns.isEmpty)
        // The runs' members go where the sort put their neighbours (see `QueryRuns`).
        queryRuns.settle(events: events, preSort: preSort)
    }

    /// Stable sort by time, in place: the events are moved, never copied into a second list (a large
    /// capture's events are most of the memory; sorting `enumerated()` held them three times). Events
    /// come nearly in order, so a list already in order costs one pass.
    public static func sortByTime(_ events: inout [PeerEvent]) {
        _ = sortByTimeKeepingOrder(&events, wanted: false)
    }

    /// `sortByTime`, returning (when `wanted` and the sort moved anything) each sorted event's index
    /// before the sort.
    static func sortByTimeKeepingOrder(_ events: inout [PeerEvent], wanted: Bool) -> [Int]? {
        var sorted = true
        for i in events.indices.dropFirst() where events[i - 1].t > events[i].t {
            sorted = false
            break
        }
        if sorted { return nil }
        // The order as positions (stable: ties keep their place), then applied cycle by cycle.
        var order = Array(events.indices)
        order.sort { a, b in
            let ta = events[a].t, tb = events[b].t
            return ta != tb ? ta < tb : a < b
        }
        let kept = wanted ? order : nil
        for start in order.indices where order[start] != start {
            // Position i takes the event at order[i]; marks a placed position with order[i] == i.
            var i = start
            let first = events[start]
            while order[i] != start {
                let from = order[i]
                events[i] = events[from]
                order[i] = i
                i = from
            }
            events[i] = first
            order[i] = i
        }
        return kept
    }
}

extension DecodeOptions {
    /// False when `PEERSCOPE_NO_FAST_PATHS=1`: the switch the tests use to show that fast paths (and
    /// `decode`'s repeated-message cache) change nothing. Read here only (Core reads no environment).
    public static var fastPathsAllowedByEnvironment: Bool {
        ProcessInfo.processInfo.environment["PEERSCOPE_NO_FAST_PATHS"] != "1"
    }
}
