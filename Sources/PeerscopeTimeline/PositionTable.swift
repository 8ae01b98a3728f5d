/// Where each element of a list is, found by the element's key (`Timelines`' peers by ref, sessions by
/// key): one 32-bit slot per place in an open-addressing table at most half full, the keys read from the
/// list itself (issue 13). A `[PeerRef: Int]` for the 1 GB mDNS file's 25,695 peers held 65,536 buckets
/// of a 40-byte key and an 8-byte position (3.1 MB through the detectors and the report); this holds
/// 65,536 four-byte slots. Lookups give what a dictionary filled in list order gives: the position of
/// the last element with that key.
struct PositionTable<Key: Hashable & Sendable>: Sendable {
    /// 0: empty; else the position + 1. `slots.count` is a power of two (or zero).
    private var slots: [UInt32] = []
    /// A list too long for 32-bit positions (never from a capture: billions of peers) is indexed here.
    private var wide: [Key: Int]?

    /// The positions of `count` elements, `key(i)` the key of the element at `i`.
    init(count: Int, key: (Int) -> Key) {
        guard count > 0 else { return }
        guard count < Int(UInt32.max) / 2 else {
            var d: [Key: Int] = [:]
            for i in 0 ..< count { d[key(i)] = i }
            wide = d
            return
        }
        var capacity = 1
        while capacity < 2 * count { capacity <<= 1 }
        slots = [UInt32](repeating: 0, count: capacity)
        let mask = capacity - 1
        for i in 0 ..< count {
            let k = key(i)
            var s = k.hashValue & mask
            while slots[s] != 0, key(Int(slots[s]) - 1) != k { s = (s + 1) & mask }
            slots[s] = UInt32(i + 1)
        }
    }

    /// The position of the element keyed `k` (the last one, if several are), `key` reading the same
    /// list the table was made of (nil past its end); nil when none is.
    func position(of k: Key, key: (Int) -> Key?) -> Int? {
        if let wide { return wide[k] }
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var s = k.hashValue & mask
        while slots[s] != 0 {
            let i = Int(slots[s]) - 1
            if key(i) == k { return i }
            s = (s + 1) & mask
        }
        return nil
    }

    /// Bytes the table holds beyond its own size (tests).
    var slotBytes: Int { slots.capacity * MemoryLayout<UInt32>.stride }
}

/// Objects found by a key each one holds (the builder's peers by ref, its sides boxes by the identities of
/// their three boxes): the objects in one list in the order first added, and an open-addressing table of
/// 32-bit positions at most half full, the keys read from the objects themselves (issue 13). A
/// `[PeerRef: PeerWork]` for the 1 GB mDNS file's 25,695 peers held 65,536 buckets of a 40-byte key and
/// an 8-byte reference (3.1 MB through the timeline stage's peak; the sides boxes' table 2.1 MB more);
/// this holds a reference and about two 4-byte slots an object. Lookups and replacements are a
/// dictionary's; `objects` keeps the order objects were first added.
struct KeyedObjects<Key: Hashable, Object: AnyObject> {
    /// Every object, in the order first added (a replaced object's place goes to its replacement).
    private(set) var objects: [Object] = []
    /// 0: empty; else the position in `objects` + 1. `slots.count` is a power of two (or zero).
    private var slots: [UInt32] = []
    /// The key an object is found by (it must not change while the object is in the table).
    private let key: (Object) -> Key

    init(key: @escaping (Object) -> Key) { self.key = key }

    var count: Int { objects.count }
    var isEmpty: Bool { objects.isEmpty }

    /// The slot of `k`'s object, or the empty slot where it would go.
    private func slot(of k: Key) -> Int {
        let mask = slots.count - 1
        var s = k.hashValue & mask
        while slots[s] != 0, key(objects[Int(slots[s]) - 1]) != k { s = (s + 1) & mask }
        return s
    }

    /// The object keyed `k`; setting one replaces the object keyed alike (nil is not stored).
    subscript(k: Key) -> Object? {
        guard !slots.isEmpty else { return nil }
        let s = slot(of: k)
        return slots[s] == 0 ? nil : objects[Int(slots[s]) - 1]
    }

    /// Adds `o`, or puts it in the place of the object with the same key.
    mutating func insert(_ o: Object) {
        if 2 * (objects.count + 1) > slots.count { grow() }
        let s = slot(of: key(o))
        if slots[s] != 0 {
            objects[Int(slots[s]) - 1] = o
            return
        }
        objects.append(o)
        slots[s] = UInt32(truncatingIfNeeded: objects.count)
    }

    /// Empties the table (its storage goes).
    mutating func removeAll() {
        objects = []
        slots = []
    }

    /// Twice the slots (at least 16), every object placed again.
    private mutating func grow() {
        // Positions are 32-bit: past 2^31 objects (never from a capture) lookups would stop finding them.
        precondition(objects.count < Int(UInt32.max / 2), "KeyedObjects: too many objects")
        slots = [UInt32](repeating: 0, count: max(16, slots.count * 2))
        let mask = slots.count - 1
        for (i, o) in objects.enumerated() {
            var s = key(o).hashValue & mask
            while slots[s] != 0 { s = (s + 1) & mask }
            slots[s] = UInt32(truncatingIfNeeded: i + 1)
        }
    }

    /// Bytes of the slots (tests).
    var slotBytes: Int { slots.capacity * MemoryLayout<UInt32>.stride }
}
