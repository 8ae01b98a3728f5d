/// A value a spill file's table keeps as bytes instead of a box (`PackedBoxTable`).
protocol BoxPacking: Hashable, Sendable {
    static func pack(_ v: Self, into out: inout [UInt8])
    /// The value packed at `p` (moved past it); nil when the bytes do not hold one.
    static func unpack(_ b: [UInt8], _ p: inout Int) -> Self?
}

/// The boxes of a spill file's hint or flow table (issue 13), kept as bytes once the file is written:
/// a long capture's spill names tens of thousands of hints and flows, and a box of a hint takes 160
/// bytes of heap where its bytes take about 30. A box is made when a reader asks for its index
/// (`box(_:)`), and the last ones made are kept in a small cache by index, so events read close
/// together share their boxes (and equal ones compare by identity); a box made again after it left
/// the cache is equal by value (`Shared` compares by value when not by identity).
/// Not locked: its list calls it under its own lock.
struct PackedBoxTable<V: BoxPacking> {
    private var bytes: [UInt8] = []
    /// Where each value's bytes end (its start: the end before it).
    private var ends: [UInt32] = []
    private var cacheIDs: [UInt32]
    private var cacheBoxes: [Shared<V>?]
    private let mask: Int

    /// Most boxes the cache keeps (a power of two). 4,096, not 8,192: a box of a hint with its name
    /// takes about 270 bytes, and the two tables' caches were 3.5 MB at the 1 GB mDNS file's peak (issue 13).
    static var cacheSize: Int { 1 << 12 }

    /// The values of `boxes` in order (index `k` of the table: `box(UInt32(k + 1))`); nil when their
    /// bytes do not fit 32-bit offsets (then the boxes stay as they are).
    init?(_ boxes: [Shared<V>]) {
        var all: [UInt8] = []
        var ends: [UInt32] = []
        ends.reserveCapacity(boxes.count)
        for b in boxes {
            V.pack(b.value, into: &all)
            guard all.count < Int(UInt32.max) else { return nil }
            ends.append(UInt32(truncatingIfNeeded: all.count))
        }
        self.ends = ends
        var exact: [UInt8] = []
        exact.reserveCapacity(all.count)
        exact.append(contentsOf: all)
        bytes = exact
        var size = 1
        while size < Swift.min(boxes.count, Self.cacheSize) { size <<= 1 }
        mask = size - 1
        cacheIDs = Array(repeating: 0, count: size)
        cacheBoxes = Array(repeating: nil, count: size)
    }

    var count: Int { ends.count }

    /// Boxes the cache holds (tests).
    var cachedCount: Int { cacheBoxes.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// Lets go of the cached boxes (boxes made later are equal by value to those made before).
    mutating func dropCache() {
        for i in cacheIDs.indices {
            cacheIDs[i] = 0
            cacheBoxes[i] = nil
        }
    }

    /// The box of `id` (1 + the value's index; nil for 0 or an index not held).
    mutating func box(_ id: UInt32) -> Shared<V>? {
        let k = Int(id) &- 1
        guard k >= 0, k < ends.count else { return nil }
        let slot = Int(id) & mask
        if cacheIDs[slot] == id, let b = cacheBoxes[slot] { return b }
        var p = k == 0 ? 0 : Int(ends[k - 1])
        guard let v = V.unpack(bytes, &p), p == Int(ends[k]) else { return nil }
        let b = Shared(v)
        cacheIDs[slot] = id
        cacheBoxes[slot] = b
        return b
    }
}

/// Little helpers for the packed forms (`LEB128` numbers, strings as length and UTF-8).
enum BoxBytes {
    static func put(_ v: UInt64, _ out: inout [UInt8]) { LEB128.append(v, to: &out) }

    static func get(_ b: [UInt8], _ p: inout Int) -> UInt64? {
        guard p < b.count else { return nil }
        return LEB128.read(b, &p)
    }

    static func putString(_ s: String, _ out: inout [UInt8]) {
        put(UInt64(s.utf8.count), &out)
        out.append(contentsOf: s.utf8)
    }

    static func getString(_ b: [UInt8], _ p: inout Int) -> String? {
        guard let n = get(b, &p), n <= UInt64(b.count - p) else { return nil }
        let end = p + Int(n)
        let s = String(decoding: b[p ..< end], as: UTF8.self)
        p = end
        return s
    }

    static func putAddress(_ a: IPAddress, _ out: inout [UInt8]) {
        switch a {
        case .v4(let v):
            out.append(0)
            put(UInt64(v), &out)
        case .v6(let hi, let lo, let scope):
            out.append(scope == nil ? 1 : 2)
            put(hi, &out)
            put(lo, &out)
            if let scope { putString(scope, &out) }
        }
    }

    static func getAddress(_ b: [UInt8], _ p: inout Int) -> IPAddress? {
        guard p < b.count else { return nil }
        let tag = b[p]
        p += 1
        switch tag {
        case 0:
            guard let v = get(b, &p), let v4 = UInt32(exactly: v) else { return nil }
            return .v4(v4)
        case 1, 2:
            guard let hi = get(b, &p), let lo = get(b, &p) else { return nil }
            if tag == 1 { return .v6(hi: hi, lo: lo, scope: nil) }
            guard let scope = getString(b, &p) else { return nil }
            return .v6(hi: hi, lo: lo, scope: scope)
        default:
            return nil
        }
    }

    static func putEndpoint(_ e: Endpoint, _ out: inout [UInt8]) {
        putAddress(e.address, &out)
        put(UInt64(e.port), &out)
    }

    static func getEndpoint(_ b: [UInt8], _ p: inout Int) -> Endpoint? {
        guard let a = getAddress(b, &p), let v = get(b, &p), let port = UInt16(exactly: v) else { return nil }
        return Endpoint(a, port)
    }
}

extension PeerHint: BoxPacking {
    static func pack(_ h: PeerHint, into out: inout [UInt8]) {
        var flags: UInt8 = 0
        if h.peerID != nil { flags |= 1 }
        if h.participantID != nil { flags |= 2 }
        if h.displayName != nil { flags |= 4 }
        if h.endpoint != nil { flags |= 8 }
        if h.address != nil { flags |= 16 }
        out.append(flags)
        if let v = h.peerID { BoxBytes.put(v, &out) }
        if let v = h.participantID { BoxBytes.put(UInt64(v), &out) }
        if let v = h.displayName { BoxBytes.putString(v, &out) }
        if let v = h.endpoint { BoxBytes.putEndpoint(v, &out) }
        if let v = h.address { BoxBytes.putAddress(v, &out) }
    }

    static func unpack(_ b: [UInt8], _ p: inout Int) -> PeerHint? {
        guard p < b.count else { return nil }
        let flags = b[p]
        p += 1
        guard flags < 32 else { return nil }
        // Field by field as packed (the initialiser would derive fields left out).
        var h = PeerHint()
        if flags & 1 != 0 {
            guard let v = BoxBytes.get(b, &p) else { return nil }
            h.peerID = v
        }
        if flags & 2 != 0 {
            guard let v = BoxBytes.get(b, &p), let v32 = UInt32(exactly: v) else { return nil }
            h.participantID = v32
        }
        if flags & 4 != 0 {
            guard let v = BoxBytes.getString(b, &p) else { return nil }
            h.displayName = v
        }
        if flags & 8 != 0 {
            guard let v = BoxBytes.getEndpoint(b, &p) else { return nil }
            h.endpoint = v
        }
        if flags & 16 != 0 {
            guard let v = BoxBytes.getAddress(b, &p) else { return nil }
            h.address = v
        }
        return h
    }
}

extension FlowKey: BoxPacking {
    static func pack(_ f: FlowKey, into out: inout [UInt8]) {
        out.append(f.proto == .udp ? 0 : 1)
        BoxBytes.putEndpoint(f.src, &out)
        BoxBytes.putEndpoint(f.dst, &out)
    }

    static func unpack(_ b: [UInt8], _ p: inout Int) -> FlowKey? {
        guard p < b.count, b[p] <= 1 else { return nil }
        let proto: TransportProtocol = b[p] == 0 ? .udp : .tcp
        p += 1
        guard let src = BoxBytes.getEndpoint(b, &p), let dst = BoxBytes.getEndpoint(b, &p) else { return nil }
        return FlowKey(proto, src, dst)
    }
}
