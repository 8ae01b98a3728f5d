import PeerscopeCore

// Parked TCP connections (issue 13). A busy capture keeps thousands of connections open that are
// quiet between their packets; as objects each cost about 480 bytes plus a 96-byte slot of the
// table. A connection with nothing held (no bytes behind a hole, no FIN waiting for its bytes) and
// no packet for `PacketOptions.tcpParkAfter` is parked: its whole state is written as a compact
// record (about 100 bytes) under a 16-byte key, and the object goes. Its next packet, its idle or
// close deadline or a full table makes the same object state again from the record, so it gives
// the same units as if it had stayed (the tests compare with parking off); at the end of input only
// its losses are judged (it holds nothing to deliver). Only connections whose ends are both IPv4
// park (the key packs them); others stay objects. Costs CPU: a quiet connection's packet makes an
// object and its sweep entry a record again (`tcpParkAfter` later).

/// A parked connection's table key: the decoder's `FlowKey` (two IPv4 endpoints, the lower first)
/// packed as address << 16 | port.
struct TCPParkKey: Hashable {
    var a: UInt64
    var b: UInt64

    init?(_ key: FlowKey) {
        guard key.proto == .tcp, case .v4(let sa) = key.src.address, case .v4(let da) = key.dst.address else { return nil }
        a = UInt64(sa) << 16 | UInt64(key.src.port)
        b = UInt64(da) << 16 | UInt64(key.dst.port)
    }

    var flowKey: FlowKey {
        FlowKey(.tcp, Endpoint(.v4(UInt32(truncatingIfNeeded: a >> 16)), UInt16(truncatingIfNeeded: a)),
                Endpoint(.v4(UInt32(truncatingIfNeeded: b >> 16)), UInt16(truncatingIfNeeded: b)))
    }
}

/// A parked connection's deadline (its idle or close timeout). Stale once the record under `key`
/// has another deadline (it came back, and maybe parked again) or is gone. 24 bytes: a busy capture
/// has an entry or two for every parked connection.
struct TCPParkEntry: TCPDue {
    var t: Nanos
    var key: TCPParkKey
}

typealias TCPParkQueue = TCPDueQueue<TCPParkEntry>

/// Variable-length integers (LEB128; signed ones zigzag-coded) of a parked record.
struct TCPParkWriter {
    var out: [UInt8] = []

    mutating func u(_ v: UInt64) { LEB128.append(v, to: &out) }

    mutating func i(_ v: Int64) { u(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
}

struct TCPParkReader {
    let bytes: [UInt8]
    var p = 0

    /// The next value (0 past the end: the records are the decoder's own, never cut).
    mutating func u() -> UInt64 { LEB128.read(bytes, &p) }

    mutating func i() -> Int64 {
        let z = u()
        return Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
    }
}

extension TCPConn {
    /// Whether the connection could be parked as it is: both ends IPv4, nothing buffered, no FIN
    /// waiting for its bytes, not both FINs delivered before the close (the sweep closes those).
    var parkable: Bool {
        guard !removed, c2s.segs.isEmpty, s2c.segs.isEmpty,
              c2s.fin == nil || c2s.finDone, s2c.fin == nil || s2c.finDone,
              closed || !(c2s.finDone && s2c.finDone),
              info.client.address.isV4, info.server.address.isV4 else { return false }
        return true
    }

    /// The whole state as a record starting with `due` (`parkable` connections only: the buffered
    /// segments are not written), written in `w` (emptied first; its room is kept for the next one).
    func parkRecord(due: Nanos, in w: inout TCPParkWriter) -> [UInt8] {
        w.out.removeAll(keepingCapacity: true)
        w.i(due)
        w.u(info.id)
        var f: UInt64 = info.client < info.server ? 1 : 0
        if info.sawSYN { f |= 2 }
        if synPending { f |= 4 }
        if synReported { f |= 8 }
        if established { f |= 16 }
        if closed { f |= 32 }
        if firstAckToServer != nil { f |= 64 }
        if firstAckToClient != nil { f |= 128 }
        w.u(f)
        let t = lastFrame.t
        w.i(Int64(lastFrame.input))
        w.u(lastFrame.number)
        w.i(t)
        w.i(Int64(lastFrame.capturedLength))
        w.i(Int64(lastFrame.originalLength))
        w.u(UInt64(lastFrame.linkType))
        if let name = lastFrame.interfaceName {
            w.u(UInt64(name.utf8.count) + 1)
            w.out.append(contentsOf: name.utf8)
        } else {
            w.u(0)
        }
        // Times as distances from the last frame's; the zero ones (never set) only as a bit.
        var zero: UInt64 = 0
        func mark(_ v: Nanos, _ bit: UInt64) { if v == 0 { zero |= bit } }
        mark(lastSeen, 1); mark(closedAt, 2); mark(firstSeen, 4)
        mark(c2s.finAt, 8); mark(c2s.highestAt, 16); mark(c2s.inOrderAt, 32); mark(c2s.ackedBeyondAt, 64)
        mark(s2c.finAt, 128); mark(s2c.highestAt, 256); mark(s2c.inOrderAt, 512); mark(s2c.ackedBeyondAt, 1024)
        w.u(zero)
        func time(_ v: Nanos) { if v != 0 { w.i(v &- t) } }
        time(lastSeen); time(closedAt); time(firstSeen)
        time(c2s.finAt); time(c2s.highestAt); time(c2s.inOrderAt); time(c2s.ackedBeyondAt)
        time(s2c.finAt); time(s2c.highestAt); time(s2c.inOrderAt); time(s2c.ackedBeyondAt)
        w.i(Int64(toServerSegments))
        w.i(Int64(toClientSegments))
        if let a = firstAckToServer { w.u(UInt64(a)) }
        if let a = firstAckToClient { w.u(UInt64(a)) }
        w.i(ackAdvanceToServer)
        w.i(ackAdvanceToClient)
        func half(_ h: TCPHalf) {
            var hf: UInt64 = h.started ? 1 : 0
            if h.fromSYN { hf |= 2 }
            if h.fin != nil { hf |= 4 }
            if h.finDone { hf |= 8 }
            if h.sawData { hf |= 16 }
            w.u(hf)
            w.u(UInt64(h.base))
            w.i(h.next)
            if let fin = h.fin { w.i(fin) }
            w.i(h.highest)
            w.i(h.ackedBeyond)
        }
        half(c2s)
        half(s2c)
        // An exactly sized copy: the record is what stays.
        return [UInt8](unsafeUninitializedCapacity: w.out.count) { buffer, n in
            n = buffer.initialize(from: w.out).1
        }
    }

    /// The deadline a record starts with.
    static func parkDue(_ record: [UInt8]) -> Nanos {
        var r = TCPParkReader(bytes: record)
        return r.i()
    }

    /// The connection `parkRecord` wrote, under the decoder's table key `key`.
    convenience init(parked record: [UInt8], key: FlowKey) {
        var r = TCPParkReader(bytes: record)
        _ = r.i()
        let id = r.u()
        let f = r.u()
        // The key holds the lower endpoint first.
        let (client, server) = f & 1 != 0 ? (key.src, key.dst) : (key.dst, key.src)
        let input = Int(truncatingIfNeeded: r.i())
        let number = r.u()
        let t = r.i()
        let captured = Int(truncatingIfNeeded: r.i())
        let original = Int(truncatingIfNeeded: r.i())
        let linkType = UInt32(truncatingIfNeeded: r.u())
        let nameCount = Int(truncatingIfNeeded: r.u())
        var name: String?
        if nameCount > 0 {
            let end = Swift.min(record.count, r.p + nameCount - 1)
            name = String(decoding: record[r.p ..< end], as: UTF8.self)
            r.p = end
        }
        let frame = FrameInfo(input: input, number: number, t: t, capturedLength: captured, originalLength: original,
                              linkType: linkType, interfaceName: name)
        self.init(info: TCPConnectionInfo(id: id, client: client, server: server, sawSYN: f & 2 != 0), frame: frame, t: t)
        synPending = f & 4 != 0
        synReported = f & 8 != 0
        established = f & 16 != 0
        closed = f & 32 != 0
        let zero = r.u()
        func time(_ bit: UInt64) -> Nanos { zero & bit != 0 ? 0 : t &+ r.i() }
        lastSeen = time(1)
        closedAt = time(2)
        firstSeen = time(4)
        c2s.finAt = time(8); c2s.highestAt = time(16); c2s.inOrderAt = time(32); c2s.ackedBeyondAt = time(64)
        s2c.finAt = time(128); s2c.highestAt = time(256); s2c.inOrderAt = time(512); s2c.ackedBeyondAt = time(1024)
        toServerSegments = Int(truncatingIfNeeded: r.i())
        toClientSegments = Int(truncatingIfNeeded: r.i())
        firstAckToServer = f & 64 != 0 ? UInt32(truncatingIfNeeded: r.u()) : nil
        firstAckToClient = f & 128 != 0 ? UInt32(truncatingIfNeeded: r.u()) : nil
        ackAdvanceToServer = r.i()
        ackAdvanceToClient = r.i()
        func half(_ h: inout TCPHalf) {
            let hf = r.u()
            h.started = hf & 1 != 0
            h.fromSYN = hf & 2 != 0
            h.finDone = hf & 8 != 0
            h.sawData = hf & 16 != 0
            h.base = UInt32(truncatingIfNeeded: r.u())
            h.next = r.i()
            if hf & 4 != 0 { h.fin = r.i() }
            h.highest = r.i()
            h.ackedBeyond = r.i()
        }
        half(&c2s)
        half(&s2c)
    }
}

extension PacketDecoder {
    /// Parks connection `c` (tracked under `key`, `parkable`, its deadline later than now): its record
    /// replaces it in the table, with an entry of its own deadline.
    func park(_ key: FlowKey, _ c: TCPConn) -> Bool {
        guard let pk = TCPParkKey(key) else { return false }
        let due = c.sweepDue(options, parking: false)
        guard due > now else { return false }
        parked[pk] = c.parkRecord(due: due, in: &parkWriter)
        parkQueue.insert(TCPParkEntry(t: due, key: pk))
        conns.removeValue(forKey: key)
        // Its other sweep entries (rare: a FIN's, a close's) are stale now.
        c.removed = true
        return true
    }

    /// The parked connection under `key`, back in the table as an object (nil when none is parked there).
    func unpark(_ key: FlowKey) -> TCPConn? {
        guard !parked.isEmpty, let pk = TCPParkKey(key), let record = parked.removeValue(forKey: pk) else { return nil }
        let c = TCPConn(parked: record, key: key)
        conns[key] = c
        return c
    }

    /// Every parked connection back in the table, each queued for the sweep (a full table chooses
    /// what to evict among all connections).
    func unparkAll() {
        guard !parked.isEmpty else { return }
        for (pk, record) in parked {
            let key = pk.flowKey
            let c = TCPConn(parked: record, key: key)
            conns[key] = c
            queueSweep(key, c)
        }
        parked.removeAll()
        parkQueue.removeAll()
    }

    /// Connections parked now.
    public var parkedConnections: Int { parked.count }
}
