/// A table for the builder's per-peer working state (issue 13): a crowded network has tens of thousands
/// of peers with a few entries each (25,695 peers and 3.6 entries each on the bench's 1 GB mDNS file),
/// and a `Dictionary` or `Set` of one to three elements costs a storage object of 150 to 350 bytes. Up to
/// `smallTableLimit` elements sit in one array searched in order; past that in a dictionary, as before.
/// Which elements it holds, and what each lookup gives, are those of a dictionary; only the order of
/// `keys`/`values` (never relied on by the builder) can differ.
let smallTableLimit = 8

struct SmallMap<Key: Hashable, Value>: ExpressibleByDictionaryLiteral {
    private var list: [(key: Key, value: Value)] = []
    private var table: [Key: Value]?

    init() {}

    init(dictionaryLiteral elements: (Key, Value)...) {
        for (k, v) in elements { self[k] = v }
    }

    var count: Int { table?.count ?? list.count }
    var isEmpty: Bool { count == 0 }

    subscript(key: Key) -> Value? {
        get {
            if let table { return table[key] }
            for e in list where e.key == key { return e.value }
            return nil
        }
        set {
            if table != nil { table?[key] = newValue; return }
            if let i = list.firstIndex(where: { $0.key == key }) {
                if let newValue { list[i].value = newValue } else { list.remove(at: i) }
                return
            }
            guard let newValue else { return }
            if list.count < smallTableLimit {
                // Room for one more at a time while small (a doubled array would hold slack per peer).
                if list.count == list.capacity { list.reserveCapacity(list.count + 1) }
                list.append((key, newValue))
                return
            }
            var t = [Key: Value](minimumCapacity: list.count + 1)
            for e in list { t[e.key] = e.value }
            t[key] = newValue
            list = []
            table = t
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    var keys: [Key] { table.map { Array($0.keys) } ?? list.map(\.key) }
    var values: [Value] { table.map { Array($0.values) } ?? list.map(\.value) }
}

/// A set built like `SmallMap` (an array up to `smallTableLimit` elements, then a `Set`).
struct SmallSet<Element: Hashable>: Sequence, ExpressibleByArrayLiteral {
    private var list: [Element] = []
    private var hashed: Set<Element>?

    init() {}

    init(arrayLiteral elements: Element...) {
        for e in elements { insert(e) }
    }

    var count: Int { hashed?.count ?? list.count }
    var isEmpty: Bool { count == 0 }

    func contains(_ x: Element) -> Bool { hashed?.contains(x) ?? list.contains(x) }

    mutating func insert(_ x: Element) {
        if hashed != nil { hashed?.insert(x); return }
        if list.contains(x) { return }
        if list.count < smallTableLimit {
            if list.count == list.capacity { list.reserveCapacity(list.count + 1) }
            list.append(x)
            return
        }
        var s = Set(list)
        s.insert(x)
        list = []
        hashed = s
    }

    mutating func formUnion(_ other: some Sequence<Element>) {
        for x in other { insert(x) }
    }

    func makeIterator() -> AnyIterator<Element> {
        if let hashed { var i = hashed.makeIterator(); return AnyIterator { i.next() } }
        var i = list.makeIterator()
        return AnyIterator { i.next() }
    }
}
