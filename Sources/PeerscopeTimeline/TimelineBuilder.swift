import PeerscopeCore

/// The run's events, held once: resolved events refer to them by index (a large capture's events
/// are not copied into the resolved list).
final class EventStore: @unchecked Sendable {
    /// The events, in memory of the store's own, read and written in place through `events` and
    /// `writable`.
    private let slot: UnsafeMutablePointer<StoreEvents>
    /// The events, read in place. Read-only storage is borrowed where it is: a class's stored `var`
    /// of this struct was copied (each of its references retained, then released) at every read of
    /// one field through `ResolvedEvent`, several times per event in each detector (issue 13).
    var events: StoreEvents { unsafeAddress { UnsafePointer(slot) } }
    /// The events' place, for single-field reads that copy nothing (`PackedEvents.t(in:_:)`).
    var reading: UnsafePointer<StoreEvents> { UnsafePointer(slot) }
    /// The events, for the builder's writes: only while the timeline is built (read-only once
    /// `Timelines` exists).
    var writable: StoreEvents {
        unsafeAddress { UnsafePointer(slot) }
        unsafeMutableAddress { slot }
    }

    private init(holding events: consuming StoreEvents) {
        slot = .allocate(capacity: 1)
        slot.initialize(to: events)
    }

    /// The store of `events` (packed, see `PackedEvents`).
    convenience init(_ events: [PeerEvent]) { self.init(holding: StoreEvents(events)) }
    /// An empty store grown by appending.
    convenience init() { self.init(holding: StoreEvents()) }
    /// An empty store whose events' attributes stay in `file`, the spill they are read from (see
    /// `PackedEvents.init(attributesIn:)`): the store holds the file open as long as it lives.
    convenience init(attributesIn file: SpilledEvents) { self.init(holding: StoreEvents(attributesIn: file)) }

    deinit {
        slot.deinitialize(count: 1)
        slot.deallocate()
    }
}

/// The store's events: packed (88 bytes an event instead of 120: kind and plugin as one label) in
/// fixed-size chunks, so growing never copies the events already kept nor holds an old and a new
/// buffer at once (see `PackedEvents`).
typealias StoreEvents = PackedEvents

/// An event with its sides resolved to peers and its session instance, and what that instance had
/// reached just before the event (detectors judge events against it).
///
/// Stored compactly (16 bytes; a long capture keeps millions): the sides and session are one box
/// (`Sides`, one per distinct triple in a build), which also holds the store the event is read from
/// (one per build: a pointer in every event was 8 of its 24 bytes, issue 13), the three flags one byte.
public struct ResolvedEvent: Sendable {
    /// The builder's boxes of the two peers and the instance, shared by the events naming all three,
    /// and the store of the events (the build's one store: boxes are compared with it by identity).
    struct Sides: Hashable, Sendable {
        var from: Shared<PeerRef>?
        var to: Shared<PeerRef>?
        var session: Shared<SessionKey>?
        let store: EventStore

        static func == (a: Sides, b: Sides) -> Bool {
            a.from == b.from && a.to == b.to && a.session == b.session && a.store === b.store
        }

        func hash(into h: inout Hasher) {
            h.combine(from)
            h.combine(to)
            h.combine(session)
            h.combine(ObjectIdentifier(store))
        }
    }

    var sides: Shared<Sides>
    let index: Int32
    /// The state the timeline gave the event (after upgrades such as `gck-connected`).
    public let state: TimelineState
    let flags: UInt8
    /// The event's kind as `EventCatalogue.code(of:)` gives it (0: not a built-in kind, read from the
    /// store): the kind read without the event's record or the store (issue 13).
    let kindCode: UInt16
    /// The store the event is read from.
    var store: EventStore { sides.value.store }
    public var establishedBefore: Bool { flags & 1 != 0 }
    public var secureBefore: Bool { flags & 2 != 0 }
    public var dtlsStartedBefore: Bool { flags & 4 != 0 }
    var fromBox: Shared<PeerRef>? { sides.value.from }
    var toBox: Shared<PeerRef>? { sides.value.to }
    var sessionBox: Shared<SessionKey>? { sides.value.session }

    /// An event of `sides.value.store`.
    init(index: Int, sides: Shared<Sides>, kind: EventKind, state: TimelineState, establishedBefore: Bool,
         secureBefore: Bool, dtlsStartedBefore: Bool) {
        self.index = Int32(truncatingIfNeeded: index)
        kindCode = EventCatalogue.code(of: kind)
        self.sides = sides
        self.state = state
        flags = (establishedBefore ? 1 : 0) | (secureBefore ? 2 : 0) | (dtlsStartedBefore ? 4 : 0)
    }

    /// The event, read back from the store (`e.attrs`, `e[.key]`, `e.t` read single fields in place).
    public var event: PeerEvent { StoreEvents.event(in: store.reading, Int(index)) }
    public var from: PeerRef? { fromBox?.value }
    public var to: PeerRef? { toBox?.value }
    public var session: SessionKey? { sessionBox?.value }
    public var t: Nanos { StoreEvents.t(in: store.reading, Int(index)) }
    public var kind: EventKind {
        kindCode != 0 ? EventCatalogue.kindsByCode[Int(kindCode)] : StoreEvents.kind(in: store.reading, Int(index))
    }
    public var evidence: Evidence { StoreEvents.evidence(in: store.reading, Int(index)) }
    public var flow: FlowKey? { StoreEvents.flow(in: store.reading, Int(index)) }
    // Single fields of the event, read in place: `event` builds the whole event (a retain per
    // shared field), which detectors looping over every event should not pay.
    public var lastT: Nanos { StoreEvents.lastT(in: store.reading, Int(index)) }
    public var lastEvidence: Evidence? { StoreEvents.lastEvidence(in: store.reading, Int(index)) }
    public var source: String { StoreEvents.source(in: store.reading, Int(index)) }
    public var count: Int { StoreEvents.count(in: store.reading, Int(index)) }
    /// The event's hints (who it names), before resolution.
    public var fromHint: PeerHint { StoreEvents.from(in: store.reading, Int(index)) }
    public var toHint: PeerHint { StoreEvents.to(in: store.reading, Int(index)) }
    public var quotedFlow: FlowKey? { kind == .icmpUnreachable ? flow : nil }
    public var attrs: EventAttrs { StoreEvents.attrs(in: store.reading, Int(index)) }
    public subscript<V>(_ a: EventAttribute<V>) -> V? { StoreEvents.attrs(in: store.reading, Int(index))[a] }
    public var pair: PeerPair? { session?.pair ?? ((from != nil && to != nil) ? from.flatMap { f in to.map { PeerPair(f, $0) } } : nil) }
}

/// One peer's timeline.
public struct PeerTimeline: Sendable {
    public var peer: PeerInfo
    public var entries: [TimelineEntry]
    /// Zeek-style history over all of the peer's entries (see `HistoryBuilder` for the letters).
    public var history: String
    public var sessions: [SessionKey]
}

/// Everything the timeline stage produced.
public struct Timelines: Sendable {
    /// Sorted by label, then identity.
    public var peers: [PeerTimeline]
    /// Sorted by start time.
    public var sessions: [SessionInstance]
    /// Every event, time-ordered, resolved.
    public var events: [ResolvedEvent]
    public var start: Nanos?
    /// End of input (capture time): open timers and sessions are judged against it.
    public var end: Nanos
    public var resolver: PeerResolver
    /// The identity facts folded from the `identity.*` events (which are not in `events`).
    public var identities: PeerIdentities
    /// Where each peer's timeline is in `peers`, and each instance in `sessions` (see `PositionTable`).
    var index: PositionTable<PeerRef>
    var sessionIndex: PositionTable<SessionKey>

    /// `peers` and `sessions` are sorted in place (see `sortInPlace`).
    init(peers: consuming [PeerTimeline], sessions: consuming [SessionInstance], events: [ResolvedEvent], start: Nanos?, end: Nanos,
         resolver: PeerResolver, identities: PeerIdentities) {
        var peers = peers
        sortInPlace(&peers) { PeerInfo.sortsBefore($0.peer, $1.peer) }
        self.peers = peers
        var sessions = sessions
        sortInPlace(&sessions) { ($0.start, $0.key) < ($1.start, $1.key) }
        self.sessions = sessions
        self.events = events
        self.start = start
        self.end = end
        self.resolver = resolver
        self.identities = identities
        let sortedPeers = peers, sortedSessions = sessions
        index = PositionTable<PeerRef>(count: sortedPeers.count) { i in sortedPeers[i].peer.ref }
        sessionIndex = PositionTable<SessionKey>(count: sortedSessions.count) { i in sortedSessions[i].key }
    }

    /// The spill file the events' attributes are read from (`PackedEvents.init(attributesIn:)`), when
    /// they are: it stays open while these timelines (and a copy of the events) live. Its
    /// `recordReadError` says whether a read since the timelines were built failed.
    public var attributesFile: SpilledEvents? { events.first?.store.events.attributesFile }

    public static let empty = Timelines(peers: [], sessions: [], events: [], start: nil, end: 0,
                                        resolver: PeerResolver(identities: PeerIdentities()), identities: PeerIdentities())

    public func timeline(_ r: PeerRef) -> PeerTimeline? { peerPosition(r).map { peers[$0] } }
    public func peer(_ r: PeerRef) -> PeerInfo? { peerPosition(r).map { peers[$0].peer } }
    public func session(_ k: SessionKey) -> SessionInstance? {
        sessionIndex.position(of: k) { sessions.indices.contains($0) ? sessions[$0].key : nil }.map { sessions[$0] }
    }

    /// Where `r`'s timeline is in `peers` (a list edited since these timelines were made finds what it holds still in place).
    func peerPosition(_ r: PeerRef) -> Int? {
        index.position(of: r) { peers.indices.contains($0) ? peers[$0].peer.ref : nil }
    }

    /// The display label of a peer ("unknown" for nil).
    public func label(_ r: PeerRef?) -> String {
        guard let r else { return "unknown" }
        return peer(r)?.label ?? PeerInfo(ref: r).label
    }

    public func idString(_ r: PeerRef?) -> String? {
        guard let r else { return nil }
        return peer(r)?.idString ?? PeerInfo(ref: r).idString
    }

    /// The instances of one pair, in order.
    public func sessions(of pair: PeerPair) -> [SessionInstance] { sessions.filter { $0.pair == pair } }
}

/// `a` ordered by `less` (a strict total order on its elements, as the timelines' keys are) in its own
/// buffer: the order is found on an index list and the elements moved into it along its cycles. A sorted
/// copy of a large list of large elements (25,695 peer timelines of 200 bytes on the 1 GB mDNS file)
/// and the sort's merge buffer were megabytes of fresh pages at the end of the timeline stage (issue 13).
func sortInPlace<T>(_ a: inout [T], by less: (T, T) -> Bool) {
    guard a.count > 1 else { return }
    var order = Array(a.indices)
    order.sort { less(a[$0], a[$1]) }
    // Position i takes the element at order[i]; each cycle of the permutation is followed once.
    var placed = [Bool](repeating: false, count: a.count)
    for start in a.indices where !placed[start] {
        let first = a[start]
        var i = start
        while true {
            placed[i] = true
            let j = order[i]
            if j == start {
                a[i] = first
                break
            }
            a[i] = a[j]
            i = j
        }
    }
}

/// `a` in a buffer of its own size when its capacity is well beyond it (an array grown by doubling).
func exactlySized<T>(_ a: [T]) -> [T] {
    guard a.capacity - a.count > a.count / 16 else { return a }
    var exact: [T] = []
    exact.reserveCapacity(a.count)
    exact.append(contentsOf: a)
    return exact
}

private func < (x: (String, PeerRef), y: (String, PeerRef)) -> Bool { x.0 != y.0 ? x.0 < y.0 : x.1 < y.1 }
private func < (x: (Nanos, SessionKey), y: (Nanos, SessionKey)) -> Bool { x.0 != y.0 ? x.0 < y.0 : x.1 < y.1 }

/// Builds per-peer timelines and session instances from a time-ordered stream of peer events.
/// Events are collected by `add` and resolved in `finish`, so a log line that names only a
/// participant resolves to a peer whose ID a later packet revealed.
public final class TimelineBuilder {
    /// Traffic after a finished instance opens a new one only when it comes this long after the end
    /// (stragglers of the old session attach to it instead).
    public var reopenGap: Nanos = 5 * CaptureTime.second
    /// Packets of an instance in flight when its successor began: traffic this soon after the
    /// successor's first packet does not keep the older instance alive.
    public var supersedeGrace: Nanos = CaptureTime.second
    /// A GCK Hello starts a new instance on an established pair when an ICE check came this shortly
    /// before it and no other Hello came this shortly before it (a fresh ICE + GCK handshake).
    public static let freshHandshakeWindow: Nanos = 3 * CaptureTime.second
    /// Tie log inputs to the peer that wrote them when the packets make it unambiguous.
    public var inferLogOwners = true
    /// Fold browse queries that continue a run into one resolved event (see `BrowseFolds`; the
    /// timelines are the same either way), at most `browseFoldGap` apart (analysis sets it no longer
    /// than `keepalive-timeout.capture-gap`).
    public var foldBrowseQueries = true
    public var browseFoldGap: Nanos = 300 * CaptureTime.second
    /// `finish` moves what the timelines keep out of the freed working state's way (see
    /// `TimelineBuilder+Compaction.swift`); false keeps every piece where it was built (tests compare).
    var relocatesOnFinish = true
    /// On a spilled input (`add(spilled:)`), the resolved events' attributes stay in the file and are
    /// read from it when asked for (see `finish(spilled:at:)`); false copies them into the store (tests compare).
    var attributesStayInSpill = true
    /// On a spilled input, browse folds no later query can continue are let go while resolving (see
    /// `BrowseFolds.dropExpired`); false keeps them to the end (tests compare).
    var dropsExpiredFolds = true
    /// How many folds the last spilled build let go early, and the table size from which it looks (tests).
    var expiredFoldsDropped = 0
    var expiredFoldsFloor = 4096
    /// Set while entries are made from events whose attributes stay in a spill file: entries' details
    /// keep only the detail keys, shared (see `detail(_:)`).
    var detailSharing: EventAttrsSharing?

    /// What decoding learnt about peers: folded from the `identity.*` events added (and any given).
    var identities: PeerIdentities
    var pending: [PeerEvent] = []
    /// Browse queries held compactly beside `pending` (see `QueryRuns`: they stand for events in it).
    var pendingRuns = QueryRuns()
    /// Events spilled to a temporary file (see `add(spilled:)`).
    var pendingSpill: SpilledEvents?

    /// A builder whose identity facts come with the events (`identity.*`), as decoding emits them.
    public init() { identities = PeerIdentities() }

    /// A builder that also knows `identities` (tests; facts among the events are added to them).
    public init(identities: PeerIdentities) {
        self.identities = identities
    }

    public func add(_ e: PeerEvent) { pending.append(e) }
    public func add(contentsOf es: [PeerEvent]) {
        // Adopting the caller's buffer (no copy) when nothing is pending: analysis hands over all
        // its events at once and keeps no other reference.
        if pending.isEmpty { pending = es } else { pending.append(contentsOf: es) }
    }

    /// Adds a decoded list held partly in query runs (`EventTrace.events` and `queryRuns`): the events
    /// the runs stand for are resolved one by one in their places, as if `es` held them all.
    public func add(contentsOf es: [PeerEvent], queryRuns: QueryRuns) {
        guard !queryRuns.isEmpty else { add(contentsOf: es); return }
        if !pendingRuns.isEmpty || !pending.isEmpty {
            // A second list: both as plain events (the runs' places are in their own list).
            pending = pendingRuns.merged(pending) + queryRuns.merged(es)
            pendingRuns = QueryRuns()
            return
        }
        pending = es
        pendingRuns = queryRuns
    }

    /// Why events added with `add(spilled:)` could not all be read back (their file cut short or
    /// unreadable), once `finish` has read them: the timelines miss those events, and the caller says so.
    public private(set) var spillReadErrors: [String] = []

    /// Adds events held in a temporary file (`SpilledEvents`, in time order): `finish` reads them back in
    /// passes instead of holding them (see `finish(spilled:at:)`). Analysis adds nothing else then.
    public func add(spilled: SpilledEvents) {
        if let earlier = pendingSpill {
            // A second file (never from analysis): the first one's events as a list.
            if !earlier.forEach({ pending.append($0) }), let why = earlier.readError { spillReadErrors.append(why) }
        }
        pendingSpill = spilled
    }

    // MARK: working state

    /// The words first, the three one-byte fields together at the end (Swift lays fields out in the
    /// order declared): 40 bytes, not 56 with a byte before the kind and between the boxes. A peer's
    /// runs table holds one per open run (issue 13: 25,695 peers' tables on the 1 GB mDNS file).
    struct RunKey: Hashable {
        var kind: EventKind
        var counterpart: Shared<PeerRef>?
        var session: Shared<SessionKey>?
        var state: TimelineState
        var sent: Bool
        /// Log lines and frames fold into separate runs, so a run's first and last evidence stay
        /// from one source and a merged timeline shows both.
        var fromLog: Bool

        init(state: TimelineState, kind: EventKind, sent: Bool, counterpart: Shared<PeerRef>?, session: Shared<SessionKey>?,
             fromLog: Bool) {
            self.kind = kind
            self.counterpart = counterpart
            self.session = session
            self.state = state
            self.sent = sent
            self.fromLog = fromLog
        }
    }

    final class PeerWork {
        init(info: PeerInfo) {
            self.info = info
            // The peer's addresses are gathered in `addresses` (`touch` adds a bare address's own) and
            // given to the info at `finish`: no list of one for each peer known by address (22,000 on the
            // 1 GB mDNS file, 1.8 MB at the stage's peak, issue 13).
            self.info.addresses = []
            box = Shared(info.ref)
        }
        var info: PeerInfo
        /// The peer as entries and resolved events name it (one box per peer).
        let box: Shared<PeerRef>
        var entries: [TimelineEntry] = []
        /// The entries' shared counterpart-and-session boxes, by the identities of the two boxes.
        var links = SmallMap<LinkKey, Shared<TimelineEntry.Link>>()
        struct LinkKey: Hashable {
            var counterpart: ObjectIdentifier?
            var session: ObjectIdentifier?
        }
        var history = HistoryBuilder()
        var runs = SmallMap<RunKey, Int>()
        var sessions: [SessionKey] = []
        var sessionSet: Set<SessionKey> = []
        var addresses = SmallSet<IPAddress>()
        var endpoints = SmallSet<Endpoint>()
    }

    /// Which peers of an instance's pair did something (sent GCK, a ChangeCipherSpec...): two flags,
    /// not a set per instance and question (the peers are the pair's, whose events the instance
    /// takes; any other peer would still be counted, in a set).
    struct PairSides {
        private var bits: UInt8 = 0
        private var others: Set<PeerRef> = []

        mutating func insert(_ r: PeerRef, of pair: PeerPair) {
            if r == pair.a { bits |= 1 } else if r == pair.b { bits |= 2 } else { others.insert(r) }
        }

        func contains(_ r: PeerRef, of pair: PeerPair) -> Bool {
            if r == pair.a { return bits & 1 != 0 }
            if r == pair.b { return bits & 2 != 0 }
            return others.contains(r)
        }

        var count: Int { bits.nonzeroBitCount + others.count }

        func isDisjoint(with o: PairSides) -> Bool { bits & o.bits == 0 && others.isDisjoint(with: o.others) }
    }

    final class SessionWork {
        init(instance: SessionInstance) {
            self.instance = instance
            keyBox = Shared(instance.key)
        }
        var instance: SessionInstance
        /// The instance as entries and resolved events name it (one box per instance).
        let keyBox: Shared<SessionKey>
        var history = HistoryBuilder()
        var gckFrom = PairSides()
        var ccsFrom = PairSides()
        var secure = false
        var dtlsStarted = false
        /// UDP flows (canonical) the instance's packets used, with the last time and evidence on each.
        var udpLast: [FlowKey: (t: Nanos, evidence: Evidence)] = [:]
        /// Per UDP flow, the first packet after the successor began (beyond the grace period).
        var firstAfterSuccessor: [FlowKey: (t: Nanos, evidence: Evidence)] = [:]
        /// Invitation channels (canonical TCP flows) and invite IDs of the instance.
        var inviteFlows: Set<FlowKey> = []
        var inviteIDs: Set<String> = []
        /// Who sent plaintext GCK and who sent DTLS (frames), and when each began.
        var plaintextFrom = PairSides()
        var dtlsFrom = PairSides()
        var firstPlaintext: Nanos?
        var firstDTLS: Nanos?
        var lastICERequest: Nanos?
        var lastGCKHello: Nanos?
        /// Index of the instance that started while this one was open (see `SessionInstance.supersededBy`).
        var successor: Int?
        var predecessor: Int?
    }

    /// The peers' working state by ref (the ref their box holds), in the order first seen.
    var peers = KeyedObjects<PeerRef, PeerWork> { $0.box.value }
    /// The resolved events' shared sides boxes, by the identities of the three boxes (see `sides`).
    var sidesBoxes = KeyedObjects<SidesKey, Shared<ResolvedEvent.Sides>> { SidesKey($0.value) }
    struct SidesKey: Hashable {
        var from: ObjectIdentifier?
        var to: ObjectIdentifier?
        var session: ObjectIdentifier?

        init(from: ObjectIdentifier?, to: ObjectIdentifier?, session: ObjectIdentifier?) {
            self.from = from
            self.to = to
            self.session = session
        }

        /// The key of a sides box.
        init(_ sides: ResolvedEvent.Sides) {
            self.init(from: sides.from.map(ObjectIdentifier.init), to: sides.to.map(ObjectIdentifier.init),
                      session: sides.session.map(ObjectIdentifier.init))
        }
    }

    /// The shared box of a resolved event's sides (the builder's own peer and instance boxes) and
    /// `store` (the one store of the build: the table holds the boxes of one store).
    func sides(_ from: Shared<PeerRef>?, _ to: Shared<PeerRef>?, _ session: Shared<SessionKey>?,
               _ store: EventStore) -> Shared<ResolvedEvent.Sides> {
        let key = SidesKey(from: from.map(ObjectIdentifier.init), to: to.map(ObjectIdentifier.init),
                           session: session.map(ObjectIdentifier.init))
        if let box = sidesBoxes[key], box.value.store === store { return box }
        let box = Shared(ResolvedEvent.Sides(from: from, to: to, session: session, store: store))
        sidesBoxes.insert(box)
        return box
    }

    /// The link of every entry without counterpart and session, shared by all peers (discovery entries:
    /// on a crowded network most peers have no other; a box and a one-element table per peer were 3.9 MB
    /// at the 1 GB mDNS file's peak, issue 13). It names no builder box, so it is not relocated.
    let unlinked = Shared(TimelineEntry.Link(counterpart: nil, session: nil))

    /// The entries' shared kind-and-plugin boxes (see `origin(_:)`).
    var origins: [TimelineEntry.Origin: Shared<TimelineEntry.Origin>] = [:]
    var lastOrigin: Shared<TimelineEntry.Origin>?
    var sessions: [SessionWork] = []
    var latest: [PeerPair: Int] = [:]
    var counts: [PeerPair: Int] = [:]
    /// The pairs each peer is in (`inOpenSession` looks at these, not at every pair).
    var pairsOf: [PeerRef: [PeerPair]] = [:]

    /// What the event does to its pair's session, as the event catalogue declares it.
    func role(_ e: PeerEvent) -> SessionRole { EventCatalogue.role(e) }

    public func finish(at end: Nanos? = nil) -> Timelines {
        if let spill = pendingSpill {
            pendingSpill = nil
            // The passes read the file in its order: a list out of time order is sorted as a list is.
            if pending.isEmpty, pendingRuns.isEmpty, spill.inTimeOrder {
                let timelines = finish(spilled: spill, at: end)
                if let why = spill.readError { spillReadErrors.append(why) }
                return timelines
            }
            // Events added both ways, or out of time order (never by analysis): all of them as one list.
            pending = pendingRuns.merged(pending)
            pendingRuns = QueryRuns()
            if !spill.forEach({ pending.append($0) }), let why = spill.readError { spillReadErrors.append(why) }
        }
        // Normalised in place (the list can be large: no second copy).
        var events = pending
        pending = []
        // Browse queries held in runs (`QueryRuns`) stand for events in the list: every step below
        // sees them in their places, through the runs (a run's members share all but time and frame).
        var runs = pendingRuns
        pendingRuns = QueryRuns()
        // Identity facts are folded into the one identity model, not timeline steps (in place: the
        // list can be large). The runs hold none (they are browse queries).
        var facts = 0
        for i in events.indices where identities.add(events[i]) { facts += 1 }
        // The list the decoders grew by doubling is copied once, exactly sized and without the facts,
        // when that saves memory (a large capture's slack is tens of MB); the old buffer goes at once.
        if facts > 0 || events.capacity - events.count > events.count / 8 {
            var exact: [PeerEvent] = []
            exact.reserveCapacity(events.count - facts)
            var removed: [Int] = []
            for i in events.indices {
                if facts == 0 || !events[i].kind.isIn("identity") { exact.append(events[i]) } else if !runs.isEmpty { removed.append(i) }
            }
            events = consume exact
            runs.removeEvents(at: removed)
        }
        for i in events.indices { PeerResolver.normalizeHints(&events[i]) }
        runs.updateTemplates(PeerResolver.normalizeHints)
        // By index: a pair of copied events per step retains every shared field of both.
        if !events.indices.dropFirst().allSatisfy({ events[$0 - 1].t <= events[$0].t }) {
            // Not from the engine (its list is sorted, the runs placed in it): the list as a whole.
            if !runs.isEmpty {
                events = runs.merged(events)
                runs = QueryRuns()
            }
            // Stable: events with equal times keep their input order.
            let order = events.indices.sorted { events[$0].t != events[$1].t ? events[$0].t < events[$1].t : $0 < $1 }
            events = order.map { events[$0] }
        }
        if !runs.isEmpty, runs.count <= events.count {
            // Fewer members than kept events (discovery among much other traffic, as on the group
            // file): the list the runs stand for is built once, before any timeline entry exists, and
            // the store packs it. The store built one event at a time below would hold this input and a
            // second copy of the events together while the timelines grow; it pays when members
            // outnumber the events.
            events = runs.merged(events)
            runs = QueryRuns()
        }
        var resolver = runs.isEmpty ? PeerResolver(identities: identities, events: events)
            : PeerResolver(identities: identities, events: runs.mergedSequence(events))
        // Log owners are read from log lines and non-discovery events: never a run's members.
        resolver.identifyLogOwners(events)
        if inferLogOwners { resolver.inferLogOwners(events) }
        var resolved: [ResolvedEvent] = []
        let endT = max(end ?? Nanos.min, runs.lastT.map { max($0, events.last?.t ?? $0) } ?? events.last?.t ?? 0)
        // The folds' scan looks for log lines and ICMP errors: never a run's members.
        var folds = BrowseFolds(enabled: foldBrowseQueries, gap: browseFoldGap, events: events)
        let store: EventStore
        let foldedMost: Bool
        if runs.isEmpty {
            // The events are packed into the store and the list goes before any entry exists (the
            // entries then grow beside 88 bytes an event, not 120); resolving may annotate one in
            // place (a `note`).
            store = EventStore(events)
            events = []
            resolved.reserveCapacity(store.events.count)
            for i in store.events.indices {
                // The store is compacted in place: kept event `resolved.count` is the next slot.
                if let r = resolveStep(i, into: resolved.count, store, resolver, &folds) { resolved.append(r) }
            }
            store.writable.keepFirst(resolved.count)
            foldedMost = folds.folded > resolved.count
        } else {
            // The merged list, one event at a time, into a store that keeps only what is not folded.
            store = EventStore()
            runs.forEachMerged(events) { e in
                let k = resolved.count
                store.writable.append(e)
                if let r = resolveStep(k, into: k, store, resolver, &folds) { resolved.append(r) } else { store.writable.removeLast() }
            }
            events = []
            runs = QueryRuns()
            foldedMost = true
        }
        folds.open = [:]
        return finishResolved(store: store, resolved: consume resolved, resolver: resolver, endT: endT, foldedMost: foldedMost)
    }

    /// The end of `finish`, once every event is resolved: the working state goes, what stays is kept.
    /// `resolved` is consumed: the callers give up their list, so it is edited in place and freed at
    /// `shrink` (a borrowed list copied here stayed held, whole, through the stage's peak).
    func finishResolved(store: EventStore, resolved: consuming [ResolvedEvent], resolver: PeerResolver, endT: Nanos,
                        foldedMost: Bool) -> Timelines {
        settleSuperseded()
        // The working state goes before what stays is moved out of its way (see
        // `TimelineBuilder+Compaction.swift`): the copies then take the room it leaves instead of growing
        // the heap past it, and the pages of the old pieces go back. Nothing below reads it.
        latest = [:]
        counts = [:]
        pairsOf = [:]
        origins = [:]
        lastOrigin = nil
        for w in peers.objects {
            w.runs = [:]
            w.sessionSet = []
        }
        var relocation = relocatesOnFinish ? relocateBoxes() : Relocation()
        if !relocatesOnFinish {
            for w in peers.objects { w.links = [:] }
            sidesBoxes.removeAll()
        }
        func keep<T>(_ a: [T]) -> [T] { relocatesOnFinish ? relocated(a) : exactlySized(a) }
        func keep(_ s: String) -> String { relocatesOnFinish ? relocated(s) : s }
        // Each instance's working state goes as soon as the instance is out.
        var instances: [SessionInstance] = []
        instances.reserveCapacity(sessions.count)
        while let w = sessions.popLast() {
            var s = w.instance
            TimelineBuilder.classifyPlane(w, &s)
            s.history = keep(w.history.text)
            s.milestones = keep(s.milestones)
            if !relocation.peers.isEmpty {
                for i in s.milestones.indices { s.milestones[i].byBox = relocation.peer(s.milestones[i].byBox) }
            }
            s.overlappingAttempts = keep(s.overlappingAttempts)
            instances.append(s)
        }
        instances.reverse()
        if !relocation.sides.isEmpty {
            for i in resolved.indices { resolved[i].sides = relocation.sides(resolved[i].sides) }
            relocation.sides = BoxMap()
        }
        if foldedMost { TimelineBuilder.shrink(store, &resolved) }
        // Each peer's working state goes as soon as its timeline is made (the table first): the copies
        // then take its room instead of growing the heap past the end of resolving (the stage's peak on
        // the 1 GB mDNS file, issue 13). The timelines are sorted below, whatever order they come in.
        var works = peers.objects
        peers.removeAll()
        var peerTimelines: [PeerTimeline] = []
        peerTimelines.reserveCapacity(works.count)
        while let w = works.popLast() {
            if case .id(let id) = w.info.ref, let entry = identities.entries[id] {
                if w.info.displayName == nil, let n = entry.displayName, !n.isEmpty { w.info.displayName = n }
                w.addresses.formUnion(entry.addresses)
                w.endpoints.formUnion(entry.endpoints)
            }
            var info = w.info
            // A link-local address seen with its interface (`fe80::1%awdl0`) and without is one address.
            let scopedTwins = Set(w.addresses.filter { $0.isLinkLocal && $0 != $0.unscoped }.map(\.unscoped))
            info.addresses = w.addresses.filter { !scopedTwins.contains($0) || $0 != $0.unscoped }.sorted()
            info.endpoints = w.endpoints.sorted()
            // The peer is finished: its entries are kept exactly sized (they grew by a quarter at a time),
            // with new link boxes (its own) when relocating.
            var entries = keep(w.entries)
            w.entries = []
            if relocatesOnFinish {
                let links = relocation.links(of: w)
                for i in entries.indices { entries[i].link = links[ObjectIdentifier(entries[i].link)] ?? entries[i].link }
            }
            peerTimelines.append(PeerTimeline(peer: info, entries: entries, history: keep(w.history.text), sessions: keep(w.sessions)))
        }
        relocation = Relocation()
        return Timelines(peers: consume peerTimelines, sessions: consume instances, events: resolved, start: store.events.isEmpty ? nil : store.events.t(0),
                         end: endT, resolver: resolver, identities: identities)
    }
}
