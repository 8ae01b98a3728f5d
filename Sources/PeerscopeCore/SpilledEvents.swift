#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The C library's `close` (the list's own `close()` hides it inside the class).
private func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }

/// Kept events written to a temporary file instead of held on the heap (issue 13): a long capture's
/// events leave memory once decoding is over, and the timeline stage reads them back in order, as many
/// times as it needs (`forEach`, or the list as a `Sequence`).
///
/// The file is created with `mkstemp` in the directory given (the analysis passes `TMPDIR`, never the
/// user's folders) and unlinked at once: it has no name while it is used and goes when the list goes,
/// whatever ends the process. Writes are buffered (`writeBufferSize`), reads too (`pread` of
/// `readBufferSize` bytes at a time): no system call per event.
///
/// A record holds an event's fields packed: kind and plugin as one label, times as deltas, the hints and
/// flow as indexes into tables kept here (one box per distinct value, by value: reading gives an equal
/// box), the count, both evidences and the attribute bytes. Reading an event back gives an event equal
/// to the one written. The file is read as untrusted input: a record cut short or out of range stops the
/// reading with `readError` set (never a crash).
public final class SpilledEvents: Sequence, @unchecked Sendable {
    /// Why the list could not be written or read.
    public struct SpillError: Error, CustomStringConvertible, Sendable {
        public var message: String
        public var description: String { message }
    }

    /// Where the file was created (it is unlinked at once: nothing is there while the list lives).
    public let path: String
    private(set) var fd: Int32
    /// Events written.
    public private(set) var count = 0
    /// Bytes written to the file (after `finishWriting`, its size).
    public private(set) var bytesWritten = 0
    /// The latest time of the events written (nil: none).
    public private(set) var lastT: Nanos?
    /// False when an event came before one written earlier (the list is not in time order).
    public private(set) var inTimeOrder = true
    /// Why reading stopped early, if it did (the events read before it were given).
    public private(set) var readError: String?
    /// Why a record read again (`attrs(atRecord:)`) could not be, for the first that could not.
    public private(set) var recordReadError: String?

    private var buffer: [UInt8] = []
    private let writeBufferSize: Int
    /// Sorted writes (`beginSortedWrite`): each a byte range of the file holding `count` records sorted by
    /// time, then decoding order (`seq`, written with each record). Empty: one list, read in the order written.
    private struct Segment {
        var start: Int
        var end: Int
        var count: Int
    }

    private var segments: [Segment] = []
    /// True once a sorted write began: every record carries its `seq`, and reading merges the writes.
    public private(set) var sortedWrites = false
    /// The sorted write being made (its start, events so far, last key).
    private var openSegment: (start: Int, count: Int, last: (t: Nanos, seq: Int)?)?
    private var previousSeq = 0
    /// Sorted writes made so far.
    public var writeCount: Int { segments.count }
    /// Bytes `pread` asks for at a time when reading back.
    public var readBufferSize = 1 << 20
    /// Tests: the write that would take the file past this many bytes fails (as a full disk would).
    public var failWritesAfter: Int?
    private var finished = false
    private var previousT: Nanos = 0

    private struct Label: Hashable {
        var kind: EventKind
        var source: String
    }

    private var labels: [Label] = []
    private var labelIDs: [Label: UInt32] = [:]
    private var hints: [Shared<PeerHint>] = []
    private var hintIDs: [Shared<PeerHint>: UInt32] = [:]
    private var flows: [Shared<FlowKey>] = []
    private var flowIDs: [Shared<FlowKey>: UInt32] = [:]
    /// `hints` and `flows` as bytes once the file is written (`finishWriting`; the arrays are then
    /// empty): boxes are made when read (`PackedBoxTable`). Under `boxMutex`.
    private var packedHints: PackedBoxTable<PeerHint>?
    private var packedFlows: PackedBoxTable<FlowKey>?
    private let boxMutex: UnsafeMutablePointer<pthread_mutex_t>

    /// A new, empty list in a temporary file of `directory`. Throws when the file cannot be made there.
    public init(directory: String, writeBufferSize: Int = 1 << 20) throws(SpillError) {
        let dir = directory.isEmpty ? "." : directory
        var template = Array((dir.hasSuffix("/") ? dir : dir + "/").utf8CString.dropLast()) + Array("peerscope-spill-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { p -> Int32 in
            guard let base = p.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard fd >= 0 else {
            let why = String(cString: strerror(errno))
            throw SpillError(message: "cannot create a temporary file in \(dir): \(why)")
        }
        path = template.withUnsafeBufferPointer { p in p.baseAddress.map { String(cString: $0) } ?? "" }
        // No name while it is used: the file goes with its descriptor, even if the process is killed.
        _ = unlink(path)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
        self.writeBufferSize = Swift.max(1, writeBufferSize)
        recordMutex = .allocate(capacity: 1)
        recordMutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(recordMutex, nil)
        boxMutex = .allocate(capacity: 1)
        boxMutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(boxMutex, nil)
        buffer.reserveCapacity(Swift.min(self.writeBufferSize, 1 << 20) + 256)
    }

    deinit {
        if fd >= 0 { _ = closeDescriptor(fd) }
        pthread_mutex_destroy(recordMutex)
        recordMutex.deallocate()
        pthread_mutex_destroy(boxMutex)
        boxMutex.deallocate()
    }

    /// Lets the file and the tables go (the timelines are built): the list then reads as empty.
    public func close() {
        if fd >= 0 { _ = closeDescriptor(fd) }
        fd = -1
        count = 0
        bytesWritten = 0
        finished = true
        buffer = []
        labels = []
        labelIDs = [:]
        hintIDs = [:]
        flowIDs = [:]
        pthread_mutex_lock(boxMutex)
        hints = []
        flows = []
        packedHints = nil
        packedFlows = nil
        pthread_mutex_unlock(boxMutex)
        lastLabel = nil
        segments = []
        openSegment = nil
        pthread_mutex_lock(recordMutex)
        recordBlock = nil
        lastRecord = nil
        pthread_mutex_unlock(recordMutex)
    }

    // MARK: writing

    /// Starts a sorted write (spilling while decoding): events given with `append(_:seq:)` in order of
    /// time, then `seq` (their decoding order), until `endSortedWrite`. Reading gives every event of every
    /// sorted write merged in that order: a later write may hold events of earlier times (an event a
    /// decoder was still adding to, a timer reporting late); the merged list is the list of all events
    /// sorted by time, ties in decoding order. A list takes either sorted writes or `append(_:)`, not both.
    public func beginSortedWrite() {
        precondition(!finished && openSegment == nil && (count == 0 || sortedWrites), "SpilledEvents: sorted write out of place")
        sortedWrites = true
        openSegment = (bytesWritten + buffer.count, 0, nil)
        previousT = 0
        previousSeq = 0
    }

    /// Appends `e`, decoded `seq`-th, to the sorted write begun (buffered). Throws when the file cannot take
    /// it; the events given stay the caller's.
    public func append(_ e: PeerEvent, seq: Int) throws(SpillError) {
        guard var segment = openSegment else { preconditionFailure("SpilledEvents: append(_:seq:) outside a sorted write") }
        if let last = segment.last, (e.t, seq) <= last { inTimeOrder = false }
        segment.last = (e.t, seq)
        segment.count += 1
        openSegment = segment
        encode(e)
        put(Self.zigzag(Int64(seq) &- Int64(previousSeq)))
        previousSeq = seq
        count += 1
        lastT = Swift.max(lastT ?? e.t, e.t)
        if buffer.count >= writeBufferSize { try flush() }
    }

    /// Ends the sorted write begun (it is read from now on, with the others).
    public func endSortedWrite() {
        guard let segment = openSegment else { return }
        openSegment = nil
        if segment.count > 0 { segments.append(Segment(start: segment.start, end: bytesWritten + buffer.count, count: segment.count)) }
    }

    /// Calls `body` with each event and its decoding order (the `seq` it was written with; the event's
    /// place in the order read for a list without sorted writes). Stops early as `forEach` does.
    @discardableResult
    public func forEachWithSeq(_ body: (PeerEvent, Int) -> Void) -> Bool {
        var it = makeIterator()
        var i = 0
        while let e = it.next() {
            body(e, sortedWrites ? it.seq : i)
            i += 1
        }
        return readError == nil
    }

    /// Appends `e` (buffered). Throws when the file cannot take it; the events given stay the caller's.
    public func append(_ e: PeerEvent) throws(SpillError) {
        precondition(!finished && !sortedWrites, "SpilledEvents: append after finishWriting or beside sorted writes")
        encode(e)
        count += 1
        if let l = lastT, e.t < l { inTimeOrder = false }
        lastT = Swift.max(lastT ?? e.t, e.t)
        if buffer.count >= writeBufferSize { try flush() }
    }

    /// Writes what is buffered; the list can then be read.
    public func finishWriting() throws(SpillError) {
        guard !finished else { return }
        endSortedWrite()
        try flush()
        finished = true
        // Only reading is left: the tables from boxes to indexes go now, before the timeline stage (on a
        // long capture tens of thousands of hints and flows: a few MB), and the boxes are kept as bytes.
        dropWriteTables()
        packBoxes()
    }

    /// Lets go of the boxes the hint and flow tables keep made (`PackedBoxTable`'s cache), as the
    /// timeline stage ends (issue 13): made one after another all through the stage's passes, the boxes
    /// the cache holds then are small pieces scattered over the heap, each keeping a page of freed
    /// working state resident. Boxes made after are equal by value to those made before.
    public func dropBoxCaches() {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        packedHints?.dropCache()
        packedFlows?.dropCache()
    }

    /// Boxes the hint and flow tables' caches hold (tests).
    var cachedBoxCount: Int {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        return (packedHints?.cachedCount ?? 0) + (packedFlows?.cachedCount ?? 0)
    }

    /// Keeps the hint and flow tables as bytes (`PackedBoxTable`): their boxes go, unless an event
    /// read holds them.
    private func packBoxes() {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        if packedHints == nil, let p = PackedBoxTable(hints) {
            packedHints = p
            hints = []
        }
        if packedFlows == nil, let p = PackedBoxTable(flows) {
            packedFlows = p
            flows = []
        }
    }

    private func flush() throws(SpillError) {
        guard !buffer.isEmpty else { return }
        let failAt = failWritesAfter
        let total = buffer.count
        let err: Int32? = buffer.withUnsafeBytes { raw -> Int32? in
            guard let base = raw.baseAddress else { return nil }
            var done = 0
            while done < total {
                var n = total - done
                if let failAt {
                    let room = failAt - bytesWritten - done
                    if room <= 0 { return ENOSPC }
                    n = Swift.min(n, room)
                }
                let w = write(fd, base + done, n)
                if w < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if w == 0 { return EIO }
                done += w
            }
            return nil
        }
        if let err {
            throw SpillError(message: "cannot write the temporary file \(path): \(String(cString: strerror(err)))")
        }
        bytesWritten += total
        buffer.removeAll(keepingCapacity: true)
    }

    private func put(_ v: UInt64) { LEB128.append(v, to: &buffer) }
    private static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }
    private static func unzigzag(_ v: UInt64) -> Int64 { Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1) }

    private func putEvidence(_ e: Evidence) {
        switch e {
        case .frame(let input, let frame):
            put(Self.zigzag(Int64(input)) << 1)
            put(frame)
        case .logLine(let input, let line):
            put(Self.zigzag(Int64(input)) << 1 | 1)
            put(UInt64(bitPattern: Int64(line)))
        }
    }

    /// The last event's label and its id: most events repeat the one before (no hashing of two strings).
    private var lastLabel: (label: Label, id: UInt32)?

    private func encode(_ e: PeerEvent) {
        let id: UInt32
        if let l = lastLabel, l.label.kind == e.kind, l.label.source == e.source { id = l.id } else {
            let label = Label(kind: e.kind, source: e.source)
            if let l = labelIDs[label] { id = l } else {
                id = UInt32(truncatingIfNeeded: labels.count)
                labels.append(label)
                labelIDs[label] = id
            }
            lastLabel = (label, id)
        }
        put(UInt64(id))
        // Times as differences (the list is nearly in time order): wrapping both ways gives the value back.
        put(Self.zigzag(e.t &- previousT))
        previousT = e.t
        put(Self.zigzag(e.lastT &- e.t))
        put(Self.boxID(e.fromBox, &hints, &hintIDs))
        put(Self.boxID(e.toBox, &hints, &hintIDs))
        put(Self.boxID(e.flowBox, &flows, &flowIDs))
        put(UInt64(bitPattern: Int64(e.count)))
        let last = e.lastEvidence
        buffer.append(last == nil ? 0 : 1)
        putEvidence(e.evidence)
        if let last { putEvidence(last) }
        let bytes = e.attrs.bytes
        put(UInt64(bytes.count))
        buffer.append(contentsOf: bytes)
    }

    /// The indexes of a record's hints and flow in the list's tables: 0 for none, else 1 + the index
    /// (`hint(_:)`, `flow(_:)` give the box back). A store can keep these instead of the boxes.
    public struct BoxIDs: Sendable, Equatable {
        public var from: UInt32
        public var to: UInt32
        public var flow: UInt32

        public init(from: UInt32, to: UInt32, flow: UInt32) {
            self.from = from
            self.to = to
            self.flow = flow
        }

        public static let none = BoxIDs(from: 0, to: 0, flow: 0)
    }

    /// The hint box of `id` (a `BoxIDs` field): nil for 0, for an id the list does not hold, and once
    /// the list is closed. Reading events back gives these very boxes.
    /// A box asked for again may be another box of an equal value (the last ones read are kept).
    /// Safe from several threads.
    public func hint(_ id: UInt32) -> Shared<PeerHint>? {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        return hintLocked(id)
    }

    /// The flow box of `id` (as `hint(_:)`).
    public func flow(_ id: UInt32) -> Shared<FlowKey>? {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        return flowLocked(id)
    }

    @inline(__always) private func hintLocked(_ id: UInt32) -> Shared<PeerHint>? {
        if packedHints != nil { return packedHints?.box(id) }
        let i = Int(id) &- 1
        return i >= 0 && i < hints.count ? hints[i] : nil
    }

    @inline(__always) private func flowLocked(_ id: UInt32) -> Shared<FlowKey>? {
        if packedFlows != nil { return packedFlows?.box(id) }
        let i = Int(id) &- 1
        return i >= 0 && i < flows.count ? flows[i] : nil
    }

    /// The boxes of a record's `ids` (`make` false: none made, only checked), or why an index names
    /// none (the file damaged).
    fileprivate func boxes(_ ids: BoxIDs, make: Bool) -> Result<(Shared<PeerHint>?, Shared<PeerHint>?, Shared<FlowKey>?), SpillError> {
        pthread_mutex_lock(boxMutex)
        defer { pthread_mutex_unlock(boxMutex) }
        let hintCount = packedHints?.count ?? hints.count, flowCount = packedFlows?.count ?? flows.count
        if Int(ids.from) > hintCount || Int(ids.to) > hintCount {
            return .failure(SpillError(message: "hint \(Swift.max(ids.from, ids.to)) of \(hintCount)"))
        }
        guard Int(ids.flow) <= flowCount else { return .failure(SpillError(message: "flow \(ids.flow) of \(flowCount)")) }
        guard make else { return .success((nil, nil, nil)) }
        return .success((hintLocked(ids.from), hintLocked(ids.to), flowLocked(ids.flow)))
    }

    /// 0 for no box, else 1 + the box's index in `table` (added when new).
    private static func boxID<V>(_ box: Shared<V>?, _ table: inout [Shared<V>], _ ids: inout [Shared<V>: UInt32]) -> UInt64 {
        guard let box else { return 0 }
        if let i = ids[box] { return UInt64(i) + 1 }
        let i = UInt32(truncatingIfNeeded: table.count)
        table.append(box)
        ids[box] = i
        return UInt64(i) + 1
    }

    // MARK: reading

    /// Calls `body` with each event, in the order written. Stops early (with `readError` set) when the
    /// file cannot be read or a record is damaged; returns false then.
    @discardableResult
    public func forEach(_ body: (PeerEvent) -> Void) -> Bool {
        var it = makeIterator()
        while let e = it.next() { body(e) }
        return readError == nil
    }

    /// `forEach`, also giving where each event's record starts in the file (`Iterator.recordOffset`).
    @discardableResult
    public func forEachWithOffset(_ body: (PeerEvent, Int) -> Void) -> Bool {
        var it = makeIterator()
        while let e = it.next() { body(e, it.recordOffset) }
        return readError == nil
    }

    public func makeIterator() -> Iterator { Iterator(self) }

    // MARK: reading single records again

    /// Bytes read at a time for single records (a block kept for the records after it).
    public static let recordBlockSize = 1 << 16
    private let recordMutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The block the last single-record read kept (bytes of the file from `base`). Only the bytes: a
    /// `Cursor` kept here would hold this list, which then never went.
    private var recordBlock: (chunk: [UInt8], base: Int)?
    private var lastRecord: (offset: Int, attrs: EventAttrs)?

    /// The attributes of the event whose record starts at `offset` (`Iterator.recordOffset`), read
    /// again from the file: a store of events can leave them here instead of on the heap. The block
    /// read is kept, so records read in file order cost one `pread` per block. The record must be the
    /// event's: of `kind` from `source`, with `evidence` first (a file damaged since would otherwise give
    /// another event's attributes, or junk). Empty, with `recordReadError` set, when the record cannot be
    /// read or is not that event (the file damaged or cut since, or closed); never a crash. Safe from
    /// several threads. (A sorted write's record ends with its `seq`, not read here.)
    public func attrs(atRecord offset: Int, kind: EventKind, source: String, evidence: Evidence) -> EventAttrs {
        pthread_mutex_lock(recordMutex)
        defer { pthread_mutex_unlock(recordMutex) }
        if let l = lastRecord, l.offset == offset { return l.attrs }
        var reader = Cursor(randomAccessTo: self, block: Swift.min(readBufferSize, Self.recordBlockSize))
        if let b = recordBlock {
            recordBlock = nil
            reader.adoptBlock(b.chunk, base: b.base)
        }
        reader.seek(to: offset)
        reader.advance()
        let e = reader.head?.event
        recordBlock = reader.takeBlock()
        guard let e else {
            if recordReadError == nil { recordReadError = "the temporary file \(path) cannot be read at \(offset)" }
            return EventAttrs()
        }
        guard e.kind == kind, e.source == source, e.evidence == evidence else {
            if recordReadError == nil {
                recordReadError = "the temporary file \(path) is damaged: the record at \(offset) is not the event written there"
            }
            return EventAttrs()
        }
        lastRecord = (offset, e.attrs)
        return e.attrs
    }

    /// Entries of the tables only writing needs (tests: none once the file is written).
    var writeTableCount: Int { labelIDs.count + hintIDs.count + flowIDs.count }

    /// Lets go of what only writing needs (the tables from boxes to indexes, the buffer), once the
    /// file is written and only read from.
    public func dropWriteTables() {
        guard finished else { return }
        buffer = []
        labelIDs = [:]
        hintIDs = [:]
        flowIDs = [:]
        lastLabel = nil
    }

    /// Stops writing after a failed write (`append` threw): the sorted write begun is dropped, and the
    /// sorted writes ended before it can still be read back, their bytes not yet on file from memory.
    public func stopWriting() {
        openSegment = nil
        finished = true
    }

    /// Reads the list in order: front to back, or the sorted writes merged (each read through its own
    /// cursor, the next event the one of least time, then `seq`).
    public struct Iterator: IteratorProtocol {
        private var cursors: [Cursor] = []
        /// Cursors' indexes as a heap by their next event (sorted writes only).
        private var heap: [Int] = []
        private let merging: Bool
        /// The `seq` of the event `next` gave last (sorted writes).
        public private(set) var seq = 0
        /// Where the record of the event `next()` returned last starts in the file (-1 before the
        /// first): the place to read it from again. (A sorted write's record holds its time and `seq` as
        /// differences from the record before it in the same write, and ends with the `seq`.)
        public private(set) var recordOffset = -1
        /// The indexes of the hints and flow of the event `next()` returned last (`hint(_:)`, `flow(_:)`).
        public private(set) var recordBoxIDs = BoxIDs.none

        init(_ list: SpilledEvents) {
            if !list.finished {
                do { try list.finishWriting() } catch {
                    list.readError = error.message
                    merging = false
                    return
                }
            }
            merging = list.sortedWrites
            if !merging {
                cursors = [Cursor(list, start: 0, end: list.bytesWritten + list.buffer.count, count: list.count, tagged: false,
                                  bufferSize: list.readBufferSize)]
                return
            }
            // Each cursor reads a share of the buffer size (small writes still read a few KiB at a time).
            let k = Swift.max(1, list.segments.count)
            let size = Swift.min(Swift.max(1, list.readBufferSize), Swift.max(4096, list.readBufferSize / k))
            for s in list.segments {
                var c = Cursor(list, start: s.start, end: s.end, count: s.count, tagged: true, bufferSize: size)
                c.advance()
                if c.head != nil {
                    cursors.append(c)
                    push(cursors.count - 1)
                } else if c.failed {
                    heap = []
                    return
                }
            }
        }

        /// The cursor whose next event comes first: least time, then `seq`.
        @inline(__always) private static func before(_ a: Int, _ b: Int, _ cursors: [Cursor]) -> Bool {
            guard let x = cursors[a].head, let y = cursors[b].head else { return false }
            return x.event.t != y.event.t ? x.event.t < y.event.t : x.seq < y.seq
        }

        private mutating func push(_ c: Int) {
            let cs = cursors
            heap.heapPush(c) { Self.before($0, $1, cs) }
        }

        private mutating func siftDown() {
            let cs = cursors
            heap.heapSiftDown { Self.before($0, $1, cs) }
        }

        public mutating func next() -> PeerEvent? {
            guard merging else {
                guard !cursors.isEmpty else { return nil }
                cursors[0].advance()
                recordOffset = cursors[0].headOffset
                guard let head = cursors[0].head else { return nil }
                recordBoxIDs = head.ids
                return head.event
            }
            guard let top = heap.first, let head = cursors[top].head else { return nil }
            recordOffset = cursors[top].headOffset
            recordBoxIDs = head.ids
            cursors[top].advance()
            if cursors[top].failed {
                // A damaged write ends the reading (the events given before it stand, `readError` says why).
                heap = []
            } else if cursors[top].head == nil {
                let last = heap.removeLast()
                if !heap.isEmpty {
                    heap[0] = last
                    siftDown()
                }
            } else {
                siftDown()
            }
            seq = head.seq
            return head.event
        }
    }

    /// Reads one byte range of the file front to back in `bufferSize` pieces (bytes not yet on file, after
    /// a failed write, from the write buffer).
    struct Cursor {
        private let list: SpilledEvents
        private var chunk: [UInt8] = []
        private var p = 0
        private var fileOffset: Int
        /// Where `chunk[0]` is in the file.
        private var chunkBase: Int
        /// Where the record of `head` starts in the file.
        private(set) var headOffset = -1
        private let end: Int
        private let bufferSize: Int
        private let tagged: Bool
        private var left: Int
        private let total: Int
        private var previousT: Nanos = 0
        private var previousSeq = 0
        private var done = false
        /// The event read last and its `seq` (nil: none left).
        private(set) var head: (event: PeerEvent, seq: Int, ids: BoxIDs)?
        /// Reading stopped on an error (`list.readError`).
        private(set) var failed = false
        /// Reading single records again (`seek`): failures go to `recordReadError`.
        private var random = false

        init(_ list: SpilledEvents, start: Int, end: Int, count: Int, tagged: Bool, bufferSize: Int) {
            self.list = list
            fileOffset = start
            chunkBase = start
            self.end = end
            left = count
            total = count
            self.tagged = tagged
            self.bufferSize = Swift.max(1, bufferSize)
        }

        /// Reads the next event into `head` (nil at the end or on an error).
        mutating func advance() {
            head = nil
            guard !done else { return }
            guard left > 0 else {
                done = true
                chunk = []
                return
            }
            while true {
                var q = p
                switch decode(&q) {
                case .event(let e, let seq, let ids):
                    headOffset = chunkBase + p
                    p = q
                    left -= 1
                    previousT = e.t
                    previousSeq = seq
                    head = (e, seq, ids)
                    return
                case .damaged(let why):
                    return fail("the temporary file \(list.path) is damaged: \(why)")
                case .needMore:
                    if let why = refill() { return fail(why) }
                }
            }
        }

        /// A reader of single records (`seek`, then `advance()`), through blocks of at most `block` bytes,
        /// to the end of what was written.
        init(randomAccessTo list: SpilledEvents, block: Int) {
            self.init(list, start: 0, end: list.bytesWritten + list.buffer.count, count: 0, tagged: false, bufferSize: block)
            random = true
            done = true
        }

        /// Starts from a block read before (`takeBlock`): the bytes of the file from `base`.
        mutating func adoptBlock(_ block: [UInt8], base: Int) {
            chunk = block
            chunkBase = base
            fileOffset = base + block.count
            p = 0
        }

        /// The block held, for a later reader to `adoptBlock` (this one is left with none).
        mutating func takeBlock() -> (chunk: [UInt8], base: Int) {
            var taken: [UInt8] = []
            swap(&taken, &chunk)
            let base = chunkBase
            chunkBase = fileOffset
            p = 0
            return (taken, base)
        }

        /// The next `advance()` reads the record at `offset` (from the block held when it is inside it).
        /// Its time is not the event's (times are differences from the record before). A new block
        /// starts a quarter of a block before the record: records read a little backwards (a detector
        /// looking back) are in it too.
        mutating func seek(to offset: Int) {
            if offset >= chunkBase, offset < chunkBase + chunk.count {
                p = offset - chunkBase
            } else {
                chunk.removeAll(keepingCapacity: true)
                let before = offset > 0 ? Swift.min(offset, bufferSize / 4) : 0
                chunkBase = offset - before
                fileOffset = chunkBase
                p = 0
                failed = false
                if before > 0 {
                    if let why = refill() {
                        fail(why)
                        return
                    }
                    guard chunk.count > before else {
                        fail("the temporary file \(list.path) is shorter than written")
                        return
                    }
                }
                p = before
            }
            left = 1
            done = false
            failed = false
        }

        private mutating func fail(_ why: String) {
            if random {
                if list.recordReadError == nil { list.recordReadError = why }
            } else if list.readError == nil {
                list.readError = why
            }
            done = true
            failed = true
            chunk = []
        }

        /// Keeps the unread tail and reads more after it (a record longer than the buffer grows it).
        /// Returns why it could not.
        private mutating func refill() -> String? {
            if p > 0 {
                chunk.removeSubrange(0 ..< p)
                chunkBase += p
                p = 0
            }
            let notRead = random ? "" : " (\(left) of \(total) events not read)"
            guard fileOffset >= 0, fileOffset < end else {
                return "the temporary file \(list.path) ends inside an event\(notRead)"
            }
            let want = Swift.min(bufferSize, end - fileOffset)
            // Bytes a failed write left in the buffer are read from there.
            let onFile = list.bytesWritten
            if fileOffset >= onFile {
                let from = fileOffset - onFile
                guard from + want <= list.buffer.count else {
                    return "the temporary file \(list.path) is shorter than written\(notRead)"
                }
                chunk.append(contentsOf: list.buffer[from ..< from + want])
                fileOffset += want
                return nil
            }
            let wantOnFile = Swift.min(want, onFile - fileOffset)
            let old = chunk.count
            chunk.append(contentsOf: repeatElement(0, count: wantOnFile))
            let fd = list.fd
            var got = 0
            var err: Int32 = 0
            chunk.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                while got < wantOnFile {
                    let r = pread(fd, base + old + got, wantOnFile - got, off_t(fileOffset + got))
                    if r < 0 {
                        if errno == EINTR { continue }
                        err = errno
                        return
                    }
                    if r == 0 { return }
                    got += r
                }
            }
            chunk.removeSubrange((old + got)...)
            if err != 0 { return "cannot read the temporary file \(list.path): \(String(cString: strerror(err)))" }
            if got == 0 { return "the temporary file \(list.path) is shorter than written\(notRead)" }
            fileOffset += got
            return nil
        }

        enum Step {
            case event(PeerEvent, seq: Int, ids: BoxIDs)
            case needMore
            case damaged(String)
        }

        /// One varint at `q` (`LEB128`'s, read with checks): nil when the chunk ends inside it, `.some(nil)`
        /// when it runs past 64 bits.
        private func varint(_ q: inout Int) -> UInt64?? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            var i = q
            while i < chunk.count {
                let b = chunk[i]
                i += 1
                if shift == 63, b > 1 { return .some(nil) }
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 {
                    q = i
                    return .some(v)
                }
                shift += 7
                if shift > 63 { return .some(nil) }
            }
            return nil
        }

        private func decode(_ q: inout Int) -> Step {
            var bad: String?
            var short = false
            func next() -> UInt64 {
                guard bad == nil, !short else { return 0 }
                switch varint(&q) {
                case .none: short = true; return 0
                case .some(.none): bad = "a number runs past 64 bits"; return 0
                case .some(.some(let v)): return v
                }
            }
            func boxID(_ what: String) -> UInt32 {
                let id = next()
                guard id <= UInt64(UInt32.max) else {
                    if bad == nil, !short { bad = "\(what) \(id) out of range" }
                    return 0
                }
                return UInt32(truncatingIfNeeded: id)
            }
            func evidence() -> Evidence {
                let meta = next()
                let value = next()
                let input = Int(SpilledEvents.unzigzag(meta >> 1))
                return meta & 1 == 0 ? .frame(input: input, frame: value) : .logLine(input: input, line: Int(Int64(bitPattern: value)))
            }
            let labelID = next()
            let dt = SpilledEvents.unzigzag(next())
            let span = SpilledEvents.unzigzag(next())
            var ids = BoxIDs.none
            ids.from = boxID("hint")
            ids.to = boxID("hint")
            ids.flow = boxID("flow")
            let count = Int(Int64(bitPattern: next()))
            var hasLast: UInt8 = 0
            if bad == nil, !short {
                if q < chunk.count {
                    hasLast = chunk[q]
                    q += 1
                } else {
                    short = true
                }
            }
            let first = evidence()
            let last: Evidence? = hasLast == 1 ? evidence() : nil
            let n = next()
            if short { return .needMore }
            if let bad { return .damaged(bad) }
            guard hasLast <= 1 else { return .damaged("an evidence mark of \(hasLast)") }
            guard labelID < UInt64(list.labels.count) else { return .damaged("label \(labelID) of \(list.labels.count)") }
            guard n <= UInt64(Int.max - q) else { return .damaged("attributes of \(n) bytes") }
            let end = q + Int(n)
            guard end <= chunk.count else { return .needMore }
            // A sorted write's record ends with its decoding order (a difference from the record before).
            var seq = 0
            var afterSeq = end
            if tagged {
                switch varint(&afterSeq) {
                case .none: return .needMore
                case .some(.none): return .damaged("a number runs past 64 bits")
                case .some(.some(let v)):
                    let (s, over) = Int64(previousSeq).addingReportingOverflow(SpilledEvents.unzigzag(v))
                    guard !over, s >= 0, let value = Int(exactly: s) else { return .damaged("a decoding order out of range") }
                    seq = value
                }
            }
            // The boxes (a single record read again for its attributes makes none: only checked).
            let from: Shared<PeerHint>?, to: Shared<PeerHint>?, flow: Shared<FlowKey>?
            switch list.boxes(ids, make: !random) {
            case .success(let b): (from, to, flow) = b
            case .failure(let why): return .damaged(why.message)
            }
            var attrs = EventAttrs()
            if n > 0 { attrs.bytes = Array(chunk[q ..< end]) }
            q = afterSeq
            let label = list.labels[Int(labelID)]
            let t = previousT &+ dt
            return .event(PeerEvent(kind: label.kind, t: t, lastT: t &+ span, fromBox: from, toBox: to, flowBox: flow,
                                    source: label.source, attrs: attrs, count: count,
                                    evidencePair: EvidencePair(first, last)), seq: seq, ids: ids)
        }
    }
}
