import PeerscopeCore


/// GCK Hello (type 1, 34 bytes observed). The 18-byte body is not understood; shown as hex.
public final class GCKHelloPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-hello", summary: "GCK session Hello (OSPF-like type 1)", claims: [GCKFamily.member(GCKHeader.hello)], messageTypes: GCKDecoding.messageTypes("hello"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        if ctx.wantsMessages { ctx.message("hello", writing: GCKHelloFields(h)) }
        guard ctx.wantsEvents else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        attrs[.flags] = SessionHex.u16(h.flags)
        ctx.event(.gckHello, from: from, to: to, packed: attrs)
    }
}

/// A DD or LSA body read as node records: `u16 nodeCount` (DD) or `u16 sn, u16 nodeCount` (LSA) then
/// the records. With flag bit 0 set ("compressed" in the spec, unconfirmed) the body is read plain
/// first and, when that does not read cleanly, as compressed data (`GCKInflate`).
struct GCKNodeBody {
    var sn: UInt16?
    var count: Int
    var records: [GCKNodeRecord]
    /// All records read and nothing left over.
    var clean: Bool
    /// Offset within the body where reading stopped, and the bytes left there.
    var stoppedAt: Int
    var left: Int
    /// "plain", or how the compressed body was read ("zlib", "deflate+length", ...).
    var reading: String = "plain"

    static func read(_ body: Bytes, withSN: Bool) -> GCKNodeBody? {
        var c = ByteCursor(body)
        var sn: UInt16?
        if withSN {
            guard let s = c.u16be() else { return nil }
            sn = s
        }
        guard let n = c.u16be() else { return nil }
        let (r, complete) = GCKNodeRecord.readAll(&c, count: Int(n))
        return GCKNodeBody(sn: sn, count: Int(n), records: r, clean: complete && c.atEnd, stoppedAt: c.offset, left: c.remaining)
    }

    /// The plain reading, or with flag bit 0 the first compressed reading that reads cleanly.
    static func read(_ h: GCKHeader, withSN: Bool) -> GCKNodeBody? {
        let plain = read(h.body, withSN: withSN)
        if h.flags & 1 == 0 || plain?.clean == true { return plain }
        for (bytes, how) in GCKInflate.readings(h.body) {
            if var r = read(bytes, withSN: withSN), r.clean {
                r.reading = how
                return r
            }
        }
        return plain
    }
}

/// GCK Database Description (type 2): `u16 nodeCount` then node records (see `GCKNodeRecord`).
public final class GCKDDPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-dd", summary: "GCK session DD, database description (type 2)", claims: [GCKFamily.member(GCKHeader.dd)], messageTypes: GCKDecoding.messageTypes("dd"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        var fields = ctx.wantsMessages ? GCKDecoding.common(h, input.payload) : []
        let body = GCKNodeBody.read(h, withSN: false)
        if let body {
            attrs[.nodes] = body.count
            GCKDecoding.noteReading(body, h, &attrs, &fields)
            if !body.clean {
                GCKDecoding.diagnose(ctx, "gck.dd.body", "DD body not fully read as \(body.count) node record(s); \(body.left) bytes left",
                                     offset: body.reading == "plain" ? GCKHeader.size + body.stoppedAt : GCKHeader.size, severity: .info)
            }
        } else {
            GCKDecoding.diagnose(ctx, "gck.dd.body", "DD body of \(h.body.count) bytes, expected at least 2",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("dd", fields + [
            ("nodes", .array((body?.records ?? []).map(\.json))), ("bodyHex", .string(h.body.prefix(64).hex)),
        ])
        ctx.event(.gckDD, from: from, to: to, packed: attrs)
    }
}

/// GCK Link State Advertisement (type 3): `u16 sn, u16 nodeCount` (a reading: the real LSA carries
/// `0000 0001`, and logs show "LSA SN=0") then node records.
public final class GCKLSAPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-lsa", summary: "GCK session LSA, link state advertisement (type 3)", claims: [GCKFamily.member(GCKHeader.lsa)], messageTypes: GCKDecoding.messageTypes("lsa"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        var fields = ctx.wantsMessages ? GCKDecoding.common(h, input.payload) : []
        let body = GCKNodeBody.read(h, withSN: true)
        if let body, let sn = body.sn {
            attrs[.sn] = Int(sn)
            attrs[.nodes] = body.count
            fields.append(("sn", .int(Int64(sn))))
            GCKDecoding.noteReading(body, h, &attrs, &fields)
            if !body.clean {
                GCKDecoding.diagnose(ctx, "gck.lsa.body", "LSA body not fully read as \(body.count) node record(s); \(body.left) bytes left",
                                     offset: body.reading == "plain" ? GCKHeader.size + body.stoppedAt : GCKHeader.size, severity: .info)
            }
        } else {
            GCKDecoding.diagnose(ctx, "gck.lsa.body", "LSA body of \(h.body.count) bytes, expected at least 4",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("lsa", fields + [("nodes", .array((body?.records ?? []).map(\.json))), ("bodyHex", .string(h.body.prefix(64).hex))])
        ctx.event(.gckLSA, from: from, to: to, packed: attrs)
    }
}

/// GCK LSA acknowledgement (type 4, 18 bytes): `u16 sn`.
public final class GCKLSAACKPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-lsaack", summary: "GCK session LSAACK (type 4)", claims: [GCKFamily.member(GCKHeader.lsaack)], messageTypes: GCKDecoding.messageTypes("lsaack"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        let sn = h.body.u16be(0)
        if let sn {
            attrs[.sn] = Int(sn)
        } else {
            GCKDecoding.diagnose(ctx, "gck.lsaack.body", "LSAACK body of \(h.body.count) bytes, expected 2",
                                 offset: GCKHeader.size, severity: .info)
        }
        if ctx.wantsMessages { ctx.message("lsaack", writing: GCKLSAACKFields(h, sn: sn)) }
        ctx.event(.gckLSAACK, from: from, to: to, packed: attrs)
    }
}

/// GCK Heartbeat (type 8, 20 bytes), the session keep-alive: `u16 sn, u16 x` (the real pair carries
/// `0002 0001` and `0000 0001`; which half is the "SN" the logs print is a reading).
public final class GCKHeartbeatPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-heartbeat", summary: "GCK session Heartbeat, keep-alive (type 8)", claims: [GCKFamily.member(GCKHeader.heartbeat)], messageTypes: GCKDecoding.messageTypes("heartbeat"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        let sn = h.body.u16be(0), x = h.body.u16be(2)
        if let sn, x != nil {
            attrs[.sn] = Int(sn)
        } else {
            GCKDecoding.diagnose(ctx, "gck.heartbeat.body", "Heartbeat body of \(h.body.count) bytes, expected 4",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("heartbeat", writing: GCKHeartbeatFields(h, sn: sn, x: x))
        ctx.event(.gckHeartbeat, from: from, to: to, packed: attrs)
    }
}

/// GCK Data (type 5): inner header (see `GCKDataInner`), app payload from byte 36 handed on as
/// `gck.data`. Inner kind 5 (reliable data as observed) is always handed on; other inner kinds (7 is
/// read as an acknowledgement; the reliable/unreliable send kinds are not all known) are handed on
/// when their payload looks like an app message (`GCKDecoding.looksLikeAppPayload`). Payload bytes
/// are never printed as hex unless `--show-payloads`; sizes always are.
public final class GCKDataPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-data", summary: "GCK session Data (type 5): reliable-delivery header, app payload handed on as gck.data",
        claims: [GCKFamily.member(GCKHeader.data)], messageTypes: GCKDecoding.messageTypes("data", "ack", "control"),
        diagnostics: GCKDecoding.diagnostics)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        let payload = input.payload
        guard let inner = GCKDataInner(h.body) else {
            let fields = GCKDecoding.common(h, payload)
            GCKDecoding.diagnose(ctx, "gck.data.inner", "Data body of \(h.body.count) bytes, inner header needs \(GCKDataInner.size)",
                                 offset: GCKHeader.size + h.body.count)
            attrs[.kind] = "short"
            ctx.message("data", fields + GCKDecoding.bodyFields(h.body, ctx))
            ctx.event(.gckData, from: from, to: to, packed: attrs)
            return
        }
        if inner.source != h.source || inner.destination != h.destination {
            GCKDecoding.diagnose(ctx, "gck.data.participants",
                                 "inner participants \(PeerIdentity.participantHex(inner.source))>\(PeerIdentity.participantHex(inner.destination)) differ from the header's",
                                 offset: GCKHeader.size + 4, severity: .info)
        }
        let handOn = GCKDecoding.carriesAppPayload(kind: inner.kind, inner.rest)
        let type = inner.kind == 5 || handOn ? "data" : inner.kind == 7 ? "ack" : "control"
        // The attributes are the event's only (`peerscope decode` without `--events` makes none).
        if ctx.wantsEvents {
            attrs[.kind] = inner.kindName
            attrs[.seq] = Int(inner.seq)
            if let a = inner.ackHint { attrs[.ack] = Int(a) }
            attrs[.payloadSize] = inner.rest.count
        }
        let checksumSeen = GCKDataInner.checksumMatchesObserved(h.body, given: inner.checksum)
        ctx.message(type, writing: GCKDataFields(h, inner, checksumSeen: checksumSeen, showPayloads: ctx.options.showPayloads))
        ctx.event(.gckData, from: from, to: to, packed: attrs)
        if handOn { ctx.handOff("gck.data", payload: inner.rest) }
    }
}

/// GCK packets of any other type: type 10 ("data-like" in the decompiled code) and unknown types.
/// Type 10 is a `.gckData` event (with `gckType` 10); its body is read like a Data body when it
/// starts with the same inner header (participants repeated), and what looks like an app payload
/// is handed on as `gck.data`. Unknown types are a `gck.other` event. Bodies are shown as sizes
/// only, unless `--show-payloads`. The family's fallback: it takes the types no other member claims.
public final class GCKOtherPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-other", summary: "GCK session packets of other types (10 data-like, unknown)",
        claims: [.member(family: GCKFamily.id, key: nil)],
        messageTypes: GCKDecoding.messageTypes("type-10", "unknown"),
        diagnostics: GCKDecoding.diagnostics, priority: .fallback)
    public init() {}
    public static var family: (any ProtocolFamily.Type)? { GCKFamily.self }

    /// The event kind of GCK packets of unknown types (declared in the catalogue).
    public static let otherEvent: EventKind = .gckOther

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h, ctx)
        attrs[.gckType] = Int(h.type)
        var fields = ctx.wantsMessages ? GCKDecoding.common(h, input.payload) : []
        guard h.type == 10 else {
            GCKDecoding.diagnose(ctx, "gck.unknown_type", "GCK packet of unknown type \(h.type)", offset: 1, severity: .info)
            attrs[.bodySize] = h.body.count
            ctx.message("unknown", fields + GCKDecoding.bodyFields(h.body, ctx))
            ctx.event(Self.otherEvent, from: from, to: to, packed: attrs)
            return
        }
        // The payload: after a Data-like inner header when there is one, else the whole body.
        var payload = h.body
        if let inner = GCKDataInner(h.body), inner.source == h.source, inner.destination == h.destination {
            payload = inner.rest
            attrs[.kind] = inner.kindName
            attrs[.seq] = Int(inner.seq)
            fields.append(contentsOf: [("kind", .string(inner.kindName)), ("seq", .uint(UInt64(inner.seq))),
                                       ("payloadSize", .int(Int64(inner.rest.count)))])
        }
        attrs[.payloadSize] = payload.count
        ctx.message("type-10", fields + GCKDecoding.bodyFields(h.body, ctx))
        ctx.event(.gckData, from: from, to: to, packed: attrs)
        if GCKDecoding.looksLikeAppPayload(payload) { ctx.handOff("gck.data", payload: payload) }
    }
}

extension GCKDecoding {
    /// With flag bit 0 set: which reading of the body worked (`compressed`: "no" when the body read
    /// plain, the compressed reading, or "unreadable").
    static func noteReading(_ body: GCKNodeBody, _ h: GCKHeader, _ attrs: inout EventAttrs,
                            _ fields: inout [(String, JSONValue)]) {
        guard h.flags & 1 != 0 else { return }
        let value = body.reading != "plain" ? body.reading : body.clean ? "no" : "unreadable"
        attrs[.compressed] = value
        fields.append(("compressed", .string(value)))
    }

    /// `bodySize`, plus `bodyHex` (first 64 bytes) only with `--show-payloads`: bodies of unknown
    /// layout may carry app data.
    static func bodyFields(_ body: Bytes, _ ctx: PluginContext) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = [("bodySize", .int(Int64(body.count)))]
        if ctx.options.showPayloads { f.append(("bodyHex", .string(body.prefix(64).hex))) }
        return f
    }

    /// Is the payload after a Data inner header of `kind` an app payload to hand on? Kind 5 (data as
    /// observed) always when not empty; other kinds when the payload looks like one.
    static func carriesAppPayload(kind: UInt8, _ rest: Bytes) -> Bool {
        if rest.isEmpty { return false }
        return kind == 5 || looksLikeAppPayload(rest)
    }

    /// An app message as the app plugins read GCK payloads: a JSON object (after white space). Zero
    /// padding (the acknowledgements' eight zero bytes) is not.
    static func looksLikeAppPayload(_ b: Bytes) -> Bool {
        var i = 0
        while let c = b.byte(i), c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 }
        return b.byte(i) == UInt8(ascii: "{")
    }
}
