/// Reading attributes by key, from an event (`EventAttrs`) or a plain dictionary (log matches,
/// plugins building an event): the shared readers (`EventAttributes`, the timeline's detail, the
/// detectors' tests) take either.
public protocol AttributeLookup {
    subscript(_ key: String) -> String? { get }
    var isEmpty: Bool { get }
}

extension Dictionary: AttributeLookup where Key == String, Value == String {}

extension AttributeLookup {
    /// The attribute as its type (`attrs[.accepted]` is a `Bool?`); nil when absent or not of that type.
    @inlinable public subscript<V>(_ a: EventAttribute<V>) -> V? { self[a.key].flatMap { V(attributeText: $0) } }
}

/// An event's attributes: text values by key, like `[String: String]`, stored packed in one byte
/// buffer (a large capture keeps millions of events with two to six attributes each; a dictionary
/// of six costs about 400 bytes, this about 100). Entries are kept sorted by key, so iteration is
/// in key order and two equal attribute sets are equal bytes.
///
/// Layout: per entry, the key's UTF-8 length (LEB128), its bytes, the value's length, its bytes.
public struct EventAttrs: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, AttributeLookup,
    CustomStringConvertible {
    public typealias Element = (key: String, value: String)
    @usableFromInline var bytes: [UInt8]

    public init() { bytes = [] }

    public init(_ dictionary: [String: String]) {
        bytes = []
        guard !dictionary.isEmpty else { return }
        let sorted = dictionary.sorted { EventAttrs.less($0.key, $1.key) }
        var out: [UInt8] = []
        out.reserveCapacity(sorted.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 2 })
        for (k, v) in sorted { EventAttrs.append(k, v, to: &out) }
        bytes = out
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        var d: [String: String] = [:]
        for (k, v) in elements { d[k] = v }
        self.init(d)
    }

    /// Key order: UTF-8 bytes (for ASCII keys, the order of `String`'s `<`).
    static func less(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    static func append(_ k: String, _ v: String, to out: inout [UInt8]) {
        var k = k, v = v
        // Contiguous UTF-8 appends as one copy (the generic `utf8` sequence goes byte by byte).
        k.withUTF8 { b in
            appendLength(b.count, &out)
            out.append(contentsOf: b)
        }
        v.withUTF8 { b in
            appendLength(b.count, &out)
            out.append(contentsOf: b)
        }
    }

    static func appendLength(_ n: Int, _ out: inout [UInt8]) { LEB128.append(UInt64(UInt(n)), to: &out) }

    /// One entry's ranges in `bytes`, and where the next begins.
    @usableFromInline struct Slot {
        var key: Range<Int>
        var value: Range<Int>
    }

    @usableFromInline func slot(at i: Int) -> Slot {
        var p = i
        // A length past the end (bytes read back from a damaged spill file) ends at the end: no range
        // can reach outside the buffer or run backwards, and no sum can overflow.
        func field() -> Range<Int> {
            let l = LEB128.read(bytes, &p)
            let start = Swift.min(p, bytes.count)
            let end = l <= UInt64(bytes.count - start) ? start + Int(l) : bytes.count
            return start ..< end
        }
        let key = field()
        p = key.upperBound
        let value = field()
        return Slot(key: key, value: value)
    }

    func string(_ r: Range<Int>) -> String { String(decoding: bytes[r], as: UTF8.self) }

    /// The slot of `key`, when present.
    func find(_ key: String) -> Slot? { locate(key).found }

    /// Where `key` is: its slot when present, else the offset it would be inserted at to keep key order
    /// (the first entry whose key follows it, or the end). Keys compare as UTF-8 bytes; entries are in
    /// key order with each key once (every writer keeps that), so the scan stops at the first key past it.
    func locate(_ key: String) -> (found: Slot?, insertAt: Int) {
        var key = key
        return key.withUTF8 { k in
            bytes.withUnsafeBufferPointer { b in
                var i = 0
                while i < b.count {
                    let s = slot(at: i)
                    let n = s.key.count
                    // -1, 0, 1: the entry's key before, equal to, after `key` (UTF-8 byte order).
                    var order = 0, j = 0
                    while j < n && j < k.count {
                        let x = b[s.key.lowerBound + j], y = k[j]
                        if x != y { order = x < y ? -1 : 1; break }
                        j += 1
                    }
                    if order == 0 { order = n == k.count ? 0 : (n < k.count ? -1 : 1) }
                    if order == 0 { return (s, i) }
                    if order > 0 { return (nil, i) }
                    i = s.value.upperBound
                }
                return (nil, b.count)
            }
        }
    }

    public subscript(_ key: String) -> String? {
        get { find(key).map { string($0.value) } }
        set { set(key, newValue) }
    }

    /// Sets (or with nil removes) one entry in place, keeping key order: building attributes one by
    /// one needs no dictionary.
    mutating func set(_ key: String, _ value: String?) {
        let (found, i) = locate(key)
        if let s = found {
            var entry: [UInt8] = []
            if let value { EventAttrs.append(key, value, to: &entry) }
            bytes.replaceSubrange(i ..< s.value.upperBound, with: entry)
            return
        }
        guard let value else { return }
        if i == bytes.count {
            EventAttrs.append(key, value, to: &bytes)
        } else {
            var entry: [UInt8] = []
            EventAttrs.append(key, value, to: &entry)
            bytes.insert(contentsOf: entry, at: i)
        }
    }

    /// The attribute as its type; setting nil removes it.
    public subscript<V>(_ a: EventAttribute<V>) -> V? {
        get { self[a.key].flatMap { V(attributeText: $0) } }
        set { self[a.key] = newValue?.attributeText }
    }

    public subscript(_ key: String, default value: @autoclosure () -> String) -> String {
        get { self[key] ?? value() }
        set { self[key] = newValue }
    }

    public var isEmpty: Bool { bytes.isEmpty }

    public var count: Int {
        var n = 0, i = 0
        while i < bytes.count {
            i = slot(at: i).value.upperBound
            n += 1
        }
        return n
    }

    /// The keys, in key order.
    public var keys: [String] { map(\.key) }
    public var values: [String] { map(\.value) }

    /// The attributes as a dictionary (to build another event, or hand to code that wants one).
    public var dictionary: [String: String] {
        var d: [String: String] = [:]
        for (k, v) in self { d[k] = v }
        return d
    }

    public struct Iterator: IteratorProtocol {
        let attrs: EventAttrs
        var i = 0
        public mutating func next() -> Element? {
            guard i < attrs.bytes.count else { return nil }
            let s = attrs.slot(at: i)
            i = s.value.upperBound
            return (attrs.string(s.key), attrs.string(s.value))
        }
    }

    public func makeIterator() -> Iterator { Iterator(attrs: self) }

    public var description: String { dictionary.description }

    public static func == (a: EventAttrs, b: EventAttrs) -> Bool { a.bytes == b.bytes }
    public func hash(into h: inout Hasher) { h.combine(bytes) }
}

extension EventAttrs {
    /// Packed attributes from typed text keys: `.typed([.txid: t])`, with no dictionary on the way.
    public static func typed(_ text: KeyValuePairs<EventAttribute<String>, String>) -> EventAttrs {
        var out = EventAttrs()
        for (k, v) in text { out.set(k.key, v) }
        return out
    }
}

/// A fixed list of keys read together (the timeline's detail keys): `EventAttrs.values(of:)` finds
/// them all in one pass over the packed entries instead of one scan per key.
public struct AttributeKeySet: Sendable {
    public let keys: [String]
    /// Per key length (UTF-8 bytes), the keys of that length and their index in `keys`.
    let byLength: [[(bytes: [UInt8], index: Int)]]

    public init(_ keys: [String]) {
        self.keys = keys
        var d = [[(bytes: [UInt8], index: Int)]](repeating: [], count: (keys.map(\.utf8.count).max() ?? 0) + 1)
        for (i, k) in keys.enumerated() { d[k.utf8.count].append((Array(k.utf8), i)) }
        byLength = d
    }
}

extension EventAttrs {
    /// The values of `set`'s keys, indexed as `set.keys` (nil when absent): the same as `self[key]`
    /// for each key (a key present twice gives its first value, as `find` does), in one pass.
    public func values(of set: AttributeKeySet) -> [String?] {
        var out = [String?](repeating: nil, count: set.keys.count)
        var i = 0
        while i < bytes.count {
            let s = slot(at: i)
            if s.key.count < set.byLength.count {
                let k = bytes[s.key]
                for c in set.byLength[s.key.count] where out[c.index] == nil && k.elementsEqual(c.bytes) {
                    out[c.index] = string(s.value)
                    break
                }
            }
            i = s.value.upperBound
        }
        return out
    }

    /// Only the entries of `set`'s keys, each key's first (the one `values(of:)` and `self[key]` give),
    /// in the order they come: `values(of: set)` reads the same from the result, byte for byte. A
    /// timeline entry's detail reads only the detail keys, so it keeps these few bytes rather than the
    /// whole buffer of the event it came from (issue 13: names, addresses and TXT records, 300 to 500
    /// bytes, for `service=... port=...`).
    public func keeping(_ set: AttributeKeySet) -> EventAttrs {
        var seen = [Bool](repeating: false, count: set.keys.count)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let s = slot(at: i)
            if s.key.count < set.byLength.count {
                let k = bytes[s.key]
                for c in set.byLength[s.key.count] where k.elementsEqual(c.bytes) {
                    if !seen[c.index] {
                        seen[c.index] = true
                        EventAttrs.appendLength(s.key.count, &out)
                        out.append(contentsOf: bytes[s.key])
                        EventAttrs.appendLength(s.value.count, &out)
                        out.append(contentsOf: bytes[s.value])
                    }
                    break
                }
            }
            // A damaged buffer whose last slot is empty ends here (the scan always moves on).
            i = Swift.max(s.value.upperBound, i + 1)
        }
        var kept = EventAttrs()
        kept.bytes = out
        return kept
    }

    /// True when one of `set`'s keys is present: when `values(of:)` would give a value that is not nil
    /// (the same pass, without making the values).
    public func containsAny(of set: AttributeKeySet) -> Bool {
        var i = 0
        while i < bytes.count {
            let s = slot(at: i)
            if s.key.count < set.byLength.count {
                let k = bytes[s.key]
                for c in set.byLength[s.key.count] where k.elementsEqual(c.bytes) { return true }
            }
            i = s.value.upperBound
        }
        return false
    }
}

/// Attribute buffers kept recently, so that an event whose attributes repeat the bytes of one kept
/// before shares that buffer instead of holding its own copy. On the group file half of the kept
/// events repeat another's attributes exactly (a GCK heartbeat's `length=20 sn=0`, a Hello's flags):
/// each copy cost a heap block of 48 to 112 bytes. Sharing is invisible: `EventAttrs` is a value
/// (equal bytes are equal attributes; a change to one copies it first).
///
/// A direct-mapped table of `slotCount` buffers by a hash of their bytes: bounded (a slot holds the
/// latest buffer that hashed to it), and a miss only means a copy is kept, as before. Buffers longer
/// than `maxBytes` are left alone. Discovery announcements' attributes (names, addresses, the TXT
/// record) are 300 to 500 bytes, and a host announcing again what it announced before repeats them
/// byte for byte: on the bench's 1 GB mDNS file a third of those bytes repeat an earlier event's.
public struct EventAttrsSharing {
    public static let slotCount = 4096
    public static let maxBytes = 1024
    /// Empty until the first buffer is offered (a table made and never used costs nothing: the engine
    /// that replaces the decoding one holds two through the timeline stage).
    private var slots: [EventAttrs] = []
    private let mask: Int
    /// Buffers replaced by one already held.
    public private(set) var shared = 0

    public init() { self.init(slotCount: EventAttrsSharing.slotCount) }

    /// A table of `slotCount` slots (rounded up to a power of two).
    public init(slotCount: Int) {
        var n = 1
        while n < slotCount { n <<= 1 }
        mask = n - 1
    }

    /// Buffers the table holds now (tests).
    public var heldBuffers: Int { slots.reduce(0) { $0 + ($1.bytes.isEmpty ? 0 : 1) } }

    /// Lets go of every buffer held (the slots stay, empty): a buffer is then kept only by the events
    /// holding it. The engine does this each time it writes its window to the spill file: the events
    /// that held those buffers left the heap, and a table of 65,536 slots pinned their buffers (13 MB
    /// at 1.4M frames of the mDNS file) for nothing but the sharing of later ones.
    public mutating func forgetBuffers() {
        for i in slots.indices { slots[i] = EventAttrs() }
    }

    /// Gives `attrs` the buffer of an equal set kept before, when the table has one; else remembers it.
    public mutating func share(_ attrs: inout EventAttrs) {
        let n = attrs.bytes.count
        guard n > 0, n <= EventAttrsSharing.maxBytes else { return }
        if slots.isEmpty { slots = Array(repeating: EventAttrs(), count: mask &+ 1) }
        let h = attrs.bytes.withUnsafeBytes { ByteHash.hash($0) }
        let i = Int(truncatingIfNeeded: h) & mask
        if slots[i].bytes == attrs.bytes {
            attrs = slots[i]
            shared &+= 1
        } else {
            slots[i] = attrs
        }
    }

    /// True when `a` and `b` hold one buffer (tests: sharing happened).
    public static func sameBuffer(_ a: EventAttrs, _ b: EventAttrs) -> Bool {
        a.bytes.withUnsafeBufferPointer { x in b.bytes.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
    }
}
