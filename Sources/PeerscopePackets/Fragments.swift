import PeerscopeCore

/// Identifies one IP datagram being reassembled.
struct FragKey: Hashable {
    var src: IPAddress
    var dst: IPAddress
    var id: UInt32
    var proto: UInt8
    var v6: Bool
}

/// The fragments of one datagram so far. Overlaps are resolved deterministically: the bytes that
/// arrived first win; later copies only fill what is still missing.
final class FragBuffer {
    var data: [UInt8] = []
    /// Covered byte ranges, sorted, merged.
    var ranges: [(lo: Int, hi: Int)] = []
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

    var complete: Bool {
        guard let total, ranges.count == 1 else { return false }
        return ranges[0].lo == 0 && ranges[0].hi == total
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
            if let last = buf.ranges.last, last.hi > end {
                diag(pfx + ".frag.inconsistent", .warning,
                     "last fragment ends at \(end) but data up to \(last.hi) was already received; datagram dropped", off)
                frags.removeValue(forKey: key)
                return nil
            }
            buf.total = end
        } else if let t = buf.total, end > t {
            diag(pfx + ".frag.inconsistent", .warning,
                 "fragment ends at \(end), past the datagram end \(t); ignored", off)
            return nil
        }
        if buf.data.count < end {
            buf.data.append(contentsOf: repeatElement(0, count: end - buf.data.count))
        }
        // Write only what no earlier fragment covered; compare the overlapped bytes.
        var cursor = offset
        var overlapped = false
        var conflict = false
        for r in buf.ranges where r.hi > offset && r.lo < end {
            overlapped = true
            if r.lo > cursor { write(buf, data, from: cursor, to: r.lo, base: offset) }
            let a = max(r.lo, offset), b = min(r.hi, end)
            if !conflict {
                for i in a ..< b where buf.data[i] != data.byte(i - offset) { conflict = true; break }
            }
            cursor = max(cursor, r.hi)
        }
        if cursor < end { write(buf, data, from: cursor, to: end, base: offset) }
        if conflict {
            diag(pfx + ".frag.overlap_conflict", .warning,
                 "fragment at offset \(offset) overlaps earlier fragments with different bytes; the first bytes are kept", off)
        } else if overlapped {
            diag(pfx + ".frag.overlap", .info, "fragment at offset \(offset) overlaps earlier fragments", off)
        }
        insertRange(buf, offset, end)
        guard buf.complete, let total = buf.total else { return nil }
        frags.removeValue(forKey: key)
        counters.reassembled += 1
        return Bytes(storage: buf.data, lower: 0, count: total)
    }

    private func write(_ buf: FragBuffer, _ data: Bytes, from: Int, to: Int, base: Int) {
        guard from < to else { return }
        for i in from ..< to {
            if let b = data.byte(i - base) { buf.data[i] = b }
        }
    }

    private func insertRange(_ buf: FragBuffer, _ lo: Int, _ hi: Int) {
        guard lo < hi || (lo == hi && buf.ranges.isEmpty && lo == 0) else { return }
        var merged: [(lo: Int, hi: Int)] = []
        merged.reserveCapacity(buf.ranges.count + 1)
        var nlo = lo, nhi = hi
        var placed = false
        for r in buf.ranges {
            if r.hi < nlo {
                merged.append(r)
            } else if r.lo > nhi {
                if !placed { merged.append((nlo, nhi)); placed = true }
                merged.append(r)
            } else {
                nlo = min(nlo, r.lo)
                nhi = max(nhi, r.hi)
            }
        }
        if !placed { merged.append((nlo, nhi)) }
        buf.ranges = merged
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
        let id = (key.v6 ? "ipv6" : "ipv4") + ".frag.incomplete"
        counters.diagnostics += 1
        let n = diagCounts[id, default: 0] &+ 1
        diagCounts[id] = n
        guard n <= options.maxDiagnosticsPerID else {
            counters.diagnosticsSuppressed += 1
            return
        }
        let have = buf.ranges.reduce(0) { $0 + $1.hi - $1.lo }
        diags.append(Diagnostic(id: id, severity: .warning,
                                message: "datagram \(key.src) > \(key.dst) id \(key.id): \(have) bytes reassembled, \(why)",
                                evidence: buf.evidence, offset: nil, t: now))
    }
}
