/// Browse queries held compactly between decoding and the timeline stage (issue 13).
///
/// On a crowded network most kept events are browse queries (`discovery.browse`: three quarters of
/// the events of the bench's mDNS files), each host repeating the same few questions for as long as the
/// capture lasts. As `PeerEvent`s they cost 120 bytes each plus their attributes, and their number
/// grows with the capture's length. Here a query that repeats an earlier one in everything but its
/// time and frame (same kind, hints, flow, plugin and attributes, a single occurrence from a frame of
/// the same input) is stored as a few bytes in that earlier query's **run**: its time, frame and place
/// in the event list, delta-encoded. Nothing is folded or lost: every query stays its own event.
///
/// **The contract.** A trace (or run result) with query runs stands for one event list: `events` with
/// every member of every run put back in its place (`QueryRuns.merged`, `forEachMerged`):
/// - a member carries `pos`, an index into `events` (`0 ... events.count`): it comes just before
///   `events[pos]` (after every event when `pos == events.count`);
/// - members with the same `pos` come in order of time, then of `seq` (the order they were decoded in).
/// The engine collects members with `pos` as the number of events kept before them (their place
/// before the list is sorted by time) and `settle` turns that into the contract's `pos` once `events`
/// is sorted: the merged list is then exactly the list decoding would have kept without runs, sorted
/// by time with ties in decoding order (`Engine.sortByTime`). Whoever drops events from `events`
/// moves the members' places with `removeEvents`.
///
/// Readers that want the events one by one read the merged list; `peerscope decode --events` writes
/// it, so the trace is the same with or without runs. A member's event is the run's first event with
/// its own `t`, `lastT` and evidence.
public struct QueryRuns: Sendable {
    /// One member's place: time, frame (within the run's input), place in `events`, decoding order.
    public struct Member: Sendable, Equatable {
        public var t: Nanos
        public var frame: UInt64
        public var pos: Int
        public var seq: Int
    }

    struct Run: Sendable {
        /// The first member's event (every member is this with its own time and frame).
        var template: PeerEvent
        var input: Int
        var first: Member
        var last: Member
        var count: Int
        /// Members after the first: per member, LEB128 deltas of time (in microseconds when whole,
        /// low bit clear; else nanoseconds, low bit set), frame, `pos` and `seq`.
        var bytes: [UInt8]
    }

    /// What an open run's members share: a query joins the run only when all of it is equal.
    private struct Key {
        var kind: EventKind
        var source: String
        var from: Shared<PeerHint>?
        var to: Shared<PeerHint>?
        var flow: Shared<FlowKey>?
        var attrs: EventAttrs
        var input: Int

        init(_ e: PeerEvent, input: Int) {
            kind = e.kind
            source = e.source
            from = e.fromBox
            to = e.toBox
            flow = e.flowBox
            attrs = e.attrs
            self.input = input
        }

        /// Whether `e` (from input `input`) has this key: the same fields compared as a `Key` built
        /// from `e` would compare (boxes by identity, then by value), with nothing built or retained.
        @inline(__always) func matches(_ e: PeerEvent, input: Int) -> Bool {
            self.input == input && from == e.fromBox && flow == e.flowBox && attrs.bytes == e.attrs.bytes && to == e.toBox
                && kind == e.kind && source == e.source
        }

        /// The hash of `e`'s key: the boxes' cached hashes and the attribute bytes (a querier's few
        /// keys differ in their attributes). Only finds candidates: a match is `matches`.
        @inline(__always) static func hash(_ e: PeerEvent, input: Int) -> Int {
            var h = e.attrs.bytes.withUnsafeBytes { ByteHash.hash($0) }
            func mix(_ part: Int) {
                h = (h ^ UInt64(bitPattern: Int64(part))) &* 0xFF51_AFD7_ED55_8CCD
                h ^= h >> 29
            }
            mix(e.fromBox?.cachedHash ?? 0)
            mix(e.flowBox?.cachedHash ?? 0)
            mix(e.toBox?.cachedHash ?? 0)
            mix(input)
            return Int(truncatingIfNeeded: h)
        }
    }

    /// An open run and its key.
    private struct Open {
        var key: Key
        var run: Int
    }

    var runs: [Run] = []
    /// Members of all runs.
    public private(set) var count = 0
    /// Open runs by the hash of what their members share (`Key.hash`; collection only): one open run
    /// per key, keys that share a hash side by side.
    private var open: [Int: [Open]] = [:]
    private var nextSeq = 0
    private var lastClose: Nanos = .min
    /// Key hashes are masked with this: a small mask (tests only) puts every key on a few hashes, where
    /// collisions must cost comparisons, never a member in the wrong run. -1 (all bits) otherwise.
    let keyHashMask: Int

    public init() { keyHashMask = -1 }

    /// Runs whose key hashes are masked with `keyHashMask` (tests: collisions everywhere).
    public init(keyHashMask: Int) { self.keyHashMask = keyHashMask }

    public var isEmpty: Bool { count == 0 }
    /// The latest member's time.
    public var lastT: Nanos? { runs.lazy.map(\.last.t).max() }
    /// Runs held (each holds one full event).
    public var runCount: Int { runs.count }

    /// Keeps `e` as a member of a run when it can be (a single occurrence from a frame); false: the
    /// caller keeps it as an ordinary event. `kept` is the number of ordinary events kept before it.
    public mutating func add(_ e: PeerEvent, kept: Int) -> Bool {
        guard e.count == 1, e.lastT == e.t, e.lastEvidence == nil, case .frame(let input, let frame) = e.evidence else {
            return false
        }
        let m = Member(t: e.t, frame: frame, pos: kept, seq: nextSeq)
        nextSeq &+= 1
        count &+= 1
        // The key is built only when a run starts (the first query of its kind): a repeat is found by
        // its hash and compared field by field with the open run's key.
        let h = Key.hash(e, input: input) & keyHashMask
        if let i = open.index(forKey: h) {
            if let j = open.values[i].firstIndex(where: { $0.key.matches(e, input: input) }) {
                if QueryRuns.append(m, to: &runs[open.values[i][j].run]) { return true }
                // A new run for the same key (the deltas did not fit): it replaces the open one.
                open.values[i][j].run = runs.count
            } else {
                open.values[i].append(Open(key: Key(e, input: input), run: runs.count))
            }
        } else {
            open[h] = [Open(key: Key(e, input: input), run: runs.count)]
        }
        runs.append(Run(template: e, input: input, first: m, last: m, count: 1, bytes: []))
        return true
    }

    /// Forgets open runs whose last member is older than `t - idle` (the next such query starts a new
    /// run): the table of open runs stays with the queriers still active. Changes no member.
    public mutating func closeIdle(at t: Nanos, idle: Nanos) {
        // Looked at every `idle / 4` of capture time (a run is closed at most that late).
        guard !open.isEmpty, lastClose == .min || t &- lastClose >= idle / 4 else { return }
        lastClose = t
        var touched: [Int] = []
        for (h, same) in open where same.contains(where: { t &- runs[$0.run].last.t > idle }) { touched.append(h) }
        for h in touched {
            let alive = open[h, default: []].filter { t &- runs[$0.run].last.t <= idle }
            open[h] = alive.isEmpty ? nil : alive
        }
    }

    /// Appends `m` to `run` when the deltas are non-negative and small enough to encode.
    private static func append(_ m: Member, to run: inout Run) -> Bool {
        let p = run.last
        guard m.t >= p.t, m.frame >= p.frame, m.pos >= p.pos, m.seq > p.seq else { return false }
        let dt = UInt64(bitPattern: m.t &- p.t)
        guard dt < 1 << 62 else { return false }
        appendDelta(dt % 1000 == 0 ? (dt / 1000) << 1 : dt << 1 | 1, &run.bytes)
        appendDelta(m.frame &- p.frame, &run.bytes)
        appendDelta(UInt64(m.pos - p.pos), &run.bytes)
        appendDelta(UInt64(m.seq - p.seq), &run.bytes)
        run.last = m
        run.count += 1
        return true
    }

    private static func appendDelta(_ v: UInt64, _ out: inout [UInt8]) { LEB128.append(v, to: &out) }

    /// Reads member after `p` at `offset` in `run.bytes` (advanced past it).
    @inline(__always) static func next(after p: Member, _ bytes: [UInt8], _ offset: inout Int) -> Member {
        func delta() -> UInt64 { LEB128.read(bytes, &offset) }
        let d = delta()
        let dt = d & 1 == 0 ? (d >> 1) &* 1000 : d >> 1
        let df = delta(), dp = delta(), ds = delta()
        return Member(t: p.t &+ Int64(bitPattern: dt), frame: p.frame &+ df, pos: p.pos &+ Int(truncatingIfNeeded: dp),
                      seq: p.seq &+ Int(truncatingIfNeeded: ds))
    }

    /// Calls `body` with every member's event, its `pos` and its `seq` (see `Member`), run after run.
    /// Before `settle`, a member's place in the order queries and events were kept is `pos + seq`.
    public func forEachMember(_ body: (PeerEvent, _ pos: Int, _ seq: Int) -> Void) {
        for r in runs.indices { forEachMember(r) { m in body(event(r, m), m.pos, m.seq) } }
    }

    /// Calls `body` with every member's `pos` (see `Member`), run after run (no event built).
    public func forEachMemberPosition(_ body: (Int) -> Void) {
        for r in runs.indices { forEachMember(r) { body($0.pos) } }
    }

    /// Calls `body` with every member's event and its decoding order (`pos + seq` before `settle`, see
    /// `forEachMember`), in order of time, then decoding order: the order sorting `forEachMember`'s
    /// members by (time, `pos + seq`) gives, without holding them. Each run is in that order already
    /// (times and places never go back along a run, `seq` always grows), so this is a heap merge of
    /// the runs; decoding orders are distinct, so there are no ties to break. `body` returns false to
    /// stop. (Spilling while decoding writes the members so: a list of them all, sorted, held the
    /// members twice at once as full events.)
    public func forEachMemberByTime(_ body: (PeerEvent, _ order: Int) -> Bool) {
        struct Cursor {
            var run: Int
            var member: Member
            var offset: Int
            var left: Int
        }
        func before(_ a: Cursor, _ b: Cursor) -> Bool {
            let x = a.member, y = b.member
            return x.t != y.t ? x.t < y.t : x.pos &+ x.seq < y.pos &+ y.seq
        }
        var heap: [Cursor] = []
        heap.reserveCapacity(runs.count)
        for r in runs.indices {
            heap.heapPush(Cursor(run: r, member: runs[r].first, offset: 0, left: runs[r].count - 1), by: before)
        }
        while let top = heap.first {
            guard body(event(top.run, top.member), top.member.pos &+ top.member.seq) else { return }
            if top.left > 0 {
                var c = top
                c.member = QueryRuns.next(after: top.member, runs[top.run].bytes, &c.offset)
                c.left -= 1
                heap[0] = c
            } else {
                let last = heap.removeLast()
                if heap.isEmpty { return }
                heap[0] = last
            }
            heap.heapSiftDown(by: before)
        }
    }

    /// Every member of run `r`, in order.
    func members(_ r: Int) -> [Member] {
        var out: [Member] = []
        out.reserveCapacity(runs[r].count)
        forEachMember(r) { out.append($0) }
        return out
    }

    func forEachMember(_ r: Int, _ body: (Member) -> Void) {
        var m = runs[r].first
        body(m)
        var offset = 0
        for _ in 1 ..< max(1, runs[r].count) {
            m = QueryRuns.next(after: m, runs[r].bytes, &offset)
            body(m)
        }
    }

    /// Rewrites every member's `pos` with `map` (non-decreasing along a run: the encoding stays valid).
    mutating func remapPositions(_ map: (Member) -> Int) {
        for r in runs.indices {
            let ms = members(r)
            var run = runs[r]
            run.bytes = []
            run.count = 0
            for (i, var m) in ms.enumerated() {
                m.pos = map(m)
                if i == 0 {
                    run.first = m
                    run.last = m
                    run.count = 1
                } else {
                    // Time, frame and seq are those already appended once; pos does not decrease.
                    let ok = QueryRuns.append(m, to: &run)
                    precondition(ok, "query run positions must not decrease")
                }
            }
            run.bytes = exactlySizedBytes(run.bytes)
            runs[r] = run
        }
    }

    private func exactlySizedBytes(_ b: [UInt8]) -> [UInt8] {
        guard b.capacity > b.count + b.count / 8 + 16 else { return b }
        return Array(b)
    }

    /// Collection is over and `events` (the ordinary events kept) is sorted by time, stably: `preSort`
    /// gives, for each index of `events`, the index the event had when it was kept (nil: the sort moved
    /// nothing). Turns each member's count of events kept before it into its place in the sorted list
    /// (see the contract): after every event of earlier time and every event of its time kept before it.
    public mutating func settle(events: [PeerEvent], preSort: [Int]?) {
        open = [:]
        guard !runs.isEmpty else { return }
        remapPositions { m in
            // First index with time >= m.t, first with time > m.t.
            let lo = QueryRuns.partition(events.count) { events[$0].t >= m.t }
            let hi = QueryRuns.partition(events.count) { events[$0].t > m.t }
            guard let preSort else { return min(max(m.pos, lo), hi) }
            // Within equal times the sorted events keep the order they were kept in.
            return lo + QueryRuns.partition(hi - lo) { preSort[lo + $0] >= m.pos }
        }
    }

    /// The first index in `0 ..< n` where `pred` holds (it holds for all indexes after it), or `n`.
    static func partition(_ n: Int, _ pred: (Int) -> Bool) -> Int {
        var lo = 0, hi = n
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if pred(mid) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }

    /// `events` lost the events at `removed` (sorted indexes into the list before removal): members
    /// keep their places among the events that stay.
    public mutating func removeEvents(at removed: [Int]) {
        guard !removed.isEmpty, !runs.isEmpty else { return }
        remapPositions { m in m.pos - QueryRuns.partition(removed.count) { removed[$0] >= m.pos } }
    }

    /// Members' events with `transform` applied to each run's first event (and so to every member):
    /// hints normalised once per run instead of once per member.
    public mutating func updateTemplates(_ transform: (inout PeerEvent) -> Void) {
        for r in runs.indices { transform(&runs[r].template) }
    }

    /// The event of member `m` of run `r`.
    @inline(__always) func event(_ r: Int, _ m: Member) -> PeerEvent {
        var e = runs[r].template
        e.t = m.t
        e.lastT = m.t
        e.evidence = .frame(input: runs[r].input, frame: m.frame)
        return e
    }

    /// Calls `body` with every event of `events` and every member, in the merged order (see the contract).
    public func forEachMerged(_ events: [PeerEvent], _ body: (PeerEvent) -> Void) {
        var it = MergedIterator(events: events, runs: self)
        while let e = it.next() { body(e) }
    }

    /// `events` with every member in its place: the list the runs stand for.
    public func merged(_ events: [PeerEvent]) -> [PeerEvent] {
        guard !isEmpty else { return events }
        var out: [PeerEvent] = []
        out.reserveCapacity(events.count + count)
        forEachMerged(events) { out.append($0) }
        return out
    }

    /// The merged list as a sequence (for readers that take one, such as `PeerResolver`).
    public func mergedSequence(_ events: [PeerEvent]) -> MergedEvents { MergedEvents(events: events, runs: self) }
}

/// `events` and the members of `runs` in the merged order (see `QueryRuns`).
public struct MergedEvents: Sequence, Sendable {
    let events: [PeerEvent]
    let runs: QueryRuns
    public func makeIterator() -> MergedIterator { MergedIterator(events: events, runs: runs) }
    public var underestimatedCount: Int { events.count + runs.count }
}

/// Walks the events and the runs' members together: a heap of runs by their next member's place.
public struct MergedIterator: IteratorProtocol {
    struct Cursor {
        var run: Int
        var member: QueryRuns.Member
        var offset: Int
        var left: Int
    }

    let events: [PeerEvent]
    let runs: QueryRuns
    var i = 0
    var heap: [Cursor] = []

    init(events: [PeerEvent], runs: QueryRuns) {
        self.events = events
        self.runs = runs
        heap.reserveCapacity(runs.runs.count)
        for r in runs.runs.indices {
            push(Cursor(run: r, member: runs.runs[r].first, offset: 0, left: runs.runs[r].count - 1))
        }
    }

    @inline(__always) static func before(_ a: Cursor, _ b: Cursor) -> Bool {
        let x = a.member, y = b.member
        if x.pos != y.pos { return x.pos < y.pos }
        if x.t != y.t { return x.t < y.t }
        return x.seq < y.seq
    }

    private mutating func push(_ c: Cursor) { heap.heapPush(c, by: MergedIterator.before) }

    private mutating func siftDown() { heap.heapSiftDown(by: MergedIterator.before) }

    public mutating func next() -> PeerEvent? {
        if let top = heap.first, top.member.pos <= i {
            let e = runs.event(top.run, top.member)
            if top.left > 0 {
                var c = top
                c.member = QueryRuns.next(after: top.member, runs.runs[top.run].bytes, &c.offset)
                c.left -= 1
                heap[0] = c
            } else {
                let last = heap.removeLast()
                if !heap.isEmpty { heap[0] = last }
            }
            if !heap.isEmpty { siftDown() }
            return e
        }
        guard i < events.count else { return nil }
        defer { i += 1 }
        return events[i]
    }
}
