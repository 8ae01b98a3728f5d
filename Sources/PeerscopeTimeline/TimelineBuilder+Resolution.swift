import PeerscopeCore

// Resolution: each event's hints to peers, its step, its session (see TimelineBuilder).
extension TimelineBuilder {
    @discardableResult
    func touch(_ r: PeerRef, _ h: PeerHint, _ t: Nanos, last: Nanos) -> PeerWork {
        let w: PeerWork
        if let existing = peers[r] { w = existing } else { w = PeerWork(info: PeerInfo(ref: r)); peers.insert(w) }
        if w.info.displayName == nil, let n = h.displayName, !n.isEmpty { w.info.displayName = n }
        if w.info.participantID == nil, let p = h.participantID { w.info.participantID = p }
        if let a = h.address { w.addresses.insert(a) }
        if let ep = h.endpoint { w.endpoints.insert(ep) }
        if case .address(let a) = r { w.addresses.insert(a) }
        if w.info.firstSeen.map({ t < $0 }) ?? true { w.info.firstSeen = t }
        if w.info.lastSeen.map({ last > $0 }) ?? true { w.info.lastSeen = max(t, last) }
        return w
    }

    func process(_ index: Int, _ store: EventStore, _ resolver: PeerResolver) -> ResolvedEvent {
        var e = StoreEvents.event(in: store.reading, index)
        var from = resolver.resolve(e.from, evidence: e.evidence, at: e.t)
        var to = resolver.resolve(e.to, evidence: e.evidence, at: e.t)
        if e.kind.isIn("discovery") {
            // Discovery is about one peer; the other side (a browser, the log owner) is not a session.
            if from == nil { from = to }
            to = nil
        }
        if from == to { to = nil }
        // A display name two peer IDs share (two devices named alike) names, in a line about a
        // session, the one of them in an open session with the other side.
        if let f = from, let t = to {
            if case .name(let n) = f, let r = connectedNamesake(n, other: t, at: e.t, resolver) { from = r }
            if case .name(let n) = t, let r = connectedNamesake(n, other: f, at: e.t, resolver) { to = r }
        }
        let fromWork = from.map { touch($0, e.from, e.t, last: e.lastT) }
        let toWork = to.map { touch($0, e.to, e.t, last: e.lastT) }
        var (state, letter) = TimelineMapping.classify(e)
        if (e.kind == .goodbye || e.kind == .expired), let f = from, inOpenSession(f) {
            // A connected peer that stops advertising (apps often do once in session; an mDNS record
            // expires while the session runs) is not lost.
            state = .updated
            letter = nil
            e[.note] = "stopped advertising; still in session"
            store.writable.setAttrs(e.attrs, at: index)
        }

        var sessionKey: Shared<SessionKey>?
        var establishedBefore = false, secureBefore = false, dtlsStartedBefore = false
        if let f = from, let t = to {
            let pair = PeerPair(f, t)
            if let si = instanceIndex(for: pair, e, originator: f) {
                establishedBefore = sessions[si].instance.established != nil
                secureBefore = sessions[si].secure
                dtlsStartedBefore = sessions[si].dtlsStarted
                // An ICMP error names the quoted packet's two ends; the step is the reporter's (the
                // unreachable host, or a router between them).
                var by = f
                if e.kind == .icmpUnreachable, let rep = e[.reporter],
                   let r = resolver.resolve(PeerHint(address: rep), at: e.t) {
                    by = r
                }
                (state, letter) = apply(e, state: state, letter: letter, from: f, to: t, by: by, at: si)
                sessionKey = sessions[si].keyBox
            }
        }

        let fromBox = fromWork?.box, toBox = toWork?.box
        if let w = fromWork {
            addEntry(w, e, state: state, letter: letter, sent: true, counterpart: toBox, session: sessionKey)
        }
        if let w = toWork {
            addEntry(w, e, state: state, letter: letter, sent: from == nil, counterpart: fromBox, session: sessionKey)
        }
        return ResolvedEvent(index: index, sides: sides(fromBox, toBox, sessionKey, store), kind: e.kind, state: state,
                             establishedBefore: establishedBefore, secureBefore: secureBefore,
                             dtlsStartedBefore: dtlsStartedBefore)
    }

    func inOpenSession(_ r: PeerRef) -> Bool {
        (pairsOf[r] ?? []).contains { pair in
            latest[pair].map { sessions[$0].instance.end == nil && sessions[$0].instance.established != nil } ?? false
        }
    }

    /// The one peer ID behind `name` whose session with `other` is open (or ended no longer than
    /// `reopenGap` before `t`: the app's own line about a disconnect follows MPC's).
    func connectedNamesake(_ name: String, other: PeerRef, at t: Nanos, _ resolver: PeerResolver) -> PeerRef? {
        let ids = resolver.peerIDs(named: name).sorted().map { PeerRef.id($0) }
        func pick(_ ok: (SessionInstance) -> Bool) -> PeerRef? {
            let found = ids.filter { c in latest[PeerPair(c, other)].map { ok(sessions[$0].instance) } ?? false }
            return found.count == 1 ? found[0] : nil
        }
        return pick { $0.end == nil } ?? pick { s in s.end.map { t >= $0 && t &- $0 <= reopenGap } ?? false }
    }
}

/// Browse queries folded in the event store (issue 13). On a crowded network most events are browse
/// queries (`discovery.browse`: 75 % of the kept events on the bench's mDNS file), repeated by each
/// host every few seconds to minutes. Their timeline entries are already runs (`.browsing`
/// aggregates), but each query was still its own `ResolvedEvent`, held in the store and read by every
/// detector and the discovery section. Here a query that continues a run is folded into the run's
/// first event (its `count`, `lastT`, `lastEvidence`), so the store keeps one event per run.
///
/// **Why here and not at decode time.** A query names only its source address. The peer it belongs
/// to is resolved at its time with bindings the whole run teaches (`PeerResolver`: an address
/// announced later by host X resolves earlier queries from it to X; a second host announced at the
/// address later makes it "the one bound at that time"), and the timeline's run of that peer is
/// ended by a goodbye or expiry of the peer, which may come from another address (its IPv6 one) that
/// is tied to it only later still. So while decoding, whether two queries of one address are the
/// same run of the same peer depends on frames not read yet: an address that queries, is then
/// announced by X, says goodbye, then is announced by Y, with queries in between, splits its runs
/// at points no decoder state knows. Here the resolver is complete, the events are time-ordered, and
/// each query has just been put through the timeline exactly as before.
///
/// **The exact condition.** Query q (count 1, from a frame, on a flow no ICMP error quotes) is folded
/// into the open fold F of its key (same `from` hint, flow, plugin, attributes and resolved peer)
/// when q joined the same timeline entry as F's last query (the peer's browse run, entry index
/// unchanged) and q came no later than `browseFoldGap` after it. Then nothing downstream can tell:
/// - The timeline: each query still goes through `touch` and `addEntry` exactly as `process` would
///   (a browse query resolved to peer r: from = r, to = nil, no session), so entries, runs, history
///   and peers are those of the unfolded run by construction.
/// - The resolver: built before, from all events; browse queries teach it nothing (no peer ID, not
///   GCK, not log lines), so the same resolver comes from the folded list.
/// - The resolved list stays time-ordered (a fold sits at its first query; `finish` takes the end of
///   input from the last event before folding), with the same first event.
/// - Readers of `Timelines.events`: the discovery section takes a service's first and last seen
///   (`t`, `lastT`); `CaptureQuality.oneSidedFlows` a flow's senders, first `t` and last `lastT`;
///   `nonMPCPeers` sets of peers; `serviceType` the first discovery event with a service (a fold's
///   first query is the earliest with its attributes). The keep-alive and handshake detectors' capture
///   holes are the gaps longer than `keepalive-timeout.capture-gap` in the union of events' `t ...
///   lastT`: a fold covers its queries' span, and the gaps it hides are between two consecutive
///   queries, no longer than `browseFoldGap`, which analysis sets no longer than that threshold.
///   ChannelError's "latest frame of a UDP flow" is read only for flows an ICMP error quotes, and
///   those are never folded. Finding evidence cites events and entries' first and last evidence,
///   which are folds' first and last queries (a run's last query is the last of its fold).
/// The event trace (`decode --events`) is not changed: folding happens after it.
struct BrowseFolds {
    struct Key: Hashable {
        /// The interned `from` hint and flow. Boxes compare by identity first, then by value: past the
        /// interning bound equal values may sit in different boxes, and they are still one key (as query
        /// runs, which match by value, take them).
        var from: Shared<PeerHint>?
        var flow: Shared<FlowKey>?
        var source: String
        var attrs: EventAttrs
        /// The peer the queries resolved to (its work record).
        var peer: ObjectIdentifier

        /// The boxes' cached value hashes only (cheap; equality still compares every field): a source's
        /// few attribute variants share a bucket chain instead of hashing their bytes one by one per query.
        func hash(into h: inout Hasher) {
            h.combine(from)
            h.combine(flow)
            h.combine(peer)
        }
    }

    struct Fold {
        /// Index of the fold's event in the (compacted) store.
        var target: Int
        /// The timeline entry (the peer's browse run) its queries joined.
        var entry: Int
        var lastT: Nanos
    }

    let enabled: Bool
    let gap: Nanos
    /// Flows (canonical) an ICMP error quotes: never folded.
    let quoted: Set<FlowKey>
    /// No log lines among the events: nothing corroborates a frame, so a query continuing an open fold
    /// can join its run directly (`join`).
    let framesOnly: Bool
    var open: [Key: Fold] = [:]
    /// Queries folded into an earlier event.
    var folded = 0
    /// Folds let go by `dropExpired` (tests).
    var dropped = 0
    /// `open`'s size at which `dropExpired` looks for folds to let go, and the least it is set to.
    var dropAt = 4096
    var dropFloor = 4096

    /// Lets go of the folds no query at `t` or later can continue: their last query is more than `gap`
    /// before `t` (both ways of continuing one, `join` and the check after the entry, ask for `e.t -
    /// lastT <= gap` with `e.t >= lastT`). Only for events given in time order, `t` never decreasing
    /// (a spill read back: `TimelineBuilder.finish(spilled:at:)`). Looked at once `open` has doubled
    /// since the last time, so linear overall. Without it every key stays to the stage's end, holding
    /// its hint and flow boxes and its attribute buffer (issue 13: on the 1 GB mDNS file the table
    /// alone was 2.4 MB at the timeline stage's peak, its keys' buffers and boxes besides).
    mutating func dropExpired(before t: Nanos) {
        guard open.count >= dropAt else { return }
        let before = open.count
        // A fold at a negative time is kept (`t - lastT` of a later `t` could wrap, which `join` would take).
        open = open.filter { _, f in f.lastT < 0 || f.lastT > t || t &- f.lastT <= gap }
        dropped &+= before - open.count
        dropAt = Swift.max(dropFloor, 2 * open.count)
    }

    /// What the folds need to know of all the events before the first is resolved: the flows ICMP errors
    /// quote, and whether any event is a log line.
    struct Scan {
        var quoted: Set<FlowKey> = []
        var framesOnly = true

        mutating func note(_ e: PeerEvent) {
            if case .logLine = e.evidence { framesOnly = false }
            if e.kind == .icmpUnreachable, let f = e.quotedFlow { quoted.insert(f.canonical) }
        }
    }

    init(enabled: Bool, gap: Nanos, events: [PeerEvent]) {
        var scan = Scan()
        if enabled && gap > 0 {
            // Two fields of each event, read in place (a copied event retains every shared field).
            for i in events.indices { scan.note(events[i]) }
        }
        self.init(enabled: enabled, gap: gap, scan: scan)
    }

    /// Folds whose scan of the events was done by the caller (a spilled list read once for all it needs).
    init(enabled: Bool, gap: Nanos, scan: Scan) {
        self.enabled = enabled && gap > 0
        self.gap = gap
        self.quoted = self.enabled ? scan.quoted : []
        self.framesOnly = self.enabled ? scan.framesOnly : true
    }
}

extension TimelineBuilder {
    /// The timeline run a peer's browse queries join.
    static let browseRun = RunKey(state: .browsing, kind: .browse, sent: true, counterpart: nil, session: nil, fromLog: false)

    /// Resolves store event `i`, moved to index `k` (the events kept so far): `process`, except that a
    /// browse query continuing a fold is folded into it (nil: nothing to keep; see `BrowseFolds`).
    func resolveStep(_ i: Int, into k: Int, _ store: EventStore, _ resolver: PeerResolver,
                     _ folds: inout BrowseFolds) -> ResolvedEvent? {
        if k != i { store.writable.move(from: i, to: k) }
        guard folds.enabled, StoreEvents.kind(in: store.reading, k) == .browse else { return process(k, store, resolver) }
        let e = StoreEvents.event(in: store.reading, k)
        guard e.count == 1, e.lastEvidence == nil, case .frame = e.evidence,
              !(e.flow.map { folds.quoted.contains($0.canonical) } ?? false),
              let r = resolver.resolve(e.from, evidence: e.evidence, at: e.t)
        else { return process(k, store, resolver) }
        let ids = e.fromAndFlowBoxes
        if let w = peers[r] {
            let key = BrowseFolds.Key(from: ids.from, flow: ids.flow, source: e.source, attrs: e.attrs, peer: ObjectIdentifier(w))
            if let f = folds.open[key], StoreEvents.samePeersAndFlow(in: store.reading, f.target, e), join(w, e, f, folds) {
                fold(e, into: f.target, key, store, &folds)
                return nil
            }
        }
        // What `process` does with a discovery event whose sender resolves (to = nil, no session).
        let w = touch(r, e.from, e.t, last: e.lastT)
        let (state, letter) = TimelineMapping.classify(e)
        addEntry(w, e, state: state, letter: letter, sent: true, counterpart: nil, session: nil)
        // The browse run entry the query went into (joined, began, or merged with another question
        // of its frame), if it did.
        var landed: Int?
        if let ri = w.runs[TimelineBuilder.browseRun], ri < w.entries.count, w.entries[ri].lastT == e.t,
           (w.entries[ri].lastEvidence ?? w.entries[ri].firstEvidence) == e.evidence {
            landed = ri
        }
        let key = BrowseFolds.Key(from: ids.from, flow: ids.flow, source: e.source, attrs: e.attrs, peer: ObjectIdentifier(w))
        if let f = folds.open[key], let landed, landed == f.entry, e.t >= f.lastT, e.t &- f.lastT <= folds.gap,
           StoreEvents.samePeersAndFlow(in: store.reading, f.target, e) {
            fold(e, into: f.target, key, store, &folds)
            return nil
        }
        folds.open[key] = landed.map { BrowseFolds.Fold(target: k, entry: $0, lastT: e.t) }
        return ResolvedEvent(index: k, sides: sides(w.box, nil, nil, store), kind: e.kind, state: state,
                             establishedBefore: false, secureBefore: false, dtlsStartedBefore: false)
    }

    private func fold(_ e: PeerEvent, into target: Int, _ key: BrowseFolds.Key, _ store: EventStore, _ folds: inout BrowseFolds) {
        store.writable.fold(into: target, t: e.t, evidence: e.evidence)
        folds.open[key]?.lastT = e.t
        folds.folded &+= 1
    }

    /// The timeline's part of a query continuing open fold `f` (same hint, flow, attributes and peer
    /// as the fold's queries), done directly when it is certain what `touch` and `addEntry` would do:
    /// no log lines (nothing corroborates a frame), the peer's browse run is still the fold's entry,
    /// and no entry of this frame with a count of 1 ends the timeline (the one `addEntry` would merge
    /// into). Then `touch` only moves last seen (the hint's name, addresses and endpoint were taken
    /// from the fold's first query, which was earlier), and `addEntry` joins the run (no letter, no
    /// session, no contents: the attributes are the fold's). False: nothing was done.
    private func join(_ w: PeerWork, _ e: PeerEvent, _ f: BrowseFolds.Fold, _ folds: BrowseFolds) -> Bool {
        guard folds.framesOnly, e.t >= f.lastT, e.t &- f.lastT <= folds.gap, f.entry < w.entries.count,
              w.runs[TimelineBuilder.browseRun] == f.entry else { return false }
        if let last = w.entries.last, last.count == 1, last.firstEvidence == e.evidence { return false }
        if w.info.lastSeen.map({ e.lastT > $0 }) ?? true { w.info.lastSeen = max(e.t, e.lastT) }
        w.entries[f.entry].count &+= 1
        if e.lastT >= w.entries[f.entry].lastT {
            w.entries[f.entry].lastT = e.lastT
            w.entries[f.entry].lastEvidence = e.evidence
        }
        return true
    }
}

extension TimelineBuilder {
    /// Gives back the room folded queries left in the store and the resolved list (most of both on a
    /// crowded network), for the stages after the timeline.
    static func shrink(_ store: EventStore, _ resolved: inout [ResolvedEvent]) {
        store.writable.shrink()
        resolved = exactlySized(resolved)
    }
}
