import HeapModule
import PeerscopeCore

/// Streams the frames of several capture files in capture-time order.
///
/// Holds one pending frame per file in a heap; ties are broken by input order, then frame order, so
/// the output is deterministic. Frames keep the input index and frame number of their own file.
public final class MergedCaptureReader {
    private struct Pending: Comparable {
        var frame: RawFrame
        var slot: Int

        static func < (a: Pending, b: Pending) -> Bool {
            let x = a.frame.info, y = b.frame.info
            if x.t != y.t { return x.t < y.t }
            if x.input != y.input { return x.input < y.input }
            if a.slot != b.slot { return a.slot < b.slot }
            return x.number < y.number
        }

        static func == (a: Pending, b: Pending) -> Bool {
            a.frame.info == b.frame.info && a.slot == b.slot
        }
    }

    /// The readers, in the order given.
    public let readers: [CaptureFileReader]
    private var heap = Heap<Pending>()
    private var primed = false

    /// Opens every path; input indexes are `firstInput`, `firstInput + 1`, … in the order given.
    /// Throws the first file that cannot be opened at all.
    public convenience init(paths: [String], firstInput: Int = 0) throws(CaptureError) {
        var readers: [CaptureFileReader] = []
        for (i, path) in paths.enumerated() {
            readers.append(try CaptureFileReader(path: path, input: firstInput &+ i))
        }
        self.init(readers: readers)
    }

    /// One read-ahead thread per file when reading in parallel; empty when serial.
    private let prefetchers: [FramePrefetcher]

    /// Merges readers that are already open (each keeps the input index it was given). `parallel` reads
    /// each file on its own thread (when there are several): the frames come out in the same order.
    /// The files' `problems`, `diagnostics` and `losses` are complete once `next()` returned nil.
    public init(readers: [CaptureFileReader], parallel: Bool = false) {
        self.readers = readers
        prefetchers = parallel && readers.count > 1 ? readers.map(FramePrefetcher.init) : []
    }

    deinit {
        for p in prefetchers { p.stop() }
    }

    /// True when each file is read on its own thread.
    public var readsInParallel: Bool { !prefetchers.isEmpty }

    /// Bytes read so far over all files, and their total size when every size is known: progress.
    public var bytesRead: Int64 {
        prefetchers.isEmpty ? readers.reduce(0) { $0 &+ $1.bytesRead } : prefetchers.reduce(0) { $0 &+ $1.bytesRead }
    }
    public var totalBytes: Int64? {
        var total: Int64 = 0
        for r in readers {
            guard let s = r.fileSize else { return nil }
            total &+= s
        }
        return total
    }

    /// The next frame in capture-time order, or nil when every file is exhausted.
    public func next() -> RawFrame? {
        if !primed {
            primed = true
            for p in prefetchers { p.start() }
            for slot in readers.indices {
                if let f = read(slot) { heap.insert(Pending(frame: f, slot: slot)) }
            }
        }
        guard let top = heap.popMin() else { return nil }
        if let f = read(top.slot) {
            heap.insert(Pending(frame: f, slot: top.slot))
        }
        return top.frame
    }

    @inline(__always) private func read(_ slot: Int) -> RawFrame? {
        prefetchers.isEmpty ? readers[slot].next() : prefetchers[slot].next()
    }

    /// Read-ahead threads end before the readers are asked about themselves (at the end, they
    /// have; before it, reading stops there).
    private func settled() -> [CaptureFileReader] {
        for p in prefetchers { p.stop() }
        return readers
    }

    /// Problems of the files that stopped early, in input order (complete once `next()` returned nil).
    public var problems: [CaptureProblem] { settled().compactMap(\.problem) }

    /// Non-fatal findings of every file (e.g. `capture.timestamp.clamped`), in input order.
    public var diagnostics: [Diagnostic] { settled().flatMap(\.diagnostics) }

    /// Packet loss the files record (interface statistics), in input order.
    public var losses: [CaptureLoss] { settled().flatMap(\.losses) }
}
