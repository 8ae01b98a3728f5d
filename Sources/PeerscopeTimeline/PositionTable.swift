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

