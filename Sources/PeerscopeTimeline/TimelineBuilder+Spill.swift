import PeerscopeCore

/// The timeline stage over events spilled to a temporary file (`SpilledEvents`, issue 13): the events
/// are never all on the heap; they are read back in order, in passes, and only what the timelines keep
/// (the packed store of events not folded, the resolved list, entries) grows.
///
/// What needs every event before the first is resolved, and so a pass of its own: the identity facts
/// (the resolver starts from them), the resolver's bindings (`PeerResolver`: a later announcement
/// resolves earlier queries, see `BrowseFolds`), and the log owners (read through the finished
/// resolver). The folds' scan (log lines, ICMP-quoted flows) and the end of input go with the first
/// pass. Resolving itself only needs the events in order: the last pass appends each event to the store,
/// resolves it (`resolveStep`) and drops it again when it was folded, as the in-memory path does with
/// query runs. Without log lines the log-owner passes find nothing and are skipped: three passes.
///
/// The events read are those the in-memory path holds after its own steps: identity facts out, hints
/// normalised, in the file's (time) order; so the timelines are the same.
extension TimelineBuilder {
    func finish(spilled spill: SpilledEvents, at end: Nanos?) -> Timelines {
        // Pass 1: identity facts, the folds' scan, the end of input.
        var scan = BrowseFolds.Scan()
        var lastT: Nanos?
        spill.forEach { e in
            if identities.add(e) { return }
            lastT = e.t
            scan.note(e)
        }
        // Every later pass: the list without the facts, hints normalised.
        let events = spill.lazy.filter { !$0.kind.isIn("identity") }.map { e -> PeerEvent in
            var e = e
            PeerResolver.normalizeHints(&e)
            return e
        }
        // Pass 2: the resolver's bindings.
        var resolver = PeerResolver(identities: identities, events: events)
        if !scan.framesOnly {
            // Passes 3 and 4: log owners (nothing to find without log lines).
            resolver.identifyLogOwners(events)
            if inferLogOwners { resolver.inferLogOwners(events) }
        }
        let endT = max(end ?? Nanos.min, lastT ?? 0)
        var folds = BrowseFolds(enabled: foldBrowseQueries, gap: browseFoldGap, scan: scan)
        // Last pass: each event into the store, resolved, and out again when folded. The attributes
        // stay in the file (the store keeps where each event's record is and reads them from there when
        // asked: on a long capture they are most of the events' memory). Without that, buffers read
        // back are shared again with an equal one read shortly before (the engine shared them so).
        let inFile = attributesStayInSpill
        let store = inFile ? EventStore(attributesIn: spill) : EventStore()
        // In chunks: how many events are kept (not folded) is known only at the end; the list is then
        // made exactly sized (see `ChunkedList`).
        var kept = ChunkedList<ResolvedEvent>()
        var sharing = EventAttrsSharing(slotCount: inFile ? 1 : 1 << 16)
        // Entries' details hold no event's whole buffer (the store does not hold them either).
        if inFile { detailSharing = EventAttrsSharing() }
        // The events of `events`, with where each one's record is and its boxes' indexes there.
        var reader = spill.makeIterator()
        // The file is read in time order (`finish` checks `inTimeOrder`): folds no later query can
        // continue go as the stage goes (see `BrowseFolds.dropExpired`); never after an event out of order.
        var inOrder = dropsExpiredFolds
        folds.dropFloor = Swift.max(1, expiredFoldsFloor)
        folds.dropAt = folds.dropFloor
        var previousT = Nanos.min
        while var e = reader.next() {
            if e.kind.isIn("identity") { continue }
            if e.t < previousT { inOrder = false }
            previousT = e.t
            if inOrder { folds.dropExpired(before: e.t) }
            PeerResolver.normalizeHints(&e)
            let k = kept.count
            if inFile {
                store.writable.append(e, record: reader.recordOffset, boxIDs: reader.recordBoxIDs)
            } else {
                sharing.share(&e.attrs)
                store.writable.append(e)
            }
            if let r = resolveStep(k, into: k, store, resolver, &folds) { kept.append(r) } else { store.writable.removeLast() }
        }
        sharing = EventAttrsSharing(slotCount: 1)
        detailSharing = nil
        expiredFoldsDropped = folds.dropped
        folds.open = [:]
        // The store's last chunk is trimmed as when most was folded (the list is already exactly sized).
        return finishResolved(store: store, resolved: kept.consumeArray(), resolver: resolver, endT: endT, foldedMost: true)
    }
}
