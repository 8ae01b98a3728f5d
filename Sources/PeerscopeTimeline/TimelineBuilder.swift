import PeerscopeCore

/// An event with its sides resolved to peers and its session instance, and what that instance had
/// reached just before the event (detectors judge events against it).
public struct ResolvedEvent: Sendable {
    public var event: PeerEvent
    public var from: PeerRef?
    public var to: PeerRef?
    public var session: SessionKey?
    /// The state the timeline gave the event (after upgrades such as `gck-connected`).
    public var state: TimelineState
    public var establishedBefore: Bool
    public var secureBefore: Bool
    public var dtlsStartedBefore: Bool

    public var t: Nanos { event.t }
    public var kind: EventKind { event.kind }
    public var evidence: Evidence { event.evidence }
    public var flow: FlowKey? { event.flow }
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
    private var index: [PeerRef: Int]
    private var sessionIndex: [SessionKey: Int]

    init(peers: [PeerTimeline], sessions: [SessionInstance], events: [ResolvedEvent], start: Nanos?, end: Nanos,
         resolver: PeerResolver) {
        self.peers = peers.sorted { ($0.peer.label, $0.peer.ref) < ($1.peer.label, $1.peer.ref) }
        self.sessions = sessions.sorted { ($0.start, $0.key) < ($1.start, $1.key) }
        self.events = events
        self.start = start
        self.end = end
        self.resolver = resolver
        var idx: [PeerRef: Int] = [:]
        for (i, p) in self.peers.enumerated() { idx[p.peer.ref] = i }
        index = idx
        var sidx: [SessionKey: Int] = [:]
        for (i, s) in self.sessions.enumerated() { sidx[s.key] = i }
        sessionIndex = sidx
    }

    public static let empty = Timelines(peers: [], sessions: [], events: [], start: nil, end: 0,
                                        resolver: PeerResolver(identities: PeerIdentities()))

    public func timeline(_ r: PeerRef) -> PeerTimeline? { index[r].map { peers[$0] } }
    public func peer(_ r: PeerRef) -> PeerInfo? { index[r].map { peers[$0].peer } }
    public func session(_ k: SessionKey) -> SessionInstance? { sessionIndex[k].map { sessions[$0] } }

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

    /// What decoding learnt about peers (the only identity input besides the events).
    private let identities: PeerIdentities
    private var pending: [PeerEvent] = []

    public init(identities: PeerIdentities) {
        self.identities = identities
    }

    /// A builder over what `directory` knows now.
    public convenience init(directory: PeerDirectory) {
        self.init(identities: directory.identities)
    }

    public func add(_ e: PeerEvent) { pending.append(e) }
    public func add(contentsOf es: [PeerEvent]) {
        // Adopting the caller's buffer (no copy) when nothing is pending: analysis hands over all
        // its events at once and keeps no other reference.
        if pending.isEmpty { pending = es } else { pending.append(contentsOf: es) }
    }

    // MARK: working state

    private struct RunKey: Hashable {
        var state: TimelineState
        var kind: EventKind
        var sent: Bool
        var counterpart: PeerRef?
        var session: SessionKey?
        /// Log lines and frames fold into separate runs, so a run's first and last evidence stay
        /// from one source and a merged timeline shows both.
        var fromLog: Bool
    }

    private final class PeerWork {
        init(info: PeerInfo) { self.info = info }
        var info: PeerInfo
        var entries: [TimelineEntry] = []
        var history = HistoryBuilder()
        var runs: [RunKey: Int] = [:]
        var sessions: [SessionKey] = []
        var sessionSet: Set<SessionKey> = []
        var addresses: Set<IPAddress> = []
        var endpoints: Set<Endpoint> = []
    }

    private final class SessionWork {
        init(instance: SessionInstance) { self.instance = instance }
        var instance: SessionInstance
        var history = HistoryBuilder()
        var gckFrom: Set<PeerRef> = []
        var ccsFrom: Set<PeerRef> = []
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
        var plaintextFrom: Set<PeerRef> = []
        var dtlsFrom: Set<PeerRef> = []
        var firstPlaintext: Nanos?
        var firstDTLS: Nanos?
        var lastICERequest: Nanos?
        var lastGCKHello: Nanos?
        /// Index of the instance that started while this one was open (see `SessionInstance.supersededBy`).
        var successor: Int?
        var predecessor: Int?
    }

    private var peers: [PeerRef: PeerWork] = [:]
    private var sessions: [SessionWork] = []
    private var latest: [PeerPair: Int] = [:]
    private var counts: [PeerPair: Int] = [:]

    /// What the event does to its pair's session, as the event catalogue declares it.
    private func role(_ e: PeerEvent) -> SessionRole { EventCatalogue.role(e) }

    public func finish(at end: Nanos? = nil) -> Timelines {
        // Normalised in place (the list can be large: no second copy).
        var events = pending
        pending = []
        for i in events.indices {
            events[i].from = PeerResolver.normalized(events[i].from)
            events[i].to = PeerResolver.normalized(events[i].to)
        }
        if !zip(events, events.dropFirst()).allSatisfy({ $0.t <= $1.t }) {
            // Stable: events with equal times keep their input order.
            let order = events.indices.sorted { events[$0].t != events[$1].t ? events[$0].t < events[$1].t : $0 < $1 }
            events = order.map { events[$0] }
        }
        pending = []
        var resolver = PeerResolver(identities: identities, events: events)
        resolver.identifyLogOwners(events)
        if inferLogOwners { resolver.inferLogOwners(events) }
        var resolved: [ResolvedEvent] = []
        resolved.reserveCapacity(events.count)
        for e in events {
            resolved.append(process(e, resolver))
        }
        let endT = max(end ?? Nanos.min, events.last?.t ?? 0)
        let peerTimelines = peers.values.map { w -> PeerTimeline in
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
            return PeerTimeline(peer: info, entries: w.entries, history: w.history.text, sessions: w.sessions)
        }
        settleSuperseded()
        let instances = sessions.map { w -> SessionInstance in
            var s = w.instance
            TimelineBuilder.classifyPlane(w, &s)
            s.history = w.history.text
            return s
        }
        let result = Timelines(peers: peerTimelines, sessions: instances, events: resolved, start: events.first?.t,
                               end: endT, resolver: resolver)
        peers = [:]
        sessions = []
        latest = [:]
        counts = [:]
        return result
    }

    // MARK: processing

    private func touch(_ r: PeerRef, _ h: PeerHint, _ t: Nanos, last: Nanos) {
        let w: PeerWork
        if let existing = peers[r] { w = existing } else { w = PeerWork(info: PeerInfo(ref: r)); peers[r] = w }
        if w.info.displayName == nil, let n = h.displayName, !n.isEmpty { w.info.displayName = n }
        if w.info.participantID == nil, let p = h.participantID { w.info.participantID = p }
        if let a = h.address { w.addresses.insert(a) }
        if let ep = h.endpoint { w.endpoints.insert(ep) }
        if case .address(let a) = r { w.addresses.insert(a) }
        if w.info.firstSeen.map({ t < $0 }) ?? true { w.info.firstSeen = t }
        if w.info.lastSeen.map({ last > $0 }) ?? true { w.info.lastSeen = max(t, last) }
    }

    private func process(_ e: PeerEvent, _ resolver: PeerResolver) -> ResolvedEvent {
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
        if let f = from { touch(f, e.from, e.t, last: e.lastT) }
        if let t = to { touch(t, e.to, e.t, last: e.lastT) }
        var (state, letter) = TimelineMapping.classify(e)
        var e = e
        if (e.kind == .goodbye || e.kind == .expired), let f = from, inOpenSession(f) {
            // A connected peer that stops advertising (apps often do once in session; an mDNS record
            // expires while the session runs) is not lost.
            state = .updated
            letter = nil
            e.attrs["note"] = "stopped advertising; still in session"
        }

        var sessionKey: SessionKey?
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
                sessionKey = sessions[si].instance.key
            }
        }

        if let f = from {
            addEntry(f, e, state: state, letter: letter, sent: true, counterpart: to, session: sessionKey)
        }
        if let t = to {
            addEntry(t, e, state: state, letter: letter, sent: from == nil, counterpart: from, session: sessionKey)
        }
        return ResolvedEvent(event: e, from: from, to: to, session: sessionKey, state: state,
                             establishedBefore: establishedBefore, secureBefore: secureBefore,
                             dtlsStartedBefore: dtlsStartedBefore)
    }

    private func inOpenSession(_ r: PeerRef) -> Bool {
        latest.contains { pair, si in
            (pair.a == r || pair.b == r) && sessions[si].instance.end == nil && sessions[si].instance.established != nil
        }
    }

    /// The one peer ID behind `name` whose session with `other` is open (or ended no longer than
    /// `reopenGap` before `t`: the app's own line about a disconnect follows MPC's).
    private func connectedNamesake(_ name: String, other: PeerRef, at t: Nanos, _ resolver: PeerResolver) -> PeerRef? {
        let ids = resolver.peerIDs(named: name).sorted().map { PeerRef.id($0) }
        func pick(_ ok: (SessionInstance) -> Bool) -> PeerRef? {
            let found = ids.filter { c in latest[PeerPair(c, other)].map { ok(sessions[$0].instance) } ?? false }
            return found.count == 1 ? found[0] : nil
        }
        return pick { $0.end == nil } ?? pick { s in s.end.map { t >= $0 && t &- $0 <= reopenGap } ?? false }
    }

    private func addEntry(_ r: PeerRef, _ e: PeerEvent, state: TimelineState, letter: Character?, sent: Bool,
                          counterpart: PeerRef?, session: SessionKey?) {
        guard let w = peers[r] else { return }
        if let letter { w.history.add(letter, sent: sent, times: e.count) }
        if let s = session, w.sessions.last != s, w.sessionSet.insert(s).inserted { w.sessions.append(s) }
        let fromLog = if case .logLine = e.evidence { true } else { false }
        let key = RunKey(state: state, kind: e.kind, sent: sent, counterpart: counterpart, session: session, fromLog: fromLog)
        if let last = w.entries.last, last.count == 1, last.evidence.first == e.evidence, last.state == state,
           last.sent == sent, last.counterpart == counterpart, last.session == session, e.count == 1,
           last.kind.rawValue.prefix(while: { $0 != "." }) == e.kind.rawValue.prefix(while: { $0 != "." }) {
            // Two events of one frame or line saying the same thing (an mDNS answer that both announces
            // and resolves an instance) are one entry; the fuller detail stays.
            let detail = TimelineMapping.detail(e.kind, e.attrs)
            if detail.count > last.detail.count { w.entries[w.entries.count - 1].detail = detail }
            return
        }
        if e.count == 1, corroborate(w, e, state: state, sent: sent, counterpart: counterpart, session: session) {
            return
        }
        if e.kind == .tcpClosed, let last = w.entries.last, last.evidence.first == e.evidence,
           last.kind == .tcpReset || last.kind == .tcpRefused, last.counterpart == counterpart {
            // A reset or refusal already says the connection ended in this segment.
            return
        }
        // A message shown with its contents (--show-payloads) is its own entry, not part of a run.
        let aggregates = state.aggregates && e.attrs["content"] == nil
        if aggregates, let i = w.runs[key], i < w.entries.count {
            w.entries[i].count &+= e.count
            let lastEvidence = e.lastEvidence ?? e.evidence
            // Events arrive in time order, but a run's last time never moves back.
            if e.lastT >= w.entries[i].lastT {
                w.entries[i].lastT = e.lastT
                if w.entries[i].evidence.count < 2 { w.entries[i].evidence.append(lastEvidence) } else {
                    w.entries[i].evidence[1] = lastEvidence
                }
            }
        } else {
            if !state.aggregates {
                // A control entry ends the runs with the same counterpart.
                w.runs = w.runs.filter { $0.key.counterpart != counterpart }
            }
            var entry = TimelineEntry(t: e.t, state: state, kind: e.kind, sent: sent, counterpart: counterpart,
                                      session: session, evidence: [e.evidence], source: e.source,
                                      detail: TimelineMapping.detail(e.kind, e.attrs),
                                      letter: letter)
            if e.count > 1 {
                entry.count = e.count
                entry.lastT = e.lastT
                if let last = e.lastEvidence { entry.evidence.append(last) }
            }
            w.entries.append(entry)
            if aggregates { w.runs[key] = w.entries.count - 1 }
        }
    }

    /// A log line and a frame (or MPC's line and the app's print) about one step at about the same
    /// time are one timeline entry with evidence from both: the merged story, not two entries.
    private func corroborate(_ w: PeerWork, _ e: PeerEvent, state: TimelineState, sent: Bool, counterpart: PeerRef?,
                             session: SessionKey?) -> Bool {
        let isLog = if case .logLine = e.evidence { true } else { false }
        for i in w.entries.indices.reversed().prefix(8) {
            let x = w.entries[i]
            guard abs(e.t &- x.t) <= TimelineBuilder.corroborationWindow else { break }
            // Repeated traffic (heartbeats, GCK DD/LSA...) corroborates only the same message.
            // A state change is the pair's, not one side's: each device's log words it from its own
            // side ("Bob changed state" on Alice's device), so direction does not tell two apart.
            let directionless = state == .connecting || state == .connected || state == .disconnected
            guard x.count == 1, x.state == state, !state.aggregates || x.kind == e.kind, x.sent == sent || directionless,
                  x.counterpart == counterpart, x.session == session,
                  x.corroboration.count < TimelineEntry.maxCorroboration, let first = x.evidence.first else { continue }
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
            let detail = TimelineMapping.detail(e.kind, e.attrs)
            if detail.count > x.detail.count, !xIsLog || isLog { w.entries[i].detail = detail }
            if !isLog, xIsLog {
                // The frame becomes the entry's main evidence (its time is the wire's).
                w.entries[i].corroboration[w.entries[i].corroboration.count - 1] =
                    TimelineEntry.Corroboration(source: x.source, evidence: first)
                w.entries[i].evidence = [e.evidence]
                w.entries[i].source = e.source
                w.entries[i].kind = e.kind
                w.entries[i].t = e.t
                w.entries[i].lastT = e.t
                if detail.count >= x.detail.count { w.entries[i].detail = detail }
            }
            return true
        }
        return false
    }

    /// How far apart (capture time) a frame and a log line about one step may be.
    public static let corroborationWindow: Nanos = CaptureTime.second
    /// How far apart two log lines about one step may be.
    public static let sameLogWindow: Nanos = 100 * CaptureTime.millisecond

    private func open(_ pair: PeerPair, _ e: PeerEvent, originator: PeerRef, beforeInput: Bool) -> Int {
        let n = (counts[pair] ?? 0) + 1
        counts[pair] = n
        var inst = SessionInstance(key: SessionKey(pair: pair, number: n), originator: originator, start: e.t,
                                   evidence: e.evidence)
        inst.startedBeforeInput = beforeInput
        sessions.append(SessionWork(instance: inst))
        latest[pair] = sessions.count - 1
        return sessions.count - 1
    }

    /// Opens the pair's next instance while `si` is still open: `si` is judged at the end (see
    /// `settleSuperseded`).
    private func openSuccessor(of si: Int, _ pair: PeerPair, _ e: PeerEvent, originator: PeerRef) -> Int {
        let n = open(pair, e, originator: originator, beforeInput: false)
        sessions[si].successor = n
        sessions[n].predecessor = si
        sessions[si].instance.supersededBy = sessions[n].instance.number
        return n
    }

    /// An instance whose successor began while it was open ends `superseded` at the successor's start
    /// when it carried no traffic after that start (beyond `supersedeGrace`) on a flow the successor
    /// did not use; otherwise both were alive at once and it keeps its own end (`overlap` says when).
    private func settleSuperseded() {
        for w in sessions {
            guard let n = w.successor else { continue }
            let next = sessions[n]
            let after = next.instance.start &+ supersedeGrace
            let alive = w.udpLast.filter { f, last in last.t > after && next.udpLast[f] == nil }
                .map { f, last in (key: f, value: w.firstAfterSuccessor[f] ?? last) }
            if let first = alive.min(by: { x, y in
                x.value.t != y.value.t ? x.value.t < y.value.t : x.key.description < y.key.description
            }) {
                // The earliest packet of the older instance's traffic after the successor began.
                w.instance.overlap = (first.value.t, first.value.evidence)
            } else if w.instance.end == nil || w.instance.end.map({ $0 > next.instance.start }) == true {
                w.instance.end = next.instance.start
                w.instance.endReason = SessionInstance.superseded
                w.instance.quietSince = min(w.udpLast.values.map(\.t).max() ?? w.instance.lastT, next.instance.start)
                w.instance.endEvidence = next.instance.startEvidence
            }
        }
    }

    /// The plane from the packets alone: who sent plaintext GCK (`0xC1…`), who sent DTLS (`0xD0…`).
    private static func classifyPlane(_ w: SessionWork, _ s: inout SessionInstance) {
        for side in [s.pair.a, s.pair.b] {
            let clear = w.plaintextFrom.contains(side), secure = w.dtlsFrom.contains(side)
            if clear && secure {
                s.planeBySide[side] = (w.firstDTLS ?? 0) < (w.firstPlaintext ?? 0) ? .dtlsFellBackToPlaintext : .plaintext
            } else if clear {
                s.planeBySide[side] = .plaintext
            } else if secure {
                s.planeBySide[side] = .dtls
            }
        }
        let planes = Set(s.planeBySide.values)
        if planes.isEmpty {
            s.plane = nil
        } else if planes.count == 1 {
            s.plane = planes.first
        } else if planes.contains(.dtlsFellBackToPlaintext) || (w.plaintextFrom.isDisjoint(with: w.dtlsFrom) == false) {
            s.plane = .dtlsFellBackToPlaintext
        } else if planes == [.dtls, .plaintext], let a = s.planeBySide[s.pair.a], let b = s.planeBySide[s.pair.b], a != b,
                  (w.firstPlaintext ?? 0) > (w.firstDTLS ?? 0), s.established != nil {
            // Both planes, each side one, but the session came up: DTLS gave way to plaintext.
            s.plane = .dtlsFellBackToPlaintext
        } else {
            s.plane = .mismatch
        }
    }

    /// True when `e` begins a new instance of a pair whose instance `w` is open and established: a
    /// new invitation (another invitation channel, another invite ID), a fresh ICE + GCK Hello, a
    /// DTLS ClientHello, or a state change to connecting.
    private func startsNewInstance(_ e: PeerEvent, _ w: SessionWork) -> Bool {
        switch e.kind {
        case .invite, .invitationHello:
            if let f = e.flow, f.proto == .tcp { return !w.inviteFlows.contains(f.canonical) }
            if let id = e.attrs["inviteID"] { return !w.inviteIDs.isEmpty && !w.inviteIDs.contains(id) }
            return false
        case .gckHello:
            guard w.instance.milestone(.gckConnected) != nil, let ice = w.lastICERequest else { return false }
            let window = TimelineBuilder.freshHandshakeWindow
            return e.t &- ice <= window && (w.lastGCKHello.map { e.t &- $0 > window } ?? true)
        case .dtlsHandshake: return TimelineBuilder.isClientHello(e)
        case .stateChange: return e.targetState == "connecting"
        default: return false
        }
    }

    private func close(_ si: Int, at e: PeerEvent, reason: String) {
        guard sessions[si].instance.end == nil else { return }
        sessions[si].instance.end = e.t
        sessions[si].instance.endReason = reason
        sessions[si].instance.endEvidence = e.evidence
    }

    private static func isClientHello(_ e: PeerEvent) -> Bool {
        (e[.message] ?? "").lowercased().filter { $0.isLetter }.contains("clienthello")
    }

    private func instanceIndex(for pair: PeerPair, _ e: PeerEvent, originator: PeerRef) -> Int? {
        let role = role(e)
        guard let si = latest[pair] else {
            switch role {
            case .start: return open(pair, e, originator: originator, beforeInput: false)
            case .traffic: return open(pair, e, originator: originator, beforeInput: true)
            case .attach: return nil
            }
        }
        // Packets on a UDP flow that only an older, still open instance of the pair used are its own
        // (a duplicate session on other ports); the newest instance takes a flow once it uses it.
        // A handshake packet on such a flow belongs to the newest instance while that one is being set
        // up (a reconnect on the same ports); once it is up, it is the older one's recurring check.
        if let f = e.flow, f.proto == .udp, sessions[si].predecessor != nil, sessions[si].udpLast[f.canonical] == nil,
           self.role(e) != .start || sessions[si].instance.established != nil, !startsNewInstance(e, sessions[si]) {
            var older = sessions[si].predecessor
            while let prev = older {
                if sessions[prev].instance.end == nil, sessions[prev].udpLast[f.canonical] != nil { return prev }
                older = sessions[prev].predecessor
            }
        }
        let inst = sessions[si].instance
        if let end = inst.end {
            switch role {
            case .start: return open(pair, e, originator: originator, beforeInput: false)
            case .traffic where e.t &- end > reopenGap: return open(pair, e, originator: originator, beforeInput: true)
            default:
                // Stragglers of a finished instance attach to it; much later ones belong to no instance.
                return e.t &- end > reopenGap ? nil : si
            }
        }
        if role == .start, inst.established != nil {
            if startsNewInstance(e, sessions[si]) { return openSuccessor(of: si, pair, e, originator: originator) }
            if e.kind == .invite || e.kind == .inviteConnect || e.kind == .invitationHello {
                sessions[si].instance.overlappingAttempts.append(e.evidence)
            }
        }
        return si
    }

    private func milestone(_ si: Int, _ state: TimelineState, _ e: PeerEvent, by: PeerRef) {
        guard sessions[si].instance.milestone(state) == nil else { return }
        sessions[si].instance.milestones.append(SessionMilestone(state: state, t: e.t, evidence: e.evidence, by: by))
    }

    private static let gckKinds: Set<EventKind> = [.gckHello, .gckDD, .gckLSA, .gckLSAACK, .gckHeartbeat]
    private static let establishing: Set<TimelineState> = [
        .connected, .gckConnected, .secureChannelUp, .appHandshakeDone, .keepAlive, .heartbeat,
    ]

    private func apply(_ e: PeerEvent, state s0: TimelineState, letter l0: Character?, from: PeerRef, to: PeerRef,
                       by: PeerRef, at si: Int) -> (TimelineState, Character?) {
        var state = s0, letter = l0
        let w = sessions[si]
        if w.instance.eventCount == 0 { w.instance.originator = from }
        w.instance.eventCount &+= e.count
        w.instance.lastT = max(w.instance.lastT, e.lastT)
        if let f = e.flow {
            let c = f.canonical
            if f.proto == .udp, case .frame = e.evidence {
                if w.udpLast[c].map({ e.lastT >= $0.t }) ?? true { w.udpLast[c] = (e.lastT, e.lastEvidence ?? e.evidence) }
                if let n = w.successor, w.firstAfterSuccessor[c] == nil {
                    let after = sessions[n].instance.start &+ supersedeGrace
                    if e.t > after {
                        w.firstAfterSuccessor[c] = (e.t, e.evidence)
                    } else if e.lastT > after {
                        w.firstAfterSuccessor[c] = (e.lastT, e.lastEvidence ?? e.evidence)
                    }
                }
            }
            if f.proto == .tcp, e.kind.isIn("invitation") { w.inviteFlows.insert(c) }
        }
        if e.kind.isIn("invitation"), let id = e.attrs["inviteID"] { w.inviteIDs.insert(id) }
        if e.kind == .iceRequest { w.lastICERequest = e.lastT }
        if case .frame = e.evidence {
            if e.kind.isIn("gck") {
                w.plaintextFrom.insert(from)
                if w.firstPlaintext == nil { w.firstPlaintext = e.t }
            } else if e.kind.isIn("dtls") {
                w.dtlsFrom.insert(from)
                if w.firstDTLS == nil { w.firstDTLS = e.t }
            }
        }
        if e.kind == .gckHello { w.lastGCKHello = e.lastT }
        if e.kind.isIn("dtls") { w.instance.encrypted = true }
        if e.kind == .dtlsHandshake || e.kind == .dtlsChangeCipherSpec || e.kind == .dtlsEstablished { w.dtlsStarted = true }
        if TimelineBuilder.gckKinds.contains(e.kind) {
            w.gckFrom.insert(from)
            if w.gckFrom.count == 2, w.instance.milestone(.gckConnected) == nil { state = .gckConnected; letter = "G" }
        }
        if e.kind == .dtlsChangeCipherSpec {
            w.ccsFrom.insert(from)
            if w.ccsFrom.count == 2, !w.secure { state = .secureChannelUp; letter = "U" }
        }
        if state == .secureChannelUp { w.secure = true }
        // DTLS records without a handshake seen: the secure channel was up before the input began.
        if e.kind == .dtlsApplicationData, !w.dtlsStarted { w.secure = true }
        if state == .data, w.instance.established == nil, !(w.dtlsStarted && !w.secure) {
            // Data on a session joined late shows the session is up. ICE checks alone before it
            // (connectivity checks recur during a session) do not make it a session being set up.
            let onlyChecks = w.instance.milestones.allSatisfy { $0.state == .iceChecks || $0.state == .iceConnected }
            if w.instance.startedBeforeInput || onlyChecks {
                w.instance.startedBeforeInput = true
                w.instance.established = e.t
            }
        }
        if TimelineBuilder.establishing.contains(state), w.instance.established == nil { w.instance.established = e.t }
        if let letter { w.history.add(letter, sent: from == w.instance.originator, times: e.count) }
        if state != .other { milestone(si, state, e, by: by) }

        switch e.kind {
        case .disconnected: close(si, at: e, reason: "disconnected")
        case .stateChange:
            let target = e.targetState
            if target == "notconnected" || target == "disconnected" { close(si, at: e, reason: "disconnected") }
        case .inviteResponse where e.accepted == false: close(si, at: e, reason: "declined")
        case .connectionDecision where state == .invitationDeclined: close(si, at: e, reason: "declined")
        case .inviteTimeout: close(si, at: e, reason: "invitation timed out")
        case .icmpUnreachable: close(si, at: e, reason: "peer unreachable (ICMP)")
        case .dtlsAlert:
            // A fatal alert or close_notify ends the secure channel. An unreadable (encrypted) alert is
            // one of those in practice: the other warnings are not sent by MPC's DTLS.
            let level = (e[.level] ?? "").lowercased()
            let description = e[.description] ?? level
            if description == "close_notify" {
                close(si, at: e, reason: "closed (DTLS close_notify)")
            } else if level == "fatal" || level == "encrypted" {
                close(si, at: e, reason: level == "encrypted" ? "DTLS alert (encrypted)" : "DTLS alert (\(description))")
            }
        case .iceTimeout, .dtlsTimeout, .gckGivingUp, .gckTimeout:
            let st = (e[.state] ?? "").lowercased().filter { $0.isLetter }
            let wait = (e[.wait] ?? "").lowercased()
            let alreadyUp = st == "connected" || st == "dtlsconnected"
            if sessions[si].instance.established == nil, !alreadyUp, !(e.kind == .gckTimeout && wait.contains("heartbeat")) {
                close(si, at: e, reason: "handshake gave up")
            }
        default: break
        }
        return (state, letter)
    }
}
