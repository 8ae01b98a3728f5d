import Foundation
import PeerscopeCore

/// Reads one capture file ahead on its own thread: frames go to the consumer in batches through a
/// small bounded queue, in the file's own order. `MergedCaptureReader` uses one per file when it reads
/// several files in parallel; merging by time stays on the consumer's side, so the frames come out
/// exactly as a serial merge gives them.
///
/// Only reading runs here (file I/O, gzip, pcap/pcapng records, timestamps): decoding stays on the
/// consumer's thread because its state spans files (TCP streams and IP fragments cut by file rotation,
/// the peer directory, mDNS state, event coalescing, the first diagnostics of each id).
///
/// The reader belongs to the thread until it has finished (`next()` returned nil): read the reader's
/// `problem`, `diagnostics` and `losses` only after that. A frame's bytes are a slice of a chunk the
/// reader never writes again (see `CaptureFileReader`), so handing them over needs no copy.
final class FramePrefetcher: @unchecked Sendable {
    /// Frames per batch, and batches queued at most: memory is bounded by a few thousand frames.
    static let batchSize = 512
    static let maxQueued = 8

    let reader: CaptureFileReader
    private let condition = NSCondition()
    private var queue: [[RawFrame]] = []
    private var finished = false
    private var stopped = false
    private var bytesMark: Int64 = 0
    private var current: [RawFrame] = []
    private var head = 0
    private var thread: Thread?

    init(_ reader: CaptureFileReader) {
        self.reader = reader
    }

    /// Starts reading ahead (once).
    func start() {
        guard thread == nil else { return }
        let t = Thread { [self] in self.loop() }
        t.name = "peerscope-read-\(reader.input)"
        thread = t
        t.start()
    }

    /// Bytes the reader has read so far (as of its last batch): progress.
    var bytesRead: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return bytesMark
    }

    /// The file's next frame, or nil once it is exhausted (then the reader is the caller's again).
    func next() -> RawFrame? {
        if head < current.count {
            head &+= 1
            return current[head &- 1]
        }
        condition.lock()
        while queue.isEmpty && !finished { condition.wait() }
        guard !queue.isEmpty else {
            condition.unlock()
            current = []
            head = 0
            return nil
        }
        current = queue.removeFirst()
        condition.broadcast()
        condition.unlock()
        head = 1
        return current[0]
    }

    /// Asks the thread to stop early (the consumer stopped reading) and waits until it has.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while thread != nil && !finished { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        while true {
            var batch: [RawFrame] = []
            batch.reserveCapacity(Self.batchSize)
            while batch.count < Self.batchSize, let f = reader.next() { batch.append(f) }
            let end = batch.count < Self.batchSize
            let bytes = reader.bytesRead
            condition.lock()
            while queue.count >= Self.maxQueued && !stopped { condition.wait() }
            if !batch.isEmpty && !stopped { queue.append(batch) }
            bytesMark = bytes
            if end || stopped { finished = true }
            condition.broadcast()
            let done = finished
            condition.unlock()
            if done { return }
        }
    }
}
