/// What is known about one peer ID: display name, addresses, endpoints, and the first and last
/// announcement or refresh of its MPC instance (capture time). The decoders' `PeerDirectory` keeps one
/// per peer while decoding; downstream `PeerIdentities` folds the `identity.*` events into the same.
public struct PeerFacts: Sendable, Hashable {
    public var peerID: UInt64
    /// The latest display name taught.
    public var displayName: String?
    public var addresses: Set<IPAddress> = []
    public var endpoints: Set<Endpoint> = []
    public var advertisedFirst: Nanos?
    public var advertisedLast: Nanos?
    public var participantID: UInt32 { PeerIdentity.participantID(peerID) }
    public init(peerID: UInt64) { self.peerID = peerID }
}

/// What decoding has learnt about peers: which IDs, names, addresses and ports belong together.
/// Discovery and invitation plugins and log reading teach it; every plugin asks it to attribute
/// packets to peers. It is the decoders' working table and stays with them: each new fact and each
/// advertisement goes out through `onFact` (the `PluginContext` makes it an `identity.*` event), and
/// the stages after decoding read only those events.
public final class PeerDirectory {
    /// Something the directory was taught that it did not know (or an advertisement, every time).
    public enum Fact: Sendable, Hashable {
        /// A new peer ID, a new display name for it, or an address or endpoint it was not known to
        /// use: the hint holds the peer ID and the new value.
        case learnt(PeerHint)
        /// The peer's MPC instance was announced or refreshed at capture time `t`.
        case advertised(peerID: UInt64, t: Nanos)
    }

    /// Told each fact as it is learnt (set by whoever decodes with the directory).
    public var onFact: ((Fact) -> Void)?

    public typealias Entry = PeerFacts

    public private(set) var entries: [UInt64: Entry] = [:]
    private var byEndpoint: [Endpoint: UInt64] = [:]
    private var byAddress: [IPAddress: Set<UInt64>] = [:]
    private var byParticipant: [UInt32: UInt64] = [:]
    private var byName: [String: Set<UInt64>] = [:]

    public init() {}

    private func entry(_ id: UInt64) -> Entry {
        if let e = entries[id] { return e }
        let e = Entry(peerID: id)
        byParticipant[e.participantID] = id
        return e
    }

    public func learn(peerID: UInt64, displayName: String? = nil) {
        // A known peer taught nothing new (every mDNS refresh teaches its instance again): nothing
        // changes and nothing is told, so the entry is not copied out and back. `byName` already holds
        // the peer under the name it has (they change together, here only).
        if let i = entries.index(forKey: peerID) {
            guard let displayName, !displayName.isEmpty, entries.values[i].displayName != displayName else { return }
        }
        let isNew = entries[peerID] == nil
        var e = entry(peerID)
        var named: String?
        if let displayName, !displayName.isEmpty {
            if let old = e.displayName, old != displayName { byName[old]?.remove(peerID) }
            if e.displayName != displayName { named = displayName }
            e.displayName = displayName
            byName[displayName, default: []].insert(peerID)
        }
        entries[peerID] = e
        if isNew || named != nil { onFact?(.learnt(PeerHint(peerID: peerID, displayName: named))) }
    }

    public func learn(peerID: UInt64, address: IPAddress) {
        // Known already: `byAddress` has it too (both are written together, here only, and never pruned).
        if let i = entries.index(forKey: peerID), entries.values[i].addresses.contains(address) { return }
        let isNew = entries[peerID] == nil
        var e = entry(peerID)
        let inserted = e.addresses.insert(address).inserted
        entries[peerID] = e
        byAddress[address, default: []].insert(peerID)
        if address.isLinkLocal { byAddress[address.unscoped, default: []].insert(peerID) }
        if isNew || inserted { onFact?(.learnt(PeerHint(peerID: peerID, address: address))) }
    }

    /// An endpoint the peer is known to use (SRV port, session UDP port, invitation connection end).
    public func learn(peerID: UInt64, endpoint: Endpoint) {
        // Known already and still this peer's: its address was learnt with it, nothing changes.
        if let i = entries.index(forKey: peerID), entries.values[i].endpoints.contains(endpoint), byEndpoint[endpoint] == peerID {
            return
        }
        learn(peerID: peerID, address: endpoint.address)
        var e = entry(peerID)
        let inserted = e.endpoints.insert(endpoint).inserted
        entries[peerID] = e
        byEndpoint[endpoint] = peerID
        if inserted { onFact?(.learnt(PeerHint(peerID: peerID, endpoint: endpoint))) }
    }

    /// The peer's MPC instance was announced or refreshed at `t` (capture time).
    public func advertised(peerID: UInt64, at t: Nanos) {
        // In place when known (a copy taken out would copy its address and endpoint sets on the write back).
        if let i = entries.index(forKey: peerID) {
            let first = entries.values[i].advertisedFirst, last = entries.values[i].advertisedLast
            entries.values[i].advertisedFirst = min(first ?? t, t)
            entries.values[i].advertisedLast = max(last ?? t, t)
        } else {
            var e = entry(peerID)
            e.advertisedFirst = t
            e.advertisedLast = t
            entries[peerID] = e
        }
        onFact?(.advertised(peerID: peerID, t: t))
    }

    public func peerID(forParticipant p: UInt32) -> UInt64? { byParticipant[p] }

    public func peerIDs(named name: String) -> Set<UInt64> { byName[name] ?? [] }

    /// The peer at an endpoint: exact endpoint first, else the address when only one peer uses it.
    public func peerID(for endpoint: Endpoint) -> UInt64? {
        if let id = byEndpoint[endpoint] { return id }
        return peerID(for: endpoint.address)
    }

    public func peerID(for address: IPAddress) -> UInt64? {
        if let ids = byAddress[address], ids.count == 1 { return ids.first }
        if address.isLinkLocal, let ids = byAddress[address.unscoped], ids.count == 1 { return ids.first }
        return nil
    }

    /// A hint for an endpoint with whatever is known about the peer behind it.
    public func hint(for endpoint: Endpoint) -> PeerHint {
        guard let id = peerID(for: endpoint) else { return PeerHint(endpoint: endpoint) }
        return PeerHint(peerID: id, displayName: displayName(id), endpoint: endpoint)
    }

    /// The peer's display name, read in place (`entries[id]?.displayName` copies the whole entry,
    /// its address and endpoint sets included: two lookups per packet on the session path).
    private func displayName(_ id: UInt64) -> String? {
        guard let i = entries.index(forKey: id) else { return nil }
        return entries.values[i].displayName
    }

    /// A hint for a participant ID with whatever is known about the peer behind it.
    public func hint(forParticipant p: UInt32) -> PeerHint {
        guard let id = byParticipant[p] else { return PeerHint(participantID: p) }
        return PeerHint(peerID: id, participantID: p, displayName: displayName(id))
    }
}
