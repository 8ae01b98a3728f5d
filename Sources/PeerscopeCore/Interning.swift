/// An immutable value shared by reference. Events hold their peer hints and flow as boxes from a
/// process-wide table (one per distinct value, see `intern`): a large capture's millions of events
/// name a few thousand hints and flows, so each event holds 8-byte references instead of copies (a
/// `PeerHint` is 120 bytes, a `FlowKey` 88). Timeline entries name their peer and session instance
/// with one box per peer or instance. Boxes compare by identity first and hash by a hash computed once.
public final class Shared<Value: Hashable & Sendable>: Hashable, @unchecked Sendable {
    public let value: Value
    @usableFromInline let cachedHash: Int

    public init(_ value: Value) {
        self.value = value
        cachedHash = value.hashValue
    }

    /// A box of `value` whose `hashValue` is `hash` (already computed by the caller).
    init(_ value: Value, hash: Int) {
        self.value = value
        cachedHash = hash
    }

    @inlinable public static func == (a: Shared, b: Shared) -> Bool {
        a === b || (a.cachedHash == b.cachedHash && a.value == b.value)
    }

    @inlinable public func hash(into h: inout Hasher) { h.combine(cachedHash) }
}

extension Shared where Value == PeerHint {
    /// The shared box of `value`.
    public static func intern(_ value: PeerHint) -> Shared<PeerHint> { internedHints.intern(value) }
}

extension Shared where Value == FlowKey {
    /// The shared box of `value`.
    public static func intern(_ value: FlowKey) -> Shared<FlowKey> { internedFlows.intern(value) }
}

let internedHints = InternTable<PeerHint>()
let internedFlows = InternTable<FlowKey>()

/// A process-wide table of boxes, safe to use from several threads. It keeps at most `limit`
/// values (distinct hints and flows are bounded by the peers and flows seen); beyond that a value
/// gets a box of its own, which still compares equal by value.
final class InternTable<Value: Hashable & Sendable>: Sendable {
    static var limit: Int { 1 << 18 }
    private let boxes = LockedTable<Value, Shared<Value>>()

    func intern(_ value: Value) -> Shared<Value> {
        boxes.withLock { table in Self.box(value, in: &table) }
    }

    /// The table's box for `value`, made (and kept while the table is under `limit`) when new.
    static func box(_ value: Value, in table: inout [Value: Shared<Value>]) -> Shared<Value> {
        if let b = table[value] { return b }
        let b = Shared(value)
        if table.count < limit { table[value] = b }
        return b
    }
}

/// Boxes of hints and flows for one analysis (a `PluginContext` owns one): the decoders' events are
/// interned here without a lock, and the table goes away with the analysis instead of growing the
/// process-wide one (a library embedded in a long-lived process, fleets). Equal values from
/// different tables still compare equal (`Shared` falls back to the value).
public final class EventInterner {
    private var hints = BoxTable<PeerHint>()
    private var flows = BoxTable<FlowKey>()
    /// The last flow interned and its box: consecutive events of one packet or flow skip the hash.
    private var lastFlow: Shared<FlowKey>?

    public init() {}

    /// Recent hint boxes by a cheap key (participant, port, name length), checked by equality: most
    /// events name a hint seen a moment ago, and this skips hashing its strings.
    private var recentHints = [Shared<PeerHint>?](repeating: nil, count: 64)

    public func hint(_ h: PeerHint) -> Shared<PeerHint>? {
        if h.isEmpty { return nil }
        let key = UInt64(h.participantID ?? 0) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(h.endpoint?.port ?? 0) &* 0xC2B2_AE3D_27D4_EB4F
            ^ UInt64(h.displayName?.utf8.count ?? 0) &* 0x1656_67B1_9E37_79F9
        let slot = Int(truncatingIfNeeded: key >> 58)
        if let r = recentHints[slot], r.value == h { return r }
        let b = hints.box(h)
        recentHints[slot] = b
        return b
    }

    /// Recent flow boxes by their ports, checked by equality (a session's flows interleave: the last
    /// flow alone misses most of them).
    private var recentFlows = [Shared<FlowKey>?](repeating: nil, count: 64)

    public func flow(_ f: FlowKey?) -> Shared<FlowKey>? {
        guard let f else { return nil }
        if let l = lastFlow, l.value == f { return l }
        let key = (UInt64(f.src.port) << 16 | UInt64(f.dst.port)) &* 0x9E37_79B9_7F4A_7C15
        let slot = Int(truncatingIfNeeded: key >> 58)
        if let r = recentFlows[slot], r.value == f {
            lastFlow = r
            return r
        }
        let b = flows.box(f)
        recentFlows[slot] = b
        lastFlow = b
        return b
    }

    /// Distinct hints and flows held (for tests).
    public var counts: (hints: Int, flows: Int) { (hints.count, flows.count) }
}

/// One box per distinct value, as `InternTable.box` gives (the same box for equal values while under
/// `InternTable.limit`), stored by the value's hash: a table entry is the box alone (8 bytes and the
/// box), not a second copy of the value as the key (a `PeerHint` key is 100 bytes: an analysis that
/// meets a new endpoint with every TCP connection kept tens of MB of keys). Values whose hash another
/// value holds go to a small table of their own.
struct BoxTable<Value: Hashable & Sendable> {
    private var byHash: [Int: Shared<Value>] = [:]
    private var collided: [Value: Shared<Value>] = [:]

    var count: Int { byHash.count + collided.count }

    mutating func box(_ value: Value) -> Shared<Value> {
        let h = value.hashValue
        if let b = byHash[h] {
            if b.value == value { return b }
            if let c = collided[value] { return c }
            let nb = Shared(value, hash: h)
            if count < InternTable<Value>.limit { collided[value] = nb }
            return nb
        }
        let nb = Shared(value, hash: h)
        if count < InternTable<Value>.limit { byHash[h] = nb }
        return nb
    }
}
