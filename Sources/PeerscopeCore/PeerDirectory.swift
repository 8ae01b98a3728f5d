/// What the run has learnt about peers: which IDs, names, addresses and ports belong together.
/// Discovery and invitation plugins teach it; every plugin asks it to attribute packets to peers.
public final class PeerDirectory {
    public struct Entry: Sendable, Hashable {
        public var peerID: UInt64
        public var displayName: String?
        public var addresses: Set<IPAddress> = []
        public var endpoints: Set<Endpoint> = []
        /// Capture times of the first and last discovery message that announced or refreshed the
        /// peer's MPC instance (refreshes make no event; the discovery report reads these).
        public var advertisedFirst: Nanos?
        public var advertisedLast: Nanos?
        public var participantID: UInt32 { PeerIdentity.participantID(peerID) }
    }

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
        var e = entry(peerID)
        if let displayName, !displayName.isEmpty {
            if let old = e.displayName, old != displayName { byName[old]?.remove(peerID) }
            e.displayName = displayName
            byName[displayName, default: []].insert(peerID)
        }
        entries[peerID] = e
    }

    public func learn(peerID: UInt64, address: IPAddress) {
        var e = entry(peerID)
        e.addresses.insert(address)
        entries[peerID] = e
        byAddress[address, default: []].insert(peerID)
        if address.isLinkLocal { byAddress[address.unscoped, default: []].insert(peerID) }
    }

    /// An endpoint the peer is known to use (SRV port, session UDP port, invitation connection end).
    public func learn(peerID: UInt64, endpoint: Endpoint) {
        learn(peerID: peerID, address: endpoint.address)
        var e = entry(peerID)
        e.endpoints.insert(endpoint)
        entries[peerID] = e
        byEndpoint[endpoint] = peerID
    }

    /// The peer's MPC instance was announced or refreshed at `t` (capture time).
    public func advertised(peerID: UInt64, at t: Nanos) {
        var e = entry(peerID)
        e.advertisedFirst = min(e.advertisedFirst ?? t, t)
        e.advertisedLast = max(e.advertisedLast ?? t, t)
        entries[peerID] = e
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
        return PeerHint(peerID: id, displayName: entries[id]?.displayName, endpoint: endpoint)
    }

    /// A hint for a participant ID with whatever is known about the peer behind it.
    public func hint(forParticipant p: UInt32) -> PeerHint {
        guard let id = byParticipant[p] else { return PeerHint(participantID: p) }
        return PeerHint(peerID: id, participantID: p, displayName: entries[id]?.displayName)
    }
}
