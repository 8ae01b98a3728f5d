import PeerscopeCore
import PeerscopeTimeline

/// What discovery saw: service types, and per peer its names, IDs, addresses, port and discovery
/// info, with first/last seen. Built from `discovery.*` event attributes (read leniently: several
/// spellings are accepted) and the identity facts (`identity.*` events, folded by the timeline into
/// `Timelines.identities`).
public struct DiscoverySection: Sendable {
    public struct Service: Sendable, Hashable {
        public var name: String
        public var firstSeen: Nanos
        public var lastSeen: Nanos
        public var instances: Int
    }

    public struct Peer: Sendable, Hashable {
        public var ref: PeerRef
        public var displayName: String?
        public var peerID: String?
        public var participantID: String?
        public var addresses: [String]
        public var port: UInt16?
        /// Every SRV port seen for the peer's host (one per service; `port` is the MPC instance's).
        public var ports: [UInt16] = []
        public var host: String?
        public var services: [String]
        public var info: [String: String]
        public var firstSeen: Nanos?
        public var lastSeen: Nanos?
        /// Goodbye, expiry or browser "lost" time, when seen.
        public var gone: Nanos?
        public var events: Int
    }

    public var services: [Service]
    public var peers: [Peer]

    static let serviceKeys = ["service", "serviceType", "service_type", "type", "svc"]
    static let portKeys = ["port", "srvPort", "srv_port"]
    static let hostKeys = ["host", "target", "hostname"]
    static let addressKeys = ["addresses", "address", "addrs", "ip", "ips"]
    static let nameKeys = ["displayName", "display_name", "_d", "name"]
    static let infoPrefixes = ["txt.", "info.", "discoveryInfo.", "discovery."]

    /// `_name._tcp...` or `_name._udp...` (bytes compared: this runs for every discovery event).
    static func looksLikeService(_ s: String) -> Bool {
        guard s.utf8.first == UInt8(ascii: "_") else { return false }
        // The last five bytes read, packed big-endian; scanned in place (no array per call).
        let tcp: UInt64 = 0x2E5F_7463_70, udp: UInt64 = 0x2E5F_7564_70   // "._tcp", "._udp"
        var window: UInt64 = 0
        for c in s.utf8 {
            window = (window << 8 | UInt64(c)) & 0xFF_FFFF_FFFF
            if window == tcp || window == udp { return true }
        }
        return false
    }

    public init(timelines: Timelines) {
        var services: [String: Service] = [:]
        var serviceInstances: [String: Set<String>] = [:]
        var peers: [PeerRef: Peer] = [:]
        // Each peer's addresses as a set while the events are read (sorted once at the end).
        var addressSets: [PeerRef: Set<String>] = [:]
        for e in timelines.events where e.kind.isIn("discovery") {
            let event = e.event
            let attrs = event.attrs
            var service: String?
            for k in DiscoverySection.serviceKeys {
                if let v = attrs[k], DiscoverySection.looksLikeService(v) { service = v; break }
            }
            if let service {
                // A browse query folded with the ones continuing its run (the timeline's `BrowseFolds`,
                // the only browse frames with a count) was last seen at its last query.
                var last = e.t
                if e.kind == .browse, event.count > 1, case .frame = event.evidence { last = event.lastT }
                if var s = services[service] {
                    s.firstSeen = min(s.firstSeen, e.t)
                    s.lastSeen = max(s.lastSeen, last)
                    services[service] = s
                } else {
                    services[service] = Service(name: service, firstSeen: e.t, lastSeen: last, instances: 0)
                }
            }
            guard e.kind != .browse, let ref = e.from else { continue }
            // An instance announced from two addresses is one instance.
            if let service { serviceInstances[service, default: []].insert(attrs[.instanceName] ?? attrs[.instance] ?? "\(ref)") }
            var p = peers[ref] ?? {
                let info = timelines.peer(ref)
                return Peer(ref: ref, displayName: info?.displayName, peerID: info?.idString, participantID: info?.participantHex,
                            addresses: [], port: nil, host: nil, services: [], info: [:], firstSeen: nil, lastSeen: nil,
                            gone: nil, events: 0)
            }()
            p.events += 1
            // Another service on the same host (an iPhone's _companion-link beside the app's MPC
            // service) names the host, not the MPC instance: it may add services and addresses but
            // not the instance's port, info or times.
            let isMPCPeer = if case .id = ref { true } else { false }
            let ownInstance = !isMPCPeer || (attrs[.peerID].map { $0 == p.peerID || p.peerID == nil } ?? (attrs[.instance] == nil))
            if let service, !p.services.contains(service) { p.services.append(service); p.services.sort() }
            for k in DiscoverySection.portKeys {
                if let v = attrs[k], let port = UInt16(v) {
                    if !p.ports.contains(port) { p.ports.append(port); p.ports.sort() }
                    break
                }
            }
            if !ownInstance {
                if let a = event.from.address { addressSets[ref, default: []].insert("\(a)") }
                peers[ref] = p
                continue
            }
            if p.displayName == nil {
                for k in DiscoverySection.nameKeys { if let v = attrs[k], !v.isEmpty { p.displayName = v; break } }
            }
            for k in DiscoverySection.portKeys { if let v = attrs[k], let port = UInt16(v) { p.port = port; break } }
            if p.port == nil, let ep = event.from.endpoint, e.kind == .resolved { p.port = ep.port }
            for k in DiscoverySection.hostKeys { if let v = attrs[k], !v.isEmpty { p.host = v; break } }
            for k in DiscoverySection.addressKeys {
                guard let v = attrs[k] else { continue }
                for part in v.split(whereSeparator: { $0 == "," || $0 == " " }) where !part.isEmpty {
                    addressSets[ref, default: []].insert(String(part))
                }
            }
            if let a = event.from.address { addressSets[ref, default: []].insert("\(a)") }
            for (k, v) in attrs {
                for prefix in DiscoverySection.infoPrefixes where k.hasPrefix(prefix) {
                    let name = String(k.dropFirst(prefix.count))
                    if !name.isEmpty, name != "_d" { p.info[name] = v }
                }
            }
            switch e.kind {
            case .goodbye, .expired, .lost:
                p.gone = e.t
            default:
                p.firstSeen = min(p.firstSeen ?? e.t, e.t)
                p.lastSeen = max(p.lastSeen ?? e.t, e.t)
                p.gone = nil
            }
            peers[ref] = p
        }
        for (ref, set) in addressSets { peers[ref]?.addresses = set.sorted() }
        // The identity facts know addresses and ports of discovered peers that attrs may not carry,
        // and when the announcement was refreshed (`identity.advertised`: first ... last).
        for (ref, var p) in peers {
            guard case .id(let id) = ref, let entry = timelines.identities.entries[id] else { continue }
            var addrs = Set(p.addresses)
            for a in entry.addresses { addrs.insert("\(a)") }
            p.addresses = addrs.sorted()
            if p.port == nil, entry.endpoints.count == 1, let ep = entry.endpoints.first { p.port = ep.port }
            if p.displayName == nil { p.displayName = entry.displayName }
            if let f = entry.advertisedFirst { p.firstSeen = min(p.firstSeen ?? f, f) }
            if let l = entry.advertisedLast { p.lastSeen = max(p.lastSeen ?? l, l) }
            peers[ref] = p
        }
        for (ref, var p) in peers {
            // A link-local address seen with its interface (`fe80::1%awdl0`) and without is one address.
            let scoped = p.addresses.filter { $0.contains("%") }
            p.addresses = p.addresses.filter { a in !scoped.contains { $0.hasPrefix(a + "%") } }
            peers[ref] = p
        }
        // A host without an MPC peer ID seen from several addresses is one row (by its SRV host name).
        var byHost: [String: PeerRef] = [:]
        for ref in peers.keys.sorted() {
            guard let p = peers[ref], p.peerID == nil, let host = p.host else { continue }
            guard let keep = byHost[host], var q = peers[keep] else { byHost[host] = ref; continue }
            q.addresses = Array(Set(q.addresses + p.addresses)).sorted()
            q.services = Array(Set(q.services + p.services)).sorted()
            q.ports = Array(Set(q.ports + p.ports)).sorted()
            for (k, v) in p.info where q.info[k] == nil { q.info[k] = v }
            if q.port == nil { q.port = p.port }
            q.firstSeen = [q.firstSeen, p.firstSeen].compactMap { $0 }.min()
            q.lastSeen = [q.lastSeen, p.lastSeen].compactMap { $0 }.max()
            q.gone = [q.gone, p.gone].compactMap { $0 }.max()
            q.events += p.events
            peers[keep] = q
            peers[ref] = nil
        }
        for (name, refs) in serviceInstances { services[name]?.instances = refs.count }
        self.services = services.values.sorted { $0.name < $1.name }
        self.peers = peers.values.sorted {
            let a = $0.displayName ?? $0.peerID ?? "", b = $1.displayName ?? $1.peerID ?? ""
            return a != b ? a < b : $0.ref < $1.ref
        }
    }
}
