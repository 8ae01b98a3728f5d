/// Events held compactly once decoding is over (issue 13): the timeline stage's store, which keeps
/// every resolved event for the detectors and the report (hundreds of thousands on a long capture).
///
/// A `PeerEvent` is 120 bytes; 32 of them are its kind and plugin name, two strings repeated by every
/// event (a capture has a few dozen distinct pairs). A packed event holds both as one 32-bit label into
/// the list's own table and its count as 32 bits: 88 bytes, with the same boxes (hints, flow), the same
/// attribute buffer and the same evidence. Reading one back gives exactly the event put in (the same
/// boxes and buffer, so equal by value and by identity); single fields read in place, without building
/// the whole event. A list whose attributes stay in a spill file (`init(attributesIn:)`) holds 48-byte
/// `FileRecord`s instead: its events read back equal by value, but their hint and flow boxes are made
/// by the file's box tables when read, so they need not be the same objects as those put in.
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

    /// A record of a list whose attributes stay in a spill file (`init(attributesIn:)`): 40 bytes
    /// instead of 88. No attribute slot and no strong references: the hints and flow are indexes
    /// (`SpilledEvents.BoxIDs`) into the file's tables (or this list's, for boxes the file does not
    /// hold). Where the record is in the file, the count, the span to the last time and the evidence
    /// are narrow, and the label and the evidences' input are one 16-bit `shape` (an index into the
    /// list's table of distinct pairs of both: a capture has a few dozen), each with a mark for a value
    /// kept in `wide` (or `bigCounts`) instead (a span beyond 35 minutes, evidence of an input past
    /// 32,766 or a frame past 2^32, a count past 65,534: in practice rare). 40 bytes, not 48, is 2.5 MB
    /// on the 1 GB mDNS file's 317,000 kept events (issue 13).
    @usableFromInline struct FileRecord: Sendable {
        var t: Nanos
        /// `lastT - t`: in nanoseconds below 2^31, else in microseconds with the top bit set, or
        /// `PackedEvents.wide32` (then in `wide`).
        var span: UInt32
        /// The first evidence's frame or line (the shape's meta says which, and its input).
        var first: UInt32
        /// The last evidence's frame or line less the first's, or `PackedEvents.wide32` for none.
        var lastDelta: UInt32
        /// Where the event's record starts in the file, or `PackedEvents.wide32` (then in `wide`; -1
        /// there for an event added without a record).
        var place: UInt32
        var from: UInt32
        var to: UInt32
        var flow: UInt32
        /// The count, or `PackedEvents.bigCount16` (then in `bigCounts`).
        var count: UInt16
        /// The label and evidence meta as an index into `Labels.shapes`, or `UInt16.max` (then in `wide`).
        var shape: UInt16
    }

    /// A file record's label and evidence meta: the evidences' input (15 bits) and whether they are log
    /// lines (the top bit), or `UInt16.max` (both evidences in `wide`).
    struct Shape: Hashable {
        var label: UInt32
        var meta: UInt16
    }

    /// What a file record could not hold narrow (each nil when the record holds it).
    struct WideFields {
        var place: Int?
        var shape: Shape?
        var lastT: Nanos?
        var evidence: EvidencePair?
        var isEmpty: Bool { place == nil && shape == nil && lastT == nil && evidence == nil }
    }

    /// Kinds and plugin names, one entry per distinct pair (appended to only; shared by copies).
    final class Labels: @unchecked Sendable {
        struct Pair: Hashable {
            var kind: EventKind
            var source: String
        }

        var pairs: [Pair] = []
        var ids: [Pair: UInt32] = [:]
        /// File records' distinct labels with evidence metas (`FileRecord.shape`).
        var shapes: [Shape] = []
        var shapeIDs: [Shape: UInt16] = [:]

        /// The index of `s` in `shapes`; nil once the table holds `UInt16.max` shapes (then in `wide`).
        func shapeID(_ s: Shape) -> UInt16? {
            if let id = shapeIDs[s] { return id }
            guard shapes.count < Int(UInt16.max) else { return nil }
            let id = UInt16(truncatingIfNeeded: shapes.count)
            shapes.append(s)
            shapeIDs[s] = id
            return id
        }

        func id(_ kind: EventKind, _ source: String) -> UInt32 {
            let p = Pair(kind: kind, source: source)
            if let id = ids[p] { return id }
            let id = UInt32(truncatingIfNeeded: pairs.count)
            pairs.append(p)
            ids[p] = id
            return id
        }
    }

    /// Values of single events too wide for their record's narrow field, by index (the field holds a mark).
    struct Wide {
        private var values: [Int: Int] = [:]
        @inline(__always) subscript(i: Int) -> Int? { values.isEmpty ? nil : values[i] }
        /// Keeps `v` for event `i` (nil: the record holds it).
        @inline(__always) mutating func set(_ v: Int?, at i: Int) {
            if let v { values[i] = v } else if !values.isEmpty { values.removeValue(forKey: i) }
        }
        mutating func keepFirst(_ n: Int) {
            if !values.isEmpty { values = values.filter { $0.key < n } }
        }
    }

    /// Boxes a list in a file holds that the file's tables do not (a hint normalised after reading, an
    /// event added without its record): a record names them by their index here with `ownMark` set.
    struct OwnBoxes<V: Hashable & Sendable> {
        var boxes: [Shared<V>] = []
        var ids: [Shared<V>: UInt32] = [:]
        mutating func id(_ b: Shared<V>) -> UInt32 {
            if let i = ids[b] { return i | PackedEvents.ownMark }
            let i = UInt32(truncatingIfNeeded: boxes.count)
            boxes.append(b)
            ids[b] = i
            return i | PackedEvents.ownMark
        }
    }

    static let shift = 12
    public static let chunkSize = 1 << shift
    /// The count field's mark for a count kept in `bigCounts` (one that does not fit in 32 bits).
    static let bigCount = UInt32.max
    /// A file record's count mark for a count kept in `bigCounts` (one past 65,534).
    static let bigCount16 = UInt16.max
    /// A file record's 32-bit mark for a value kept in `wide`.
    static let wide32 = UInt32.max
    /// A file record's box index naming this list's own table (`OwnBoxes`), not the file's.
    static let ownMark: UInt32 = 1 << 31

    private var chunks: [[Record]] = []
    private let labels = Labels()
    /// Counts that do not fit a record, by index (in practice never: four billion occurrences).
    private var bigCounts = Wide()
    public private(set) var count = 0

    /// Attributes left in a spill file (`init(attributesIn:)`): the events' records (`fileChunks`,
    /// chunked as `chunks`, which stays empty), and the attributes held on the heap all the same (set
    /// in place with `setAttrs`, or added without a record).
    private let file: SpilledEvents?
    private var fileChunks: [[FileRecord]] = []
    /// File records' fields that are not narrow, by index.
    private var wide: [Int: WideFields] = [:]
    private var ownHints = OwnBoxes<PeerHint>()
    private var ownFlows = OwnBoxes<FlowKey>()
    private var heldAttrs: [Int: EventAttrs] = [:]
    /// The last event appended with a record, with its attributes: the timeline stage reads it right
    /// after adding it (no read back from the file for that).
    private var lastAdded: (index: Int, attrs: EventAttrs)?

    public init() { file = nil }

    /// A list whose attributes stay in `file`, the spill its events are read from (issue 13: on a long
    /// capture they are most of the events' memory): `append(_:record:boxIDs:)` keeps the event without
    /// its attributes and where its record is; `attrs(_:)` and the event read them back from the file
    /// (`SpilledEvents.attrs(atRecord:)`), so the list holds `file` as long as it lives. The hints and
    /// flow are held as indexes into the file's tables. Every other field is held as in a list on the
    /// heap. An attribute read that fails gives none, and the file's `recordReadError` says why.
    public init(attributesIn file: SpilledEvents) { self.file = file }

    /// The spill file the attributes are read from, if they are (`init(attributesIn:)`).
    public var attributesFile: SpilledEvents? { file }

    /// The events of `events`, in order.
    public init(_ events: [PeerEvent]) {
        file = nil
        for e in events { append(e) }
    }

    /// Bytes one packed event takes in its chunk (a list on the heap).
    public static var recordSize: Int { MemoryLayout<Record>.stride }
    /// Bytes one packed event takes in its chunk when its attributes stay in a file.
    public static var fileRecordSize: Int { MemoryLayout<FileRecord>.stride }

    public var indices: Range<Int> { 0 ..< count }
    public var isEmpty: Bool { count == 0 }
    public var first: PeerEvent? { count > 0 ? self[0] : nil }
    public var last: PeerEvent? { count > 0 ? self[count - 1] : nil }

    @inline(__always) static func chunk(_ i: Int) -> Int { i >> shift }
    @inline(__always) static func slot(_ i: Int) -> Int { i & (chunkSize - 1) }

    @inline(__always) private func record(_ i: Int) -> Record { chunks[Self.chunk(i)][Self.slot(i)] }
    @inline(__always) private func fileRecord(_ i: Int) -> FileRecord { fileChunks[Self.chunk(i)][Self.slot(i)] }

    private func pack(_ e: PeerEvent) -> Record {
        Record(t: e.t, lastT: e.lastT, fromBox: e.fromBox, toBox: e.toBox, flowBox: e.flowBox, attrs: e.attrs,
               evidencePair: e.evidencePair, count: PackedEvents.fits(e.count) ? UInt32(truncatingIfNeeded: e.count) : PackedEvents.bigCount,
               label: labels.id(e.kind, e.source))
    }

    /// `e` as a file record, and what it cannot hold narrow. `ids`: the file's indexes of the boxes read
    /// with it, used when they name the event's boxes.
    private mutating func packFile(_ e: PeerEvent, place: Int, ids: SpilledEvents.BoxIDs) -> (FileRecord, WideFields) {
        var w = WideFields()
        let label = labels.id(e.kind, e.source)
        var r = FileRecord(t: e.t, span: 0, first: 0, lastDelta: 0, place: 0,
                           from: hintID(e.fromBox, ids.from), to: hintID(e.toBox, ids.to), flow: flowID(e.flowBox, ids.flow),
                           count: PackedEvents.fits16(e.count) ? UInt16(truncatingIfNeeded: e.count) : PackedEvents.bigCount16, shape: 0)
        if place >= 0, place < Int(Self.wide32) { r.place = UInt32(truncatingIfNeeded: place) } else {
            r.place = Self.wide32
            w.place = place
        }
        Self.setSpan(&r, &w, e.lastT)
        let meta = Self.setEvidence(&r, &w, e.evidencePair)
        setShape(&r, &w, Shape(label: label, meta: meta))
        return (r, w)
    }

    /// `s` into `r` (its index in the shapes table, or in `w`).
    @inline(__always) private func setShape(_ r: inout FileRecord, _ w: inout WideFields, _ s: Shape) {
        if let id = labels.shapeID(s) {
            r.shape = id
            w.shape = nil
        } else {
            r.shape = UInt16.max
            w.shape = s
        }
    }

    /// Record `i`'s label and evidence meta.
    @inline(__always) private func shape(_ i: Int, _ r: FileRecord) -> Shape {
        r.shape == UInt16.max ? wide[i]?.shape ?? Shape(label: 0, meta: UInt16.max) : labels.shapes[Int(r.shape)]
    }

    /// `lastT` into `r` (narrow, or in `w`).
    @inline(__always) static func setSpan(_ r: inout FileRecord, _ w: inout WideFields, _ lastT: Nanos) {
        let (d, over) = lastT.subtractingReportingOverflow(r.t)
        w.lastT = nil
        if !over, d >= 0, d < 1 << 31 {
            r.span = UInt32(truncatingIfNeeded: d)
        } else if !over, d >= 0, d % 1000 == 0, d / 1000 < Int64(wide32 >> 1) {
            r.span = UInt32(truncatingIfNeeded: d / 1000) | 1 << 31
        } else {
            r.span = wide32
            w.lastT = lastT
        }
    }

    @inline(__always) func lastT(_ i: Int, _ r: FileRecord) -> Nanos {
        if r.span == Self.wide32 { return wide[i]?.lastT ?? r.t }
        return r.span & 1 << 31 == 0 ? r.t &+ Nanos(r.span) : r.t &+ Nanos(r.span & ~(1 << 31)) * 1000
    }

    /// An evidence's meta word (input, and the top bit for a log line) and value, when narrow.
    @inline(__always) static func narrow(_ e: Evidence) -> (meta: UInt16, value: UInt32)? {
        switch e {
        case .frame(let input, let frame):
            guard input >= 0, input < 0x7FFF, frame <= UInt64(UInt32.max) else { return nil }
            return (UInt16(truncatingIfNeeded: input), UInt32(truncatingIfNeeded: frame))
        case .logLine(let input, let line):
            guard input >= 0, input < 0x7FFF, line >= 0, line <= Int(UInt32.max) else { return nil }
            return (UInt16(truncatingIfNeeded: input) | 0x8000, UInt32(truncatingIfNeeded: line))
        }
    }

    @inline(__always) static func evidence(_ meta: UInt16, _ value: UInt32) -> Evidence {
        let input = Int(meta & 0x7FFF)
        return meta & 0x8000 == 0 ? .frame(input: input, frame: UInt64(value)) : .logLine(input: input, line: Int(value))
    }

    /// Both evidences into `r` (narrow: the same input and kind, the last no earlier than the first
    /// and within 2^32 - 1 of it; else in `w`); gives their meta for the record's shape.
    @inline(__always) static func setEvidence(_ r: inout FileRecord, _ w: inout WideFields, _ p: EvidencePair) -> UInt16 {
        w.evidence = nil
        if let f = narrow(p.first) {
            if let last = p.last {
                if let l = narrow(last), l.meta == f.meta, l.value >= f.value, l.value - f.value < wide32 {
                    r.first = f.value
                    r.lastDelta = l.value - f.value
                    return f.meta
                }
            } else {
                r.first = f.value
                r.lastDelta = wide32
                return f.meta
            }
        }
        r.first = 0
        r.lastDelta = 0
        w.evidence = p
        return UInt16.max
    }

    @inline(__always) func evidencePair(_ i: Int, _ r: FileRecord) -> EvidencePair {
        evidencePair(i, r, meta: shape(i, r).meta)
    }

    @inline(__always) func evidencePair(_ i: Int, _ r: FileRecord, meta: UInt16) -> EvidencePair {
        if meta == UInt16.max { return wide[i]?.evidence ?? EvidencePair(.frame(input: 0, frame: 0)) }
        let first = Self.evidence(meta, r.first)
        return r.lastDelta == Self.wide32 ? EvidencePair(first) : EvidencePair(first, Self.evidence(meta, r.first &+ r.lastDelta))
    }

    @inline(__always) func firstEvidence(_ i: Int, _ r: FileRecord) -> Evidence {
        let meta = shape(i, r).meta
        return meta == UInt16.max ? evidencePair(i, r, meta: meta).first : Self.evidence(meta, r.first)
    }

    /// Keeps `wide` in step for event `i` (nothing kept for a record that holds every field).
    @inline(__always) private mutating func setWide(_ w: WideFields, at i: Int) {
        if !w.isEmpty { wide[i] = w } else if !wide.isEmpty { wide.removeValue(forKey: i) }
    }

    private mutating func hintID(_ b: Shared<PeerHint>?, _ fileID: UInt32) -> UInt32 {
        guard let b else { return 0 }
        if fileID != 0, let file, file.hint(fileID) == b { return fileID }
        return ownHints.id(b)
    }

    private mutating func flowID(_ b: Shared<FlowKey>?, _ fileID: UInt32) -> UInt32 {
        guard let b else { return 0 }
        if fileID != 0, let file, file.flow(fileID) == b { return fileID }
        return ownFlows.id(b)
    }

    @inline(__always) private func hintBox(_ id: UInt32) -> Shared<PeerHint>? {
        if id == 0 { return nil }
        if id & Self.ownMark != 0 {
            let k = Int(id & ~Self.ownMark)
            return k < ownHints.boxes.count ? ownHints.boxes[k] : nil
        }
        return file?.hint(id)
    }

    @inline(__always) private func flowBox(_ id: UInt32) -> Shared<FlowKey>? {
        if id == 0 { return nil }
        if id & Self.ownMark != 0 {
            let k = Int(id & ~Self.ownMark)
            return k < ownFlows.boxes.count ? ownFlows.boxes[k] : nil
        }
        return file?.flow(id)
    }

    @inline(__always) private func label(_ i: Int, _ r: FileRecord) -> Labels.Pair {
        labels.pairs[Int(shape(i, r).label)]
    }

    @inline(__always) private func place(_ i: Int, _ r: FileRecord) -> Int {
        r.place == Self.wide32 ? wide[i]?.place ?? -1 : Int(r.place)
    }

    @inline(__always) static func fits(_ n: Int) -> Bool { n >= 0 && n < Int(bigCount) }
    @inline(__always) static func fits16(_ n: Int) -> Bool { n >= 0 && n < Int(bigCount16) }

    /// Keeps `bigCounts` in step with the record just written at `i` (holding `n` occurrences).
    @inline(__always) private mutating func noteCount(_ n: Int, at i: Int) {
        bigCounts.set(PackedEvents.fits(n) ? nil : n, at: i)
    }

    /// The same for a file record (16-bit count).
    @inline(__always) private mutating func noteFileCount(_ n: Int, at i: Int) {
        bigCounts.set(PackedEvents.fits16(n) ? nil : n, at: i)
    }

    /// The whole event (its boxes and attribute buffer are those put in).
    public subscript(i: Int) -> PeerEvent {
        get {
            guard file != nil else {
                let r = record(i)
                let l = labels.pairs[Int(r.label)]
                return PeerEvent(kind: l.kind, t: r.t, lastT: r.lastT, fromBox: r.fromBox, toBox: r.toBox, flowBox: r.flowBox,
                                 source: l.source, attrs: r.attrs, count: count(at: i, r.count), evidencePair: r.evidencePair)
            }
            let r = fileRecord(i)
            let l = label(i, r)
            return PeerEvent(kind: l.kind, t: r.t, lastT: lastT(i, r), fromBox: hintBox(r.from), toBox: hintBox(r.to), flowBox: flowBox(r.flow),
                             source: l.source, attrs: attrs(i), count: count(at: i, r.count), evidencePair: evidencePair(i, r))
        }
        set {
            guard file != nil else {
                chunks[Self.chunk(i)][Self.slot(i)] = pack(newValue)
                noteCount(newValue.count, at: i)
                return
            }
            // The record stays where it was in the file; the attributes are held.
            let (r, w) = packFile(newValue, place: place(i, fileRecord(i)), ids: .none)
            fileChunks[Self.chunk(i)][Self.slot(i)] = r
            setWide(w, at: i)
            noteFileCount(newValue.count, at: i)
            setAttrs(newValue.attrs, at: i)
        }
    }

    @inline(__always) private func count(at i: Int, _ n: UInt32) -> Int {
        n == PackedEvents.bigCount ? bigCounts[i] ?? Int(PackedEvents.bigCount) : Int(n)
    }

    @inline(__always) private func count(at i: Int, _ n: UInt16) -> Int {
        n == PackedEvents.bigCount16 ? bigCounts[i] ?? Int(PackedEvents.bigCount16) : Int(n)
    }

    public mutating func append(_ e: PeerEvent) {
        guard file != nil else {
            startChunkIfFull()
            chunks[chunks.count - 1].append(pack(e))
            noteCount(e.count, at: count)
            count += 1
            return
        }
        appendFileRecord(e, place: -1, ids: .none)
        heldAttrs[count - 1] = e.attrs
    }

    /// Appends `e`, whose record in the attributes' file starts at `offset` (`Iterator.recordOffset`),
    /// its hints and flow read as `boxIDs` (`Iterator.recordBoxIDs`; `.none`: looked up here): its
    /// attributes are read from there when asked for. A list without a file keeps them as `append`.
    public mutating func append(_ e: PeerEvent, record offset: Int, boxIDs: SpilledEvents.BoxIDs = .none) {
        guard file != nil else { append(e); return }
        appendFileRecord(e, place: offset, ids: boxIDs)
        lastAdded = (count - 1, e.attrs)
    }

    @inline(__always) private mutating func startChunkIfFull() {
        guard count & (PackedEvents.chunkSize - 1) == 0 else { return }
        if file == nil {
            var c: [Record] = []
            c.reserveCapacity(PackedEvents.chunkSize)
            chunks.append(c)
        } else {
            var c: [FileRecord] = []
            c.reserveCapacity(PackedEvents.chunkSize)
            fileChunks.append(c)
        }
    }

    private mutating func appendFileRecord(_ e: PeerEvent, place: Int, ids: SpilledEvents.BoxIDs) {
        startChunkIfFull()
        let (r, w) = packFile(e, place: place, ids: ids)
        fileChunks[fileChunks.count - 1].append(r)
        setWide(w, at: count)
        noteFileCount(e.count, at: count)
        count += 1
    }

    public mutating func removeLast() {
        precondition(count > 0, "removeLast on no events")
        count -= 1
        bigCounts.set(nil, at: count)
        guard file != nil else {
            chunks[chunks.count - 1].removeLast()
            if chunks[chunks.count - 1].isEmpty { chunks.removeLast() }
            return
        }
        fileChunks[fileChunks.count - 1].removeLast()
        if fileChunks[fileChunks.count - 1].isEmpty { fileChunks.removeLast() }
        if !wide.isEmpty { wide.removeValue(forKey: count) }
        if !heldAttrs.isEmpty { heldAttrs.removeValue(forKey: count) }
        if lastAdded?.index == count { lastAdded = nil }
    }

    /// Keeps the first `n` events.
    public mutating func keepFirst(_ n: Int) {
        guard n < count else { return }
        let whole = (n + PackedEvents.chunkSize - 1) >> PackedEvents.shift
        if file == nil {
            chunks.removeSubrange(whole...)
            if let l = chunks.indices.last { chunks[l].removeSubrange((n - (l << PackedEvents.shift))...) }
        } else {
            fileChunks.removeSubrange(whole...)
            if let l = fileChunks.indices.last { fileChunks[l].removeSubrange((n - (l << PackedEvents.shift))...) }
            if !wide.isEmpty { wide = wide.filter { $0.key < n } }
            if !heldAttrs.isEmpty { heldAttrs = heldAttrs.filter { $0.key < n } }
            if let l = lastAdded, l.index >= n { lastAdded = nil }
        }
        count = n
        bigCounts.keepFirst(n)
    }

    /// Gives back unused room (a last chunk not filled).
    public mutating func shrink() {
        if let l = chunks.indices.last, chunks[l].capacity - chunks[l].count > chunks[l].count / 16 {
            chunks[l] = exactlySized(chunks[l])
        }
        if let l = fileChunks.indices.last, fileChunks[l].capacity - fileChunks[l].count > fileChunks[l].count / 16 {
            fileChunks[l] = exactlySized(fileChunks[l])
        }
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
        guard file != nil else {
            let r = record(i)
            chunks[Self.chunk(k)][Self.slot(k)] = r
            noteCount(count(at: i, r.count), at: k)
            return
        }
        let r = fileRecord(i)
        fileChunks[Self.chunk(k)][Self.slot(k)] = r
        noteFileCount(count(at: i, r.count), at: k)
        setWide(wide.isEmpty ? WideFields() : wide[i] ?? WideFields(), at: k)
        if let a = heldAttrs.removeValue(forKey: i) { heldAttrs[k] = a } else if !heldAttrs.isEmpty { heldAttrs.removeValue(forKey: k) }
        if let l = lastAdded {
            if l.index == i { lastAdded = (k, l.attrs) } else if l.index == k { lastAdded = nil }
        }
    }

    /// One more occurrence folded into event `i`, at `t` with `evidence` (its count, last time and last
    /// evidence, as `EventCoalescer` folds).
    public mutating func fold(into i: Int, t: Nanos, evidence: Evidence) {
        let c = Self.chunk(i), j = Self.slot(i)
        guard file != nil else {
            let n = count(at: i, chunks[c][j].count) &+ 1
            chunks[c][j].count = PackedEvents.fits(n) ? UInt32(truncatingIfNeeded: n) : PackedEvents.bigCount
            chunks[c][j].lastT = t
            chunks[c][j].evidencePair.last = evidence
            noteCount(n, at: i)
            return
        }
        var r = fileChunks[c][j]
        let n = count(at: i, r.count) &+ 1
        r.count = PackedEvents.fits16(n) ? UInt16(truncatingIfNeeded: n) : PackedEvents.bigCount16
        var w = wide.isEmpty ? WideFields() : wide[i] ?? WideFields()
        let s = shape(i, r)
        var pair = evidencePair(i, r, meta: s.meta)
        pair.last = evidence
        Self.setSpan(&r, &w, t)
        let meta = Self.setEvidence(&r, &w, pair)
        if meta != s.meta { setShape(&r, &w, Shape(label: s.label, meta: meta)) }
        fileChunks[c][j] = r
        setWide(w, at: i)
        noteFileCount(n, at: i)
    }

    public mutating func setAttrs(_ attrs: EventAttrs, at i: Int) {
        guard file != nil else {
            chunks[Self.chunk(i)][Self.slot(i)].attrs = attrs
            return
        }
        heldAttrs[i] = attrs
        if lastAdded?.index == i { lastAdded = nil }
    }

    // MARK: single fields, read in place

    public func t(_ i: Int) -> Nanos { file == nil ? record(i).t : fileRecord(i).t }
    public func lastT(_ i: Int) -> Nanos { file == nil ? record(i).lastT : lastT(i, fileRecord(i)) }
    public func kind(_ i: Int) -> EventKind {
        file == nil ? labels.pairs[Int(record(i).label)].kind : label(i, fileRecord(i)).kind
    }
    public func source(_ i: Int) -> String {
        file == nil ? labels.pairs[Int(record(i).label)].source : label(i, fileRecord(i)).source
    }
    public func count(_ i: Int) -> Int { file == nil ? count(at: i, record(i).count) : count(at: i, fileRecord(i).count) }
    public func evidence(_ i: Int) -> Evidence { file == nil ? record(i).evidencePair.first : firstEvidence(i, fileRecord(i)) }
    public func lastEvidence(_ i: Int) -> Evidence? { file == nil ? record(i).evidencePair.last : evidencePair(i, fileRecord(i)).last }
    public func flow(_ i: Int) -> FlowKey? { (file == nil ? record(i).flowBox : flowBox(fileRecord(i).flow))?.value }
    public func from(_ i: Int) -> PeerHint { (file == nil ? record(i).fromBox : hintBox(fileRecord(i).from))?.value ?? .unknown }
    public func to(_ i: Int) -> PeerHint { (file == nil ? record(i).toBox : hintBox(fileRecord(i).to))?.value ?? .unknown }
    public func attrs(_ i: Int) -> EventAttrs {
        guard let file else { return record(i).attrs }
        if let l = lastAdded, l.index == i { return l.attrs }
        if !heldAttrs.isEmpty, let a = heldAttrs[i] { return a }
        let r = fileRecord(i)
        let place = place(i, r)
        guard place >= 0 else { return EventAttrs() }
        let l = label(i, r)
        return file.attrs(atRecord: place, kind: l.kind, source: l.source, evidence: firstEvidence(i, r))
    }

    /// Where event `i`'s record is in the file (-1: none; tests).
    func recordOffset(_ i: Int) -> Int { file == nil ? -1 : place(i, fileRecord(i)) }
    /// Boxes held in this list's own tables, not named by the file's indexes (tests).
    var ownBoxCount: Int { ownHints.boxes.count + ownFlows.boxes.count }

    /// `self[i].samePeersAndFlow(e)`, without building the event.
    public func samePeersAndFlow(_ i: Int, _ e: PeerEvent) -> Bool {
        guard file != nil else {
            let r = record(i)
            return r.fromBox == e.fromBox && r.toBox == e.toBox && r.flowBox == e.flowBox
        }
        let r = fileRecord(i)
        return hintBox(r.from) == e.fromBox && hintBox(r.to) == e.toBox && flowBox(r.flow) == e.flowBox
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
