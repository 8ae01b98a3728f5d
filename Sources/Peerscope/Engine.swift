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
    /// Occurrences folded into earlier events by the coalescer.
    public var foldedEvents: Int { coalescer.folded }

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
        if compactQueries, e.kind == .browse, coalescer.gaps[e.kind] == nil, queryRuns.add(sharingQueryAttributes(e), kept: events.count) {
            // What the coalescer does with an event of a kind it never folds: closes its flow's runs.
            if let flow = e.flow { coalescer.closeRuns(on: flow) }
            return
        }
        let n = events.count
        coalescer.add(e, to: &events)
        // Kept (not folded into a run): its attributes may share a buffer already held.
        if options.shareAttributes, events.count > n { attrsSharing.share(&events[n].attrs) }
    }

    /// `e` holding the buffer of an earlier query with the same attributes, when the table has one
    /// (the event is equal either way).
    private func sharingQueryAttributes(_ e: PeerEvent) -> PeerEvent {
        guard options.shareAttributes else { return e }
        var e = e
        queryAttrsSharing.share(&e.attrs)
        return e
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
