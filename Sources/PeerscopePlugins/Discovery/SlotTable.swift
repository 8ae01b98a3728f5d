import HeapModule
import PeerscopeCore

/// The tracker's instance and host tables: entries by name, each in a slot (an array index) it keeps
/// while it stays in the table. The per-packet paths (a byte-identical refresh, a timer coming up)
/// remember slots and reach their entries by index, without hashing a name: names are `String`s, and
/// a non-ASCII one (’, é) hashes and compares through Unicode normalisation on every lookup.
///
/// A removed entry's slot goes back to a free list and is reused by the next insert, so the arrays
/// are bounded by the most entries ever held at once. The value left in a free slot stays there (it is
/// overwritten on reuse); whoever keeps a slot checks that it still holds what they meant (`holds`, or
/// a stamp only one write ever gives).
struct SlotTable<Value> {
    /// Name -> slot, for the live entries.
    private var slotOf: [String: Int] = [:]
    /// Each slot's name and value; a free slot's are stale.
    private(set) var keys: [String] = []
    var values: [Value] = []
    private var live: [Bool] = []
    private var free: [Int] = []

    var count: Int { slotOf.count }
    var isEmpty: Bool { slotOf.isEmpty }

    /// The slot of the entry named `key`.
    func index(forKey key: String) -> Int? { slotOf[key] }

    /// Whether slot `x` holds the live entry named `key` (the slot's own name string, when `key` came
    /// from the table, compares by identity without reading its characters).
    func holds(_ x: Int, _ key: String) -> Bool {
        x >= 0 && x < keys.count && live[x] && keys[x] == key
    }

    /// Slot `x` when it still holds `key`, else the slot the table has for `key` now.
    func index(_ x: Int, forKey key: String) -> Int? { holds(x, key) ? x : slotOf[key] }

    subscript(key: String) -> Value? {
        get { slotOf[key].map { values[$0] } }
        set {
            if let x = slotOf[key] {
                if let newValue { values[x] = newValue } else { remove(at: x) }
            } else if let newValue {
                insert(key, newValue)
            }
        }
    }

    @discardableResult mutating func insert(_ key: String, _ value: Value) -> Int {
        if let x = free.popLast() {
            keys[x] = key
            values[x] = value
            live[x] = true
            slotOf[key] = x
            return x
        }
        keys.append(key)
        values.append(value)
        live.append(true)
        slotOf[key] = keys.count - 1
        return keys.count - 1
    }

    mutating func remove(at x: Int) {
        guard x >= 0, x < keys.count, live[x] else { return }
        slotOf[keys[x]] = nil
        live[x] = false
        keys[x] = ""
        free.append(x)
    }

    @discardableResult mutating func removeValue(forKey key: String) -> Value? {
        guard let x = slotOf[key] else { return nil }
        let v = values[x]
        remove(at: x)
        return v
    }

    /// The live names, in no particular order.
    var liveKeys: Dictionary<String, Int>.Keys { slotOf.keys }

    /// The live entries, in slot order (callers that print or choose sort them first).
    var entries: [(key: String, value: Value)] {
        var out: [(key: String, value: Value)] = []
        out.reserveCapacity(slotOf.count)
        for x in keys.indices where live[x] { out.append((keys[x], values[x])) }
        return out
    }
}

/// A set of times with the earliest at hand, for deadlines set as capture time moves on: mostly in
/// order, per record TTL. Each insert joins a sorted run (the one whose last time is the latest not
/// after it; a time equal to that last adds nothing, since a set only needs it once), so an insert
/// is a few comparisons and an append rather than a heap's logarithmic walk. A time that fits no run
/// when `maxRuns` are in use goes to a heap. `min` and the drops see exactly the set a single heap
/// would hold.
struct DeadlineQueue {
    private struct Run {
        var items: [Nanos] = []
        var head = 0
        var isEmpty: Bool { head == items.count }
        var first: Nanos? { head < items.count ? items[head] : nil }
    }
    static let maxRuns = 8
    private var runs: [Run] = []
    private var rest = Heap<Nanos>()

    /// Times held (each distinct time once per run it joined; for tests and bounds).
    var count: Int { runs.reduce(rest.count) { $0 + $1.items.count - $1.head } }

    mutating func insert(_ d: Nanos) {
        var best = -1, bestLast = Nanos.min, empty = -1
        for i in runs.indices {
            if runs[i].isEmpty {
                if empty < 0 { empty = i }
            } else if let last = runs[i].items.last, last <= d, best < 0 || last > bestLast {
                best = i
                bestLast = last
            }
        }
        if best >= 0 {
            if bestLast != d { runs[best].items.append(d) }
        } else if empty >= 0 {
            runs[empty].items.removeAll(keepingCapacity: true)
            runs[empty].head = 0
            runs[empty].items.append(d)
        } else if runs.count < Self.maxRuns {
            runs.append(Run(items: [d], head: 0))
        } else {
            rest.insert(d)
        }
    }

    var min: Nanos? {
        var m = rest.min
        for r in runs { if let f = r.first, m.map({ f < $0 }) ?? true { m = f } }
        return m
    }

    /// Drops every time up to `t` (`inclusive`) or before it.
    mutating func drop(through t: Nanos, inclusive: Bool = true) {
        for i in runs.indices {
            while let f = runs[i].first, inclusive ? f <= t : f < t { runs[i].head &+= 1 }
            if runs[i].head > 4096, runs[i].head &* 2 > runs[i].items.count {
                runs[i].items.removeFirst(runs[i].head)
                runs[i].head = 0
            }
        }
        while let m = rest.min, inclusive ? m <= t : m < t { _ = rest.removeMin() }
    }

    mutating func removeAll() {
        runs = []
        rest = Heap()
    }
}
