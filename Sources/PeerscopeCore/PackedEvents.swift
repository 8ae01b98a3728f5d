/// Events held compactly once decoding is over (issue 13): the timeline stage's store, which keeps
/// every resolved event for the detectors and the report (hundreds of thousands on a long capture).
///
/// A `PeerEvent` is 120 bytes; 32 of them are its kind and plugin name, two strings repeated by every
/// event (a capture has a few dozen distinct pairs). A packed event holds both as one 32-bit label into
/// the list's own table and its count as 32 bits: 88 bytes, with the same boxes (hints, flow), the same
/// attribute buffer and the same evidence. Reading one back gives exactly the event put in (the same
/// boxes and buffer, so equal by value and by identity); single fields read in place, without building
/// the whole event.
///
/// The list grows in fixed-size chunks: growing never copies the events already held nor holds an old
/// and a new buffer at once, and the slack is one chunk.
public struct PackedEvents: @unchecked Sendable {
    @usableFromInline struct Record: Sendable {
        var t: Nanos
        var lastT: Nanos
        var fromBox: Shared<PeerHint>?
        var toBox: Shared<PeerHint>?
        var flowBox: Shared<FlowKey>?
        var attrs: EventAttrs
        var evidencePair: EvidencePair
        /// The count, or `PackedEvents.bigCount` when it does not fit (then in `bigCounts`).
        var count: UInt32
        var label: UInt32
    }

    /// Kinds and plugin names, one entry per distinct pair (appended to only; shared by copies).
    final class Labels: @unchecked Sendable {
        struct Pair: Hashable {
            var kind: EventKind
            var source: String
        }

        var pairs: [Pair] = []
        var ids: [Pair: UInt32] = [:]

        func id(_ kind: EventKind, _ source: String) -> UInt32 {
            let p = Pair(kind: kind, source: source)
            if let id = ids[p] { return id }
            let id = UInt32(truncatingIfNeeded: pairs.count)
            pairs.append(p)
            ids[p] = id
            return id
        }
    }

    static let shift = 12
    public static let chunkSize = 1 << shift
    /// The count field's mark for a count kept in `bigCounts` (one that does not fit in 32 bits).
    static let bigCount = UInt32.max

    private var chunks: [[Record]] = []
    private let labels = Labels()
    /// Counts that do not fit a record, by index (in practice never: four billion occurrences).
    private var bigCounts: [Int: Int] = [:]
    public private(set) var count = 0

    /// Attributes left in a spill file (`init(attributesIn:)`): the events' records there (chunked as
    /// `chunks`; -1: the attributes are in `heldAttrs`), and the attributes held on the heap all the
    /// same (set in place with `setAttrs`, or added without a record).
    private let file: SpilledEvents?
    private var places: [[Int]] = []
    private var heldAttrs: [Int: EventAttrs] = [:]
    /// The last event appended with a record, with its attributes: the timeline stage reads it right
    /// after adding it (no read back from the file for that).
    private var lastAdded: (index: Int, attrs: EventAttrs)?

    public init() { file = nil }

    /// A list whose attributes stay in `file`, the spill its events are read from (issue 13: on a long
    /// capture they are most of the events' memory): `append(_:record:)` keeps the event without its
    /// attributes and where its record is; `attrs(_:)` and the event read them back from the file
    /// (`SpilledEvents.attrs(atRecord:)`), so the list holds `file` as long as it lives. Every other
    /// field is held as in a list on the heap. An attribute read that fails gives none, and the
    /// file's `recordReadError` says why.
    public init(attributesIn file: SpilledEvents) { self.file = file }

    /// The spill file the attributes are read from, if they are (`init(attributesIn:)`).
    public var attributesFile: SpilledEvents? { file }

    /// The events of `events`, in order.
    public init(_ events: [PeerEvent]) {
        file = nil
        for e in events { append(e) }
    }

    /// Bytes one packed event takes in its chunk.
    public static var recordSize: Int { MemoryLayout<Record>.stride }

    public var indices: Range<Int> { 0 ..< count }
    public var isEmpty: Bool { count == 0 }
    public var first: PeerEvent? { count > 0 ? self[0] : nil }
    public var last: PeerEvent? { count > 0 ? self[count - 1] : nil }

    @inline(__always) private func record(_ i: Int) -> Record {
        chunks[i >> PackedEvents.shift][i & (PackedEvents.chunkSize - 1)]
    }

    private func pack(_ e: PeerEvent, at i: Int) -> Record {
        Record(t: e.t, lastT: e.lastT, fromBox: e.fromBox, toBox: e.toBox, flowBox: e.flowBox, attrs: file == nil ? e.attrs : EventAttrs(),
               evidencePair: e.evidencePair, count: PackedEvents.fits(e.count) ? UInt32(truncatingIfNeeded: e.count) : PackedEvents.bigCount,
               label: labels.id(e.kind, e.source))
    }

    @inline(__always) static func fits(_ n: Int) -> Bool { n >= 0 && n < Int(bigCount) }

    /// Keeps `bigCounts` in step with the record just written at `i` (holding `n` occurrences).
    private mutating func noteCount(_ n: Int, at i: Int) {
        if PackedEvents.fits(n) {
            if !bigCounts.isEmpty { bigCounts.removeValue(forKey: i) }
        } else {
            bigCounts[i] = n
        }
    }

    /// The whole event (its boxes and attribute buffer are those put in).
    public subscript(i: Int) -> PeerEvent {
        get {
            let r = record(i)
            let l = labels.pairs[Int(r.label)]
            return PeerEvent(kind: l.kind, t: r.t, lastT: r.lastT, fromBox: r.fromBox, toBox: r.toBox, flowBox: r.flowBox,
                             source: l.source, attrs: file == nil ? r.attrs : attrs(i), count: count(at: i, r),
                             evidencePair: r.evidencePair)
        }
        set {
            chunks[i >> PackedEvents.shift][i & (PackedEvents.chunkSize - 1)] = pack(newValue, at: i)
            noteCount(newValue.count, at: i)
            if file != nil { setAttrs(newValue.attrs, at: i) }
        }
    }

    @inline(__always) private func count(at i: Int, _ r: Record) -> Int {
        r.count == PackedEvents.bigCount ? bigCounts[i] ?? Int(PackedEvents.bigCount) : Int(r.count)
    }

    public mutating func append(_ e: PeerEvent) {
        appendRecord(e, place: -1)
        if file != nil { heldAttrs[count - 1] = e.attrs }
    }

    /// Appends `e`, whose record in the attributes' file starts at `offset` (`Iterator.recordOffset`):
    /// its attributes are read from there when asked for. A list without a file keeps them as `append`.
    public mutating func append(_ e: PeerEvent, record offset: Int) {
        guard file != nil else { append(e); return }
        appendRecord(e, place: offset)
        lastAdded = (count - 1, e.attrs)
    }

    private mutating func appendRecord(_ e: PeerEvent, place: Int) {
        if count & (PackedEvents.chunkSize - 1) == 0 {
            var c: [Record] = []
            c.reserveCapacity(PackedEvents.chunkSize)
            chunks.append(c)
            if file != nil {
                var p: [Int] = []
                p.reserveCapacity(PackedEvents.chunkSize)
                places.append(p)
            }
        }
        chunks[chunks.count - 1].append(pack(e, at: count))
        if file != nil { places[places.count - 1].append(place) }
        noteCount(e.count, at: count)
        count += 1
    }

    public mutating func removeLast() {
        precondition(count > 0, "removeLast on no events")
        count -= 1
        chunks[chunks.count - 1].removeLast()
        if chunks[chunks.count - 1].isEmpty { chunks.removeLast() }
        if !bigCounts.isEmpty { bigCounts.removeValue(forKey: count) }
        if file != nil {
            places[places.count - 1].removeLast()
            if places[places.count - 1].isEmpty { places.removeLast() }
            if !heldAttrs.isEmpty { heldAttrs.removeValue(forKey: count) }
            if lastAdded?.index == count { lastAdded = nil }
        }
    }

    /// Keeps the first `n` events.
    public mutating func keepFirst(_ n: Int) {
        guard n < count else { return }
        let whole = (n + PackedEvents.chunkSize - 1) >> PackedEvents.shift
        chunks.removeSubrange(whole...)
        if let l = chunks.indices.last { chunks[l].removeSubrange((n - (l << PackedEvents.shift))...) }
        if file != nil {
            places.removeSubrange(whole...)
            if let l = places.indices.last { places[l].removeSubrange((n - (l << PackedEvents.shift))...) }
            if !heldAttrs.isEmpty { heldAttrs = heldAttrs.filter { $0.key < n } }
            if let l = lastAdded, l.index >= n { lastAdded = nil }
        }
        count = n
        if !bigCounts.isEmpty { bigCounts = bigCounts.filter { $0.key < n } }
    }

    /// Gives back unused room (a last chunk not filled).
    public mutating func shrink() {
        guard let l = chunks.indices.last, chunks[l].capacity - chunks[l].count > chunks[l].count / 16 else { return }
        chunks[l] = exactlySized(chunks[l])
        if let l = places.indices.last { places[l] = exactlySized(places[l]) }
    }

    private func exactlySized<T>(_ a: [T]) -> [T] {
        var exact: [T] = []
        exact.reserveCapacity(a.count)
        exact.append(contentsOf: a)
        return exact
    }

    /// Event `i` moves to `k` (compacting the list in place; `i`'s slot is left to be overwritten or cut).
    public mutating func move(from i: Int, to k: Int) {
        guard i != k else { return }
        let r = record(i)
        chunks[k >> PackedEvents.shift][k & (PackedEvents.chunkSize - 1)] = r
        noteCount(count(at: i, r), at: k)
        if file != nil {
            places[k >> PackedEvents.shift][k & (PackedEvents.chunkSize - 1)] = places[i >> PackedEvents.shift][i & (PackedEvents.chunkSize - 1)]
            if let a = heldAttrs.removeValue(forKey: i) { heldAttrs[k] = a } else if !heldAttrs.isEmpty { heldAttrs.removeValue(forKey: k) }
            if let l = lastAdded {
                if l.index == i { lastAdded = (k, l.attrs) } else if l.index == k { lastAdded = nil }
            }
        }
    }

    /// One more occurrence folded into event `i`, at `t` with `evidence` (its count, last time and last
    /// evidence, as `EventCoalescer` folds).
    public mutating func fold(into i: Int, t: Nanos, evidence: Evidence) {
        let c = i >> PackedEvents.shift, j = i & (PackedEvents.chunkSize - 1)
        let n = count(at: i, chunks[c][j]) &+ 1
        chunks[c][j].count = PackedEvents.fits(n) ? UInt32(truncatingIfNeeded: n) : PackedEvents.bigCount
        chunks[c][j].lastT = t
        chunks[c][j].evidencePair.last = evidence
        noteCount(n, at: i)
    }

    public mutating func setAttrs(_ attrs: EventAttrs, at i: Int) {
        guard file != nil else {
            chunks[i >> PackedEvents.shift][i & (PackedEvents.chunkSize - 1)].attrs = attrs
            return
        }
        heldAttrs[i] = attrs
        if lastAdded?.index == i { lastAdded = nil }
    }

    // MARK: single fields, read in place

    @inline(__always) static func chunk(_ i: Int) -> Int { i >> shift }
    @inline(__always) static func slot(_ i: Int) -> Int { i & (chunkSize - 1) }

    public func t(_ i: Int) -> Nanos { chunks[Self.chunk(i)][Self.slot(i)].t }
    public func lastT(_ i: Int) -> Nanos { chunks[Self.chunk(i)][Self.slot(i)].lastT }
    public func kind(_ i: Int) -> EventKind { labels.pairs[Int(chunks[Self.chunk(i)][Self.slot(i)].label)].kind }
    public func source(_ i: Int) -> String { labels.pairs[Int(chunks[Self.chunk(i)][Self.slot(i)].label)].source }
    public func count(_ i: Int) -> Int {
        let n = chunks[Self.chunk(i)][Self.slot(i)].count
        return n == PackedEvents.bigCount ? bigCounts[i] ?? Int(PackedEvents.bigCount) : Int(n)
    }
    public func evidence(_ i: Int) -> Evidence { chunks[Self.chunk(i)][Self.slot(i)].evidencePair.first }
    public func lastEvidence(_ i: Int) -> Evidence? { chunks[Self.chunk(i)][Self.slot(i)].evidencePair.last }
    public func flow(_ i: Int) -> FlowKey? { chunks[Self.chunk(i)][Self.slot(i)].flowBox?.value }
    public func from(_ i: Int) -> PeerHint { chunks[Self.chunk(i)][Self.slot(i)].fromBox?.value ?? .unknown }
    public func to(_ i: Int) -> PeerHint { chunks[Self.chunk(i)][Self.slot(i)].toBox?.value ?? .unknown }
    public func attrs(_ i: Int) -> EventAttrs {
        guard let file else { return chunks[Self.chunk(i)][Self.slot(i)].attrs }
        if let l = lastAdded, l.index == i { return l.attrs }
        if !heldAttrs.isEmpty, let a = heldAttrs[i] { return a }
        let place = places[Self.chunk(i)][Self.slot(i)]
        guard place >= 0 else { return EventAttrs() }
        let r = record(i)
        let l = labels.pairs[Int(r.label)]
        return file.attrs(atRecord: place, kind: l.kind, source: l.source, evidence: r.evidencePair.first)
    }

    /// `self[i].samePeersAndFlow(e)`, without building the event.
    public func samePeersAndFlow(_ i: Int, _ e: PeerEvent) -> Bool {
        let r = record(i)
        return r.fromBox == e.fromBox && r.toBox == e.toBox && r.flowBox == e.flowBox
    }
}

extension PeerEvent {
    /// An event from its stored fields as they are (the boxes and buffer of a packed event).
    init(kind: EventKind, t: Nanos, lastT: Nanos, fromBox: Shared<PeerHint>?, toBox: Shared<PeerHint>?, flowBox: Shared<FlowKey>?,
         source: String, attrs: EventAttrs, count: Int, evidencePair: EvidencePair) {
        self.kind = kind
        self.t = t
        self.lastT = lastT
        self.fromBox = fromBox
        self.toBox = toBox
        self.flowBox = flowBox
        self.source = source
        self.attrs = attrs
        self.count = count
        self.evidencePair = evidencePair
    }
}
