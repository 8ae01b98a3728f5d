/// A list grown in fixed-size chunks, made into one exactly sized array at the end (issue 13).
///
/// The timeline stage over a spilled input does not know how many events it keeps until the last one
/// is resolved (folded browse queries are not kept: 58 % of the 1 GB mDNS file's events). Reserving
/// one slot per event read held 24 bytes for each folded one through the stage's peak (9.6 MB there);
/// a doubled array would hold up to twice its count, and an old and a new buffer at each growth.
/// Here growing never copies, the slack is one chunk, and `consumeArray` moves the elements into an
/// array of their own count, letting each chunk go once copied (a chunk is larger than the allocator's
/// mmap threshold, so its pages go back to the system at once).
struct ChunkedList<Element> {
    /// Elements a chunk holds.
    let chunkSize: Int
    private var chunks: [[Element]] = []
    private(set) var count = 0

    /// Chunks of `chunkSize` elements (tests use small ones).
    init(chunkSize: Int = 8192) { self.chunkSize = max(1, chunkSize) }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ x: Element) {
        if chunks.isEmpty || chunks[chunks.count - 1].count == chunkSize {
            var c: [Element] = []
            c.reserveCapacity(chunkSize)
            chunks.append(c)
        }
        chunks[chunks.count - 1].append(x)
        count += 1
    }

    /// The elements in order, in one array of exactly `count` (the list is emptied chunk by chunk).
    mutating func consumeArray() -> [Element] {
        var out: [Element] = []
        out.reserveCapacity(count)
        for i in chunks.indices {
            out.append(contentsOf: chunks[i])
            chunks[i] = []
        }
        chunks = []
        count = 0
        return out
    }
}
