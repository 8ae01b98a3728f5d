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
        boxes.withLock { table in
            if let b = table[value] { return b }
            let b = Shared(value)
            if table.count < InternTable.limit { table[value] = b }
            return b
        }
    }
}
