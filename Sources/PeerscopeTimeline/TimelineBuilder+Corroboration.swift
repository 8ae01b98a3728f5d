import PeerscopeCore

// Corroboration: a frame and a log line (or two inputs' lines) about one step are one entry.
extension TimelineBuilder {
    /// A log line and a frame (or MPC's line and the app's print) about one step at about the same
    /// time are one timeline entry with evidence from both: the merged story, not two entries.
    func corroborate(_ w: PeerWork, _ e: PeerEvent, state: TimelineState, sent: Bool, counterpart: Shared<PeerRef>?,
                     session: Shared<SessionKey>?) -> Bool {
        let isLog = if case .logLine = e.evidence { true } else { false }
        for i in w.entries.indices.reversed().prefix(8) {
            guard abs(e.t &- w.entries[i].t) <= TimelineBuilder.corroborationWindow else { break }
            // A frame matches only an entry a log line gave (`matches` below): the others are passed
            // over without copying them (on a capture without logs, every one).
            if !isLog, case .frame = w.entries[i].firstEvidence { continue }
            let x = w.entries[i]
            // Repeated traffic (heartbeats, GCK DD/LSA...) corroborates only the same message.
            // A state change is the pair's, not one side's: each device's log words it from its own
            // side ("Bob changed state" on Alice's device), so direction does not tell two apart.
            let directionless = state == .connecting || state == .connected || state == .disconnected
            guard x.count == 1, x.state == state, !state.aggregates || x.kind == e.kind, x.sent == sent || directionless,
                  x.counterpartBox == counterpart, x.sessionBox == session,
                  x.corroboration.count < TimelineEntry.maxCorroboration else { continue }
            let first = x.firstEvidence
            let xIsLog = if case .logLine = first { true } else { false }
            let inputs = ([first] + x.corroboration.map(\.evidence)).map { ev -> Int in
                switch ev { case .frame(let i, _), .logLine(let i, _): i }
            }
            let input = switch e.evidence { case .frame(let i, _), .logLine(let i, _): i }
            let matches: Bool
            if isLog != xIsLog {
                matches = true   // a frame and a line
            } else if isLog {
                // Two lines: another device's log, or another plugin's reading of the same moment.
                matches = (!inputs.contains(input) || x.source != e.source)
                    && abs(e.t &- x.t) <= TimelineBuilder.sameLogWindow
            } else {
                matches = false  // frames are each their own step
            }
            guard matches else { continue }
            w.entries[i].corroboration.append(TimelineEntry.Corroboration(source: e.source, evidence: e.evidence))
            let detailSource = detail(e)
            let detail = detailSource.text, xDetail = x.detail
            if detail.count > xDetail.count, !xIsLog || isLog { w.entries[i].detailSource = detailSource }
            if !isLog, xIsLog {
                // The frame becomes the entry's main evidence (its time is the wire's).
                w.entries[i].corroboration[w.entries[i].corroboration.count - 1] =
                    TimelineEntry.Corroboration(source: x.source, evidence: first)
                w.entries[i].firstEvidence = e.evidence
                w.entries[i].lastEvidence = nil
                w.entries[i].origin = origin(e)
                w.entries[i].t = e.t
                w.entries[i].lastT = e.t
                if detail.count >= xDetail.count { w.entries[i].detailSource = detailSource }
            }
            return true
        }
        return false
    }

    /// How far apart (capture time) a frame and a log line about one step may be.
    public static let corroborationWindow: Nanos = CaptureTime.second
    /// How far apart two log lines about one step may be.
    public static let sameLogWindow: Nanos = 100 * CaptureTime.millisecond
}
