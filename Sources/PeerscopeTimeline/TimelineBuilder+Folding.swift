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
            let detail = TimelineEntry.Detail(e.kind, e.attrs)
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
                // A control entry ends the runs with the same counterpart (the table is rebuilt only
                // when it holds one: it is only looked up by key, never iterated).
                if w.runs.keys.contains(where: { $0.counterpart == counterpart }) {
                    w.runs = w.runs.filter { $0.key.counterpart != counterpart }
                }
            }
            var entry = TimelineEntry(t: e.t, state: state, kind: e.kind, sent: sent, counterpart: counterpart,
                                      session: session, evidence: e.evidence, source: e.source,
                                      detail: TimelineEntry.Detail(e.kind, e.attrs), letter: letter)
            if e.count > 1 {
                entry.count = e.count
                entry.lastT = e.lastT
                if let last = e.lastEvidence { entry.lastEvidence = last }
            }
            if w.entries.count == w.entries.capacity {
                // Grown by a quarter, not doubled: thousands of peers' timelines grow at once, and
                // doubling leaves up to half of each unused (copying stays linear: about 5 per entry).
                w.entries.reserveCapacity(w.entries.count + w.entries.count / 4 + 8)
            }
            w.entries.append(entry)
            if aggregates { w.runs[key] = w.entries.count - 1 }
        }
    }
}
