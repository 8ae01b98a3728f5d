import PeerscopeCore

/// Bytes buffered out of order, at a 64-bit stream position.
struct TCPSegment {
    var start: Int64
    var data: Bytes
    var end: Int64 { start + Int64(data.count) }
}

/// One direction of a connection. Sequence numbers are mapped to 64-bit stream positions
/// (position 0 = the first data byte), so wrap-around across 2^32 needs no special cases.
struct TCPHalf {
    /// Whether the sequence space is known (a SYN or a first segment was seen).
    var started = false
    /// Whether `base` came from a SYN.
    var fromSYN = false
    /// Sequence number of stream position 0.
    var base: UInt32 = 0
    /// Next position to deliver.
    var next: Int64 = 0
    /// Out-of-order data, sorted, non-overlapping, every start > next.
    var segs: [TCPSegment] = []
    var buffered = 0
    /// Stream position of the FIN, once seen.
    var fin: Int64?
    var finAt: Nanos = 0
    var finDone = false
    var sawData = false
    /// Highest stream position seen (end of data, FIN counted as one).
    var highest: Int64 = 0
    /// Capture time of the segment that last raised `highest`, and of the last in-order delivery
    /// (where a hole begins).
    var highestAt: Nanos = 0
    var inOrderAt: Nanos = 0
    /// The highest position the other side acknowledged beyond `highest` (data this capture never
    /// saw sent), and when; judged when the connection ends.
    var ackedBeyond: Int64 = 0
    var ackedBeyondAt: Nanos = 0

    mutating func start(seq: UInt32, syn: Bool) {
        started = true
        fromSYN = syn
        base = syn ? seq &+ 1 : seq
        next = 0
        segs.removeAll()
        buffered = 0
        fin = nil
        finDone = false
        highest = 0
        ackedBeyond = 0
    }

    /// Stream position of `seq`: the signed 32-bit distance from the next expected byte.
    func position(_ seq: UInt32) -> Int64 {
        let expected = base &+ UInt32(truncatingIfNeeded: next)
        return next + Int64(Int32(bitPattern: seq &- expected))
    }
}

/// A connection's entry in the sweep's queue: the connection (the entry is stale once it left
/// `conns`: `removed`) and a time no later than it could next be due. 16 bytes: a busy capture has
/// an entry or two for every open connection (a key and id made it 104).
struct TCPSweepEntry {
    var t: Nanos
    var conn: TCPConn
}

/// An entry of a deadline queue: a time no later than its subject could next be due.
protocol TCPDue {
    var t: Nanos { get }
}

extension TCPSweepEntry: TCPDue {}

/// Entries earliest first (a binary heap; equal times in any order: the sweep sorts what it finds).
/// `TCPSweepQueue` holds the connections tracked as objects, `TCPParkQueue` the parked ones.
struct TCPDueQueue<Entry: TCPDue> {
    private(set) var items: [Entry] = []
    var count: Int { items.count }
    var min: Entry? { items.first }
    /// The earliest entry's time (no copy of the entry: a sweep entry's connection is not retained to read it).
    var minTime: Nanos? { items.isEmpty ? nil : items.withUnsafeBufferPointer { $0[0].t } }

    /// Sifts through the buffer by moves and time reads: `swapAt` and `items[i].t` on the array copied
    /// entries (retaining and releasing a sweep entry's connection at every step).
    mutating func insert(_ e: Entry) {
        let t = e.t
        items.append(e)
        items.withUnsafeMutableBufferPointer { b in
            guard let base = b.baseAddress else { return }
            var i = b.count - 1
            guard i > 0, t < base[(i - 1) / 2].t else { return }
            let moving = (base + i).move()
            while i > 0 {
                let parent = (i - 1) / 2
                guard t < base[parent].t else { break }
                (base + i).moveInitialize(from: base + parent, count: 1)
                i = parent
            }
            (base + i).initialize(to: moving)
        }
    }

    /// Removes and returns the earliest entry (nil when empty).
    @discardableResult
    mutating func removeMin() -> Entry? {
        guard !items.isEmpty else { return nil }
        let last = items.removeLast()
        guard !items.isEmpty else { return last }
        return items.withUnsafeMutableBufferPointer { b -> Entry? in
            guard let base = b.baseAddress else { return nil }
            let n = b.count
            let top = base.move()
            // A hole at the root, filled by the smaller child until `last` fits.
            let t = last.t
            var i = 0
            while true {
                let l = 2 &* i &+ 1, r = l &+ 1
                guard l < n else { break }
                let m = r < n && base[r].t < base[l].t ? r : l
                guard base[m].t < t else { break }
                (base + i).moveInitialize(from: base + m, count: 1)
                i = m
            }
            (base + i).initialize(to: last)
            return top
        }
    }

    mutating func removeAll() { items.removeAll() }
}

typealias TCPSweepQueue = TCPDueQueue<TCPSweepEntry>

final class TCPConn {
    @exclusivity(unchecked) var info: TCPConnectionInfo
    @exclusivity(unchecked) var c2s = TCPHalf()
    @exclusivity(unchecked) var s2c = TCPHalf()
    @exclusivity(unchecked) var lastSeen: Nanos
    @exclusivity(unchecked) var lastFrame: FrameInfo
    /// Client SYN seen, no answer yet.
    @exclusivity(unchecked) var synPending = false
    @exclusivity(unchecked) var synReported = false
    @exclusivity(unchecked) var established = false
    @exclusivity(unchecked) var closed = false
    @exclusivity(unchecked) var closedAt: Nanos = 0
    /// The last sweep that judged it (a connection with several entries due is judged once).
    @exclusivity(unchecked) var sweptIn: UInt64 = 0
    /// First capture time, segments seen per direction, and how far each direction's acknowledgement
    /// moved from the first one seen (bytes the other direction sent): a direction never captured
    /// while the other acknowledges its data is a one-sided flow.
    @exclusivity(unchecked) var firstSeen: Nanos
    @exclusivity(unchecked) var toServerSegments = 0
    @exclusivity(unchecked) var toClientSegments = 0
    @exclusivity(unchecked) var firstAckToServer: UInt32?
    @exclusivity(unchecked) var firstAckToClient: UInt32?
    @exclusivity(unchecked) var ackAdvanceToServer: Int64 = 0
    @exclusivity(unchecked) var ackAdvanceToClient: Int64 = 0
    /// Set when the connection leaves the decoder's table (its sweep entries are then stale).
    @exclusivity(unchecked) var removed = false

    /// The decoder's table key: the two endpoints, the lower first.
    var key: FlowKey {
        let s = info.client, d = info.server
        return s < d ? FlowKey(.tcp, s, d) : FlowKey(.tcp, d, s)
    }

    init(info: TCPConnectionInfo, frame: FrameInfo, t: Nanos) {
        self.info = info
        lastFrame = frame
        lastSeen = t
        firstSeen = t
    }

    /// The earliest capture time at which a sweep could find something to do with this connection
    /// (evict it, deliver a held FIN, close it): a lower bound of what `sweepTCP` checks, `.min` when
    /// it might be due now or a sum overflows. Only packets make it earlier (a new FIN, a close, a frame
    /// stamped earlier than the last), and each of those queues the connection again; other traffic
    /// only moves it later. With `parking`, also when a `parkable` connection could be parked
    /// (`PacketOptions.tcpParkAfter` after its last packet).
    func sweepDue(_ o: PacketOptions, parking: Bool = true) -> Nanos {
        func plus(_ a: Nanos, _ b: Nanos) -> Nanos {
            let (v, o) = a.addingReportingOverflow(b)
            return o ? .min : v
        }
        if closed {
            let d = plus(closedAt, o.tcpClosedTimeout)
            if parking, o.sweepByDeadlines, let p = o.tcpParkAfter, parkable { return Swift.min(d, plus(lastSeen, p)) }
            return d
        }
        if c2s.finDone && s2c.finDone { return .min }
        var d = plus(lastSeen, o.tcpIdleTimeout)
        if c2s.fin != nil && !c2s.finDone { d = Swift.min(d, plus(c2s.finAt, o.tcpFinHoldTimeout)) }
        if s2c.fin != nil && !s2c.finDone { d = Swift.min(d, plus(s2c.finAt, o.tcpFinHoldTimeout)) }
        if parking, o.sweepByDeadlines, let p = o.tcpParkAfter, parkable { d = Swift.min(d, plus(lastSeen, p)) }
        return d
    }

    /// Counts a segment of direction `dir` and how far its acknowledgement moved.
    func note(_ dir: TCPDirection, ack: UInt32?) {
        if dir == .toServer {
            toServerSegments &+= 1
            if let a = ack {
                let first = firstAckToServer ?? a
                firstAckToServer = first
                ackAdvanceToServer = max(ackAdvanceToServer, Int64(Int32(bitPattern: a &- first)))
            }
        } else {
            toClientSegments &+= 1
            if let a = ack {
                let first = firstAckToClient ?? a
                firstAckToClient = first
                ackAdvanceToClient = max(ackAdvanceToClient, Int64(Int32(bitPattern: a &- first)))
            }
        }
    }
}

extension PacketDecoder {
    func tcp(_ src: IPAddress, _ dst: IPAddress, _ seg: Bytes, _ off: Int?, missing: Int) {
        guard let sp = seg.u16be(0), let dp = seg.u16be(2), let seq = seg.u32be(4), let ackNumber = seg.u32be(8),
              let b12 = seg.byte(12), let flags = seg.byte(13), seg.count >= 20 else {
            return truncated("tcp.truncated", "TCP header needs 20 bytes, \(seg.count) captured", off)
        }
        let hlen = Int(b12 >> 4) * 4
        guard hlen >= 20 else {
            return diag("tcp.bad_offset", .warning, "TCP data offset \(hlen) is below 20", off.map { $0 + 12 })
        }
        guard hlen <= seg.count else {
            if missing > 0 { return truncated("tcp.truncated", "TCP header of \(hlen) bytes, \(seg.count) captured", off) }
            return diag("tcp.bad_offset", .warning, "TCP data offset \(hlen) exceeds the \(seg.count)-byte segment", off.map { $0 + 12 })
        }
        counters.tcpSegments += 1
        if missing > 0 {
            diag("tcp.truncated", .info,
                 "TCP segment cut by the snap length: \(seg.count - hlen) of \(seg.count - hlen + missing) payload bytes captured", off)
        }
        let payload = seg.suffix(from: hlen)
        let s = Endpoint(src, sp), d = Endpoint(dst, dp)
        let key = s < d ? FlowKey(.tcp, s, d) : FlowKey(.tcp, d, s)
        let SYN = flags & 0x02 != 0, FIN = flags & 0x01 != 0, RST = flags & 0x04 != 0, ACK = flags & 0x10 != 0

        var conn = conns[key]
        if conn == nil, let c = unpark(key) {
            // A parked connection's packet: the same state as if it had stayed, queued by its deadlines.
            queueSweep(key, c)
            conn = c
        }
        if let c = conn, SYN, !ACK, !RST, c.info.client == s || c.closed {
            // A new SYN on a closed 4-tuple, or with another ISN: a new connection.
            let retransmittedSYN = !c.closed && c.c2s.fromSYN && c.c2s.base == seq &+ 1
            if !retransmittedSYN && (c.closed || c.c2s.fromSYN || c.c2s.sawData || c.s2c.sawData) {
                if !c.closed {
                    diag("tcp.port_reuse", .info, "new SYN on \(c.info) before it closed; starting a new connection", off)
                    giveUp(c, .toServer, &c.c2s)
                    giveUp(c, .toClient, &c.s2c)
                    out.append(.tcpEvent(frame: cur, connection: c.info, direction: .toServer, event: .closed))
                }
                removeConn(key, c)
                conn = nil
            }
        }
        let c: TCPConn
        if let existing = conn {
            c = existing
        } else {
            guard !RST else { counters.tcpIgnored += 1; return }
            if conns.count + parked.count >= max(1, options.maxConnections) { evictOldest() }
            let serverFirst = SYN && ACK
            let info = TCPConnectionInfo(id: nextConnID, client: serverFirst ? d : s, server: serverFirst ? s : d, sawSYN: SYN)
            nextConnID &+= 1
            c = TCPConn(info: info, frame: cur, t: cur.t)
            conns[key] = c
            counters.connectionsOpened += 1
            queueSweep(key, c)
        }
        if cur.t < c.lastSeen {
            // A frame stamped earlier than the last (timestamps stepping back, several interfaces):
            // the idle deadline moves earlier, so the connection is queued again at its new due time.
            c.lastSeen = cur.t
            queueSweep(key, c)
        } else {
            c.lastSeen = cur.t
        }
        c.lastFrame = cur
        let dir: TCPDirection = c.info.client == s ? .toServer : .toClient
        c.note(dir, ack: ACK ? ackNumber : nil)
        if c.closed {
            if !payload.isEmpty || FIN { counters.tcpIgnored += 1 }
            return
        }
        if flags & 0x04 != 0 {
            // RST: what is buffered is delivered (after gaps), then the connection is over.
            let refused = c.synPending && !c.established && dir == .toClient && !c.c2s.sawData && !c.s2c.sawData
            giveUp(c, .toServer, &c.c2s)
            giveUp(c, .toClient, &c.s2c)
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: refused ? .refused : .reset))
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .closed))
            c.closed = true
            c.closedAt = cur.t
            queueSweep(key, c)
            return
        }
        if dir == .toServer {
            segment(c, dir, &c.c2s, otherSawData: c.s2c.sawData, seq: seq, flags: flags, payload: payload, missing: missing, off: off)
        } else {
            segment(c, dir, &c.s2c, otherSawData: c.c2s.sawData, seq: seq, flags: flags, payload: payload, missing: missing, off: off)
        }
        if ACK {
            if dir == .toServer { acknowledged(c, .toClient, &c.s2c, ack: ackNumber) } else { acknowledged(c, .toServer, &c.c2s, ack: ackNumber) }
        }
        if !c.closed, c.c2s.finDone, c.s2c.finDone {
            c.closed = true
            c.closedAt = cur.t
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .closed))
        }
        // A FIN seen (held until its bytes come) or a close: due earlier than the entry queued before.
        if c.closed || FIN { queueSweep(key, c) }
    }

    /// One segment of direction `dir` (whose state is `h`).
    private func segment(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf, otherSawData: Bool, seq: UInt32, flags: UInt8,
                         payload: Bytes, missing: Int, off: Int?) {
        let SYN = flags & 0x02 != 0, FIN = flags & 0x01 != 0, ACK = flags & 0x10 != 0
        if SYN {
            if !h.fromSYN {
                h.start(seq: seq, syn: true)
                if dir == .toServer && !ACK {
                    c.synPending = true
                    if !c.synReported {
                        c.synReported = true
                        out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .syn))
                    }
                } else if dir == .toClient && ACK {
                    c.synPending = false
                    if !c.established {
                        c.established = true
                        out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .established))
                    }
                }
            } else if h.base != seq &+ 1 {
                diag("tcp.syn.conflict", .info, "SYN with another initial sequence number on \(c.info); ignored", off)
            }
        } else if !h.started || (!h.fromSYN && !h.sawData && h.fin == nil) {
            // Without a SYN, the sequence space is anchored on the latest segment until data flows:
            // a keep-alive (one below the next byte) picked up first must not open a phantom hole.
            h.start(seq: seq, syn: false)
        }
        let dataSeq = SYN ? seq &+ 1 : seq
        let start = h.position(dataSeq)
        let fullEnd = start + Int64(payload.count + missing)
        if !payload.isEmpty || missing > 0 {
            if !h.sawData {
                h.sawData = true
                if !c.established && otherSawData {
                    c.established = true
                    out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .established))
                }
            }
            data(c, dir, &h, start: start, payload: payload, off: off)
            if missing > 0 && start + Int64(payload.count) == h.next && fullEnd > h.next {
                // The snap length cut this in-order segment: its tail is lost for good.
                counters.tcpGaps += 1
                out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .gap))
                h.next = fullEnd
                drain(c, dir, &h)
            }
        }
        if FIN && h.fin == nil {
            h.fin = fullEnd
            h.finAt = cur.t
        }
        let top = fullEnd + (FIN ? 1 : 0)
        if top > h.highest {
            h.highest = top
            h.highestAt = cur.t
        }
        checkFin(c, dir, &h)
    }

    /// New payload at stream position `start`.
    private func data(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf, start s0: Int64, payload: Bytes, off: Int?) {
        guard !payload.isEmpty else { return }
        var start = s0
        var bytes = payload
        if start < h.next {
            let skip = h.next - start
            if skip >= Int64(bytes.count) {
                counters.tcpRetransmissions += 1
                return
            }
            bytes = bytes.suffix(from: Int(skip))
            start = h.next
        }
        if start == h.next {
            h.next += Int64(bytes.count)
            h.inOrderAt = cur.t
            out.append(.tcpData(frame: cur, connection: c.info, direction: dir, payload: bytes))
            drain(c, dir, &h)
            return
        }
        buffer(c, dir, &h, start: start, bytes: bytes, off: off)
        while h.buffered > options.tcpBufferLimit || h.segs.count > options.tcpMaxSegments, let first = h.segs.first {
            diag("tcp.reassembly.overflow", .warning,
                 "\(c.info) \(dir.rawValue): \(h.buffered) bytes wait behind a \(first.start - h.next)-byte hole (limit \(options.tcpBufferLimit)); skipping it",
                 off)
            counters.tcpGaps += 1
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .gap))
            unseen(c, &h, first.start - h.next)
            h.next = first.start
            drain(c, dir, &h)
        }
    }

    /// Inserts out-of-order bytes; where they overlap buffered bytes, the buffered (first) copy wins.
    private func buffer(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf, start: Int64, bytes: Bytes, off: Int?) {
        let end = start + Int64(bytes.count)
        // First segment that ends after `start`.
        var lo = 0, hi = h.segs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if h.segs[mid].end <= start { lo = mid + 1 } else { hi = mid }
        }
        var pieces: [TCPSegment] = []
        var cursor = start
        var i = lo
        var conflict = false
        var overlapped = false
        while i < h.segs.count, h.segs[i].start < end {
            let e = h.segs[i]
            if e.start > cursor, let piece = bytes.slice(Int(cursor - start), Int(e.start - cursor)) {
                // Copied: a slice would keep the reader's whole 1 MiB chunk alive while it waits.
                pieces.append(TCPSegment(start: cursor, data: Bytes(piece.array)))
            }
            overlapped = true
            if !conflict {
                let a = max(e.start, start), b = min(e.end, end)
                var p = a
                while p < b {
                    if e.data.byte(Int(p - e.start)) != bytes.byte(Int(p - start)) { conflict = true; break }
                    p += 1
                }
            }
            cursor = max(cursor, e.end)
            i += 1
        }
        if cursor < end, let piece = bytes.slice(Int(cursor - start), Int(end - cursor)) {
            pieces.append(TCPSegment(start: cursor, data: Bytes(piece.array)))
        }
        if overlapped { counters.tcpRetransmissions += 1 }
        if conflict {
            diag("tcp.overlap.conflict", .warning,
                 "\(c.info) \(dir.rawValue): a segment overlaps buffered bytes with different content; the first copy is kept", off)
        }
        guard !pieces.isEmpty else { return }
        // Pieces interleave with existing segments from index `lo` on: merge by start.
        var merged: [TCPSegment] = []
        merged.reserveCapacity(h.segs.count + pieces.count)
        merged.append(contentsOf: h.segs[0 ..< lo])
        var a = lo, b = 0
        while a < h.segs.count || b < pieces.count {
            if b < pieces.count && (a >= h.segs.count || pieces[b].start < h.segs[a].start) {
                merged.append(pieces[b]); b += 1
            } else {
                merged.append(h.segs[a]); a += 1
            }
        }
        let added = pieces.reduce(0) { $0 + $1.data.count }
        h.segs = merged
        h.buffered += added
        bufferedTotal += added
        if bufferedTotal > counters.maxBufferedBytes { counters.maxBufferedBytes = bufferedTotal }
    }

    /// Delivers buffered segments that have become in order.
    private func drain(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf) {
        var k = 0
        while k < h.segs.count, h.segs[k].start <= h.next {
            let sg = h.segs[k]
            if sg.end > h.next {
                out.append(.tcpData(frame: cur, connection: c.info, direction: dir,
                                    payload: sg.data.suffix(from: Int(h.next - sg.start))))
                h.next = sg.end
            }
            h.buffered -= sg.data.count
            bufferedTotal -= sg.data.count
            k += 1
        }
        if k > 0 { h.segs.removeFirst(k) }
    }

    /// The peer acknowledged up to `ack` in direction `dir`: bytes below it that are still missing
    /// were lost before the capture point (they will not come), so the hole becomes a `.gap` now
    /// instead of holding the data behind it until the buffer bound or the idle timeout.
    private func acknowledged(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf, ack: UInt32) {
        // Acknowledged beyond anything seen sent: data the capture missed (kept until the connection
        // ends, in case the bytes were only captured late). Only on a sequence space anchored by a
        // SYN or by data: a keep-alive-anchored one is one byte off.
        if h.started, h.fromSYN || h.sawData {
            let beyond = h.position(ack)
            if beyond > h.highest, beyond > h.ackedBeyond {
                h.ackedBeyond = beyond
                h.ackedBeyondAt = cur.t
            }
        }
        guard h.started, !h.segs.isEmpty || (h.fin != nil && !h.finDone) else { return }
        let a = h.position(ack)
        // Acknowledging bytes this capture never saw sent says nothing reliable.
        guard a > h.next, a <= h.highest else { return }
        while h.next < a, let first = h.segs.first {
            counters.tcpGaps += 1
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .gap))
            unseen(c, &h, min(first.start, a) - h.next)
            h.next = min(first.start, a)
            drain(c, dir, &h)
        }
        if h.segs.isEmpty, let f = h.fin, !h.finDone, h.next < f, a > h.next {
            counters.tcpGaps += 1
            out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .gap))
            unseen(c, &h, min(a, f) - h.next)
            h.next = min(a, f)
        }
        checkFin(c, dir, &h)
    }

    /// Delivers the FIN once every byte before it was delivered.
    private func checkFin(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf) {
        guard let f = h.fin, !h.finDone, h.next >= f else { return }
        h.finDone = true
        out.append(.tcpEvent(frame: cur, connection: c.info, direction: dir, event: .fin))
    }

    /// Gives up on the holes of one direction: `.gap` before each, delivering everything buffered and a held FIN.
    func giveUp(_ c: TCPConn, _ dir: TCPDirection, _ h: inout TCPHalf, frame: FrameInfo? = nil) {
        let f = frame ?? cur
        guard h.started else { return }
        while let first = h.segs.first {
            if first.start > h.next {
                counters.tcpGaps += 1
                out.append(.tcpEvent(frame: f, connection: c.info, direction: dir, event: .gap))
                unseen(c, &h, first.start - h.next, at: f.t)
                h.next = first.start
            }
            let saved = cur
            cur = f
            drain(c, dir, &h)
            cur = saved
        }
        if let fin = h.fin, !h.finDone {
            if fin > h.next {
                counters.tcpGaps += 1
                out.append(.tcpEvent(frame: f, connection: c.info, direction: dir, event: .gap))
                unseen(c, &h, fin - h.next, at: f.t)
                h.next = fin
            }
            h.finDone = true
            out.append(.tcpEvent(frame: f, connection: c.info, direction: dir, event: .fin))
        }
    }

    /// `bytes` of direction `h` skipped over without ever being captured (a hole given up on): unseen
    /// data, between the last in-order delivery and now (`at`).
    private func unseen(_ c: TCPConn, _ h: inout TCPHalf, _ bytes: Int64, at t: Nanos? = nil) {
        guard bytes > 0 else { return }
        noteUnseen(c, bytes: bytes, from: h.inOrderAt, to: t ?? cur.t)
        h.inOrderAt = t ?? cur.t
    }

    func noteUnseen(_ c: TCPConn, bytes: Int64, from: Nanos, to: Nanos) {
        let start = from == 0 ? to : from
        if var u = unseenData[c.info.id] {
            u.start = min(u.start, start)
            u.end = max(u.end, to)
            u.count = u.count.addingReportingOverflow(Int(clamping: bytes)).partialValue
            unseenData[c.info.id] = u
        } else {
            unseenData[c.info.id] = CaptureLoss(reason: .unseenData, start: start, end: to, count: Int(clamping: bytes),
                                                source: "\(c.info)")
        }
    }

    /// A connection's end: acknowledgements of data never seen sent become unseen data; a direction
    /// never captured while the other acknowledged more than a SYN or FIN of it makes the connection
    /// one-sided (an unanswered SYN acknowledges nothing, so it is not one).
    func judgeLoss(_ c: TCPConn) {
        for h in [c.c2s, c.s2c] where h.ackedBeyond > h.highest {
            noteUnseen(c, bytes: h.ackedBeyond - h.highest, from: h.highestAt, to: h.ackedBeyondAt)
        }
        c.c2s.ackedBeyond = 0
        c.s2c.ackedBeyond = 0
        guard oneSided[c.info.id] == nil else { return }
        let seen: (TCPDirection, Int64)?
        if c.toClientSegments == 0, c.toServerSegments > 0, c.ackAdvanceToServer > 1 {
            seen = (.toServer, c.ackAdvanceToServer)
        } else if c.toServerSegments == 0, c.toClientSegments > 0, c.ackAdvanceToClient > 1 {
            seen = (.toClient, c.ackAdvanceToClient)
        } else {
            seen = nil
        }
        guard let (dir, acked) = seen else { return }
        let (from, to) = dir == .toServer ? (c.info.client, c.info.server) : (c.info.server, c.info.client)
        oneSided[c.info.id] = CaptureLoss(
            reason: .oneSided, start: c.firstSeen, end: c.lastSeen, count: 0,
            source: "tcp \(from) > \(to) seen, nothing from \(to); its acknowledgements moved \(acked) bytes", flow: FlowKey(.tcp, from, to))
    }

    func removeConn(_ key: FlowKey, _ c: TCPConn) {
        judgeLoss(c)
        bufferedTotal -= c.c2s.buffered + c.s2c.buffered
        c.c2s.buffered = 0
        c.s2c.buffered = 0
        conns.removeValue(forKey: key)
        // Its sweep entries hold it until they come up: keep nothing else alive meanwhile.
        c.removed = true
        c.c2s.segs = []
        c.s2c.segs = []
    }

    /// Evicts the least recently seen eighth of the table when it is full.
    private func evictOldest() {
        unparkAll()
        let n = max(1, conns.count / 8)
        let victims = conns.sorted { ($0.value.lastSeen, $0.value.info.id) < ($1.value.lastSeen, $1.value.info.id) }.prefix(n)
        diag("tcp.table.full", .warning,
             "more than \(options.maxConnections) TCP connections tracked; evicting the \(n) least recently seen", nil)
        for (key, c) in victims { evict(key, c) }
    }

    private func evict(_ key: FlowKey, _ c: TCPConn) {
        if !c.closed {
            giveUp(c, .toServer, &c.c2s, frame: c.lastFrame)
            giveUp(c, .toClient, &c.s2c, frame: c.lastFrame)
            out.append(.tcpEvent(frame: c.lastFrame, connection: c.info, direction: .toServer, event: .idleEvicted))
        }
        removeConn(key, c)
    }

    /// Queues connection `c` (under `key`) for the sweep at the earliest time it could be due.
    func queueSweep(_ key: FlowKey, _ c: TCPConn) {
        guard options.sweepByDeadlines else { return }
        sweepQueue.insert(TCPSweepEntry(t: c.sweepDue(options), conn: c))
    }

    /// Idle, closed and FIN-holding connections whose time came. The connections looked at are those
    /// `sweepQueue` has due (each connection always has an entry no later than it could be due, see
    /// `TCPConn.sweepDue`), not every one tracked: a sweep a second over thousands of open connections
    /// was a few percent of a whole analysis. `PacketOptions.sweepByDeadlines = false` looks at every
    /// connection (the reference the tests compare with); both find the same ones.
    func sweepTCP() {
        guard !conns.isEmpty || !parked.isEmpty else { return }
        var victims: [(FlowKey, TCPConn)] = []
        var held: [(FlowKey, TCPConn)] = []
        func judge(_ key: FlowKey, _ c: TCPConn) -> Bool {
            if c.closed {
                if now &- c.closedAt >= options.tcpClosedTimeout { victims.append((key, c)); return true }
            } else if now &- c.lastSeen >= options.tcpIdleTimeout {
                victims.append((key, c))
                return true
            } else if (c.c2s.fin != nil && !c.c2s.finDone && now &- c.c2s.finAt >= options.tcpFinHoldTimeout)
                        || (c.s2c.fin != nil && !c.s2c.finDone && now &- c.s2c.finAt >= options.tcpFinHoldTimeout)
                        || (c.c2s.finDone && c.s2c.finDone) {
                held.append((key, c))
                return true
            }
            return false
        }
        if options.sweepByDeadlines {
            sweepRound &+= 1
            var again: [(FlowKey, TCPConn)] = []
            while let due = sweepQueue.minTime, due <= now, let top = sweepQueue.removeMin() {
                // Stale when the connection left the table; judged once per sweep.
                let c = top.conn
                guard !c.removed, c.sweptIn != sweepRound else { continue }
                c.sweptIn = sweepRound
                let key = c.key
                if !judge(key, c) {
                    // Quiet long enough with nothing held: parked (see TCPParking.swift).
                    if let p = options.tcpParkAfter, now &- c.lastSeen >= p, c.parkable, park(key, c) { continue }
                    again.append((key, c))
                }
            }
            // Parked connections whose idle or close deadline came: back as objects, judged the same way.
            while let due = parkQueue.minTime, due <= now, let top = parkQueue.removeMin() {
                guard let record = parked[top.key], TCPConn.parkDue(record) == top.t else { continue }
                parked[top.key] = nil
                let key = top.key.flowKey
                let c = TCPConn(parked: record, key: key)
                conns[key] = c
                c.sweptIn = sweepRound
                if !judge(key, c) { again.append((key, c)) }
            }
            for (key, c) in again { queueSweep(key, c) }
        } else {
            for (key, c) in conns { _ = judge(key, c) }
        }
        // In connection order, not the table's hash order (which changes from run to run): what these emit
        // at one tick must come out the same way every time.
        held.sort { $0.1.info.id < $1.1.info.id }
        for (key, c) in held {
            // FINs held for missing bytes that did not come.
            if let _ = c.c2s.fin, !c.c2s.finDone, now &- c.c2s.finAt >= options.tcpFinHoldTimeout {
                giveUp(c, .toServer, &c.c2s, frame: c.lastFrame)
            }
            if let _ = c.s2c.fin, !c.s2c.finDone, now &- c.s2c.finAt >= options.tcpFinHoldTimeout {
                giveUp(c, .toClient, &c.s2c, frame: c.lastFrame)
            }
            if c.c2s.finDone && c.s2c.finDone {
                c.closed = true
                c.closedAt = now
                out.append(.tcpEvent(frame: c.lastFrame, connection: c.info, direction: .toServer, event: .closed))
            }
            queueSweep(key, c)
        }
        victims.sort { $0.1.info.id < $1.1.info.id }
        for (key, c) in victims { evict(key, c) }
    }

    func finishTCP() {
        // A parked connection holds nothing to deliver (no bytes behind a hole, no FIN waiting): only
        // its losses are judged, one at a time, not all made objects at once.
        for (pk, record) in parked { judgeLoss(TCPConn(parked: record, key: pk.flowKey)) }
        parked.removeAll()
        parkQueue.removeAll()
        let all = conns.sorted { $0.value.info.id < $1.value.info.id }
        for (_, c) in all {
            if !c.closed {
                giveUp(c, .toServer, &c.c2s, frame: c.lastFrame)
                giveUp(c, .toClient, &c.s2c, frame: c.lastFrame)
            }
            judgeLoss(c)
        }
        conns.removeAll()
        sweepQueue.removeAll()
        bufferedTotal = 0
    }
}
