import PeerscopeCore

/// How the timeline identifies a peer. A peer ID is the real identity; the other cases stand for
/// peers seen only partly (a participant ID in a GCK log, a display name, a bare address) and for
/// the device that wrote a log when the log line does not say who it is.
public enum PeerRef: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// MCPeerID's 64-bit ID.
    case id(UInt64)
    /// Only the 31-bit participant ID is known (GCK logs and packets of a peer never discovered).
    case participant(UInt32)
    /// Only a display name is known (app logs), or the name is shared by several peer IDs.
    case name(String)
    /// An endpoint no discovery or invitation tied to a peer: "unknown peer at ADDRESS".
    case address(IPAddress)
    /// The device that wrote log input `input` (log lines name only the remote side).
    case logOwner(input: Int)

    public var description: String {
        switch self {
        case .id(let v): "id:" + PeerIdentity.idString(v)
        case .participant(let p): "participant:" + PeerIdentity.participantHex(p)
        case .name(let n): "name:" + n
        case .address(let a): "address:\(a)"
        case .logOwner(let i): "log-owner:\(i)"
        }
    }

    public var peerID: UInt64? { if case .id(let v) = self { return v } else { return nil } }
}

/// What the run knows about one peer, for display and reports.
public struct PeerInfo: Sendable, Hashable {
    public var ref: PeerRef
    public var peerID: UInt64?
    public var participantID: UInt32?
    public var displayName: String?
    public var addresses: [IPAddress]
    public var endpoints: [Endpoint]
    public var firstSeen: Nanos?
    public var lastSeen: Nanos?

    public init(ref: PeerRef) {
        self.ref = ref
        addresses = []
        endpoints = []
        switch ref {
        case .id(let v):
            peerID = v
            participantID = PeerIdentity.participantID(v)
        case .participant(let p): participantID = p
        case .name(let n): displayName = n
        case .address(let a): addresses = [a]
        case .logOwner: break
        }
    }

    /// The 13-character base-36 idString, when the peer ID is known.
    public var idString: String? { peerID.map(PeerIdentity.idString) }
    /// `%08X` participant ID, when known.
    public var participantHex: String? { participantID.map(PeerIdentity.participantHex) }

    /// How people see the peer: its display name, else what is known.
    public var label: String {
        if let displayName, !displayName.isEmpty { return displayName }
        switch ref {
        case .id(let v): return "peer " + PeerIdentity.idString(v)
        case .participant(let p): return "participant " + PeerIdentity.participantHex(p)
        case .name(let n): return n
        case .address(let a): return "unknown peer at \(a)"
        case .logOwner(let i): return "log owner (input \(i + 1))"
        }
    }

    /// `(a.label, a.ref) < (b.label, b.ref)`, the timelines' peer order. Two peers without a display
    /// name known by address (or both by peer ID) have labels that share their prefix ("unknown peer at ",
    /// "peer "), so the text after it decides and the labels are not built: a sort compared two freshly
    /// built labels per comparison. That text starts with an ASCII character, so no normalisation joins
    /// it to the prefix and the order is the labels' (`PeerOrderTests` compares the two).
    static func sortsBefore(_ a: PeerInfo, _ b: PeerInfo) -> Bool {
        if a.displayName?.isEmpty ?? true, b.displayName?.isEmpty ?? true {
            switch (a.ref, b.ref) {
            case (.address(let x), .address(let y)):
                let (tx, ty) = (x.description, y.description)
                return tx != ty ? tx < ty : a.ref < b.ref
            case (.id(let x), .id(let y)):
                let (tx, ty) = (PeerIdentity.idString(x), PeerIdentity.idString(y))
                return tx != ty ? tx < ty : a.ref < b.ref
            default:
                break
            }
        }
        return (a.label, a.ref) < (b.label, b.ref)
    }
}

/// The identity facts of a run, folded from its `identity.*` events: which peer IDs, display names,
/// addresses and endpoints belong together, and when each MPC instance was advertised. The one
/// identity model after decoding (the decoders' `PeerDirectory` stays with them): `PeerResolver`
/// resolves with it, the timeline and the reports read it.
public struct PeerIdentities: Sendable, Hashable {
    /// A peer's facts (`advertisedFirst`/`Last` from `identity.advertised`).
    public typealias Entry = PeerFacts

    public private(set) var entries: [UInt64: Entry] = [:]

    public init() {}

    /// The facts of `events` (other kinds are skipped), in order.
    public init(events: some Sequence<PeerEvent>) {
        for e in events { add(e) }
    }

    /// Folds one event in; false (and nothing learnt) when it is not an identity fact.
    @discardableResult
    public mutating func add(_ e: PeerEvent) -> Bool {
        guard e.kind.isIn("identity"), let id = e.from.peerID else { return e.kind.isIn("identity") }
        var x = entries[id] ?? Entry(peerID: id)
        switch e.kind {
        case .identityAdvertised:
            x.advertisedFirst = min(x.advertisedFirst ?? e.t, e.t)
            x.advertisedLast = max(x.advertisedLast ?? e.lastT, e.lastT)
        default:
            if let n = e.from.displayName, !n.isEmpty { x.displayName = n }
            if let a = e.from.address { x.addresses.insert(a) }
            if let ep = e.from.endpoint {
                x.addresses.insert(ep.address)
                x.endpoints.insert(ep)
            }
        }
        entries[id] = x
        return true
    }

    /// The entries in peer ID order (the same order whatever the dictionary's).
    public var sorted: [Entry] { entries.values.sorted { $0.peerID < $1.peerID } }
}

/// Resolves `PeerHint`s to `PeerRef`s: peer ID first, then participant ID (directory, then the low
/// 31 bits of any peer ID seen in the events), display name (when it names exactly one peer ID),
/// endpoint and address (directory, then endpoints seen beside a peer ID in the events).
public struct PeerResolver: Sendable {
    private var participants: [UInt32: UInt64] = [:]
    private var names: [String: Set<UInt64>] = [:]
    private var endpoints: [Endpoint: UInt64] = [:]
    private var addresses: [IPAddress: Set<UInt64>] = [:]
    /// When each endpoint and address was seen with which peer ID, in time order (an app relaunched
    /// on the same device gets a new peer ID at the same address: later packets are the new one's).
    private var endpointBindings: [Endpoint: [(Nanos, UInt64)]] = [:]
    private var addressBindings: [IPAddress: [(Nanos, UInt64)]] = [:]
    /// Participant IDs (no peer ID known) seen as the source or destination of GCK packets, by the
    /// endpoint that carried them, in time order: the STUN checks and DTLS records of that endpoint
    /// are the same device (a capture that began after discovery and invitation knows no more).
    private var participantBindings: [Endpoint: [(Nanos, UInt64)]] = [:]
    private var participantAddresses: [IPAddress: Set<UInt32>] = [:]
    /// Who wrote each log input, when it could be inferred (see `inferLogOwners`).
    public var logOwners: [Int: PeerRef] = [:]

    /// Learns from the identity facts and from every hint that carries a peer ID, so a log line naming
    /// only a participant resolves even when the packet that named the peer ID came later.
    public init(identities: PeerIdentities, events: some Sequence<PeerEvent> = [PeerEvent]()) {
        for e in identities.sorted {
            let id = e.peerID
            participants[e.participantID] = id
            if let n = e.displayName, !n.isEmpty { names[n, default: []].insert(id) }
            for ep in e.endpoints { endpoints[ep] = id }
            for a in e.addresses { addresses[a, default: []].insert(id) }
        }
        for e in events {
            learn(e.from, at: e.t)
            learn(e.to, at: e.t)
            if let flow = e.flow, case .frame = e.evidence, e.kind.isIn("gck") {
                bindParticipant(e.from, flow.src, at: e.t)
                bindParticipant(e.to, flow.dst, at: e.t)
            }
        }
    }

    /// Ties a GCK packet's participant ID (when no peer ID is known for it) to the endpoint it used.
    private mutating func bindParticipant(_ h: PeerHint, _ ep: Endpoint, at t: Nanos) {
        guard h.peerID == nil, let p = h.participantID, participants[p] == nil else { return }
        if participantBindings[ep]?.last?.1 != UInt64(p) { participantBindings[ep, default: []].append((t, UInt64(p))) }
        participantAddresses[ep.address, default: []].insert(p)
    }

    /// The participant (no peer ID known) whose GCK packets used the endpoint, else the one
    /// participant seen at the address.
    private func participant(at ep: Endpoint?, address: IPAddress?, t: Nanos?) -> UInt32? {
        if let ep, let list = participantBindings[ep] {
            let b = t.flatMap { PeerResolver.binding(list, at: $0) } ?? list.last?.1
            if let b, let p = UInt32(exactly: b) { return p }
        }
        if let a = address ?? ep?.address, let s = participantAddresses[a], s.count == 1 { return s.first }
        return nil
    }

    /// An event's two hints `normalized`, written back only where they change (both finishing paths).
    static func normalizeHints(_ e: inout PeerEvent) {
        let from = e.from, to = e.to
        let nf = normalized(from), nt = normalized(to)
        if nf != from { e.from = nf }
        if nt != to { e.to = nt }
    }

    /// A display name written `idString+name` (as invitation Hellos and some logs print peers)
    /// becomes the peer ID and the name.
    public static func normalized(_ h: PeerHint) -> PeerHint {
        // No `+` byte, no `+` character (checked by bytes first: most names have none).
        guard let n = h.displayName, n.utf8.contains(UInt8(ascii: "+")), let plus = n.firstIndex(of: "+") else { return h }
        let head = n[..<plus]
        guard head.count == 13, let id = PeerIdentity.parse(idString: head), h.peerID == nil || h.peerID == id else { return h }
        var out = PeerHint(peerID: id, displayName: String(n[n.index(after: plus)...]), endpoint: h.endpoint,
                           address: h.address)
        if out.displayName?.isEmpty ?? true { out.displayName = nil }
        return out
    }

    /// Learns what a hint with a peer ID ties together; `t` (events come in time order) records
    /// when an endpoint or address was seen with that peer.
    public mutating func learn(_ h: PeerHint, at t: Nanos? = nil) {
        guard let id = h.peerID else { return }
        participants[PeerIdentity.participantID(id)] = id
        if let n = h.displayName, !n.isEmpty { names[n, default: []].insert(id) }
        if let ep = h.endpoint, endpoints[ep] == nil { endpoints[ep] = id }
        if let a = h.address { addresses[a, default: []].insert(id) }
        guard let t else { return }
        if let ep = h.endpoint, endpointBindings[ep]?.last?.1 != id { endpointBindings[ep, default: []].append((t, id)) }
        if let a = h.address, addressBindings[a]?.last?.1 != id { addressBindings[a, default: []].append((t, id)) }
    }

    /// The binding made last at or before `t` (the first one when `t` is earlier than all). Bindings
    /// are recorded in time order, so this is a binary search: an address that many peer IDs used
    /// over a long capture (apps relaunched, devices reusing addresses) costs log n per lookup.
    private static func latest(_ list: [(Nanos, UInt64)]?, at t: Nanos) -> (Nanos, UInt64)? {
        guard let list, !list.isEmpty else { return nil }
        // The first binding later than `t`; the answer is the one before it.
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if list[mid].0 > t { hi = mid } else { lo = mid + 1 }
        }
        return list[max(0, lo - 1)]
    }

    private static func binding(_ list: [(Nanos, UInt64)]?, at t: Nanos) -> UInt64? { latest(list, at: t)?.1 }

    /// Peer IDs known to use a display name.
    public func peerIDs(named name: String) -> Set<UInt64> { names[name] ?? [] }

    private func unique(_ s: Set<UInt64>?) -> UInt64? {
        guard let s, s.count == 1 else { return nil }
        return s.first
    }

    private func byAddress(_ a: IPAddress, at t: Nanos? = nil) -> UInt64? {
        if let id = unique(addresses[a]) { return id }
        if a.isLinkLocal, let id = unique(addresses[a.unscoped]) { return id }
        // Several peer IDs at one address: the one seen there most recently.
        if let t, let id = PeerResolver.binding(addressBindings[a], at: t) { return id }
        return nil
    }

    /// The peer a hint names, or nil for an empty hint. `evidence` decides what an empty hint means:
    /// in a log line it is the device that wrote the log.
    public func resolve(_ h: PeerHint, evidence: Evidence? = nil, at t: Nanos? = nil) -> PeerRef? {
        if let id = h.peerID { return .id(id) }
        if let p = h.participantID, let id = participants[p] { return .id(id) }
        if let n = h.displayName, !n.isEmpty, let id = unique(names[n]) { return .id(id) }
        if let ep = h.endpoint {
            var timed: UInt64?
            if let t, let (et, eid) = PeerResolver.latest(endpointBindings[ep], at: t) {
                timed = eid
                // The address taken by another peer ID since (the app relaunched): that one.
                if let (at, aid) = PeerResolver.latest(addressBindings[ep.address], at: t), at > et, aid != eid,
                   addresses[ep.address]?.contains(eid) ?? false {
                    timed = aid
                }
            }
            if let id = timed ?? endpoints[ep] ?? byAddress(ep.address, at: t) { return .id(id) }
        }
        if let a = h.address, let id = byAddress(a, at: t) { return .id(id) }
        if let p = h.participantID { return .participant(p) }
        if let n = h.displayName, !n.isEmpty { return .name(n) }
        if h.endpoint != nil || h.address != nil, let p = participant(at: h.endpoint, address: h.address, t: t) {
            return participants[p].map { .id($0) } ?? .participant(p)
        }
        if let a = h.address ?? h.endpoint?.address { return .address(a) }
        if case .logLine(let input, _)? = evidence { return logOwners[input] ?? .logOwner(input: input) }
        return nil
    }

    /// Log lines that name the device that wrote the log: MPC's "Created new peerID ..." (the local
    /// MCPeerID) and "Start/Stop advertising peer [...]".
    public static let ownerKinds: Set<EventKind> = ["log.peer_created", "log.advertising"]

    /// Takes each log input's device from the lines that name it (see `ownerKinds`). An input whose
    /// lines name two different devices is left to `inferLogOwners`.
    public mutating func identifyLogOwners(_ events: some Sequence<PeerEvent>) {
        var found: [Int: PeerRef] = [:]
        var conflicting: Set<Int> = []
        // The evidence first: a set lookup hashes the kind, and most events are not log lines.
        for e in events {
            guard case .logLine(let input, _) = e.evidence, PeerResolver.ownerKinds.contains(e.kind),
                  let r = resolve(e.from) else { continue }
            if let prev = found[input], prev != r { conflicting.insert(input) } else { found[input] = r }
        }
        for (input, r) in found where !conflicting.contains(input) { logOwners[input] = r }
    }

    /// Infers the device behind each log input: log lines name only the remote side, so when every
    /// peer a log names has, in the packets, exactly one counterpart in common, that peer wrote the log.
    public mutating func inferLogOwners(_ events: some Sequence<PeerEvent>) {
        // Only log inputs get an owner: without log lines nothing below is read (a capture's millions
        // of events would each be resolved twice for nothing).
        guard events.contains(where: { if case .logLine = $0.evidence { true } else { false } }) else { return }
        var counterparts: [PeerRef: Set<PeerRef>] = [:]
        var named: [Int: [PeerRef: Int]] = [:]
        for e in events where !e.kind.isIn("discovery") {
            let f = resolve(e.from, evidence: e.evidence), t = resolve(e.to, evidence: e.evidence)
            switch e.evidence {
            case .frame:
                guard let f, let t, f != t else { continue }
                counterparts[f, default: []].insert(t)
                counterparts[t, default: []].insert(f)
            case .logLine(let input, _):
                for r in [f, t] {
                    guard let r else { continue }
                    if case .logOwner = r { continue }
                    named[input, default: [:]][r, default: 0] += 1
                }
            }
        }
        // A candidate is a counterpart (in the packets) of every other peer the log names; logs print
        // their own device rarely and the remote side often, so the least-named candidate wins.
        for (input, counts) in named where logOwners[input] == nil {
            var best: [(PeerRef, Int)] = []
            for x in counterparts.keys {
                let others = counts.keys.filter { $0 != x && counterparts[$0] != nil }
                guard !others.isEmpty, others.allSatisfy({ counterparts[$0]?.contains(x) ?? false }) else { continue }
                best.append((x, counts[x] ?? 0))
            }
            guard let low = best.map(\.1).min() else { continue }
            let winners = best.filter { $0.1 == low }
            if winners.count == 1 { logOwners[input] = winners[0].0 }
        }
    }
}
