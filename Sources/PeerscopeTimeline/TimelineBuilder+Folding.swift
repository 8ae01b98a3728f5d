import PeerscopeCore

// Folding: repeated steps become one timeline entry (first, last, count).
extension TimelineBuilder {
    func addEntry(_ w: PeerWork, _ e: PeerEvent, state: TimelineState, letter: Character?, sent: Bool,
                  counterpart: Shared<PeerRef>?, session: Shared<SessionKey>?) {
        if let letter { w.history.add(letter, sent: sent, times: e.count) }
        if let s = session?.value, w.sessions.last != s, w.sessionSet.insert(s).inserted { w.sessions.append(s) }
        let fromLog = if case .logLine = e.evidence { true } else { false }
        let key = RunKey(state: state, kind: e.kind, sent: sent, counterpart: counterpart, session: session, fromLog: fromLog)
        if let last = w.entries.last, last.count == 1, last.firstEvidence == e.evidence, last.state == state,
           last.sent == sent, last.counterpartBox == counterpart, last.sessionBox == session, e.count == 1,
           last.kind.rawValue.prefix(while: { $0 != "." }) == e.kind.rawValue.prefix(while: { $0 != "." }) {
            // Two events of one frame or line saying the same thing (an mDNS answer that both announces
            // and resolves an instance) are one entry; the fuller detail stays.
            let detail = detail(e)
            if detail.text.count > last.detail.count { w.entries[w.entries.count - 1].detailSource = detail }
            return
        }
        if e.count == 1, corroborate(w, e, state: state, sent: sent, counterpart: counterpart, session: session) {
            return
        }
        if e.kind == .tcpClosed, let last = w.entries.last, last.firstEvidence == e.evidence,
           last.kind == .tcpReset || last.kind == .tcpRefused, last.counterpartBox == counterpart {
            // A reset or refusal already says the connection ended in this segment.
            return
        }
        // A message shown with its contents (--show-payloads) is its own entry, not part of a run.
        let aggregates = state.aggregates && e[.content] == nil
        if aggregates, let i = w.runs[key], i < w.entries.count {
            w.entries[i].count &+= e.count
            let lastEvidence = e.lastEvidence ?? e.evidence
            // Events arrive in time order, but a run's last time never moves back.
            if e.lastT >= w.entries[i].lastT {
                w.entries[i].lastT = e.lastT
                w.entries[i].lastEvidence = lastEvidence
            }
        } else {
            if !state.aggregates {
                // A control entry ends the runs with the same counterpart, removed in place (the table
                // is only looked up by key, never iterated: a new table each time was most of the
                // stage's short-lived memory).
                let ended = w.runs.keys.filter { $0.counterpart == counterpart }
                for k in ended { w.runs.removeValue(forKey: k) }
            }
            var entry = TimelineEntry(t: e.t, state: state, origin: origin(e), sent: sent,
                                      link: counterpart == nil && session == nil ? unlinked : w.link(counterpart, session),
                                      evidence: e.evidence,
                                      detail: detail(e), letter: letter)
            if e.count > 1 {
                entry.count = e.count
                entry.lastT = e.lastT
                if let last = e.lastEvidence { entry.lastEvidence = last }
            }
            if w.entries.count == w.entries.capacity {
                // Grown by a quarter, not doubled: thousands of peers' timelines grow at once, and
                // doubling leaves up to half of each unused (copying stays linear: about 5 per entry).
                // A new timeline starts with room for one: most peers of a crowded network have a few
                // entries (3.6 on the bench's 1 GB mDNS file), and room for 8 was 500 bytes of slack
                // each, 12 MB over its 25,695 peers at the stage's peak (issue 13).
                w.entries.reserveCapacity(w.entries.count + w.entries.count / 4 + 1)
            }
            w.entries.append(entry)
            if aggregates { w.runs[key] = w.entries.count - 1 }
        }
    }

    /// The detail an entry takes from `e`: its attribute buffer, or (with `detailSharing`, when the
    /// events' attributes stay in a spill file) a buffer of only the detail keys, shared with an equal
    /// one made before (see `EventAttrs.keeping`). The entry then holds no event's whole buffer: on
    /// the 1 GB mDNS file those were 16 MB at the stage's peak for `service=... port=...` details,
    /// which repeat across hosts. The text read is the same either way.
    func detail(_ e: PeerEvent) -> TimelineEntry.Detail {
        guard detailSharing != nil, e.kind != .invitationReceipt, !e.attrs.isEmpty else { return TimelineEntry.Detail(e.kind, e.attrs) }
        var kept = e.attrs.keeping(TimelineMapping.detailKeySet)
        detailSharing?.share(&kept)
        return .attrs(kept)
    }

    /// The shared box of `e`'s kind and plugin (one per distinct pair in this build; see
    /// `TimelineEntry.Origin`).
    func origin(_ e: PeerEvent) -> Shared<TimelineEntry.Origin> {
        if let last = lastOrigin, last.value.kind == e.kind, last.value.source == e.source { return last }
        let o = TimelineEntry.Origin(kind: e.kind, source: e.source)
        let box = origins[o] ?? Shared(o)
        if origins.count < TimelineBuilder.maxSharedOrigins { origins[o] = box }
        lastOrigin = box
        return box
    }

    /// Distinct kind and plugin pairs given a shared box (an event trace may name any number; beyond
    /// this each entry has its own box, which still reads the same).
    static let maxSharedOrigins = 4096
}

extension TimelineBuilder.PeerWork {
    /// The shared box of a counterpart and session (the builder's own boxes, so their identities are
    /// the key) for this peer's entries (see `TimelineEntry.Link`).
    func link(_ counterpart: Shared<PeerRef>?, _ session: Shared<SessionKey>?) -> Shared<TimelineEntry.Link> {
        let key = LinkKey(counterpart: counterpart.map(ObjectIdentifier.init), session: session.map(ObjectIdentifier.init))
        if let box = links[key] { return box }
        let box = Shared(TimelineEntry.Link(counterpart: counterpart, session: session))
        links[key] = box
        return box
    }
}
