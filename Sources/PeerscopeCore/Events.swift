/// What a peer event says happened. A string-backed name so log patterns from user YAML files can
/// name kinds too; the built-in kinds are constants declared beside their catalogue entries
/// (`EventCatalogue+Kinds.swift`; dotted, family first).
public struct EventKind: RawRepresentable, Hashable, Sendable, Comparable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ raw: String) { rawValue = raw }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }
    public static func < (a: EventKind, b: EventKind) -> Bool { a.rawValue < b.rawValue }
    public var family: Substring { rawValue.split(separator: ".").first ?? Substring(rawValue) }

    /// True when the kind is in `family` (`dtls`, `app`...): a cheap `family == x` without splitting.
    @inlinable public func isIn(_ family: String) -> Bool {
        let r = rawValue.utf8, f = family.utf8
        guard r.count > f.count, r.starts(with: f) else { return false }
        return r[r.index(r.startIndex, offsetBy: f.count)] == UInt8(ascii: ".")
    }
}

/// What is known about a peer at the place an event was seen. Any field may be missing; the
/// timeline resolves hints to peers using what discovery and invitations taught the directory.
public struct PeerHint: Hashable, Sendable, CustomStringConvertible {
    /// MCPeerID's 64-bit ID (the base-36 instance name decoded).
    public var peerID: UInt64?
    /// The 31-bit participant ID that GCK logs print as `[%08X]`.
    public var participantID: UInt32?
    public var displayName: String?
    public var endpoint: Endpoint?
    public var address: IPAddress?

    public init(peerID: UInt64? = nil, participantID: UInt32? = nil, displayName: String? = nil,
                endpoint: Endpoint? = nil, address: IPAddress? = nil) {
        self.peerID = peerID
        self.participantID = participantID ?? peerID.map { UInt32(truncatingIfNeeded: $0 & 0x7FFF_FFFF) }
        self.displayName = displayName
        self.endpoint = endpoint
        self.address = address ?? endpoint?.address
    }

    public static let unknown = PeerHint()

    public var isEmpty: Bool {
        peerID == nil && participantID == nil && displayName == nil && endpoint == nil && address == nil
    }

    public var description: String {
        var parts: [String] = []
        if let displayName { parts.append(displayName) }
        if let peerID { parts.append(PeerIdentity.idString(peerID)) }
        if let participantID { parts.append(PeerIdentity.participantHex(participantID)) }
        if let endpoint { parts.append("\(endpoint)") } else if let address { parts.append("\(address)") }
        return parts.isEmpty ? "?" : parts.joined(separator: " ")
    }
}

/// One thing that happened to or between peers, at capture time, with its evidence.
///
/// Stored compactly (a large capture keeps millions): the peer hints and the flow are interned
/// (`Shared.intern`: one box per distinct value, 8 bytes in the event), so an event is about
/// 120 bytes instead of 440. The properties read and write as plain values.
public struct PeerEvent: Sendable, Hashable {
    public var kind: EventKind
    public var t: Nanos
    /// Time of the last occurrence (`t` for a single event).
    public var lastT: Nanos
    /// The peer that did it (sent the packet, printed as subject of the log line).
    public var from: PeerHint {
        get { fromBox?.value ?? .unknown }
        set { fromBox = newValue.isEmpty ? nil : Shared.intern(newValue) }
    }
    /// The other side, when there is one.
    public var to: PeerHint {
        get { toBox?.value ?? .unknown }
        set { toBox = newValue.isEmpty ? nil : Shared.intern(newValue) }
    }
    /// The flow the packet travelled on, for packet evidence.
    public var flow: FlowKey? {
        get { flowBox?.value }
        set { flowBox = newValue.map { Shared.intern($0) } }
    }
    /// The plugin that produced it (`mdns`, `gck-heartbeat`, `log-mpc-gck`, ...).
    public var source: String
    /// Details, small and never message contents unless the run asked for payloads (read and written
    /// like a dictionary; stored packed, see `EventAttrs`).
    public var attrs: EventAttrs
    /// How many occurrences this event stands for: steady traffic (keep-alives, heartbeats, data)
    /// repeating on one flow is kept as one event spanning `t ... lastT` (see `EventCoalescer`).
    public var count: Int = 1
    public var evidence: Evidence {
        get { evidencePair.first }
        set { evidencePair.first = newValue }
    }
    /// Evidence of the last occurrence, when `count > 1`.
    public var lastEvidence: Evidence? {
        get { evidencePair.last }
        set { evidencePair.last = newValue }
    }
    /// Both, packed (25 bytes instead of 48: see `EvidencePair`).
    public var evidencePair: EvidencePair
    /// The interned hints and flow (nil: unknown / no flow). Equal values share one box.
    @usableFromInline var fromBox: Shared<PeerHint>?
    @usableFromInline var toBox: Shared<PeerHint>?
    @usableFromInline var flowBox: Shared<FlowKey>?

    public init(kind: EventKind, t: Nanos, evidence: Evidence, from: PeerHint = .unknown, to: PeerHint = .unknown,
                flow: FlowKey? = nil, source: String, attrs: [String: String] = [:]) {
        self.kind = kind
        self.t = t
        evidencePair = EvidencePair(evidence)
        fromBox = from.isEmpty ? nil : Shared.intern(from)
        toBox = to.isEmpty ? nil : Shared.intern(to)
        flowBox = flow.map { Shared.intern($0) }
        self.source = source
        self.attrs = EventAttrs(attrs)
        self.lastT = t
    }

    /// An event whose hints and flow are interned in `interner` (the analysis's own table) instead of
    /// the process-wide one.
    public init(kind: EventKind, t: Nanos, evidence: Evidence, from: PeerHint, to: PeerHint, flow: FlowKey?, source: String,
                attrs: EventAttrs, interner: EventInterner) {
        self.kind = kind
        self.t = t
        evidencePair = EvidencePair(evidence)
        fromBox = interner.hint(from)
        toBox = interner.hint(to)
        flowBox = interner.flow(flow)
        self.source = source
        self.attrs = attrs
        self.lastT = t
    }

    /// Both ends of a coalesced run (one item for a single event).
    public var occurrences: [(t: Nanos, evidence: Evidence)] {
        guard count > 1, let last = lastEvidence else { return [(t, evidence)] }
        return [(t, evidence), (lastT, last)]
    }

    /// The interned `from` hint's and flow's boxes (nil: none): cheap table keys, since boxes compare by
    /// identity first and hash by their cached value hash (past the interning bound equal values may
    /// sit in different boxes; they still compare equal).
    public var fromAndFlowBoxes: (from: Shared<PeerHint>?, flow: Shared<FlowKey>?) { (fromBox, flowBox) }

    /// True when both events name the same hints and flow (cheap: interned boxes compare by identity).
    @inlinable public func samePeersAndFlow(_ o: PeerEvent) -> Bool {
        fromBox == o.fromBox && toBox == o.toBox && flowBox == o.flowBox
    }
}

/// Keeps steady traffic compact: an event of a steady kind (app keep-alive, GCK heartbeat and data,
/// DTLS application data) that repeats with the same kind, source, flow and peer hints no more than
/// its kind's gap after the previous one is folded into it (count and last time), so a long healthy
/// session costs a few events instead of one per packet. A longer pause starts a new event (choose
/// each gap no longer than the shortest silence a detector looks for in that kind of traffic), and
/// any other event on the same flow (either direction) closes the flow's runs, so state changes are
/// never hidden inside a run.
public struct EventCoalescer {
    /// The kinds the catalogue declares steady (`CoalescingRule.steady`).
    public static let steadyKinds: Set<EventKind> = Set(EventCatalogue.defaultCoalescingGaps.keys)

    /// The catalogue's default gaps (the seeds': app keep-alives are judged on 6 s, session traffic on 15 s).
    public static let defaultGaps: [EventKind: Nanos] = EventCatalogue.defaultCoalescingGaps

    /// Steady kinds about a peer rather than a flow (`identity.advertised`): folded without a flow.
    /// Other kinds without a flow (log lines) are never folded.
    public static let peerKinds: Set<EventKind> = steadyKinds.filter { $0.isIn("identity") }

    private struct Signature: Hashable {
        var kind: EventKind
        var source: String
        /// Nil for a steady kind without a flow (`identity.advertised`): no other event closes its run.
        var flow: FlowKey?
        var from: PeerHint
        var to: PeerHint
    }

    /// Longest pause folded, per steady kind (a kind missing or at 0 is never folded).
    public let gaps: [EventKind: Nanos]
    private let longest: Nanos
    /// Open runs: signature -> index of the run's event in the caller's list.
    private var open: [Signature: Int] = [:]
    /// Open runs of steady kinds whose gap never ends (`identity.advertised`: one per peer and source),
    /// kept apart so that `prune` does not scan them at every call: there are as many as peers seen.
    private var openForever: [Signature: Int] = [:]
    private var byFlow: [FlowKey: [Signature]] = [:]
    public private(set) var folded: Int = 0

    public init(gaps: [EventKind: Nanos] = EventCoalescer.defaultGaps) {
        self.gaps = gaps.filter { EventCoalescer.steadyKinds.contains($0.key) && $0.value > 0 }
        longest = self.gaps.values.max() ?? 0
    }

    /// The same gap for every steady kind (0: keep every event).
    public init(gap: Nanos) {
        self.init(gaps: Dictionary(uniqueKeysWithValues: EventCoalescer.steadyKinds.map { ($0, gap) }))
    }

    /// Adds `e` to `events`, folding it into an open run when it continues one.
    public mutating func add(_ e: PeerEvent, to events: inout [PeerEvent]) {
        guard longest > 0 else { events.append(e); return }
        guard let flow = e.flow else { addFlowless(e, to: &events); return }
        let canon = flow.canonical
        guard let gap = gaps[e.kind] else {
            if let sigs = byFlow.removeValue(forKey: canon) { for s in sigs { open.removeValue(forKey: s) } }
            events.append(e)
            return
        }
        let sig = Signature(kind: e.kind, source: e.source, flow: flow, from: e.from, to: e.to)
        guard appendUnlessFolded(e, sig, gap: gap, to: &events) else { return }
        if open.updateValue(events.count - 1, forKey: sig) == nil { byFlow[canon, default: []].append(sig) }
    }

    /// What `add` does with an event on `flow` of a kind it never folds, without keeping it: closes the
    /// flow's runs (the collector kept the event elsewhere, see `QueryRuns`).
    public mutating func closeRuns(on flow: FlowKey) {
        guard longest > 0, let sigs = byFlow.removeValue(forKey: flow.canonical) else { return }
        for s in sigs { open.removeValue(forKey: s) }
    }

    /// Folds `e` into the open run of `sig` when it continues it (in place: count and last time);
    /// else appends it, returning true (the caller opens its run).
    private mutating func appendUnlessFolded(_ e: PeerEvent, _ sig: Signature, gap: Nanos, to events: inout [PeerEvent]) -> Bool {
        if let i = Self.neverEnds(sig, gap) ? openForever[sig] : open[sig], i < events.count, events[i].kind == e.kind, e.t >= events[i].lastT, e.t &- events[i].lastT <= gap {
            events[i].count &+= 1
            events[i].lastT = e.t
            events[i].lastEvidence = e.evidence
            folded &+= 1
            return false
        }
        events.append(e)
        return true
    }

    /// A steady kind without a flow (discovery refreshes, `identity.advertised`) folds by kind, source
    /// and peers: the run's event is updated in place, so a refresh that only moves "last seen" costs a
    /// table lookup and no memory.
    private mutating func addFlowless(_ e: PeerEvent, to events: inout [PeerEvent]) {
        guard let gap = gaps[e.kind], EventCoalescer.peerKinds.contains(e.kind) else { events.append(e); return }
        let sig = Signature(kind: e.kind, source: e.source, flow: nil, from: e.from, to: e.to)
        guard appendUnlessFolded(e, sig, gap: gap, to: &events) else { return }
        if Self.neverEnds(sig, gap) { openForever[sig] = events.count - 1 } else { open[sig] = events.count - 1 }
    }

    /// A run that no pause ends and no flow closes: kept in `openForever`, which pruning skips. The one
    /// test for both where such a run is looked up and where it is opened.
    private static func neverEnds(_ sig: Signature, _ gap: Nanos) -> Bool { gap == .max && sig.flow == nil }

    /// The indexes of the caller's list that open runs point at (events that may still change), sorted.
    public var openIndexes: [Int] { Set(open.values).union(openForever.values).sorted() }

    /// The caller's list moved its events: the one at index `i` is now at `newIndex(i)` (nil: gone). Runs
    /// follow their events; a run whose event is gone is forgotten (spilling while decoding keeps every
    /// event of `openIndexes`).
    public mutating func moveIndexes(_ newIndex: (Int) -> Int?) {
        var gone: [Signature] = []
        for (sig, i) in open {
            if let j = newIndex(i) { open[sig] = j } else { gone.append(sig) }
        }
        for s in gone {
            open.removeValue(forKey: s)
            guard let canon = s.flow?.canonical, var list = byFlow[canon] else { continue }
            list.removeAll { $0 == s }
            byFlow[canon] = list.isEmpty ? nil : list
        }
        openForever = openForever.compactMapValues(newIndex)
    }

    /// Forgets runs that can no longer continue at capture time `t` (keeps the table to active flows).
    public mutating func prune(at t: Nanos, events: [PeerEvent]) {
        guard !open.isEmpty else { return }
        var dead: [Signature] = []
        for (sig, i) in open where i >= events.count || t &- events[i].lastT > (gaps[sig.kind] ?? 0) { dead.append(sig) }
        guard !dead.isEmpty else { return }
        for s in dead {
            open.removeValue(forKey: s)
            guard let canon = s.flow?.canonical else { continue }
            if var list = byFlow[canon] {
                list.removeAll { $0 == s }
                byFlow[canon] = list.isEmpty ? nil : list
            }
        }
    }
}

/// MCPeerID conventions (spec §1.1).
public enum PeerIdentity {
    /// 13-character, zero-padded base-36 of the 64-bit ID, lower case.
    public static func idString(_ id: UInt64) -> String {
        let s = String(id, radix: 36)
        return String(repeating: "0", count: max(0, 13 - s.count)) + s
    }

    /// Parses a base-36 idString (1...13 characters of [0-9a-zA-Z]) that fits 64 bits.
    public static func parse(idString s: some StringProtocol) -> UInt64? {
        guard !s.isEmpty, s.count <= 13 else { return nil }
        guard s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return UInt64(s.lowercased(), radix: 36)
    }

    public static func participantID(_ id: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: id & 0x7FFF_FFFF) }

    public static func participantHex(_ p: UInt32) -> String {
        let s = String(p, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 8 - s.count)) + s
    }
}
