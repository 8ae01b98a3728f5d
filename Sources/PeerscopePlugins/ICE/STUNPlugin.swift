import PeerscopeCore

/// ICE connectivity checks: STUN Binding requests, success and error responses (RFC 5389/8489),
/// with MPC's binary USERNAME and Apple-private attributes. Requests and responses are matched by
/// transaction ID per flow; checks left unanswered are reported when they expire and at `finish`.
public final class STUNPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "stun",
        summary: "ICE connectivity checks (STUN Binding request/success/error; other STUN methods generically)",
        claims: [.udpPorts(MPCPorts.gck), .udpHeuristic],
        messageTypes: ["binding-request", "binding-success", "binding-error", "binding-indication", "stun"]
    ,
        diagnostics: [
            DiagnosticSpec("header", .warning, "not a STUN header"),
            DiagnosticSpec("length", .warning, "the header's attribute length disagrees with the datagram"),
            DiagnosticSpec("attribute.truncated", .warning, "an attribute cut short"),
            DiagnosticSpec("bad_fingerprint", .warning, "FINGERPRINT does not match the message"),
            DiagnosticSpec("fingerprint.length", .warning, "FINGERPRINT not 4 bytes"),
        ])

    /// How long a check may wait for its response (MPC's ICE connection timeout is 10 s per channel).
    public static let checkTimeout: Nanos = 10 * CaptureTime.second
    /// Bound on the transaction table; the oldest entries are expired first when it fills.
    public static let maxPending = 4096

    private struct Key: Hashable {
        var flow: FlowKey   // canonical
        var hi: UInt64
        var lo: UInt32
    }

    private struct Pending {
        var sentAt: Nanos
        var evidence: Evidence
        var flow: FlowKey?  // request direction
        var from: PeerHint
        var to: PeerHint
        var txid: String
        var retransmits: Int
        var answeredAt: Nanos?
    }

    private var pending: [Key: Pending] = [:]

    public init() {}

    /// Strict framing everywhere; on MPC's session ports a cut or mis-sized message that still has
    /// the magic cookie is taken too, so it is diagnosed instead of dropped.
    public func probe(_ input: PluginInput) -> ProbeResult {
        let b = input.payload
        if STUNMessage.looksLikeSTUN(b) { return .accept }
        guard let f = input.flow, MPCPorts.touchesGCK(f),
              let t = b.byte(0), t & 0xC0 == 0, b.u32be(4) == STUNMessage.magicCookie else { return .reject }
        return .accept
    }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let m = STUNMessage(input.payload) else {
            ctx.diagnose("header", "not a STUN header (\(input.payload.count) bytes)", offset: 0)
            return
        }
        for p in m.problems { ctx.diagnose(p.id, p.message, offset: p.offset) }

        // FINGERPRINT: CRC-32 of everything before the attribute, xor 0x5354554e.
        var fingerprintOK: Bool? = nil
        if let fp = m.attribute(0x8028) {
            if let given = fp.value.u32be(0), fp.value.count == 4 {
                let computed = Checksum.crc32(input.payload.prefix(fp.offset)) ^ STUNMessage.fingerprintXor
                fingerprintOK = computed == given
                if computed != given {
                    ctx.diagnose("bad_fingerprint",
                                 "FINGERPRINT \(SessionHex.u32(given)) != computed \(SessionHex.u32(computed))",
                                 offset: fp.offset, severity: .error)
                    let h = ctx.hints()
                    ctx.event(.checksumError, from: h.from, to: h.to,
                              attrs: .typed([.protocolName: "stun", .given: SessionHex.u32(given), .computed: SessionHex.u32(computed)]))
                }
            } else {
                ctx.diagnose("fingerprint.length", "FINGERPRINT of \(fp.value.count) bytes (expected 4)", offset: fp.offset)
            }
        }

        let txid = m.transactionID.hex
        let isBinding = m.method == 0x001
        let typeName: String = {
            guard isBinding else { return "stun" }
            switch m.messageClass {
            case .request: return "binding-request"
            case .success: return "binding-success"
            case .error: return "binding-error"
            case .indication: return "binding-indication"
            }
        }()

        let checked = fingerprintOK
        ctx.message(typeName, writing: STUNFields(message: m, txid: txid, fingerprintOK: checked))

        // Pairing requests with answers gives events only (`peerscope decode` without `--events` makes none).
        guard isBinding, ctx.wantsEvents else { return }
        let h = ctx.hints()
        let key = input.flow.map { Key(flow: $0.canonical, hi: m.transactionID.u64be(0) ?? 0, lo: m.transactionID.u32be(8) ?? 0) }
        let now = input.t

        switch m.messageClass {
        case .request:
            var attrs: EventAttrs = .typed([.txid: txid])
            if m.attribute(0x0025) != nil { attrs[.useCandidate] = true }
            if m.attribute(0x802A) != nil { attrs[.role] = "controlling" } else if m.attribute(0x8029) != nil { attrs[.role] = "controlled" }
            if let u = m.attribute(0x0006), let tok = STUNMessage.mpcUsername(u.value) {
                attrs[.usernameTo] = SessionHex.u32(tok.to)
                attrs[.usernameFrom] = SessionHex.u32(tok.from)
            }
            if let key {
                if var p = pending[key] {
                    p.retransmits += 1
                    pending[key] = p
                    attrs[.retransmit] = String(p.retransmits)
                } else {
                    if pending.count >= Self.maxPending { evictOldest(ctx) }
                    pending[key] = Pending(sentAt: now, evidence: input.evidence, flow: input.flow, from: h.from, to: h.to,
                                           txid: txid, retransmits: 0, answeredAt: nil)
                }
            }
            ctx.event(.iceRequest, from: h.from, to: h.to, packed: attrs)

        case .success, .error:
            var attrs: EventAttrs = .typed([.txid: txid])
            if let key, var p = pending[key] {
                attrs[.matched] = true
                if p.answeredAt != nil { attrs[.duplicate] = true }
                let rtt = now &- p.sentAt
                if rtt >= 0 { attrs[.rttMs] = String(rtt / CaptureTime.millisecond) }
                if p.answeredAt == nil { p.answeredAt = now; pending[key] = p }
            } else {
                attrs[.matched] = false
            }
            if m.messageClass == .success {
                if let a = m.attribute(0x0020), let ep = STUNMessage.address(a.value, xor: true, transactionID: m.transactionID) {
                    attrs[.mapped] = ep.description
                } else if let a = m.attribute(0x0001), let ep = STUNMessage.address(a.value, xor: false, transactionID: m.transactionID) {
                    attrs[.mapped] = ep.description
                }
                ctx.event(.iceSuccess, from: h.from, to: h.to, packed: attrs)
            } else {
                if let a = m.attribute(0x0009), let (code, reason) = STUNMessage.errorCode(a.value) {
                    attrs[.code] = String(code)
                    if !reason.isEmpty { attrs[.reason] = String(reason.prefix(64)) }
                }
                ctx.event(.iceError, from: h.from, to: h.to, packed: attrs)
            }

        case .indication:
            break
        }
    }

    public func tick(_ t: Nanos, _ ctx: PluginContext) {
        expire(before: t &- Self.checkTimeout, ctx, atEnd: false)
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        expire(before: t &- Self.checkTimeout, ctx, atEnd: false)
        // What is left never got an answer before the capture ended.
        let rest = pending.filter { $0.value.answeredAt == nil }.sorted { $0.value.sentAt < $1.value.sentAt }
        for (_, p) in rest { report(p, t: t, ctx, atEnd: true) }
        pending.removeAll()
    }

    private func expire(before cutoff: Nanos, _ ctx: PluginContext, atEnd: Bool) {
        var gone: [(Key, Pending)] = []
        for (k, p) in pending where p.sentAt < cutoff { gone.append((k, p)) }
        gone.sort { $0.1.sentAt < $1.1.sentAt }
        for (k, p) in gone {
            pending[k] = nil
            if p.answeredAt == nil { report(p, t: p.sentAt &+ Self.checkTimeout, ctx, atEnd: atEnd) }
        }
    }

    private func evictOldest(_ ctx: PluginContext) {
        let victims = pending.sorted { $0.value.sentAt < $1.value.sentAt }.prefix(max(1, Self.maxPending / 8))
        for (k, p) in victims {
            pending[k] = nil
            if p.answeredAt == nil { report(p, t: ctx.now, ctx, atEnd: false, evicted: true) }
        }
    }

    private func report(_ p: Pending, t: Nanos, _ ctx: PluginContext, atEnd: Bool, evicted: Bool = false) {
        var attrs: [String: String] = .typed([.txid: p.txid, .waitedMs: String(max(0, t &- p.sentAt) / CaptureTime.millisecond)])
        if p.retransmits > 0 { attrs[.retransmits] = p.retransmits }
        if atEnd { attrs[.atEnd] = true }
        if evicted { attrs[.evicted] = true }
        ctx.event(PeerEvent(kind: .iceUnanswered, t: t, evidence: p.evidence, from: p.from, to: p.to, flow: p.flow,
                            source: Self.descriptor.id, attrs: attrs))
    }

    static func fields(_ m: STUNMessage, txid: String, fingerprintOK: Bool?) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = [
            ("method", .string(STUNMessage.methodName(m.method))),
            ("class", .string(m.messageClass.name)),
            ("txid", .string(txid)),
            ("length", .int(Int64(m.length))),
        ]
        var attrs: [JSONValue] = []
        for a in m.attributes {
            var o: [(String, JSONValue)] = [
                ("type", .string(SessionHex.x16(a.type))),
                ("name", .string(STUNMessage.attributeName(a.type))),
                ("length", .int(Int64(a.value.count))),
            ]
            switch a.type {
            case 0x0001, 0x0020:
                if let ep = STUNMessage.address(a.value, xor: a.type == 0x0020, transactionID: m.transactionID) {
                    o.append(("address", .string(ep.description)))
                }
            case 0x0006:
                o.append(("hex", .string(a.value.hex)))
                if let tok = STUNMessage.mpcUsername(a.value) {
                    o.append(("to", .string(SessionHex.u32(tok.to))))
                    o.append(("from", .string(SessionHex.u32(tok.from))))
                } else if a.value.array.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                    // Standard ICE (RFC 8445): "remote-ufrag:local-ufrag" text.
                    o.append(("text", .string(String(decoding: a.value.prefix(128).array, as: UTF8.self))))
                }
            case 0x0009:
                if let (code, reason) = STUNMessage.errorCode(a.value) {
                    o.append(("code", .int(Int64(code))))
                    o.append(("reason", .string(reason)))
                }
            case 0x0024:
                if let v = a.value.u32be(0) { o.append(("priority", .uint(UInt64(v)))) }
            case 0x8029, 0x802A:
                if a.value.count == 8 { o.append(("tieBreaker", .string(a.value.hex))) }
            case 0x8028:
                if let ok = fingerprintOK { o.append(("valid", .bool(ok))) }
            case 0x8022:
                o.append(("software", .string(String(decoding: a.value.prefix(128).array, as: UTF8.self))))
            default:
                if a.value.count <= 8 && a.value.count > 0 { o.append(("hex", .string(a.value.hex))) }
            }
            attrs.append(.object(o))
        }
        f.append(("attributes", .array(attrs)))
        return f
    }
}

/// A STUN message's `peerscope decode` fields written straight into the output bytes (issue 13):
/// `STUNPlugin.fields` is the list these bytes must equal (`GCKFieldsTests` compares them on generated
/// group captures and random messages, the decode tests on every sample).
struct STUNFields: MessageFieldsWriter {
    let message: STUNMessage
    let txid: String
    let fingerprintOK: Bool?

    var fields: [(String, JSONValue)] { STUNPlugin.fields(message, txid: txid, fingerprintOK: fingerprintOK) }

    func writeMembers(to out: inout JSONBytes) {
        let m = message
        out.key("method")
        out.string(STUNMessage.methodName(m.method))
        out.key("class")
        out.string(m.messageClass.name)
        out.key("txid")
        out.string(txid)
        out.key("length")
        out.int(Int64(m.length))
        out.key("attributes")
        out.byte(0x5B)
        for (i, a) in m.attributes.enumerated() {
            if i > 0 { out.byte(0x2C) }
            out.byte(0x7B)
            out.firstKey("type")
            out.fixedHex(UInt64(a.type), digits: 4, prefix0x: true)
            out.key("name")
            out.string(STUNMessage.attributeName(a.type))
            out.key("length")
            out.uint(UInt64(a.value.count))
            switch a.type {
            case 0x0001, 0x0020:
                if let ep = STUNMessage.address(a.value, xor: a.type == 0x0020, transactionID: m.transactionID) {
                    out.key("address")
                    out.endpoint(ep)
                }
            case 0x0006:
                out.key("hex")
                out.hex(a.value)
                if let tok = STUNMessage.mpcUsername(a.value) {
                    out.key("to")
                    out.fixedHex(UInt64(tok.to), digits: 8)
                    out.key("from")
                    out.fixedHex(UInt64(tok.from), digits: 8)
                } else if a.value.array.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                    out.key("text")
                    out.string(String(decoding: a.value.prefix(128).array, as: UTF8.self))
                }
            case 0x0009:
                if let (code, reason) = STUNMessage.errorCode(a.value) {
                    out.key("code")
                    out.int(Int64(code))
                    out.key("reason")
                    out.string(reason)
                }
            case 0x0024:
                if let v = a.value.u32be(0) {
                    out.key("priority")
                    out.uint(UInt64(v))
                }
            case 0x8029, 0x802A:
                if a.value.count == 8 {
                    out.key("tieBreaker")
                    out.hex(a.value)
                }
            case 0x8028:
                if let ok = fingerprintOK {
                    out.key("valid")
                    out.bool(ok)
                }
            case 0x8022:
                out.key("software")
                out.string(String(decoding: a.value.prefix(128).array, as: UTF8.self))
            default:
                if a.value.count <= 8 && a.value.count > 0 {
                    out.key("hex")
                    out.hex(a.value)
                }
            }
            out.byte(0x7D)
        }
        out.byte(0x5D)
    }
}
