import PeerscopeCore

/// Identifies one IP datagram being reassembled.
struct FragKey: Hashable {
    var src: IPAddress
    var dst: IPAddress
    var id: UInt32
    var proto: UInt8
    var v6: Bool
}

/// The fragments of one datagram so far, as slices of the frames they came in (no copy until the
/// datagram is complete). Overlaps are resolved deterministically: the bytes that arrived first win;
/// later copies only fill what is still missing.
final class FragBuffer {
    /// Received bytes at their datagram offsets: sorted, non-overlapping.
    var pieces: [(lo: Int, data: Bytes)] = []
    /// Payload length, once the last fragment (MF clear) was seen.
    var total: Int?
    let firstSeen: Nanos
    let order: UInt64
    var evidence: Evidence

    init(firstSeen: Nanos, order: UInt64, evidence: Evidence) {
        self.firstSeen = firstSeen
        self.order = order
        self.evidence = evidence
    }

    var highest: Int { pieces.last.map { $0.lo + $0.data.count } ?? 0 }
    var received: Int { pieces.reduce(0) { $0 + $1.data.count } }

    var complete: Bool {
        guard let total else { return false }
        var at = 0
        for p in pieces {
            guard p.lo == at else { return false }
            at += p.data.count
        }
        return at == total
    }

    func assemble(_ total: Int) -> Bytes {
        var out = [UInt8]()
        out.reserveCapacity(total)
        for p in pieces { p.data.withUnsafeBytes { out.append(contentsOf: $0) } }
        return Bytes(out)
    }
}

extension PacketDecoder {
    /// Adds a fragment; returns the whole payload when this fragment completed it.
    func addFragment(_ key: FragKey, offset: Int, data: Bytes, more: Bool, off: Int?) -> Bytes? {
        let pfx = key.v6 ? "ipv6" : "ipv4"
        let end = offset + data.count
        guard end <= options.maxDatagram else {
            if frags.removeValue(forKey: key) != nil {}
            diag(pfx + ".frag.oversized", .warning,
                 "fragment at offset \(offset) with \(data.count) bytes ends past \(options.maxDatagram); datagram dropped", off)
            return nil
        }
        if more && data.count % 8 != 0 {
            diag(pfx + ".frag.bad_length", .info, "non-final fragment of \(data.count) bytes (not a multiple of 8)", off)
        }
        let buf: FragBuffer
        if let b = frags[key] {
            buf = b
        } else {
            if frags.count >= max(1, options.maxReassemblies) {
                if let oldest = frags.min(by: { $0.value.order < $1.value.order }) {
                    frags.removeValue(forKey: oldest.key)
                    diag(pfx + ".frag.limit", .warning,
                         "more than \(options.maxReassemblies) datagrams in reassembly; the oldest (from \(oldest.value.evidence)) was dropped", off)
                }
            }
            fragOrder &+= 1
            buf = FragBuffer(firstSeen: now, order: fragOrder, evidence: cur.evidence)
            frags[key] = buf
        }
        if !more {
            if let t = buf.total, t != end {
                diag(pfx + ".frag.inconsistent", .warning,
                     "last fragment ends at \(end) but an earlier one ended the datagram at \(t); keeping the first", off)
                return nil
            }
            if buf.highest > end {
                diag(pfx + ".frag.inconsistent", .warning,
                     "last fragment ends at \(end) but data up to \(buf.highest) was already received; datagram dropped", off)
                frags.removeValue(forKey: key)
                return nil
            }
            buf.total = end
        } else if let t = buf.total, end > t {
            diag(pfx + ".frag.inconsistent", .warning,
                 "fragment ends at \(end), past the datagram end \(t); ignored", off)
            return nil
        }
        // Keep only what no earlier fragment covered; compare the overlapped bytes.
        var cursor = offset
        var overlapped = false
        var conflict = false
        var fresh: [(lo: Int, data: Bytes)] = []
        for p in buf.pieces where p.lo + p.data.count > offset && p.lo < end {
            overlapped = true
            if p.lo > cursor, let piece = data.slice(cursor - offset, p.lo - cursor) { fresh.append((cursor, piece)) }
            if !conflict {
                for i in max(p.lo, offset) ..< min(p.lo + p.data.count, end) where p.data.byte(i - p.lo) != data.byte(i - offset) {
                    conflict = true
                    break
                }
            }
            cursor = max(cursor, p.lo + p.data.count)
        }
        if cursor < end, let piece = data.slice(cursor - offset, end - cursor) { fresh.append((cursor, piece)) }
        if conflict {
            diag(pfx + ".frag.overlap_conflict", .warning,
                 "fragment at offset \(offset) overlaps earlier fragments with different bytes; the first bytes are kept", off)
        } else if overlapped {
            diag(pfx + ".frag.overlap", .info, "fragment at offset \(offset) overlaps earlier fragments", off)
        }
        if !fresh.isEmpty {
            guard buf.pieces.count + fresh.count <= 1024 else {
                frags.removeValue(forKey: key)
                diag(pfx + ".frag.too_many", .warning, "more than 1024 fragments for one datagram; dropped", off)
                return nil
            }
            // Copied: a slice would keep the capture reader's whole 1 MiB chunk alive while it waits.
            buf.pieces.append(contentsOf: fresh.map { ($0.0, Bytes($0.1.array)) })
            buf.pieces.sort { $0.lo < $1.lo }
        }
        guard buf.complete, let total = buf.total else { return nil }
        frags.removeValue(forKey: key)
        counters.reassembled += 1
        return buf.assemble(total)
    }

    func sweepFragments() {
        guard !frags.isEmpty else { return }
        let stale = frags.filter { now &- $0.value.firstSeen >= options.fragmentTimeout }
            .sorted { $0.value.order < $1.value.order }
        for (key, buf) in stale {
            frags.removeValue(forKey: key)
            expired(key, buf, "timed out after \(CaptureTime.duration(options.fragmentTimeout))")
        }
    }

    func finishFragments() {
        let all = frags.sorted { $0.value.order < $1.value.order }
        frags.removeAll()
        for (key, buf) in all { expired(key, buf, "never completed before the end of input") }
    }

    private func expired(_ key: FragKey, _ buf: FragBuffer, _ why: String) {
        let have = buf.received
        diag((key.v6 ? "ipv6" : "ipv4") + ".frag.incomplete", .warning,
             "datagram \(key.src) > \(key.dst) id \(key.id): \(have) bytes reassembled, \(why)", nil, evidence: buf.evidence, t: now)
    }
}
