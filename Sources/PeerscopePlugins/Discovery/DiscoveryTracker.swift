import HeapModule
import PeerscopeCore

/// What discovery saw, for reports: service types, instances (MPC peers among them) and browsers.
public struct DiscoverySummary: Sendable {
    public struct Service: Sendable, Hashable {
        /// `_chat._tcp.local`
        public var type: String
        /// Instances seen for it (announced at least once).
        public var instances: Int
        /// Browse queries seen for it (after throttling, as events).
        public var browseQueries: Int
        /// Instances whose label is an MPC peer ID.
        public var mpcInstances: Int
    }

    public enum State: String, Sendable, Hashable {
        case alive, goodbye, expired
    }

    public struct Instance: Sendable, Hashable {
        public var service: String
        public var instance: String
        public var peerID: UInt64?
        public var participantID: UInt32? { peerID.map(PeerIdentity.participantID) }
        public var displayName: String?
        /// SRV target host and port.
        public var host: String?
        public var port: UInt16?
        /// Addresses of the SRV target and the announcing packets' sources.
        public var addresses: [IPAddress]
        public var txt: [String]
        /// App discovery info for MPC instances (escape undone, `_d` left out).
        public var discoveryInfo: [String: String]
        public var firstSeen: Nanos
        public var lastSeen: Nanos
        public var state: State
        public var firstEvidence: Evidence
        public var lastEvidence: Evidence
    }

    public struct Browser: Sendable, Hashable {
        public var address: IPAddress
        public var services: [String]
    }

    public var services: [Service]
    public var instances: [Instance]
    public var browsers: [Browser]
    /// mDNS messages decoded, and those with problems.
    public var messages: UInt64
    public var malformed: UInt64
}

/// RFC 6762 cache semantics on capture time, per service instance and per host, turned into discovery
/// events and lessons for the `PeerDirectory`. Bounded: at most `maxInstances` instances and `maxHosts`
/// hosts are kept (gone ones are dropped first).
///
/// The bounds are a safety net against floods of made-up names, not the working set: a crowded
/// network's live instances must fit, or every refresh of an evicted one is read as a new instance
/// (a full parse and new events), which costs time and memory with every packet. 3,000 devices
/// (a conference hall) announce about 12,000 instances; at a bound of 8,192 that file was evicting
/// 151,040 instances in 400,000 packets, and analysis took 5x the time and 3x the memory.
final class DiscoveryTracker {
    static let maxInstances = 65_536
    static let maxHosts = 65_536
    /// Browse queries for the same service from the same address within this window give one event.
    static let browseWindow: Nanos = 10 * CaptureTime.second
    /// RFC 6762 §10.2: cache-flush replaces records received more than 1 s earlier.
    static let flushGrace: Nanos = CaptureTime.second

    struct SRV: Equatable {
        var target: DNSName
        var port: UInt16
        var priority: UInt16
        var weight: UInt16
    }

    /// The fields a byte-identical refresh reads and writes come first, together (it reaches an
    /// instance by slot in a table of thousands: each further cache line it touches is a miss).
    struct Instance {
        /// Changes with every write outside the refresh fast path (see `Refresh`).
        var stamp: UInt64 = 0
        var state: DiscoverySummary.State = .alive
        /// The earliest `due` entry this instance has waiting (`.max`: none known), see `schedule(at:_:)`.
        var queued: Nanos = .max
        var ptrExpiry: Nanos?
        var srvExpiry: Nanos?
        var txtExpiry: Nanos?
        var lastSeen: Nanos
        var lastEvidence: Evidence
        var peerID: UInt64?
        var sources: Set<IPAddress> = []
        var lastFlow: FlowKey?
        var srv: SRV?
        /// The TXT record's MPC display name (`_d`), read when the record changes: asked on every
        /// event's hints. The record itself is read from `txtRaw` when needed (`txt`): keeping it parsed
        /// as well held every string three times (raw, `key=value`, key and value).
        var displayName: String?
        var key: String
        var name: DNSSD.InstanceName
        var fullName: String
        var srvSource: IPAddress?
        var txtRaw: [Bytes]?
        var firstSeen: Nanos
        var firstEvidence: Evidence
        /// Endpoints `resolved` events reported so far: another one comes only for new endpoints (a host
        /// answering on several interfaces flushes and re-adds its addresses all the time).
        var reportedEndpoints: Set<Endpoint> = []

        init(key: String, name: DNSSD.InstanceName, fullName: String, peerID: UInt64?, firstSeen: Nanos, lastSeen: Nanos,
             firstEvidence: Evidence, lastEvidence: Evidence) {
            self.key = key
            self.name = name
            self.fullName = fullName
            self.peerID = peerID
            self.firstSeen = firstSeen
            self.lastSeen = lastSeen
            self.firstEvidence = firstEvidence
            self.lastEvidence = lastEvidence
        }

        /// The TXT record, read from its bytes (changes, events' attributes, the summary: not per packet).
        var txt: DNSSD.TXTRecord? { txtRaw.map { DNSSD.TXTRecord($0) } }

        /// The address that last announced the instance (a set's `first` would depend on its hashing,
        /// which differs from run to run and from copy to copy).
        var lastSource: IPAddress? {
            if let a = lastFlow?.src.address, sources.contains(a) { return a }
            return sources.min()
        }

        /// When the instance stops being usable: its SRV (when seen) or PTR expires, whichever first.
        var deadline: Nanos? {
            switch (srvExpiry, ptrExpiry) {
            case (let s?, let p?): return min(s, p)
            case (let s?, nil): return s
            case (nil, let p?): return p
            case (nil, nil): return txtExpiry
            }
        }

        var expiringRecord: String {
            if let s = srvExpiry, s == deadline { return "SRV" }
            if let p = ptrExpiry, p == deadline { return "PTR" }
            return "TXT"
        }
    }

    struct Host {
        /// address -> (received, expiry)
        var addresses: [IPAddress: (received: Nanos, expiry: Nanos)] = [:]
        var lastSeen: Nanos = 0
        /// Changes with every write outside the refresh fast path, and when an SRV starts pointing here.
        var stamp: UInt64 = 0
        /// The earliest `hostDue` entry this host has waiting (`.max`: none known), see `schedule`.
        var queued: Nanos = .max
    }

    /// Instance `x` has deadline `d`: makes sure `due` holds an entry for it no later than `d`. One is
    /// enough (`tick` queues an instance again for its deadline when an earlier entry comes up), so a
    /// refresh, which only moves the deadline later, adds none: `due` does not grow with refreshes.
    func schedule(at x: Int, _ d: Nanos) {
        dueTimes.insert(d)
        nextDeadline = min(nextDeadline, d)
        guard withInstance(x, { i in
            guard d < i.queued else { return false }
            i.queued = d
            return true
        }) else { return }
        due.insert(Due(t: d, key: instances.keys[x], slot: x))
    }

    /// `due`'s earliest entry came up (and was removed) at `top`: forgets it as instance `x`'s queued
    /// one; true when the instance is alive and due exactly then. An alive instance due later is queued
    /// again for its deadline.
    func dueNow(_ x: Int, _ top: Due) -> Bool {
        let (now, again): (Bool, Nanos?) = withInstance(x) { i in
            if i.queued == top.t { i.queued = .max }
            guard i.state == .alive, let d = i.deadline else { return (false, nil) }
            guard d > top.t, d < i.queued else { return (d == top.t, nil) }
            i.queued = d
            return (false, d)
        }
        if let again { due.insert(Due(t: again, key: instances.keys[x], slot: x)) }
        return now
    }

    /// Instance `x` (a live slot) in place: a copy taken out of the table retains and releases a dozen
    /// references; this borrows it. `body` must not touch `instances`.
    @inline(__always) func withInstance<R>(_ x: Int, _ body: (inout Instance) -> R) -> R {
        body(&instances.values[x])
    }

    /// Host `x` (a live slot) in place, as `withInstance`. `body` must not touch `hosts`.
    @inline(__always) func withHost<R>(_ x: Int, _ body: (inout Host) -> R) -> R {
        body(&hosts.values[x])
    }

    /// Makes sure `hostDue` holds an entry for host `key` no later than `expiry`. One entry per host
    /// is enough: `tick` prunes every expired address of a host it looks at and queues the host again
    /// for its earliest live one, so addresses go at the same ticks as with one entry per refresh,
    /// without a heap that grows with every refresh.
    func schedule(_ h: inout Host, _ key: String, slot: Int, _ expiry: Nanos) {
        guard expiry < h.queued else { return }
        h.queued = expiry
        hostDue.insert(Due(t: expiry, key: key, slot: slot))
    }

    /// Instances and hosts by key (the lower-cased name), each in a slot it keeps while it stays.
    var instances = SlotTable<Instance>()
    /// Instances and hosts dropped because their table was full (reported as diagnostics by the plugin).
    var evictedInstances = 0
    var evictedHosts = 0
    var hosts = SlotTable<Host>()
    struct BrowseKey: Hashable {
        var querier: IPAddress?
        var name: String
    }
    var browseLast: [BrowseKey: Nanos] = [:]
    /// `browseLast`'s times, earliest first (an entry goes stale when its name is queried again).
    struct BrowseDue: Comparable {
        var t: Nanos
        var key: BrowseKey
        static func < (a: BrowseDue, b: BrowseDue) -> Bool { a.t < b.t }
        static func == (a: BrowseDue, b: BrowseDue) -> Bool { a.t == b.t && a.key == b.key }
    }
    var browseDue = Heap<BrowseDue>()
    /// What a browse event's attributes depend on; `browseAttrs` keeps the attributes built for each,
    /// packed once (every later query of the key reuses the buffer: no dictionary packed per query).
    struct BrowseAttrs: Hashable {
        var querier: IPAddress?
        var labels: [String]
        var qu: Bool
        var known: Int
        var any: Bool
    }
    /// With the capture time each was last used at: `sweepMemos` forgets those not used for
    /// `refreshIdle`, so the table holds what queriers asked lately, not every (querier, question,
    /// known-answer count) since the start. A cache only: attributes built again are equal.
    var browseAttrs: [BrowseAttrs: (attrs: EventAttrs, lastUsed: Nanos)] = [:]
    /// Off (for tests comparing with it): kept until the table reaches `maxInstances`.
    var forgetsBrowseAttrs = true
    var browsers: [IPAddress: Set<String>] = [:]
    var serviceStats: [String: (instances: Set<String>, queries: Int, mpc: Set<String>)] = [:]
    var reportedConflicts: Set<String> = []
    /// SRV target host key -> instance keys pointing at it.
    var byTarget: [String: Set<String>] = [:]
    var nextDeadline: Nanos = .max
    /// Deadlines as set, earliest first, so `tick` visits only instances due (entries go stale when an
    /// instance is refreshed, ends or is evicted; `tick` checks each against the instance).
    struct Due: Comparable {
        var t: Nanos
        var key: String
        /// The entry's slot when queued: reached without hashing `key` while the slot still holds it.
        var slot: Int
        /// The key is compared only on equal times (instances of one response share their deadlines), as
        /// `String` orders them but without normalising (`DNSName.keyLess`).
        @inline(__always) static func < (a: Due, b: Due) -> Bool { a.t != b.t ? a.t < b.t : DNSName.keyLess(a.key, b.key) }
    }
    var due = Heap<Due>()
    /// Every deadline ever set that `tick` has not passed yet, as `due` held them before it kept one
    /// entry per instance: its minimum decides when `tick` looks at the tables (`nextDeadline`), so
    /// hosts and browse entries are pruned at the same ticks as before. Plain times: cheap to keep.
    var dueTimes = DeadlineQueue()
    /// Instances that ended, by last seen (entries go stale when one revives or leaves the table).
    /// Each goodbye or expiry adds one, so stale ones are dropped once there are twice as many entries
    /// as instances (at least `endedSlack`): the heap is bounded by the table, not by the capture's
    /// churn. Dropping stale entries changes no victim: `nextVictim` skips them.
    var ended = Heap<Due>()
    static let endedSlack = 4096
    /// Off (for tests comparing with it): stale entries are dropped only past 4 x `maxInstances`.
    var compactsEnded = true
    var endedCompactionAt: Int {
        compactsEnded ? max(Self.endedSlack, 2 * instances.count) : 4 * Self.maxInstances
    }
    /// Address expiries by host, earliest first (stale entries are harmless: the host is checked again).
    var hostDue = Heap<Due>()
    /// Display name -> keys of alive instances with that name (a superset: entries that ended or
    /// changed name are dropped when next looked at).
    var byDisplayName: [String: Set<String>] = [:]
    var messages: UInt64 = 0
    var malformed: UInt64 = 0
    /// Byte-identical responses seen before, per source (see DiscoveryRefresh.swift).
    var refreshes: [RefreshKey: Refresh] = [:]
    /// Responses taken by the fast path (for tests and the bench).
    var fastRefreshes: UInt64 = 0
    /// Repeated browse queries skipped (see `QueryRepeat`), and those remembered, by source and hash.
    var fastQueries: UInt64 = 0
    var queryRepeats: [RefreshKey: QueryRepeat] = [:]
    /// `sweepMemos`' list of keys to forget, kept with its storage from sweep to sweep (a list grown
    /// afresh every sweep was a large allocation each time on crowded captures).
    var staleMemos: [RefreshKey] = []
    /// When `sweepMemos` next looks at `refreshes` and `queryRepeats` (capture time).
    var nextMemoSweep: Nanos = .min
    private var stampCounter: UInt64 = 0

    /// A fresh stamp for a written instance or host.
    func bump() -> UInt64 {
        stampCounter &+= 1
        return stampCounter
    }

    // MARK: - Packets

    func process(_ msg: DNSMessage, _ input: PluginInput, _ ctx: PluginContext) {
        let t = input.t
        let src = input.flow?.src.address
        if msg.isResponse {
            response(msg, t: t, src: src, input, ctx)
        } else {
            query(msg, t: t, src: src, input, ctx)
        }
    }

    private func noteService(_ type: String, instance: String? = nil, mpc: Bool = false, query: Bool = false) {
        if serviceStats[type] == nil && serviceStats.count >= Self.maxInstances { return }
        // In place (a copy taken out and stored back would copy its sets on every message).
        Self.note(&serviceStats[type, default: (instances: [], queries: 0, mpc: [])], instance: instance, mpc: mpc, query: query)
    }

    private static func note(_ s: inout (instances: Set<String>, queries: Int, mpc: Set<String>), instance: String?,
                             mpc: Bool, query: Bool) {
        if let instance {
            if s.instances.count < maxInstances { s.instances.insert(instance) }
            if mpc, s.mpc.count < maxInstances { s.mpc.insert(instance) }
        }
        if query { s.queries += 1 }
    }

    private func query(_ msg: DNSMessage, t: Nanos, src: IPAddress?, _ input: PluginInput, _ ctx: PluginContext) {
        // A query teaches the directory nothing and reports no diagnostic: what it gives is events (browse,
        // probe conflicts) and the summary's browse counts, none of which `peerscope decode` without
        // `--events` reads. Without events the tracker keeps no browse state at all.
        guard ctx.wantsEvents else { return }
        for q in msg.questions where q.type == DNSType.ptr || q.type == DNSType.any {
            let enumeration = Self.isEnumeration(q.name)
            guard enumeration || DNSSD.isServiceType(q.name) else { continue }
            let qkey = q.name.key
            let throttleKey = BrowseKey(querier: src, name: qkey)
            // Most queries repeat one answered within the window: nothing more is built for them.
            if let last = browseLast[throttleKey], t &- last < Self.browseWindow, t >= last { continue }
            let st = enumeration ? nil : DNSSD.serviceType(q.name)
            let service = st?.description ?? q.name.text
            if browseLast.count >= Self.maxInstances { pruneBrowse(t) }
            browseLast[throttleKey] = t
            browseDue.insert(BrowseDue(t: t, key: throttleKey))
            noteService(service, query: true)
            if let src, browsers.count < Self.maxHosts || browsers[src] != nil {
                browsers[src, default: []].insert(service)
            }
            // Nothing below but the event: skipped when nobody keeps events (`peerscope decode`).
            guard ctx.wantsEvents else { continue }
            // Counted in place: no filtered copy of the records per question.
            var known = 0
            for r in msg.records where r.section == .answer && r.type == DNSType.ptr && r.name.key == qkey { known += 1 }
            // A querier asks the same again and again: its events share one attribute table (most of
            // what a kept browse event costs), as equal as a new one would be.
            let attrKey = BrowseAttrs(querier: src, labels: q.name.labels, qu: q.unicastResponse, known: known,
                                      any: q.type == DNSType.any)
            let attrs: EventAttrs
            if let i = browseAttrs.index(forKey: attrKey) {
                attrs = browseAttrs.values[i].attrs
                if t > browseAttrs.values[i].lastUsed { browseAttrs.values[i].lastUsed = t }
            } else {
                var a: [String: String] = ["service": service, "qu": q.unicastResponse ? "true" : "false"]
                if q.name.labels.count > 1, DNSName.foldedEqual(q.name.labels[1], "_sub") { a["subtype"] = q.name.labels[0] }
                if known > 0 { a["knownAnswers"] = "\(known)" }
                if let src { a["querier"] = "\(src)" }
                if q.type == DNSType.any { a["qtype"] = "ANY" }
                if browseAttrs.count >= Self.maxInstances { browseAttrs.removeAll(keepingCapacity: true) }
                // Packed as `ctx.event(_:attrs:)` packs a dictionary: the same bytes.
                attrs = EventAttrs(a)
                browseAttrs[attrKey] = (attrs, t)
            }
            let hints = ctx.hints()
            ctx.event(.browse, from: hints.from, packed: attrs)
        }
        // Probes: a query whose authority section claims an instance someone else holds.
        for r in msg.records where r.section == .authority && r.type == DNSType.srv {
            guard case .srv(_, _, _, let target) = r.data, let inst = instances[r.name.key], inst.state == .alive,
                  let cur = inst.srv, let exp = inst.srvExpiry, exp > t, cur.target.key != target.key,
                  src == nil || src != inst.srvSource
            else { continue }
            conflict(inst, otherTarget: target, phase: "probe", src: src, ctx)
        }
    }

    /// A service-enumeration name (`_services._dns-sd._udp.local`, or under another domain).
    static func isEnumeration(_ n: DNSName) -> Bool {
        n.hasSuffix(DNSSD.localEnumerationName) || (n.labels.count >= 3
            && DNSName.foldedEqual(n.labels[0], "_services") && DNSName.foldedEqual(n.labels[1], "_dns-sd"))
    }

    /// A name a PTR or ANY question browses for (a service type or the enumeration name).
    static func isBrowseName(_ n: DNSName) -> Bool { isEnumeration(n) || DNSSD.isServiceType(n) }

    private func pruneBrowse(_ t: Nanos) {
        // Drops the entries older than the window, as `browseLast.filter { t &- $0.value < window }`
        // would, but visits only those (earliest first), not the whole table every second.
        while let top = browseDue.min, top.t <= t, t &- top.t >= Self.browseWindow {
            _ = browseDue.removeMin()
            if browseLast[top.key] == top.t { browseLast[top.key] = nil }
        }
        if browseLast.count >= Self.maxInstances {
            browseLast.removeAll(keepingCapacity: true)
            browseDue = Heap()
        }
    }

    func instanceKey(_ n: DNSName) -> (String, DNSSD.InstanceName)? {
        guard let inst = DNSSD.instanceName(n) else { return nil }
        return (n.key, inst)
    }

    private func ensureInstance(_ key: String, _ name: DNSSD.InstanceName, fullName: String, t: Nanos,
                                _ input: PluginInput) -> Instance {
        if let i = instances[key] { return i }
        if instances.count >= Self.maxInstances { evictInstance() }
        return Instance(key: key, name: name, fullName: fullName, peerID: name.service.isTCP ? name.peerID : nil,
                        firstSeen: t, lastSeen: t, firstEvidence: input.evidence, lastEvidence: input.evidence)
    }

    private func evictInstance() {
        // A sixteenth of the table at once: gone instances seen longest ago first, then alive ones
        // expiring first; ties go to the smaller key, never to the table's (per-process hashed) order,
        // so every run evicts the same ones. Victims come off heaps kept in that order (entries that no
        // longer hold are dropped on the way): a logarithmic step per victim, not a sort of the table.
        for _ in 0 ..< max(1, Self.maxInstances / 16) {
            guard let key = nextVictim(), let v = instances.removeValue(forKey: key) else { break }
            evictedInstances &+= 1
            if let t = v.srv?.target.key { byTarget[t]?.remove(v.key) }
            if let name = v.displayName {
                byDisplayName[name]?.remove(v.key)
                if byDisplayName[name]?.isEmpty == true { byDisplayName[name] = nil }
            }
        }
    }

    /// The next instance to evict (see `evictInstance`).
    private func nextVictim() -> String? {
        while let top = ended.min {
            if let x = instances.index(top.slot, forKey: top.key), withInstance(x, { $0.state != .alive && $0.lastSeen == top.t }) {
                return top.key
            }
            _ = ended.removeMin()
        }
        while let top = due.min {
            if let x = instances.index(top.slot, forKey: top.key), withInstance(x, { $0.state == .alive && $0.deadline == top.t }) {
                // The deadlines before it are gone, as they were when `due` held every one.
                dueTimes.drop(through: top.t, inclusive: false)
                return top.key
            }
            _ = due.removeMin()
            if let x = instances.index(top.slot, forKey: top.key) { _ = dueNow(x, top) }
        }
        dueTimes.removeAll()
        // Only alive instances without any expiry left (none on the heaps): the smallest key.
        return instances.liveKeys.min()
    }

    /// `strings` copied into one buffer of their own, each a slice of it (equal to `strings`).
    static func ownStorage(_ strings: [Bytes]) -> [Bytes] {
        var joined: [UInt8] = []
        joined.reserveCapacity(strings.reduce(0) { $0 &+ $1.count })
        for b in strings { b.withUnsafeBytes { joined.append(contentsOf: $0) } }
        var lower = 0
        return strings.map { b in
            defer { lower &+= b.count }
            return Bytes(storage: joined, lower: lower, count: b.count)
        }
    }

    /// An instance ended (goodbye, expiry): it is an eviction candidate from now on, by last seen.
    private func noteEnded(_ i: Instance) {
        ended.insert(Due(t: i.lastSeen, key: i.key, slot: instances.index(forKey: i.key) ?? -1))
        if ended.count > endedCompactionAt {
            // Drop the entries that no longer hold (the instance revived, changed or left the table),
            // and repeats of one that does (the first to come up evicts it; the rest would be stale).
            var kept = Set<String>()
            ended = Heap(ended.unordered.filter { e in
                guard instances[e.key].map({ $0.state != .alive && $0.lastSeen == e.t }) ?? false else { return false }
                return kept.insert(e.key).inserted
            })
        }
    }

    private func response(_ msg: DNSMessage, t: Nanos, src: IPAddress?, _ input: PluginInput, _ ctx: PluginContext) {
        let records = msg.records
        let keys = records.map { $0.name.key }
        // 1. Host addresses (A/AAAA), with cache-flush and goodbyes.
        var flushed: Set<String> = []
        let scope = input.frame.interfaceName ?? {
            if case .v6(_, _, let s)? = src { return s }
            return nil
        }()
        var hasAddresses = false
        for (ri, r) in records.enumerated() {
            let addr: IPAddress
            switch r.data {
            case .a(let a): addr = a
            case .aaaa(let a):
                if case .v6(let hi, let lo, _) = a, a.isLinkLocal, let scope { addr = .v6(hi: hi, lo: lo, scope: scope) } else { addr = a }
            default: continue
            }
            hasAddresses = true
            let hk = keys[ri]
            if hosts.index(forKey: hk) == nil, hosts.count >= Self.maxHosts { evictHost() }
            let hx = hosts.index(forKey: hk) ?? hosts.insert(hk, Host())
            let flush = r.cacheFlush && r.ttl > 0 && flushed.insert(hk + "|\(r.type)").inserted
            // In place: a copy taken out would copy the address table on its first write.
            withHost(hx) { h in
                h.lastSeen = t
                if flush {
                    h.addresses = h.addresses.filter { (a, v) in a.isV4 != (r.type == DNSType.a) || t &- v.received <= Self.flushGrace }
                }
                if r.ttl == 0 {
                    // Goodbye: RFC 6762 §10.1 keeps it one more second.
                    if h.addresses[addr] != nil {
                        h.addresses[addr] = (t, t &+ CaptureTime.second)
                        schedule(&h, hk, slot: hx, t &+ CaptureTime.second)
                    }
                } else {
                    h.addresses[addr] = (t, t &+ Nanos(r.ttl) &* CaptureTime.second)
                    schedule(&h, hk, slot: hx, t &+ Nanos(r.ttl) &* CaptureTime.second)
                }
                if h.addresses.isEmpty { schedule(&h, hk, slot: hx, t) }
                h.stamp = bump()
            }
        }

        // 2. Service records.
        var touched: [String] = []
        var announcedNow: Set<String> = []
        var goodbyes: [String: (Instance, String)] = [:]
        var txtChanged: [String: [String]] = [:]
        for (ri, r) in records.enumerated() {
            switch r.type {
            case DNSType.ptr:
                guard case .ptr(let target) = r.data else { continue }
                if Self.isEnumeration(r.name) {
                    if let st = DNSSD.serviceType(target) { noteService(st.description) }
                    continue
                }
                guard DNSSD.isServiceType(r.name), let (key, iname) = instanceKey(target) else { continue }
                var inst = ensureInstance(key, iname, fullName: target.text, t: t, input)
                if r.ttl == 0 {
                    if instances[key] != nil || goodbyes[key] == nil { goodbyes[key] = (inst, "PTR") }
                    continue
                }
                if inst.state != .alive { revive(&inst) }
                if inst.ptrExpiry == nil && inst.srvExpiry == nil && inst.txtExpiry == nil { announcedNow.insert(key) }
                inst.ptrExpiry = t &+ Nanos(r.ttl) &* CaptureTime.second
                touch(&inst, t, src, input)
                inst.stamp = bump()
                instances[key] = inst
                indexName(inst)
                touched.append(key)
            case DNSType.srv:
                guard case .srv(let pr, let w, let port, let target) = r.data, let iname = DNSSD.instanceName(r.name) else { continue }
                let key = keys[ri]
                var inst = ensureInstance(key, iname, fullName: r.name.text, t: t, input)
                if r.ttl == 0 {
                    if goodbyes[key] == nil { goodbyes[key] = (inst, "SRV") }
                    continue
                }
                if inst.state != .alive { revive(&inst) }
                let new = SRV(target: target, port: port, priority: pr, weight: w)
                // Two hosts answering for one name; a host that renamed itself sends the new target from
                // the same address.
                if let cur = inst.srv, let exp = inst.srvExpiry, exp > t, cur.target.key != target.key,
                   let src, let was = inst.srvSource, was != src {
                    conflict(inst, otherTarget: target, phase: "answer", src: src, ctx)
                }
                if let cur = inst.srv, cur.target.key != target.key || cur.port != port {
                    byTarget[cur.target.key]?.remove(key)
                    inst.reportedEndpoints = []
                }
                if byTarget.count < Self.maxHosts || byTarget[target.key] != nil,
                   byTarget[target.key, default: []].insert(key).inserted {
                    // The host's addresses now resolve one more instance: refreshes cached with it are stale.
                    if let hi = hosts.index(forKey: target.key) { hosts.values[hi].stamp = bump() }
                }
                inst.srvSource = src
                if inst.ptrExpiry == nil && inst.srvExpiry == nil && inst.txtExpiry == nil { announcedNow.insert(key) }
                inst.srv = new
                inst.srvExpiry = t &+ Nanos(r.ttl) &* CaptureTime.second
                touch(&inst, t, src, input)
                inst.stamp = bump()
                instances[key] = inst
                indexName(inst)
                touched.append(key)
            case DNSType.txt:
                guard case .txt(let raw) = r.data, let iname = DNSSD.instanceName(r.name) else { continue }
                let key = keys[ri]
                var inst = ensureInstance(key, iname, fullName: r.name.text, t: t, input)
                if r.ttl == 0 {
                    if goodbyes[key] == nil && instances[key] != nil && inst.srvExpiry == nil && inst.ptrExpiry == nil {
                        goodbyes[key] = (inst, "TXT")
                    }
                    continue
                }
                if inst.state != .alive { revive(&inst) }
                if inst.ptrExpiry == nil && inst.srvExpiry == nil && inst.txtExpiry == nil { announcedNow.insert(key) }
                // Refreshes repeat the same bytes: only read the record when they changed.
                if inst.txtRaw != raw {
                    // Kept in storage of their own: a slice of the packet would keep the capture
                    // reader's whole 1 MiB chunk alive for as long as the instance lives. One buffer
                    // for all the strings (a record of ten strings held ten heap blocks).
                    let raw = Self.ownStorage(raw)
                    let txt = DNSSD.TXTRecord(raw)
                    let previous = inst.txt
                    if let old = previous, old.strings != txt.strings {
                        txtChanged[key] = changedKeys(old, txt)
                    } else if previous == nil, !announcedNow.contains(key) {
                        // Announced without TXT earlier (PTR/SRV only): its TXT arriving now is news too.
                        txtChanged[key] = txt.keys
                    }
                    if let old = inst.displayName, old != txt.displayName { byDisplayName[old]?.remove(key) }
                    inst.txtRaw = raw
                    inst.displayName = txt.displayName
                }
                inst.txtExpiry = t &+ Nanos(r.ttl) &* CaptureTime.second
                touch(&inst, t, src, input)
                inst.stamp = bump()
                instances[key] = inst
                indexName(inst)
                touched.append(key)
            default:
                continue
            }
        }

        // 3. Events, in a stable order: announced, updated, resolved; then goodbyes.
        var seen: Set<String> = []
        for key in touched where !seen.contains(key) {
            seen.insert(key)
            guard var inst = instances[key] else { continue }
            noteService(inst.name.service.description, instance: key, mpc: inst.peerID != nil)
            teach(inst, src: src, ctx)
            // The attributes are built only for someone who keeps events (not `peerscope decode`).
            if announcedNow.contains(key) {
                if ctx.wantsEvents {
                    var a = attrs(inst)
                    let (types, ttl) = recordTypes(records, keys, key)
                    a["records"] = types
                    if let ttl { a["ttl"] = "\(ttl)" }
                    ctx.event(.announced, from: hint(inst, src), attrs: a)
                }
                checkNameConflict(inst, ctx)
            } else if let changed = txtChanged[key] {
                if ctx.wantsEvents {
                    var a = attrs(inst)
                    a["changedKeys"] = changed.joined(separator: ",")
                    ctx.event(.updated, from: hint(inst, src), attrs: a)
                }
                checkNameConflict(inst, ctx)
            }
            resolve(&inst, t: t, src: src, ctx)
            if let d = inst.deadline, let x = instances.index(forKey: key) { schedule(at: x, d) }
        }
        for (key, (inst, record)) in goodbyes.sorted(by: { $0.key < $1.key }) {
            var i = instances[key] ?? inst
            let wasKnown = instances[key] != nil
            if wasKnown && i.state != .alive { continue }
            i.state = .goodbye
            i.lastSeen = t
            i.lastEvidence = input.evidence
            if let src { i.sources.insert(src) }
            if wasKnown {
                i.stamp = bump()
                instances[key] = i
                noteEnded(i)
            }
            guard ctx.wantsEvents else { continue }
            var a = attrs(i)
            a["record"] = record
            a["known"] = wasKnown ? "true" : "false"
            ctx.event(.goodbye, from: hint(i, src), attrs: a)
        }
        // SRV targets whose addresses arrive in a later packet than the SRV.
        if hasAddresses && !byTarget.isEmpty { resolveLate(records, keys, skip: seen, t: t, src: src, ctx) }
    }

    private func ptrTargetKey(_ r: DNSRecord) -> String? {
        if case .ptr(let n) = r.data { return n.key }
        return nil
    }

    /// The record types in the packet that concern instance `key`, and the TTL of the first.
    private func recordTypes(_ records: [DNSRecord], _ keys: [String], _ key: String) -> (String, UInt32?) {
        var out: [String] = []
        var ttl: UInt32? = nil
        for (i, r) in records.enumerated() where keys[i] == key || (r.type == DNSType.ptr && ptrTargetKey(r) == key) {
            let m = DNSType.mnemonic(r.type)
            if !out.contains(m) { out.append(m) }
            if ttl == nil { ttl = r.ttl }
        }
        return (out.joined(separator: ","), ttl)
    }

    /// Emits `resolved` when the instance's SRV target has addresses not reported before.
    func resolve(_ inst: inout Instance, t: Nanos, src: IPAddress?, _ ctx: PluginContext) {
        guard let srv = inst.srv else { return }
        let addrs = addresses(of: srv.target, t: t)
        let endpoints = addrs.map { Endpoint($0, srv.port) }
        guard endpoints.contains(where: { !inst.reportedEndpoints.contains($0) }) else { return }
        if inst.reportedEndpoints.count < 64 { inst.reportedEndpoints.formUnion(endpoints) }
        inst.stamp = bump()
        instances[inst.key] = inst
        teach(inst, src: nil, ctx)
        guard ctx.wantsEvents else { return }
        var a = attrs(inst)
        a["endpoints"] = endpoints.map(\.description).joined(separator: ",")
        ctx.event(.resolved, from: hint(inst, src), attrs: a)
    }

    /// A packet with only address records: tell instances whose SRV points at those hosts.
    private func resolveLate(_ records: [DNSRecord], _ rkeys: [String], skip: Set<String>, t: Nanos, src: IPAddress?,
                             _ ctx: PluginContext) {
        var hostKeys: Set<String> = []
        for (i, r) in records.enumerated() where (r.type == DNSType.a || r.type == DNSType.aaaa) && r.ttl > 0 {
            hostKeys.insert(rkeys[i])
        }
        guard !hostKeys.isEmpty else { return }
        var keys: Set<String> = []
        for h in hostKeys { keys.formUnion(byTarget[h] ?? []) }
        for key in keys.sorted() where !skip.contains(key) {
            guard var inst = instances[key], inst.state == .alive, let srv = inst.srv, hostKeys.contains(srv.target.key)
            else { continue }
            resolve(&inst, t: t, src: src, ctx)
        }
    }

    private func revive(_ inst: inout Instance) {
        inst.state = .alive
        inst.ptrExpiry = nil
        inst.srvExpiry = nil
        inst.txtExpiry = nil
        inst.reportedEndpoints = []
    }

    func touch(_ inst: inout Instance, _ t: Nanos, _ src: IPAddress?, _ input: PluginInput) {
        inst.lastSeen = t
        inst.lastEvidence = input.evidence
        inst.lastFlow = input.flow
        if let src, inst.sources.count < 16 { inst.sources.insert(src) }
    }

    private func changedKeys(_ old: DNSSD.TXTRecord, _ new: DNSSD.TXTRecord) -> [String] {
        var out: [String] = []
        var oldMap: [String: String] = [:]
        for e in old.entries where oldMap[e.key] == nil { oldMap[e.key] = e.value ?? "" }
        var newMap: [String: String] = [:]
        for e in new.entries where newMap[e.key] == nil { newMap[e.key] = e.value ?? "" }
        for k in new.keys where oldMap[k] != newMap[k] && !out.contains(k) { out.append(k) }
        for k in old.keys where newMap[k] == nil && !out.contains(k) { out.append(k) }
        return out
    }

    func addresses(of host: DNSName, t: Nanos) -> [IPAddress] {
        // One pass, no filtered copy of the table (this runs for every instance a refresh touches).
        guard let x = hosts.index(forKey: host.key) else { return [] }
        return addresses(atSlot: x, t: t)
    }

    /// `addresses(of:t:)` of the host in slot `x` (a live slot).
    func addresses(atSlot x: Int, t: Nanos) -> [IPAddress] {
        var out: [IPAddress] = []
        for (a, v) in hosts.values[x].addresses where v.expiry > t { out.append(a) }
        out.sort()
        return out
    }

    private func evictHost() {
        // A sixteenth of the table at once, seen longest ago first (ties by name).
        let victims = hosts.entries.map { (t: $0.value.lastSeen, key: $0.key) }.sorted { $0.t != $1.t ? $0.t < $1.t : $0.key < $1.key }
        for v in victims.prefix(max(1, Self.maxHosts / 16)) {
            hosts[v.key] = nil
            evictedHosts &+= 1
        }
    }

    // MARK: - Events and the directory

    func attrs(_ inst: Instance) -> [String: String] {
        var a: [String: String] = ["service": inst.name.service.description, "instance": inst.name.instance,
                                   "instanceName": inst.fullName]
        if let id = inst.peerID {
            a["peerID"] = PeerIdentity.idString(id)
            a["participantID"] = PeerIdentity.participantHex(PeerIdentity.participantID(id))
        }
        if let srv = inst.srv {
            a["host"] = srv.target.text
            a["port"] = "\(srv.port)"
            let addrs = addresses(of: srv.target, t: inst.lastSeen)
            if !addrs.isEmpty { a["addresses"] = addrs.map(\.description).joined(separator: ",") }
        }
        if !inst.sources.isEmpty { a["sources"] = inst.sources.sorted().map(\.description).joined(separator: ",") }
        if let txt = inst.txt {
            a["txtKeys"] = txt.keys.joined(separator: ",")
            if inst.peerID != nil {
                if let d = txt.displayName { a["displayName"] = d }
                for (k, v) in txt.discoveryInfo { a["info.\(k)"] = v }
            } else if !txt.strings.allSatisfy(\.isEmpty) {
                a["txt"] = txt.strings.joined(separator: " ")
            }
        }
        return a
    }

    private func hint(_ inst: Instance, _ src: IPAddress?) -> PeerHint {
        PeerHint(peerID: inst.peerID, displayName: inst.displayName, address: src ?? inst.lastSource)
    }

    /// `hostSlot`: the slot of the SRV target's host when the caller knows it holds that host (the
    /// refresh fast path), so its name is not lower-cased and hashed again; nil looks it up by name.
    func teach(_ inst: Instance, src: IPAddress?, _ ctx: PluginContext, hostSlot: Int? = nil) {
        guard let id = inst.peerID else { return }
        let dir = ctx.directory
        dir.learn(peerID: id, displayName: inst.displayName)
        dir.advertised(peerID: id, at: inst.lastSeen)
        if let src, !src.isMulticast { dir.learn(peerID: id, address: src) }
        if let srv = inst.srv {
            let addrs = hostSlot.map { addresses(atSlot: $0, t: inst.lastSeen) } ?? addresses(of: srv.target, t: inst.lastSeen)
            for a in addrs { dir.learn(peerID: id, endpoint: Endpoint(a, srv.port)) }
        }
    }

    private func conflict(_ inst: Instance, otherTarget: DNSName, phase: String, src: IPAddress?, _ ctx: PluginContext) {
        guard let cur = inst.srv else { return }
        let hostsPair = [cur.target.text, otherTarget.text].sorted()
        let key = "i|\(inst.key)|" + hostsPair.joined(separator: "|")
        guard !reportedConflicts.contains(key) else { return }
        if reportedConflicts.count < Self.maxInstances { reportedConflicts.insert(key) }
        guard ctx.wantsEvents else { return }
        var a = attrs(inst)
        a["hosts"] = hostsPair.joined(separator: ",")
        a["host"] = cur.target.text
        a["otherHost"] = otherTarget.text
        a["phase"] = phase
        if let src { a["otherSource"] = "\(src)" }
        ctx.event(.instanceConflict, from: hint(inst, src), attrs: a)
    }

    private func indexName(_ inst: Instance) {
        if let name = inst.displayName, !name.isEmpty { byDisplayName[name, default: []].insert(inst.key) }
    }

    private func checkNameConflict(_ inst: Instance, _ ctx: PluginContext) {
        guard let id = inst.peerID, let name = inst.displayName, !name.isEmpty else { return }
        guard let keys = byDisplayName[name], !keys.isEmpty else { return }
        // The namesakes in the order they were first seen (then by key): never the table's hashed
        // order, which changes from run to run.
        // Slots and sort keys only: a copy of each namesake's `Instance` (a large struct, its strings and
        // sets retained) made this a large allocation per announcement on captures where one device name
        // runs several instances. The table is not changed below, so the slots hold.
        var namesakes: [(slot: Int, firstSeen: Nanos, key: String)] = []
        for k in keys where k != inst.key {
            guard let i = instances.index(forKey: k), instances.values[i].state == .alive,
                  instances.values[i].displayName == name else {
                byDisplayName[name]?.remove(k)
                continue
            }
            namesakes.append((i, instances.values[i].firstSeen, k))
        }
        namesakes.sort { ($0.firstSeen, $0.key) < ($1.firstSeen, $1.key) }
        for n in namesakes {
            guard let oid = instances.values[n.slot].peerID, oid != id, instances.values[n.slot].displayName == name else { continue }
            let ids = [PeerIdentity.idString(id), PeerIdentity.idString(oid)].sorted()
            let key = "n|\(name)|" + ids.joined(separator: "|")
            guard !reportedConflicts.contains(key) else { continue }
            if reportedConflicts.count < Self.maxInstances { reportedConflicts.insert(key) }
            guard ctx.wantsEvents else { continue }
            let other = instances.values[n.slot]
            var a = attrs(inst)
            a["peerIDs"] = ids.joined(separator: ",")
            a["otherPeerID"] = PeerIdentity.idString(oid)
            a["otherInstance"] = other.fullName
            ctx.event(.nameConflict, from: hint(inst, nil),
                      to: PeerHint(peerID: oid, displayName: other.displayName, address: other.lastSource), attrs: a)
        }
    }

    // MARK: - Time

    /// Expires instances whose records ran out (capture time).
    func tick(_ t: Nanos, _ ctx: PluginContext) {
        sweepMemos(t)
        guard t >= nextDeadline else { return }
        // The expired instances are kept only to report them.
        let wantsEvents = ctx.wantsEvents
        var expired: [Instance] = []
        while let next = due.min?.t, next <= t {
            let top = due.removeMin()
            // An instance refreshed since is queued again for its deadline (perhaps still in this loop).
            guard let x = instances.index(top.slot, forKey: top.key), dueNow(x, top) else { continue }
            var i = instances.values[x]
            if wantsEvents { expired.append(i) }
            i.state = .expired
            i.stamp = bump()
            instances.values[x] = i
            noteEnded(i)
        }
        dueTimes.drop(through: t)
        nextDeadline = dueTimes.min ?? .max
        for inst in expired.sorted(by: { ($0.deadline ?? 0, $0.key) < ($1.deadline ?? 0, $1.key) }) {
            var a = attrs(inst)
            a["record"] = inst.expiringRecord
            a["lastSeen"] = CaptureTime.iso8601(inst.lastSeen)
            ctx.event(PeerEvent(kind: .expired, t: inst.deadline ?? t, evidence: inst.lastEvidence,
                                from: hint(inst, nil), flow: inst.lastFlow, source: ctx.currentPlugin, attrs: a))
        }
        // Host addresses past their TTL: only the hosts with an address due are looked at. Each address
        // has an entry no later than its expiry (a refresh that only moves an expiry later adds none):
        // a host looked at keeps one entry for its earliest live address.
        while let next = hostDue.min?.t, next <= t {
            let top = hostDue.removeMin()
            guard let x = hosts.index(top.slot, forKey: top.key) else { continue }
            if hosts.values[x].queued == top.t { hosts.values[x].queued = .max }
            var earliest = Nanos.max, expired = false
            for v in hosts.values[x].addresses.values {
                if v.expiry > t { earliest = min(earliest, v.expiry) } else { expired = true }
            }
            if earliest == .max {
                hosts.remove(at: x)
                continue
            }
            if expired { hosts.values[x].addresses = hosts.values[x].addresses.filter { $0.value.expiry > t } }
            schedule(&hosts.values[x], top.key, slot: x, earliest)
        }
        if browseLast.count > 1024 { pruneBrowse(t) }
        if browseDue.count > 4096 + 2 * browseLast.count {
            // Entries of queries answered again since: keep one per throttled name.
            browseDue = Heap(browseLast.map { BrowseDue(t: $0.value, key: $0.key) })
        }
    }

    // MARK: - Summary

    func summary() -> DiscoverySummary {
        let services = serviceStats.map { k, v in
            DiscoverySummary.Service(type: k, instances: v.instances.count, browseQueries: v.queries, mpcInstances: v.mpc.count)
        }.sorted { $0.type < $1.type }
        let insts = instances.entries.map(\.value).map { i -> DiscoverySummary.Instance in
            var addrs = Set(i.sources)
            if let srv = i.srv, let h = hosts[srv.target.key] { addrs.formUnion(h.addresses.keys) }
            var info: [String: String] = [:]
            if i.peerID != nil { for (k, v) in i.txt?.discoveryInfo ?? [] where info[k] == nil { info[k] = v } }
            return DiscoverySummary.Instance(service: i.name.service.description, instance: i.name.instance, peerID: i.peerID,
                                             displayName: i.displayName, host: i.srv?.target.text, port: i.srv?.port,
                                             addresses: addrs.sorted(), txt: i.txt?.strings ?? [], discoveryInfo: info,
                                             firstSeen: i.firstSeen, lastSeen: i.lastSeen, state: i.state,
                                             firstEvidence: i.firstEvidence, lastEvidence: i.lastEvidence)
        }.sorted { ($0.firstSeen, $0.service, $0.instance) < ($1.firstSeen, $1.service, $1.instance) }
        let br = browsers.map { DiscoverySummary.Browser(address: $0.key, services: $0.value.sorted()) }
            .sorted { $0.address < $1.address }
        return DiscoverySummary(services: services, instances: insts, browsers: br, messages: messages, malformed: malformed)
    }
}
