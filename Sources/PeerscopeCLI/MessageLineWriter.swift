import Foundation
import PeerscopeCore

/// `peerscope decode`'s lines, written on a thread of their own: the decoding thread hands decoded
/// messages over in batches and goes on decoding, while this thread turns them into JSON (and, for
/// messages whose fields are parsed only to be printed, parses them) and writes large blocks. Lines
/// come out in the order the messages were decoded, exactly as a writer on the decoding thread would
/// write them.
final class MessageLineWriter: @unchecked Sendable {
    static let batchSize = 256
    /// Batches waiting at most: the decoding thread waits when the writer falls that far behind.
    static let maxQueued = 32

    private let sink: OutputSink
    private let includeInput: Bool
    private let condition = NSCondition()
    private var queue: [[DecodedMessage]] = []
    /// Batches the writer thread emptied, handed back with their storage: the decoding thread reuses
    /// them rather than allocating a new batch every `batchSize` messages (a large allocation on one
    /// thread freed on the other made the allocator consolidate its free lists each time).
    private var spare: [[DecodedMessage]] = []
    private var closed = false
    private var done = false
    private var batch: [DecodedMessage] = []
    /// Members of repeated messages (mDNS refreshes) written once, when `caching`. Used on the writer's
    /// thread only.
    private var cache = MessageBodyCache()
    private let caching: Bool

    /// Writes into `sink`, which belongs to this writer's thread until `finish()` returns. `caching`
    /// off writes every message's members in full (the same bytes, to show it).
    init(sink: OutputSink, includeInput: Bool, caching: Bool = true) {
        self.sink = sink
        self.includeInput = includeInput
        self.caching = caching
        batch.reserveCapacity(Self.batchSize)
        let t = Thread { [self] in self.loop() }
        t.name = "peerscope-decode-writer"
        t.start()
    }

    /// Called on the decoding thread for each message, in order.
    func add(_ m: DecodedMessage) {
        batch.append(m)
        if batch.count >= Self.batchSize { hand(last: false) }
    }

    /// Writes what is left and waits for the thread: `sink` is the caller's again.
    func finish() {
        hand(last: true)
        condition.lock()
        while !done { condition.wait() }
        condition.unlock()
    }

    private func hand(last: Bool) {
        condition.lock()
        while queue.count >= Self.maxQueued { condition.wait() }
        if !batch.isEmpty { queue.append(batch) }
        if last { closed = true }
        let reused = spare.popLast()
        condition.broadcast()
        condition.unlock()
        if let reused {
            batch = reused
        } else {
            batch = []
            batch.reserveCapacity(Self.batchSize)
        }
    }

    private func loop() {
        while true {
            condition.lock()
            while queue.isEmpty && !closed { condition.wait() }
            var taken = queue
            queue.removeAll(keepingCapacity: true)
            let end = closed
            condition.broadcast()
            condition.unlock()
            for b in taken {
                if caching {
                    for m in b { sink.messageLine(m, includeInput: includeInput, cache: &cache) }
                } else {
                    for m in b { sink.messageLine(m, includeInput: includeInput) }
                }
            }
            // Emptied (storage kept) and handed back for the decoding thread to fill again.
            for i in taken.indices { taken[i].removeAll(keepingCapacity: true) }
            if !taken.isEmpty && !end {
                condition.lock()
                while spare.count < Self.maxQueued + 2, let b = taken.popLast() { spare.append(b) }
                condition.unlock()
            }
            if end && taken.isEmpty {
                condition.lock()
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }
}
