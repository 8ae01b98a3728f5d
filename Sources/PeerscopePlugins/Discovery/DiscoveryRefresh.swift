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
/// A host's addresses in a response being remembered, and whether it flushes its IPv4 / IPv6 ones.
struct HostNote {
    var addresses: [(IPAddress, UInt32)] = []
    var flush4 = false
    var flush6 = false
}

struct RefreshKey: Hashable {
    var source: IPAddress
    var hash: UInt64
}

struct Refresh {
    var bytes: [UInt8]
    var interface: String?
    /// Capture time it was remembered or last taken by the fast path (see `sweepMemos`).
    var lastUsed: Nanos
    struct InstanceTTLs {
        /// The table's own key string, and the slot it had.
        var key: String
        var slot: Int
        var stamp: UInt64
        var ptr: UInt32?
        var srv: UInt32?
        var txt: UInt32?
        /// The SRV target's host when it is one of the response's own (an index into `hosts`), else -1.
        var srvHost: Int32 = -1
    }
    struct HostTTLs {
        var key: String
        var slot: Int
        var stamp: UInt64
        var addresses: [(IPAddress, UInt32)]
    }
    /// In the order the full path first touched them.
    var instances: [InstanceTTLs]
    var hosts: [HostTTLs]
}

extension DiscoveryTracker {
    /// A safety net: the table is cleared when it reaches this many entries (see `sweepMemos` for what
    /// keeps it near the working set).
    static let maxRefreshes = 16384
    /// A remembered response not repeated for this long is forgotten. Hosts re-announce well within
    /// it (RFC 6762 refreshes at 80 % of a TTL, 120 s for address and SRV records); a response not
    /// heard for so long belongs to a host that left or changed (a new address, a new TXT: new bytes,
    /// another entry), and its entry would stay until the table filled.
    static let refreshIdle: Nanos = 300 * CaptureTime.second
    /// A remembered query not repeated for this long is forgotten: a repeat is skipped only while its
    /// browse questions are within their window (`browseWindow`), so an older one is rarely of use.
    static let queryRepeatIdle: Nanos = 2 * browseWindow
    /// How often (capture time) `sweepMemos` looks for entries to forget.
    static let memoSweepEvery: Nanos = 10 * CaptureTime.second

    /// Forgets remembered responses and queries not used for `refreshIdle` / `queryRepeatIdle` (and
    /// browse attributes not used for `refreshIdle`, see `browseAttrs`), so both
    /// tables hold what the hosts heard lately say, not everything said since the capture began: a
    /// long capture of churning hosts (new addresses, changed TXT records, hosts gone) would otherwise
    /// fill them to `maxRefreshes`. They are caches of the full path's result: forgetting an entry
    /// only sends its next copy through the full path, which remembers it again (reports never change).
    /// Entries stamped later than `t` (inputs merged out of order) are kept.
    func sweepMemos(_ t: Nanos) {
        guard t >= nextMemoSweep else { return }
        nextMemoSweep = t &+ Self.memoSweepEvery
        var stale = staleMemos
        staleMemos = []
        defer {
            stale.removeAll(keepingCapacity: true)
            staleMemos = stale
        }
        for i in refreshes.indices {
            let used = refreshes.values[i].lastUsed
            if used <= t, t &- used >= Self.refreshIdle { stale.append(refreshes.keys[i]) }
        }
        for k in stale { refreshes.removeValue(forKey: k) }
        stale.removeAll(keepingCapacity: true)
        for i in queryRepeats.indices {
            let used = queryRepeats.values[i].lastUsed
            if used <= t, t &- used >= Self.queryRepeatIdle { stale.append(queryRepeats.keys[i]) }
        }
        for k in stale { queryRepeats.removeValue(forKey: k) }
        guard forgetsBrowseAttrs else { return }
        var staleAttrs: [BrowseAttrs] = []
        for i in browseAttrs.indices {
            let used = browseAttrs.values[i].lastUsed
            if used <= t, t &- used >= Self.refreshIdle { staleAttrs.append(browseAttrs.keys[i]) }
        }
        for k in staleAttrs { browseAttrs.removeValue(forKey: k) }
    }

    /// Takes `p` by the fast path when it repeats a remembered response and nothing it touches changed;
    /// false sends it through the full path.
    func refresh(_ p: Bytes, hash: UInt64, src: IPAddress, _ input: PluginInput, _ ctx: PluginContext) -> Bool {
        guard let entry = refreshes.index(forKey: RefreshKey(source: src, hash: hash)) else { return false }
        let r = refreshes.values[entry]
        guard r.interface == input.frame.interfaceName, p.same(as: r.bytes) else { return false }
        // Nothing written since: every instance still in its slot, alive, with the stamp it had (stamps
        // are unique to one write, so the same stamp is the same instance), every host likewise.
        // Read by index, field by field: a copy of each remembered entry would retain its key and arrays.
        let ri = r.instances, rh = r.hosts
        for k in ri.indices {
            let slot = ri[k].slot, stamp = ri[k].stamp
            guard instances.holds(slot, ri[k].key), withInstance(slot, { $0.stamp == stamp && $0.state == .alive })
            else { return false }
        }
        for k in rh.indices {
            let slot = rh[k].slot, stamp = rh[k].stamp
            guard hosts.holds(slot, rh[k].key), withHost(slot, { $0.stamp == stamp }) else { return false }
        }
        // Only times move (no entry comes or goes below, so the slots stay theirs).
        let t = input.t
        for k in rh.indices {
            let slot = rh[k].slot, addresses = rh[k].addresses
            withHost(slot) { host in
                host.lastSeen = t
                for (a, ttl) in addresses {
                    let expiry = t &+ Nanos(ttl) &* CaptureTime.second
                    host.addresses[a] = (t, expiry)
                    schedule(&host, rh[k].key, slot: slot, expiry)
                }
            }
        }
        // What `touch` would write, the same for every instance of the message.
        let evidence = input.evidence, flow = input.flow
        for k in ri.indices {
            let x = ri[k].slot, ptr = ri[k].ptr, srv = ri[k].srv, txt = ri[k].txt
            // The instance's SRV (unchanged: same stamp) targets that host, checked above to hold its slot.
            let hostSlot = ri[k].srvHost >= 0 ? rh[Int(ri[k].srvHost)].slot : nil
            let deadline = withInstance(x) { inst in
                if let ttl = ptr { inst.ptrExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
                if let ttl = srv { inst.srvExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
                if let ttl = txt { inst.txtExpiry = t &+ Nanos(ttl) &* CaptureTime.second }
                // `touch(&inst, t, nil, input)`: `src` is among its sources already (the full path noted
                // it when it remembered this response, or found the set full), so the set is not hashed again.
                inst.lastSeen = t
                inst.lastEvidence = evidence
                inst.lastFlow = flow
                teach(inst, src: src, ctx, hostSlot: hostSlot)
                return inst.deadline
            }
            if let deadline { schedule(at: x, deadline) }
        }
        // Nothing above adds or removes entries of `refreshes`: `entry` is still this response's.
        refreshes.values[entry].lastUsed = t
        fastRefreshes &+= 1
        return true
    }

    /// After the full path read response `msg` (bytes `p`, no problems): remembers it when a byte-identical
    /// copy could only move times (see the type comment).
    func remember(_ p: Bytes, hash: UInt64, _ msg: DNSMessage, src: IPAddress, _ input: PluginInput) {
        // The instances touched, in the order first touched, by slot (a slot's position in `ttls`): each
        // name is hashed once, to find its slot, not again for every table it is noted in.
        var ttls: [Refresh.InstanceTTLs] = []
        var position: [Int: Int] = [:]
        func note(_ key: String, _ set: (inout Refresh.InstanceTTLs) -> Void) -> Bool {
            guard let x = instances.index(forKey: key) else { return false }
            return note(slot: x, set)
        }
        func note(slot x: Int, _ set: (inout Refresh.InstanceTTLs) -> Void) -> Bool {
            guard instances.values[x].state == .alive else { return false }
            if let k = position[x] {
                set(&ttls[k])
                return true
            }
            // The table's own key string: a later lookup compares it by identity, not character by character.
            var e = Refresh.InstanceTTLs(key: instances.keys[x], slot: x, stamp: instances.values[x].stamp)
            set(&e)
            position[x] = ttls.count
            ttls.append(e)
            return true
        }
        let scope = input.frame.interfaceName ?? {
            if case .v6(_, _, let s) = src { return s }
            return nil
        }()
        var hostOrder: [String] = []
        var hostNotes: [String: HostNote] = [:]
        for r in msg.records {
            if r.ttl == 0 && [DNSType.a, DNSType.aaaa, DNSType.ptr, DNSType.srv, DNSType.txt].contains(r.type) { return }
            switch r.data {
            case .a(let a), .aaaa(let a):
                var addr = a
                if case .aaaa = r.data, case .v6(let hi, let lo, _) = a, a.isLinkLocal, let scope { addr = .v6(hi: hi, lo: lo, scope: scope) }
                let hk = r.name.key
                let v4 = r.type == DNSType.a
                // In place: one lookup, no copy of the list.
                if hostNotes.index(forKey: hk) == nil { hostOrder.append(hk) }
                Self.noteAddress(&hostNotes[hk, default: HostNote()], (addr, r.ttl), flush: r.cacheFlush, v4: v4)
            case .ptr(let target):
                if DiscoveryTracker.isEnumeration(r.name) { continue }
                guard r.type == DNSType.ptr, DNSSD.isServiceType(r.name), let (key, _) = instanceKey(target) else { continue }
                guard note(key, { $0.ptr = r.ttl }) else { return }
            case .srv(let pr, let w, let port, let target):
                guard DNSSD.instanceName(r.name) != nil else { continue }
                // Read in place: a copy of the instance taken out retains and releases a dozen references.
                guard let x = instances.index(forKey: r.name.key), instances.values[x].srv == SRV(target: target, port: port, priority: pr, weight: w),
                      note(slot: x, { $0.srv = r.ttl }) else { return }
            case .txt(let raw):
                guard DNSSD.instanceName(r.name) != nil else { continue }
                guard let x = instances.index(forKey: r.name.key), instances.values[x].txtRaw == raw,
                      note(slot: x, { $0.txt = r.ttl }) else { return }
            default:
                continue
            }
        }
        guard !ttls.isEmpty || !hostOrder.isEmpty else { return }
        var hostTTLs: [Refresh.HostTTLs] = []
        for hk in hostOrder {
            guard let hx = hosts.index(forKey: hk), let mine = hostNotes[hk] else { return }
            // Flushed families hold exactly the message's addresses (read in place: no copy of the host).
            for (flushes, isV4) in [(mine.flush4, true), (mine.flush6, false)] where flushes {
                let want = Set(mine.addresses.lazy.map(\.0).filter { $0.isV4 == isV4 })
                let same = withHost(hx) { h in Set(h.addresses.keys.lazy.filter { $0.isV4 == isV4 }) == want }
                guard same else { return }
            }
            // Every SRV pointing at this host belongs to the message (an instance of the message is live
            // in the table, so its key is in the table under the slot noted).
            if let targeting = byTarget[hk],
               !targeting.allSatisfy({ k in instances.index(forKey: k).map { position[$0] != nil } ?? false }) { return }
            hostTTLs.append(Refresh.HostTTLs(key: hosts.keys[hx], slot: hx, stamp: hosts.values[hx].stamp, addresses: mine.addresses))
        }
        // Every endpoint already reported (a refresh could otherwise resolve again). Each SRV target
        // among the message's hosts is noted, so a refresh reaches it by slot.
        for k in ttls.indices {
            let x = ttls[k].slot
            if let srv = instances.values[x].srv {
                let target = srv.target.key
                if let j = hostTTLs.firstIndex(where: { $0.key == target }) { ttls[k].srvHost = Int32(exactly: j) ?? -1 }
                guard let hx = hosts.index(forKey: target) else { continue }
                for a in addresses(atSlot: hx, t: input.t) where !instances.values[x].reportedEndpoints.contains(Endpoint(a, srv.port)) {
                    return
                }
            }
        }
        if refreshes.count >= Self.maxRefreshes { refreshes.removeAll(keepingCapacity: true) }
        refreshes[RefreshKey(source: src, hash: hash)] = Refresh(
            bytes: p.array, interface: input.frame.interfaceName, lastUsed: input.t,
            instances: ttls, hosts: hostTTLs)
    }

    private static func noteAddress(_ h: inout HostNote, _ a: (IPAddress, UInt32), flush: Bool, v4: Bool) {
        h.addresses.append(a)
        if flush { if v4 { h.flush4 = true } else { h.flush6 = true } }
    }
}

/// The fast path for repeated browse queries: a querier asks the same question every few seconds, and
/// within the browse window (`DiscoveryTracker.browseWindow`) a repeat gives no event and changes no
/// state. A query byte-identical to one read before from the same source, whose every browse
/// question is still within its window, is therefore skipped unparsed. Only queries that can do
/// nothing else are remembered: no problems in the bytes, no probe (an SRV in the authority section).
struct QueryRepeat {
    var bytes: [UInt8]
    /// The throttle keys of its browse questions (none: a query that never does anything).
    var keys: [DiscoveryTracker.BrowseKey]
    /// Capture time it was remembered or last skipped (see `DiscoveryTracker.sweepMemos`).
    var lastUsed: Nanos
}

extension DiscoveryTracker {
    /// True when query `p` from `src` repeats a remembered one and each of its browse questions is
    /// within its window at `t` (the full path would skip every one). Without events (`windows` false)
    /// the full path does nothing with any query (see `query`), so every remembered repeat is one.
    func repeatedQuery(_ p: Bytes, hash: UInt64, src: IPAddress, t: Nanos, windows: Bool = true) -> Bool {
        guard let entry = queryRepeats.index(forKey: RefreshKey(source: src, hash: hash)) else { return false }
        let r = queryRepeats.values[entry]
        guard p.same(as: r.bytes) else { return false }
        if windows {
            for k in r.keys {
                guard let last = browseLast[k], t &- last < Self.browseWindow, t >= last else { return false }
            }
        }
        queryRepeats.values[entry].lastUsed = t
        fastQueries &+= 1
        return true
    }

    /// After the full path read query `msg` (bytes `p`, no problems): remembers it when a repeat can
    /// only be throttled or do something the throttle check sees (see `QueryRepeat`).
    func rememberQuery(_ p: Bytes, hash: UInt64, _ msg: DNSMessage, src: IPAddress, t: Nanos) {
        guard !msg.records.contains(where: { $0.section == .authority && $0.type == DNSType.srv }) else { return }
        var keys: [BrowseKey] = []
        for q in msg.questions where (q.type == DNSType.ptr || q.type == DNSType.any) && Self.isBrowseName(q.name) {
            keys.append(BrowseKey(querier: src, name: q.name.key))
        }
        if queryRepeats.count >= Self.maxRefreshes { queryRepeats.removeAll(keepingCapacity: true) }
        queryRepeats[RefreshKey(source: src, hash: hash)] = QueryRepeat(bytes: p.array, keys: keys, lastUsed: t)
    }
}

