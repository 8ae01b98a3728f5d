import PeerscopeCore

private let gckClaims: [Claim] = [.udpPorts(GCKHeader.mpcPorts), .udpHeuristic]

/// GCK Hello (type 1, 34 bytes observed). The 18-byte body is not understood; shown as hex.
public final class GCKHelloPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-hello", summary: "GCK session Hello (OSPF-like type 1)", claims: gckClaims, messageTypes: GCKDecoding.messageTypes("hello"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.hello } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        attrs["flags"] = SessionHex.u16(h.flags)
        ctx.message("hello", GCKDecoding.common(h, input.payload) + [("bodyHex", .string(h.body.prefix(64).hex))])
        ctx.event(.gckHello, from: from, to: to, attrs: attrs)
    }
}

/// GCK Database Description (type 2): `u16 nodeCount` then node records (see `GCKNodeRecord`).
public final class GCKDDPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-dd", summary: "GCK session DD, database description (type 2)", claims: gckClaims, messageTypes: GCKDecoding.messageTypes("dd"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.dd } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        var c = ByteCursor(h.body)
        var records: [GCKNodeRecord] = []
        if h.flags & 1 != 0 {
            // Spec §1.3 reads flag bit 0 as "zlib-compressed body"; unconfirmed, so the body is not parsed.
            attrs["compressed"] = "maybe"
        } else if let n = c.u16be() {
            let (r, complete) = GCKNodeRecord.readAll(&c, count: Int(n))
            records = r
            attrs["nodes"] = String(n)
            if !complete || !c.atEnd {
                GCKDecoding.diagnose(ctx, "gck.dd.body", "DD body not fully read as \(n) node record(s); \(c.remaining) bytes left",
                                     offset: GCKHeader.size + c.offset, severity: .info)
            }
        } else {
            GCKDecoding.diagnose(ctx, "gck.dd.body", "DD body of \(h.body.count) bytes, expected at least 2",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("dd", GCKDecoding.common(h, input.payload) + [
            ("nodes", .array(records.map(\.json))), ("bodyHex", .string(h.body.prefix(64).hex)),
        ])
        ctx.event(.gckDD, from: from, to: to, attrs: attrs)
    }
}

/// GCK Link State Advertisement (type 3): `u16 sn, u16 nodeCount` (a reading: the real LSA carries
/// `0000 0001`, and logs show "LSA SN=0") then node records.
public final class GCKLSAPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-lsa", summary: "GCK session LSA, link state advertisement (type 3)", claims: gckClaims, messageTypes: GCKDecoding.messageTypes("lsa"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.lsa } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        var c = ByteCursor(h.body)
        var records: [GCKNodeRecord] = []
        var fields = GCKDecoding.common(h, input.payload)
        if h.flags & 1 != 0 {
            attrs["compressed"] = "maybe"
        } else if let sn = c.u16be(), let n = c.u16be() {
            attrs["sn"] = String(sn)
            attrs["nodes"] = String(n)
            fields.append(("sn", .int(Int64(sn))))
            let (r, complete) = GCKNodeRecord.readAll(&c, count: Int(n))
            records = r
            if !complete || !c.atEnd {
                GCKDecoding.diagnose(ctx, "gck.lsa.body", "LSA body not fully read as \(n) node record(s); \(c.remaining) bytes left",
                                     offset: GCKHeader.size + c.offset, severity: .info)
            }
        } else {
            GCKDecoding.diagnose(ctx, "gck.lsa.body", "LSA body of \(h.body.count) bytes, expected at least 4",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("lsa", fields + [("nodes", .array(records.map(\.json))), ("bodyHex", .string(h.body.prefix(64).hex))])
        ctx.event(.gckLSA, from: from, to: to, attrs: attrs)
    }
}

/// GCK LSA acknowledgement (type 4, 18 bytes): `u16 sn`.
public final class GCKLSAACKPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-lsaack", summary: "GCK session LSAACK (type 4)", claims: gckClaims, messageTypes: GCKDecoding.messageTypes("lsaack"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.lsaack } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        var fields = GCKDecoding.common(h, input.payload)
        if let sn = h.body.u16be(0) {
            attrs["sn"] = String(sn)
            fields.append(("sn", .int(Int64(sn))))
        } else {
            GCKDecoding.diagnose(ctx, "gck.lsaack.body", "LSAACK body of \(h.body.count) bytes, expected 2",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("lsaack", fields)
        ctx.event(.gckLSAACK, from: from, to: to, attrs: attrs)
    }
}

/// GCK Heartbeat (type 8, 20 bytes), the session keep-alive: `u16 sn, u16 x` (the real pair carries
/// `0002 0001` and `0000 0001`; which half is the "SN" the logs print is a reading).
public final class GCKHeartbeatPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-heartbeat", summary: "GCK session Heartbeat, keep-alive (type 8)", claims: gckClaims, messageTypes: GCKDecoding.messageTypes("heartbeat"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.heartbeat } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        var fields = GCKDecoding.common(h, input.payload)
        if let sn = h.body.u16be(0), let x = h.body.u16be(2) {
            attrs["sn"] = String(sn)
            fields.append(("sn", .int(Int64(sn))))
            fields.append(("field18", .int(Int64(x))))
        } else {
            GCKDecoding.diagnose(ctx, "gck.heartbeat.body", "Heartbeat body of \(h.body.count) bytes, expected 4",
                                 offset: GCKHeader.size, severity: .info)
        }
        ctx.message("heartbeat", fields)
        ctx.event(.gckHeartbeat, from: from, to: to, attrs: attrs)
    }
}

/// GCK Data (type 5): inner header (see `GCKDataInner`), app payload from byte 36 handed on as
/// `gck.data`.
public final class GCKDataPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-data", summary: "GCK session Data (type 5): reliable-delivery header, app payload handed on as gck.data",
        claims: gckClaims, messageTypes: GCKDecoding.messageTypes("data", "ack"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { $0 == GCKHeader.data } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, from, to) = GCKDecoding.header(input, ctx) else { return }
        var attrs = GCKDecoding.baseAttrs(h)
        var fields = GCKDecoding.common(h, input.payload)
        guard let inner = GCKDataInner(h.body) else {
            GCKDecoding.diagnose(ctx, "gck.data.inner", "Data body of \(h.body.count) bytes, inner header needs \(GCKDataInner.size)",
                                 offset: GCKHeader.size + h.body.count)
            attrs["kind"] = "short"
            ctx.message("data", fields + [("bodyHex", .string(h.body.prefix(64).hex))])
            ctx.event(.gckData, from: from, to: to, attrs: attrs)
            return
        }
        if inner.source != h.source || inner.destination != h.destination {
            GCKDecoding.diagnose(ctx, "gck.data.participants",
                                 "inner participants \(PeerIdentity.participantHex(inner.source))>\(PeerIdentity.participantHex(inner.destination)) differ from the header's",
                                 offset: GCKHeader.size + 4, severity: .info)
        }
        let isData = inner.kind == 5
        attrs["kind"] = inner.kindName
        attrs["seq"] = String(inner.seq)
        if let a = inner.ackHint { attrs["ack"] = String(a) }
        if isData { attrs["payloadSize"] = String(inner.rest.count) }
        let checksumSeen = GCKDataInner.checksumMatchesObserved(h.body, given: inner.checksum)
        ctx.message(isData ? "data" : "ack", {
            fields.append(contentsOf: [
                ("kind", .string(inner.kindName)),
                ("kindFlags", .string(SessionHex.u8(inner.kindFlags))),
                ("innerChecksum", .string(SessionHex.u16(inner.checksum))),
                ("innerChecksumAsObserved", .bool(checksumSeen)),
                ("seq", .uint(UInt64(inner.seq))),
                ("control", .string(inner.control.hex)),
                ("payloadSize", .int(Int64(inner.rest.count))),
            ])
            if ctx.options.showPayloads || !isData { fields.append(("restHex", .string(inner.rest.prefix(256).hex))) }
            return fields
        }())
        ctx.event(.gckData, from: from, to: to, attrs: attrs)
        if isData && !inner.rest.isEmpty {
            ctx.handOff("gck.data", payload: inner.rest)
        }
    }
}

/// GCK packets of any other type: type 10 ("data-like" in the decompiled code) and unknown types.
/// Must come after the typed GCK plugins.
public final class GCKOtherPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "gck-other", summary: "GCK session packets of other types (10 data-like, unknown)", claims: gckClaims,
        messageTypes: GCKDecoding.messageTypes("type-10", "unknown"))
    public init() {}
    public func probe(_ input: PluginInput) -> ProbeResult { GCKHeader.probe(input) { !GCKHeader.known.contains($0) } }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let (h, _, _) = GCKDecoding.header(input, ctx) else { return }
        if h.type != 10 {
            GCKDecoding.diagnose(ctx, "gck.unknown_type", "GCK packet of unknown type \(h.type)", offset: 1, severity: .info)
        }
        ctx.message(h.type == 10 ? "type-10" : "unknown",
                    GCKDecoding.common(h, input.payload) + [("bodyHex", .string(h.body.prefix(64).hex))])
    }
}
