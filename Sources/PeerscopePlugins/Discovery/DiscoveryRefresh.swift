import PeerscopeCore

/// The fast path for mDNS refreshes. Most responses on a busy network repeat, byte for byte, what the
/// same host said a few seconds earlier (RFC 6762 re-announcements, answers to repeated queries). When
/// a response from a source is byte-identical to one already read from it, and nothing the response
/// touches (its instances, its hosts) was written since by anything but this fast path, reading it
/// again could only move times: last seen, evidence, record expiries. So only those move, and the
/// message is neither parsed nor compared record by record.
///
/// A response is remembered only when that claim is provably true after it was read: no record with
/// TTL 0 (a goodbye changes state), no problems in the bytes, every instance alive with exactly the
/// SRV and TXT the message carries, every host holding exactly the addresses the message flushes to,
/// every SRV pointing at its hosts among the message's own instances, every endpoint already
/// reported. Any later write to one of its instances or hosts (a changed refresh from anyone, an
/// expiry, an eviction, a new SRV pointing at the host) changes that entity's stamp, and the next copy
/// goes through the full path again. A changed refresh (new address, new TXT, TTL 0) has different
/// bytes, so it is never taken for a repeat. `DecodeOptions.fastPaths = false` turns this off.
struct RefreshKey: Hashable {
    var source: IPAddress
    var hash: UInt64
}

struct Refresh {
    var bytes: [UInt8]
    var interface: String?
    struct InstanceTTLs {
        var key: String
        var stamp: UInt64
        var ptr: UInt32?
        var srv: UInt32?
        var txt: UInt32?
    }
    struct HostTTLs {
        var key: String
        var stamp: UInt64
        var addresses: [(IPAddress, UInt32)]
    }
    /// In the order the full path first touched them.
    var instances: [InstanceTTLs]
    var hosts: [HostTTLs]
}

extension DiscoveryTracker {
    static let maxRefreshes = 16384

    /// FNV-1a over the message bytes.
    static func hash(_ p: Bytes) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        p.withUnsafeBytes { raw in
            for b in raw { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        }
        return h
    }

    private static func same(_ p: Bytes, _ bytes: [UInt8]) -> Bool {
        guard p.count == bytes.count else { return false }
        return p.withUnsafeBytes { a in bytes.withUnsafeBytes { b in a.elementsEqual(b) } }
    }

    /// Takes `p` by the fast path when it repeats a remembered response and nothing it touches changed;
    /// false sends it through the full path.
    func refresh(_ p: Bytes, hash: UInt64, src: IPAddress, _ input: PluginInput, _ ctx: PluginContext) -> Bool {
        guard let r = refreshes[RefreshKey(source: src, hash: hash)], r.interface == input.frame.interfaceName,
              Self.same(p, r.bytes) else { return false }
        // Nothing written since: every instance alive with the stamp it had, every host likewise.
        var instanceIndex: [[String: Instance].Index] = []
        instanceIndex.reserveCapacity(r.instances.count)
        for i in r.instances {
            guard let x = instances.index(forKey: i.key), instances.values[x].stamp == i.stamp,
                  instances.values[x].state == .alive else { return false }
            instanceIndex.append(x)
        }
        for h in r.hosts {
            guard let x = hosts.index(forKey: h.key), hosts.values[x].stamp == h.stamp else { return false }
        }
        // Only times move (no dictionary is resized below, so the indices stay valid).
        let t = input.t
        for h in r.hosts {
            guard let x = hosts.index(forKey: h.key) else { continue }
            hosts.values[x].lastSeen = t
            for (a, ttl) in h.addresses {
                hosts.values[x].addresses[a] = (t, t &+ Nanos(ttl) &* CaptureTime.second)
                hostDue.insert(Due(t: t &+ Nanos(ttl) &* CaptureTime.second, key: h.key))
            }
        }
        for (n, i) in r.instances.enumerated() {
            let x = instanceIndex[n]
            if let ttl = i.ptr { instances.values[x].ptrExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
            if let ttl = i.srv { instances.values[x].srvExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
            if let ttl = i.txt { instances.values[x].txtExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
            touch(&instances.values[x], t, src, input)
            let inst = instances.values[x]
            teach(inst, src: src, ctx)
            if let d = inst.deadline {
                nextDeadline = min(nextDeadline, d)
                due.insert(Due(t: d, key: i.key))
            }
        }
        fastRefreshes &+= 1
        return true
    }

    /// After the full path read response `msg` (bytes `p`, no problems): remembers it when a byte-identical
    /// copy could only move times (see the type comment).
    func remember(_ p: Bytes, hash: UInt64, _ msg: DNSMessage, src: IPAddress, _ input: PluginInput) {
        var order: [String] = []
        var ttls: [String: Refresh.InstanceTTLs] = [:]
        func note(_ key: String, _ set: (inout Refresh.InstanceTTLs) -> Void) -> Bool {
            guard let inst = instances[key], inst.state == .alive else { return false }
            if ttls[key] == nil {
                order.append(key)
                ttls[key] = Refresh.InstanceTTLs(key: key, stamp: inst.stamp)
            }
            set(&ttls[key, default: Refresh.InstanceTTLs(key: key, stamp: inst.stamp)])
            return true
        }
        let scope = input.frame.interfaceName ?? {
            if case .v6(_, _, let s) = src { return s }
            return nil
        }()
        var hostOrder: [String] = []
        var hostAddrs: [String: [(IPAddress, UInt32)]] = [:]
        var flushed: Set<String> = []
        for r in msg.records {
            if r.ttl == 0 && [DNSType.a, DNSType.aaaa, DNSType.ptr, DNSType.srv, DNSType.txt].contains(r.type) { return }
            switch r.data {
            case .a(let a), .aaaa(let a):
                var addr = a
                if case .aaaa = r.data, case .v6(let hi, let lo, _) = a, a.isLinkLocal, let scope { addr = .v6(hi: hi, lo: lo, scope: scope) }
                let hk = r.name.key
                if hostAddrs[hk] == nil { hostOrder.append(hk) }
                hostAddrs[hk, default: []].append((addr, r.ttl))
                if r.cacheFlush { flushed.insert(hk + (r.type == DNSType.a ? "|4" : "|6")) }
            case .ptr(let target):
                if r.name.hasSuffix(DNSSD.enumerationName + ["local"]) || (r.name.labels.count >= 3
                    && r.name.labels[0].lowercased() == "_services" && r.name.labels[1].lowercased() == "_dns-sd") { continue }
                guard r.type == DNSType.ptr, DNSSD.serviceType(r.name) != nil, let (key, _) = instanceKey(target) else { continue }
                guard note(key, { $0.ptr = r.ttl }) else { return }
            case .srv(let pr, let w, let port, let target):
                guard DNSSD.instanceName(r.name) != nil else { continue }
                let key = r.name.key
                guard instances[key]?.srv == SRV(target: target, port: port, priority: pr, weight: w),
                      note(key, { $0.srv = r.ttl }) else { return }
            case .txt(let raw):
                guard DNSSD.instanceName(r.name) != nil else { continue }
                let key = r.name.key
                guard instances[key]?.txtRaw == raw, note(key, { $0.txt = r.ttl }) else { return }
            default:
                continue
            }
        }
        guard !order.isEmpty || !hostOrder.isEmpty else { return }
        var hostTTLs: [Refresh.HostTTLs] = []
        let keys = Set(order)
        for hk in hostOrder {
            guard let h = hosts[hk], let mine = hostAddrs[hk] else { return }
            // Flushed families hold exactly the message's addresses.
            for (fam, isV4) in [("|4", true), ("|6", false)] where flushed.contains(hk + fam) {
                let want = Set(mine.map(\.0).filter { $0.isV4 == isV4 })
                let have = Set(h.addresses.keys.filter { $0.isV4 == isV4 })
                guard want == have else { return }
            }
            // Every SRV pointing at this host belongs to the message.
            if let targeting = byTarget[hk], !targeting.isSubset(of: keys) { return }
            hostTTLs.append(Refresh.HostTTLs(key: hk, stamp: h.stamp, addresses: mine))
        }
        // Every endpoint already reported (a refresh could otherwise resolve again).
        for key in order {
            guard let inst = instances[key] else { return }
            if let srv = inst.srv {
                for a in addresses(of: srv.target, t: input.t) where !inst.reportedEndpoints.contains(Endpoint(a, srv.port)) { return }
            }
        }
        if refreshes.count >= Self.maxRefreshes { refreshes.removeAll(keepingCapacity: true) }
        refreshes[RefreshKey(source: src, hash: hash)] = Refresh(
            bytes: p.array, interface: input.frame.interfaceName,
            instances: order.compactMap { ttls[$0] }, hosts: hostTTLs)
    }
}
