/// A message's fields that can write themselves as JSON, straight into the output bytes: what a
/// plugin hands `PluginContext.message(_:writing:)` on a hot path (mDNS), instead of building a
/// `[(String, JSONValue)]` tree per message. `fields` is the reference: the bytes written must be
/// those of `JSONValue.object(fields)`'s members (`DecodeOutputTests` checks it on every sample).
public protocol MessageFieldsWriter: Sendable {
    /// The fields as `DecodedMessage.fields` lists them (tests, the JSON tree).
    var fields: [(String, JSONValue)] { get }
    /// The same members written into `out`, each as `,"key":value` (a leading comma before each).
    func writeMembers(to out: inout JSONBytes)
    /// Bytes that decide the members completely (with the writer's type): a writer that has them lets
    /// `peerscope decode` write a repeated message's members once and copy them afterwards
    /// (`MessageBodyCache`). nil (the default): written every time.
    var cacheKey: Bytes? { get }
    /// `ByteHash.hash` of `cacheKey`'s bytes when the writer has it already (the mDNS decoder hashed the
    /// payload for its own fast path): a cache on the default hash then does not hash the key again.
    /// nil (the default): the cache hashes the key.
    var cacheKeyHash: UInt64? { get }
}

extension MessageFieldsWriter {
    public var cacheKey: Bytes? { nil }
    public var cacheKeyHash: UInt64? { nil }
}

/// A message's field list built only when it is written: on `peerscope decode`'s writer thread, not on
/// the decoding thread, and never when nobody asked for messages. `make` captures values only.
public struct DeferredFields: MessageFieldsWriter {
    let make: @Sendable () -> [(String, JSONValue)]

    public init(_ make: @escaping @Sendable () -> [(String, JSONValue)]) { self.make = make }

    public var fields: [(String, JSONValue)] { make() }

    /// The members as a field list writes them (`DecodedMessage.writeJSONLine`).
    public func writeMembers(to out: inout JSONBytes) { out.members(make()) }
}

/// `peerscope decode`'s memory of members already written: mDNS refreshes repeat byte for byte, so
/// the members of a message whose writer names its `cacheKey` are written once and, for every later
/// message of the same writer type and the same key bytes, copied. A hit compares the key bytes in
/// full (the hash only finds candidates), so what is copied is what writing would give.
///
/// Bounded by what repeats lately, not by the capture's length: an entry not used for `idle` of
/// capture time (the message's frame time) is forgotten, every `sweepEvery` of capture time, as the
/// mDNS decoder forgets the responses its refreshes stop repeating. Past `limit` bytes held (a flood
/// of distinct keys within `idle`), it starts again empty. Forgetting only costs writing again.
public struct MessageBodyCache {
    struct Entry {
        var type: ObjectIdentifier
        var key: [UInt8]
        var body: [UInt8]
        /// The latest capture time the entry was written or copied at.
        var lastUsed: Nanos
    }

    public static let defaultLimit = 32 << 20
    /// Entries not used for this long (capture time) are forgotten: mDNS hosts refresh well within it.
    public static let defaultIdle: Nanos = 300 * CaptureTime.second
    /// How often (capture time) the table is swept for idle entries.
    public static let sweepEvery: Nanos = 10 * CaptureTime.second
    public let limit: Int
    /// nil: entries are forgotten only past `limit` (for tests comparing with the unbounded table).
    public let idle: Nanos?
    private let hash: (UnsafeRawBufferPointer) -> UInt64
    /// `hash` is `ByteHash.hash`: a writer's `cacheKeyHash` is taken as the key's hash.
    private let takesWriterHash: Bool
    private var table: [UInt64: [Entry]] = [:]
    private var nextSweep: Nanos = .min
    /// Key and body bytes held, and entries.
    public private(set) var held = 0
    public private(set) var count = 0
    public private(set) var hits = 0
    public private(set) var misses = 0

    /// On the default hash (`ByteHash.hash`; a writer's `cacheKeyHash` is used when it has one).
    public init(limit: Int = MessageBodyCache.defaultLimit, idle: Nanos? = MessageBodyCache.defaultIdle) {
        self.limit = limit
        self.idle = idle
        self.hash = MessageBodyCache.hash
        takesWriterHash = true
    }

    /// `hash` may be replaced to test collisions (every key on one hash must still write its own members);
    /// every key is then hashed with it (writers' `cacheKeyHash` is not used).
    public init(limit: Int = MessageBodyCache.defaultLimit, idle: Nanos? = MessageBodyCache.defaultIdle,
                hash: @escaping (UnsafeRawBufferPointer) -> UInt64) {
        self.limit = limit
        self.idle = idle
        self.hash = hash
        takesWriterHash = false
    }

    /// Writes `writer`'s members into `out` for a message captured at `t`: copied when the same type
    /// and key were written before.
    public mutating func writeMembers(_ writer: any MessageFieldsWriter, t: Nanos, to out: inout JSONBytes) {
        guard let key = writer.cacheKey else { return writer.writeMembers(to: &out) }
        if t >= nextSweep { sweep(t) }
        let type = ObjectIdentifier(Swift.type(of: writer))
        let h = takesWriterHash ? writer.cacheKeyHash ?? key.withUnsafeBytes { hash($0) } : key.withUnsafeBytes { hash($0) }
        // The entry's time is set after `entries` is gone: set while that copy of the list was alive, it
        // copied the whole list (and retained each entry's buffers) on every hit.
        var found = -1, touch = false
        if let entries = table[h], let i = entries.firstIndex(where: { $0.type == type && key.same(as: $0.key) }) {
            hits &+= 1
            out.bytes.append(contentsOf: entries[i].body)
            found = i
            touch = t > entries[i].lastUsed
        }
        if found >= 0 {
            if touch { table[h]?[found].lastUsed = t }
            return
        }
        misses &+= 1
        let start = out.count
        writer.writeMembers(to: &out)
        let body = Array(out.bytes[start...])
        let size = key.count &+ body.count
        if held &+ size > limit {
            table.removeAll()
            held = 0
            count = 0
        }
        guard size <= limit else { return }
        table[h, default: []].append(Entry(type: type, key: key.array, body: body, lastUsed: t))
        held &+= size
        count &+= 1
    }

    /// Forgets the entries not used since `t - idle`; the next sweep comes `sweepEvery` later.
    private mutating func sweep(_ t: Nanos) {
        let (next, over) = t.addingReportingOverflow(Self.sweepEvery)
        nextSweep = over ? .max : next
        guard let idle, !table.isEmpty else { return }
        let (cutoff, under) = t.subtractingReportingOverflow(idle)
        guard !under else { return }
        // Visits every bucket but rewrites only those holding an idle entry (most hold none).
        var stale: [UInt64] = []
        for i in table.indices where table.values[i].contains(where: { $0.lastUsed < cutoff }) { stale.append(table.keys[i]) }
        for h in stale {
            guard let entries = table.removeValue(forKey: h) else { continue }
            var kept: [Entry] = []
            for e in entries {
                if e.lastUsed >= cutoff {
                    kept.append(e)
                } else {
                    held &-= e.key.count &+ e.body.count
                    count &-= 1
                }
            }
            if !kept.isEmpty { table[h] = kept }
        }
    }

    /// The default hash (`ByteHash.hash`).
    public static func hash(_ raw: UnsafeRawBufferPointer) -> UInt64 { ByteHash.hash(raw) }
}

/// Compact JSON written into one growing byte buffer: keys from static strings, numbers without
/// Foundation or `String`, strings escaped as `JSONValue` escapes them. `peerscope decode` writes every
/// message into one of these, reused from message to message.
public struct JSONBytes {
    public var bytes: [UInt8]

    public init(capacity: Int = 1 << 16) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always) public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// `,"key":` (the key must need no escaping: plain ASCII names).
    @inline(__always) public mutating func key(_ k: StaticString) {
        bytes.append(0x2C)
        bytes.append(0x22)
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
        bytes.append(0x3A)
    }

    /// `"key":` without the comma: the first member of an object.
    @inline(__always) public mutating func firstKey(_ k: StaticString) {
        bytes.append(0x22)
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
        bytes.append(0x3A)
    }

    /// A static string value (plain ASCII): `"value"`.
    @inline(__always) public mutating func literal(_ s: StaticString) {
        bytes.append(0x22)
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
    }

    @inline(__always) public mutating func string(_ s: String) { JSONValue.escape(s, into: &bytes) }

    /// A string from UTF-8 bytes (valid UTF-8, e.g. plain ASCII), escaped as `string(_:)` escapes it.
    @inline(__always) public mutating func string(utf8 buf: UnsafeBufferPointer<UInt8>) {
        JSONValue.escape(utf8: buf, into: &bytes)
    }

    public mutating func uint(_ v: UInt64) { JSONValue.appendDecimal(v, to: &bytes) }

    public mutating func int(_ v: Int64) { JSONValue.appendInt(v, to: &bytes) }

    public mutating func bool(_ b: Bool) {
        if b {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65] as [UInt8])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65] as [UInt8])
        }
    }

    /// `v` as `digits` hex digits, zero-padded and quoted (`"00ab"`; `"0x00ab"` with `prefix0x`): the bytes of
    /// `.string` of a zero-padded `String(v, radix: 16, uppercase:)` when `v` fits in `digits` digits.
    public mutating func fixedHex(_ v: UInt64, digits: Int, uppercase: Bool = false, prefix0x: Bool = false) {
        bytes.append(0x22)
        if prefix0x {
            bytes.append(0x30)
            bytes.append(0x78)
        }
        var shift = digits &* 4
        while shift > 0 {
            shift &-= 4
            let d = UInt8(truncatingIfNeeded: (v >> UInt64(shift)) & 0xF)
            bytes.append(uppercase && d >= 10 ? 0x37 &+ d : Bytes.hexDigit(d))
        }
        bytes.append(0x22)
    }

    /// `b.hex` quoted (lower-case hex needs no escaping), without building the string.
    public mutating func hex(_ b: Bytes) {
        bytes.append(0x22)
        b.withUnsafeBytes { raw in
            for x in raw {
                bytes.append(Bytes.hexDigit(x >> 4))
                bytes.append(Bytes.hexDigit(x & 0xF))
            }
        }
        bytes.append(0x22)
    }

    /// `JSONValue.write(to:indent: nil, level: 0)` of any value (the rare members without a writer of their own).
    public mutating func value(_ v: JSONValue) { v.write(to: &bytes, indent: nil, level: 0) }

    /// A field list's members, each as `,"key":value` (a message line's members after its head).
    public mutating func members(_ fields: [(String, JSONValue)]) {
        for (k, v) in fields {
            byte(0x2C)
            string(k)
            byte(0x3A)
            value(v)
        }
    }

    /// An address as `IPAddress.description` spells it, quoted (without building a string, unless
    /// an IPv6 address has a scope).
    public mutating func address(_ a: IPAddress) {
        switch a {
        case .v4(let v):
            bytes.append(0x22)
            dottedQuad(v)
            bytes.append(0x22)
        case .v6(let hi, let lo, nil):
            bytes.append(0x22)
            groups(hi, lo)
            bytes.append(0x22)
        case .v6:
            string(a.description)
        }
    }

    /// An endpoint as `Endpoint.description` spells it, quoted: `1.2.3.4:5353`, `[fe80::1]:5353`.
    public mutating func endpoint(_ e: Endpoint) {
        switch e.address {
        case .v4(let v):
            bytes.append(0x22)
            dottedQuad(v)
        case .v6(let hi, let lo, nil):
            bytes.append(0x22)
            bytes.append(0x5B)
            groups(hi, lo)
            bytes.append(0x5D)
        case .v6:
            return string(e.description)
        }
        bytes.append(0x3A)
        uint(UInt64(e.port))
        bytes.append(0x22)
    }

    private mutating func groups(_ hi: UInt64, _ lo: UInt64) { IPAddress.appendIPv6Groups(hi, lo, to: &bytes) }

    /// The dotted quad as `IPAddress.description` writes it (one writer of it: `IPAddress.writeV4`).
    private mutating func dottedQuad(_ v: UInt32) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 15) { buf in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[..<IPAddress.writeV4(v, into: buf, at: 0)]))
        }
    }
}

extension DecodedMessage {
    /// `json(includeInput:)` as compact JSON text and a newline, appended straight to `out`: the same bytes
    /// as `json(includeInput:).write(to:indent: nil, level: 0)`, without building the object first
    /// (`peerscope decode` writes one per message). A message made with a `MessageFieldsWriter` writes
    /// its fields itself; the others write their field list.
    public func writeJSONLine(to out: inout JSONBytes, includeInput: Bool) {
        writeHead(to: &out, includeInput: includeInput)
        if let writer {
            writer.writeMembers(to: &out)
        } else {
            writeFieldList(to: &out)
        }
        out.byte(0x7D)
        out.byte(0x0A)
    }

    /// The same line, a writer's members copied from `cache` when the same members were written before
    /// (`MessageBodyCache`): the same bytes.
    public func writeJSONLine(to out: inout JSONBytes, includeInput: Bool, cache: inout MessageBodyCache) {
        writeHead(to: &out, includeInput: includeInput)
        if let writer {
            cache.writeMembers(writer, t: frame.t, to: &out)
        } else {
            writeFieldList(to: &out)
        }
        out.byte(0x7D)
        out.byte(0x0A)
    }

    /// `{` and the members every message has: input, frame, time, plugin, type, the flow.
    private func writeHead(to out: inout JSONBytes, includeInput: Bool) {
        out.byte(0x7B)
        if includeInput {
            out.firstKey("input")
            out.int(Int64(frame.input))
            out.key("frame")
        } else {
            out.firstKey("frame")
        }
        out.uint(frame.number)
        out.key("t")
        out.int(frame.t)
        out.key("plugin")
        out.string(plugin)
        out.key("type")
        out.string(type)
        if let flow {
            out.key("proto")
            out.literal(flow.proto == .udp ? "udp" : "tcp")
            out.key("src")
            out.endpoint(flow.src)
            out.key("dst")
            out.endpoint(flow.dst)
        }
    }

    private func writeFieldList(to out: inout JSONBytes) { out.members(fields) }

    /// The same line appended to a plain byte array.
    public func writeJSONLine(to out: inout [UInt8], includeInput: Bool) {
        var b = JSONBytes(capacity: 0)
        swap(&b.bytes, &out)
        writeJSONLine(to: &b, includeInput: includeInput)
        swap(&b.bytes, &out)
    }

    /// The same line appended to a plain byte array, members copied from `cache` when they repeat.
    public func writeJSONLine(to out: inout [UInt8], includeInput: Bool, cache: inout MessageBodyCache) {
        var b = JSONBytes(capacity: 0)
        swap(&b.bytes, &out)
        writeJSONLine(to: &b, includeInput: includeInput, cache: &cache)
        swap(&b.bytes, &out)
    }
}
