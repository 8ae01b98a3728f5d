import PeerscopeCore

/// DTLS records, plain or with MPC's one-byte `0xD0` prefix: record headers, handshake messages while
/// in the clear, ChangeCipherSpec, alerts, application data sizes; DTLS 1.3 unified headers recognised.
/// Per flow it follows the handshake: started, established (CCS and encrypted Finished both ways, or
/// for DTLS 1.3 handshake-epoch records both ways then application-epoch records), failed (alert) or stalled.
public final class DTLSPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "dtls",
        summary: "DTLS records (plain or 0xD0-prefixed): handshake, CCS, alerts, application data sizes; DTLS 1.3 unified headers",
        claims: [.udpPorts(MPCPorts.gck), .udpHeuristic],
        messageTypes: ["record", "dtls13-record"]
    ,
        diagnostics: [
            DiagnosticSpec("record.invalid", .warning, "a record header that is not DTLS"),
            DiagnosticSpec("record.length", .warning, "a record length past the datagram"),
            DiagnosticSpec("record.truncated", .warning, "a record cut short"),
            DiagnosticSpec("handshake.truncated", .warning, "a handshake message header cut short"),
            DiagnosticSpec("alert.length", .warning, "an alert record that is not 2 bytes"),
            DiagnosticSpec("cid.unknown", .info, "a DTLS 1.3 record with a connection ID never negotiated"),
            DiagnosticSpec("empty", .info, "an empty datagram on a DTLS flow"),
            DiagnosticSpec("flows_evicted", .info, "more DTLS flows than tracked: the least recently seen is forgotten"),
        ])

    public static let stallTimeout: Nanos = 10 * CaptureTime.second
    /// Event attribute set ("D0") on records that carried MPC's one-byte prefix: MPC evidence.
    public static let prefixAttr = "mpcPrefix"
    public static let maxFlows = 4096
    /// Established/failed flows idle this long are forgotten.
    public static let forgetAfter: Nanos = 120 * CaptureTime.second

    private struct Side {
        var ccs = false
        var encryptedHandshake = false
        var appEpochRecords = false   // DTLS 1.3: records in epoch 3 (application traffic)
        var appData = false
        var lastMessageSeq: Int = -1
        var cidLength: Int?
    }

    private struct FlowState {
        var started = false
        var startedAt: Nanos = 0
        var startEvidence: Evidence = .frame(input: 0, frame: 0)
        var lastAt: Nanos = 0
        var lastEvidence: Evidence = .frame(input: 0, frame: 0)
        var lastMessage = ""
        var flow: FlowKey?
        var sides: [Endpoint: Side] = [:]
        var established = false
        var failed = false
        var stallReported = false
        var sawUnified = false
        var appDataRecords: UInt64 = 0
    }

    private var flows: [FlowKey: FlowState] = [:]

    public init() {}

    private static func onMPCPort(_ input: PluginInput) -> Bool {
        guard let f = input.flow else { return false }
        return MPCPorts.touchesGCK(f)
    }

    public func probe(_ input: PluginInput) -> ProbeResult {
        let b = input.payload
        guard let first = b.byte(0) else { return .reject }
        let lenient = Self.onMPCPort(input)
        let start = first == DTLSWire.mpcPrefix ? 1 : 0
        if lenient {
            if DTLSWire.plainHeaderAt(b, start) { return .accept }
        } else if b.count >= start + DTLSWire.headerSize, DTLSWire.plainRecordFits(b, start) {
            return .accept
        }
        // DTLS 1.3 unified header (0b001CSLEE): only on flows already seen doing DTLS.
        if first & 0xE0 == 0x20, let f = input.flow, flows[f.canonical] != nil { return .accept }
        return .reject
    }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        let b = input.payload
        let key = input.flow?.canonical
        var st = key.flatMap { flows[$0] } ?? FlowState()
        if let key, flows[key] == nil, flows.count >= Self.maxFlows { evict(ctx) }
        st.flow = st.flow ?? input.flow
        let src = input.flow?.src
        var side = src.flatMap { st.sides[$0] } ?? Side()
        let h = ctx.hints()

        let wrapped = b.byte(0) == DTLSWire.mpcPrefix
        var o = wrapped ? 1 : 0
        var records = 0
        while o < b.count {
            guard let first = b.byte(o) else { break }
            if first & 0xE0 == 0x20 && !(20 ... 25).contains(first) {
                // DTLS 1.3 unified header.
                guard let next = decodeUnified(b, at: o, &st, &side, input, ctx, h) else { break }
                o = next
                records += 1
                continue
            }
            guard (20 ... 25).contains(first) else {
                ctx.diagnose("record.invalid", "record \(records + 1) has content type \(first)", offset: o)
                break
            }
            guard let ct = b.byte(o), let ver = b.u16be(o + 1), let epoch = b.u16be(o + 3),
                  let seqHi = b.u16be(o + 5), let seqLo = b.u32be(o + 7), let len = b.u16be(o + 11) else {
                ctx.diagnose("record.truncated", "record header cut short: \(b.count - o) of 13 bytes", offset: o)
                break
            }
            guard DTLSWire.versions.contains(ver) else {
                ctx.diagnose("record.invalid", "record \(records + 1) has version \(SessionHex.x16(ver))",
                             offset: o)
                break
            }
            guard let fragment = b.slice(o + DTLSWire.headerSize, Int(len)) else {
                ctx.diagnose("record.length", "record declares \(len) bytes, \(b.count - o - DTLSWire.headerSize) left", offset: o + 11)
                break
            }
            let rec = DTLSWire.Record(offset: o, contentType: ct, version: ver, epoch: epoch,
                                      sequence: UInt64(seqHi) << 32 | UInt64(seqLo), fragment: fragment)
            decodeRecord(rec, wrapped: wrapped, &st, &side, input, ctx, h)
            records += 1
            o += DTLSWire.headerSize + Int(len)
        }
        if records == 0 && b.count <= (wrapped ? 1 : 0) {
            ctx.diagnose("empty", "DTLS datagram without a record", offset: 0)
        }

        st.lastAt = input.t
        st.lastEvidence = input.evidence
        if let src { st.sides[src] = side }
        checkEstablished(&st, ctx, h)
        if let key { flows[key] = st }
    }

    private func markStarted(_ st: inout FlowState, _ input: PluginInput) {
        if !st.started {
            st.started = true
            st.startedAt = input.t
            st.startEvidence = input.evidence
        }
    }

    private func decodeRecord(_ rec: DTLSWire.Record, wrapped: Bool, _ st: inout FlowState, _ side: inout Side,
                              _ input: PluginInput, _ ctx: PluginContext, _ h: (from: PeerHint, to: PeerHint)) {
        let clear = rec.epoch == 0
        var fields: [(String, JSONValue)] = []
        if ctx.wantsMessages {
            fields = [
                ("wrapped", .bool(wrapped)),
                ("contentType", .string(DTLSWire.contentTypeName(rec.contentType))),
                ("version", .string(DTLSWire.versionName(rec.version))),
                ("epoch", .int(Int64(rec.epoch))),
                ("sequence", .uint(rec.sequence)),
                ("length", .int(Int64(rec.fragment.count))),
            ]
        }
        switch rec.contentType {
        case 22:
            markStarted(&st, input)
            if !clear {
                // The first encrypted handshake message after a CCS is the Finished.
                let name = side.ccs && !side.encryptedHandshake ? "Finished" : "encrypted handshake"
                side.encryptedHandshake = true
                st.lastMessage = name
                ctx.message("record", fields + [("handshake", .string(name)), ("encrypted", .bool(true))])
                var attrs: EventAttrs = .typed([.message: name, .epoch: String(rec.epoch)])
                attrs[.encrypted] = true
                if wrapped { attrs[DTLSPlugin.prefixAttr] = "D0" }
                ctx.event(.dtlsHandshake, from: h.from, to: h.to, packed: attrs)
                return
            }
            var o = 0
            var msgs: [JSONValue] = []
            while o < rec.fragment.count {
                guard let hs = DTLSWire.HandshakeHeader.read(rec.fragment, o) else {
                    ctx.diagnose("handshake.truncated", "handshake message header or fragment cut short",
                                 offset: rec.offset + DTLSWire.headerSize + o)
                    break
                }
                let name = DTLSWire.handshakeName(hs.type)
                var attrs: EventAttrs = .typed([.message: name, .messageSeq: String(hs.messageSeq)])
                if wrapped { attrs[DTLSPlugin.prefixAttr] = "D0" }
                var mf: [(String, JSONValue)] = [("message", .string(name)), ("messageSeq", .int(Int64(hs.messageSeq))),
                                                 ("length", .int(Int64(hs.length)))]
                if hs.isFragment {
                    attrs[.fragment] = "\(hs.fragmentOffset)+\(hs.fragmentLength)/\(hs.length)"
                    mf.append(("fragmentOffset", .int(Int64(hs.fragmentOffset))))
                    mf.append(("fragmentLength", .int(Int64(hs.fragmentLength))))
                }
                if !hs.isFragment {
                    if hs.type == 1, let suites = DTLSWire.clientHelloSuites(hs.body) {
                        mf.append(("cipherSuites", .array(suites.map { .string($0) })))
                    } else if hs.type == 2, let suite = DTLSWire.serverHelloSuite(hs.body) {
                        mf.append(("cipherSuite", .string(suite)))
                        attrs[.cipherSuite] = suite
                    }
                }
                if hs.fragmentOffset == 0 {
                    if Int(hs.messageSeq) <= side.lastMessageSeq { attrs[.retransmit] = "true" }
                    side.lastMessageSeq = max(side.lastMessageSeq, Int(hs.messageSeq))
                    ctx.event(.dtlsHandshake, from: h.from, to: h.to, packed: attrs)
                }
                st.lastMessage = name
                msgs.append(.object(mf))
                o += DTLSWire.HandshakeHeader.size + hs.fragmentLength
            }
            ctx.message("record", fields + [("handshake", .array(msgs))])

        case 20:
            markStarted(&st, input)
            side.ccs = true
            st.lastMessage = "ChangeCipherSpec"
            ctx.message("record", fields)
            var attrs: EventAttrs = .typed([.epoch: String(rec.epoch)])
            if wrapped { attrs[DTLSPlugin.prefixAttr] = "D0" }
            ctx.event(.dtlsChangeCipherSpec, from: h.from, to: h.to, packed: attrs)

        case 21:
            var attrs: EventAttrs = [:]
            if wrapped { attrs[DTLSPlugin.prefixAttr] = "D0" }
            var level = "encrypted"
            if clear, rec.fragment.count == 2, let l = rec.fragment.byte(0), let d = rec.fragment.byte(1) {
                level = DTLSWire.alertLevelName(l)
                attrs[.level] = level
                attrs[.description] = DTLSWire.alertDescriptionName(d)
            } else {
                attrs[.level] = "encrypted"
                attrs[.description] = "encrypted alert"
                if clear {
                    ctx.diagnose("alert.length", "clear-text alert of \(rec.fragment.count) bytes (expected 2)",
                                 offset: rec.offset + DTLSWire.headerSize)
                }
            }
            if !st.established {
                attrs[.duringHandshake] = true
                // A fatal alert, or an encrypted one before the handshake completed, ends the attempt.
                if st.started && (level == "fatal" || level == "encrypted") { st.failed = true }
            }
            st.lastMessage = "alert"
            ctx.message("record", fields + [("level", .string(attrs[.level] ?? "")), ("description", .string(attrs[.description] ?? ""))])
            ctx.event(.dtlsAlert, from: h.from, to: h.to, packed: attrs)

        case 23:
            side.appData = true
            st.appDataRecords &+= 1
            ctx.message("record", fields)
            var attrs: EventAttrs = [:]
            attrs[.size] = rec.fragment.count
            if wrapped { attrs[DTLSPlugin.prefixAttr] = "D0" }
            ctx.event(.dtlsApplicationData, from: h.from, to: h.to, packed: attrs)

        default:
            ctx.message("record", fields)
        }
    }

    /// RFC 9147 §4: `001CSLEE [CID] seq(8|16) [len16] ciphertext`. The CID length is not on the wire;
    /// it is guessed per sender as the one that makes the length field fit the datagram exactly.
    private func decodeUnified(_ b: Bytes, at o: Int, _ st: inout FlowState, _ side: inout Side, _ input: PluginInput,
                               _ ctx: PluginContext, _ h: (from: PeerHint, to: PeerHint)) -> Int? {
        guard let first = b.byte(o) else { return nil }
        let hasCID = first & 0x10 != 0
        let seqLen = first & 0x08 != 0 ? 2 : 1
        let hasLength = first & 0x04 != 0
        let epochBits = first & 0x03
        st.sawUnified = true
        var cidLen = 0
        if hasCID {
            if let known = side.cidLength {
                cidLen = known
            } else if hasLength {
                var found: Int? = nil
                for guess in 0 ... 32 {
                    let lo = o + 1 + guess + seqLen
                    if let l = b.u16be(lo), Int(l) == b.count - lo - 2 { found = guess; break }
                }
                guard let found else {
                    ctx.diagnose("cid.unknown", "DTLS 1.3 record with a connection ID of unknown length", offset: o, severity: .info)
                    ctx.message("dtls13-record", [("epochBits", .int(Int64(epochBits))), ("cid", .bool(true)),
                                                  ("length", .int(Int64(b.count - o)))])
                    return nil
                }
                cidLen = found
                side.cidLength = found
            } else {
                ctx.diagnose("cid.unknown", "DTLS 1.3 record with a connection ID of unknown length", offset: o, severity: .info)
                return nil
            }
        }
        let seqAt = o + 1 + cidLen
        guard let seq: UInt16 = seqLen == 2 ? b.u16be(seqAt) : b.byte(seqAt).map({ UInt16($0) }) else {
            ctx.diagnose("record.truncated", "DTLS 1.3 unified header cut short", offset: o)
            return nil
        }
        var bodyAt = seqAt + seqLen
        var bodyLen = b.count - bodyAt
        if hasLength {
            guard let l = b.u16be(bodyAt) else {
                ctx.diagnose("record.truncated", "DTLS 1.3 unified header cut short", offset: o)
                return nil
            }
            bodyAt += 2
            guard Int(l) <= b.count - bodyAt else {
                ctx.diagnose("record.length", "DTLS 1.3 record declares \(l) bytes, \(b.count - bodyAt) left", offset: bodyAt - 2)
                return nil
            }
            bodyLen = Int(l)
        }
        // Epoch bits 2: handshake traffic; 3: application traffic (mod 4).
        if epochBits == 3 {
            side.appEpochRecords = true
            st.appDataRecords &+= 1
            var attrs: EventAttrs = .typed([.version: "1.3"])
            attrs[.size] = bodyLen
            ctx.event(.dtlsApplicationData, from: h.from, to: h.to, packed: attrs)
        } else if epochBits == 2 {
            side.encryptedHandshake = true
            st.lastMessage = "encrypted handshake"
        }
        ctx.message("dtls13-record", [
            ("epochBits", .int(Int64(epochBits))), ("cid", .bool(hasCID)), ("cidLength", .int(Int64(cidLen))),
            ("sequence", .int(Int64(seq))), ("length", .int(Int64(bodyLen))),
        ])
        return bodyAt + bodyLen
    }

    private func checkEstablished(_ st: inout FlowState, _ ctx: PluginContext, _ h: (from: PeerHint, to: PeerHint)) {
        guard !st.established, st.sides.count == 2 else { return }
        let sides = Array(st.sides.values)
        var how: String? = nil
        if st.started && sides.allSatisfy({ $0.ccs && $0.encryptedHandshake }) {
            how = "ccs+finished"
        } else if st.sawUnified && sides.allSatisfy({ $0.encryptedHandshake }) && sides.contains(where: { $0.appEpochRecords }) {
            // DTLS 1.3: handshake-epoch records both ways, then application-epoch traffic.
            how = "dtls1.3-application-epoch"
        } else if !st.started && sides.allSatisfy({ $0.appData }) {
            how = "application-data (handshake not captured)"
        }
        guard let how else { return }
        st.established = true
        st.failed = false
        var attrs: EventAttrs = .typed([.how: how])
        if st.started {
            attrs[.handshakeMs] = String(max(0, st.lastAt &- st.startedAt) / CaptureTime.millisecond)
        }
        ctx.event(.dtlsEstablished, from: h.from, to: h.to, packed: attrs)
    }

    public func tick(_ t: Nanos, _ ctx: PluginContext) {
        var forget: [FlowKey] = []
        for (k, st) in flows {
            if st.started && !st.established && !st.failed && !st.stallReported && t &- st.lastAt > Self.stallTimeout {
                reportStall(k, st, t: st.lastAt &+ Self.stallTimeout, ctx, atEnd: false)
            }
            if t &- st.lastAt > Self.forgetAfter { forget.append(k) }
        }
        for k in forget { flows[k] = nil }
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        let left = flows.sorted { $0.value.startedAt < $1.value.startedAt }
        for (k, st) in left where st.started && !st.established && !st.failed && !st.stallReported {
            reportStall(k, st, t: t, ctx, atEnd: t &- st.lastAt <= Self.stallTimeout)
        }
        flows.removeAll()
    }

    private func reportStall(_ k: FlowKey, _ st: FlowState, t: Nanos, _ ctx: PluginContext, atEnd: Bool) {
        flows[k]?.stallReported = true
        var attrs: [String: String] = .typed([.lastMessage: st.lastMessage, .waitedMs: String(max(0, t &- st.startedAt) / CaptureTime.millisecond)])
        if atEnd { attrs[.atEnd] = true }
        let f = st.flow
        let from = f.map { ctx.directory.hint(for: $0.src) } ?? .unknown
        let to = f.map { ctx.directory.hint(for: $0.dst) } ?? .unknown
        ctx.event(PeerEvent(kind: .dtlsStalled, t: t, evidence: st.lastEvidence, from: from, to: to, flow: f,
                            source: Self.descriptor.id, attrs: attrs))
    }

    private func evict(_ ctx: PluginContext) {
        // Ties by flow, never the table's hash order: every run evicts the same flows.
        let victims = flows.sorted { a, b in
            a.value.lastAt != b.value.lastAt ? a.value.lastAt < b.value.lastAt : "\(a.key)" < "\(b.key)"
        }.prefix(max(1, Self.maxFlows / 8))
        for (k, _) in victims {
            flows[k] = nil
            ctx.diagnose("flows_evicted", "more than \(Self.maxFlows) DTLS flows tracked: \(k) (least recently seen) was forgotten", severity: .info)
        }
    }
}
