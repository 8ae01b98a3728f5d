import PeerscopeCore

// Resolution: each event's hints to peers, its step, its session (see TimelineBuilder).
extension TimelineBuilder {
    @discardableResult
    func touch(_ r: PeerRef, _ h: PeerHint, _ t: Nanos, last: Nanos) -> PeerWork {
        let w: PeerWork
        if let existing = peers[r] { w = existing } else { w = PeerWork(info: PeerInfo(ref: r)); peers[r] = w }
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
        var e = store.events[index]
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
            store.events[index].attrs = e.attrs
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
        return ResolvedEvent(store: store, index: index, from: fromBox, to: toBox, session: sessionKey, state: state,
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
