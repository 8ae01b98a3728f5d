import PeerscopeCore

/// The 16-byte header of a GCK ("OSPF-like") session packet, spec §1.3 and §4:
/// `0xC0|n, type, u16 length, u16 flags, u16 CRC-16/ARC (field zeroed), u32 source, u32 destination`.
struct GCKHeader {
    static let size = 16
    static let mpcPorts: ClosedRange<UInt16> = MPCPorts.gck

    static let hello: UInt8 = 1
    static let dd: UInt8 = 2
    static let lsa: UInt8 = 3
    static let lsaack: UInt8 = 4
    static let data: UInt8 = 5
    static let heartbeat: UInt8 = 8

    var first: UInt8
    var type: UInt8
    var length: UInt16
    var flags: UInt16
    var crc: UInt16
    var computedCRC: UInt16
    var source: UInt32
    var destination: UInt32
    /// Datagram bytes after the header, up to the declared length when that is shorter.
    var body: Bytes

    var version: UInt8 { first & 0x0F }
    var crcOK: Bool { crc == computedCRC }

    static func typeName(_ t: UInt8) -> String {
        switch t {
        case hello: "Hello"
        case dd: "DD"
        case lsa: "LSA"
        case lsaack: "LSAACK"
        case data: "Data"
        case heartbeat: "Heartbeat"
        case 10: "type-10"
        default: "type-\(t)"
        }
    }

    /// CRC-16/ARC over the datagram with bytes 6-7 taken as zero.
    static func computeCRC(_ b: Bytes) -> UInt16 {
        let head = Checksum.crc16ARC(b.prefix(6))
        let zeroed = Checksum.crc16ARC([0, 0], continuing: head)
        return Checksum.crc16ARC(b.suffix(from: 8), continuing: zeroed)
    }

    init?(_ b: Bytes) {
        guard let f = b.byte(0), let t = b.byte(1), let len = b.u16be(2), let fl = b.u16be(4), let c = b.u16be(6),
              let s = b.u32be(8), let d = b.u32be(12) else { return nil }
        first = f
        type = t
        length = len
        flags = fl
        crc = c
        source = s
        destination = d
        computedCRC = GCKHeader.computeCRC(b)
        let end = min(b.count, max(GCKHeader.size, Int(len)))
        body = b.slice(GCKHeader.size, end - GCKHeader.size) ?? .empty
    }
}

/// The GCK family's one probe: it reads the header once per datagram and names the message type
/// (the type byte in decimal, `GCKFamily.member(type)`); the pipeline runs the member plugin claiming that
/// type, or `GCKOtherPlugin` (the fallback) for types without one. Members get the header as `parsed`.
public enum GCKFamily: ProtocolFamily {
    public static let id = "gck"
    public static let claims: [Claim] = [.udpPorts(GCKHeader.mpcPorts), .udpHeuristic]
    private static let keys: [String] = (0 ... 255).map { String($0) }

    /// The member claim of GCK type `type`.
    public static func member(_ type: UInt8) -> Claim { .member(family: id, key: keys[Int(type)]) }

    /// On MPC's session ports a packet with a bad length or CRC is still taken (and diagnosed by its
    /// member); elsewhere (ephemeral-port fallback) the length must match and the CRC verify, so
    /// random traffic is not mistaken for GCK.
    public static func classify(_ input: PluginInput) -> FamilyMatch {
        let b = input.payload
        guard let f = b.byte(0), f & 0xF0 == 0xC0, let t = b.byte(1) else { return .reject }
        let onMPCPort = input.flow.map(MPCPorts.touchesGCK) ?? true
        let carried: Bool = if case .carried = input.delivery { true } else { false }
        if onMPCPort || carried {
            // Shorter than the header: the member reports it truncated.
            return b.count >= 4 ? .member(key: keys[Int(t)], parsed: GCKHeader(b)) : .reject
        }
        guard b.count >= GCKHeader.size, b.count <= 0xFFFF, b.u16be(2) == UInt16(truncatingIfNeeded: b.count),
              let h = GCKHeader(b), h.crcOK else { return .reject }
        return .member(key: keys[Int(t)], parsed: h)
    }
}

/// What every GCK plugin does before looking at its body: header, length and CRC checks, hints.
enum GCKDecoding {
    /// What every GCK plugin may report (ids shared by the family, not prefixed by the plugin).
    static let diagnostics: [DiagnosticSpec] = [
        DiagnosticSpec("gck.truncated", .warning, "a packet shorter than the GCK header", absolute: true),
        DiagnosticSpec("gck.length", .warning, "the header's length disagrees with the datagram", absolute: true),
        DiagnosticSpec("gck.bad_crc", .warning, "a packet failing its CRC (GCK drops it)", absolute: true),
        DiagnosticSpec("gck.dd.body", .warning, "a DD body that cannot be read", absolute: true),
        DiagnosticSpec("gck.lsa.body", .warning, "an LSA body that cannot be read", absolute: true),
        DiagnosticSpec("gck.lsaack.body", .warning, "an LSAACK body that is not 2 bytes", absolute: true),
        DiagnosticSpec("gck.heartbeat.body", .warning, "a Heartbeat body that is not 4 bytes", absolute: true),
        DiagnosticSpec("gck.data.inner", .warning, "a Data body too short for its inner header", absolute: true),
        DiagnosticSpec("gck.data.participants", .warning, "a Data packet's participant list past its body", absolute: true),
        DiagnosticSpec("gck.unknown_type", .info, "a packet of an unknown GCK type", absolute: true),
    ]

    /// Message types every GCK plugin may emit besides its own.
    static let truncatedType = "truncated"
    static let badCRCType = "bad-crc"
    static func messageTypes(_ own: String...) -> [String] { own + [truncatedType, badCRCType] }

    static func diagnose(_ ctx: PluginContext, _ id: String, _ message: String, offset: Int?, severity: Severity = .warning) {
        let input = ctx.currentInput
        ctx.onDiagnostic(Diagnostic(id: id, severity: severity, message: message, evidence: input?.evidence,
                                    offset: offset, t: input?.t ?? ctx.now))
    }

    /// Parses and checks the header. Returns nil when the packet is unusable (truncated header, bad
    /// CRC: GCK drops those, so no typed event follows). Diagnostics: `gck.truncated`, `gck.length`,
    /// `gck.bad_crc` (plus a `.checksumError` event).
    static func header(_ input: PluginInput, _ ctx: PluginContext) -> (GCKHeader, from: PeerHint, to: PeerHint)? {
        let b = input.payload
        // The family probe hands the header it read on (`parsed`); read here only when run alone.
        guard let h = (input.parsed as? GCKHeader) ?? GCKHeader(b) else {
            diagnose(ctx, "gck.truncated", "GCK packet of \(b.count) bytes, header needs \(GCKHeader.size)", offset: b.count)
            ctx.message(GCKDecoding.truncatedType, [("length", .int(Int64(b.count))), ("hex", .string(b.prefix(32).hex))])
            return nil
        }
        if Int(h.length) != b.count {
            diagnose(ctx, "gck.length", "GCK \(GCKHeader.typeName(h.type)) length field \(h.length) != datagram length \(b.count)",
                     offset: 2)
        }
        // The hints are the events' only (`peerscope decode` without `--events` makes none).
        let from = ctx.wantsEvents ? ctx.directory.hint(forParticipant: h.source) : .unknown
        let to = ctx.wantsEvents ? ctx.directory.hint(forParticipant: h.destination) : .unknown
        if !h.crcOK {
            diagnose(ctx, "gck.bad_crc",
                     "GCK \(GCKHeader.typeName(h.type)) CRC-16 \(SessionHex.u16(h.crc)) != computed \(SessionHex.u16(h.computedCRC))",
                     offset: 6, severity: .error)
            var attrs: [String: String] = [:]
            attrs[.protocolName] = "gck"
            attrs[.type] = GCKHeader.typeName(h.type)
            attrs[.given] = SessionHex.u16(h.crc)
            attrs[.computed] = SessionHex.u16(h.computedCRC)
            ctx.event(.checksumError, from: from, to: to, attrs: attrs)
            ctx.message(GCKDecoding.badCRCType, common(h, b) + [("dropped", .string("bad CRC"))])
            return nil
        }
        return (h, from, to)
    }

    static func common(_ h: GCKHeader, _ b: Bytes) -> [(String, JSONValue)] { GCKCommonFields(h).fields }

    /// The attributes every GCK event has; none when nobody keeps events (they are the events' only).
    static func baseAttrs(_ h: GCKHeader, _ ctx: PluginContext) -> EventAttrs {
        var attrs = EventAttrs()
        guard ctx.wantsEvents else { return attrs }
        attrs[.length] = Int(h.length)
        return attrs
    }
}

/// A node record of the DD and LSA bodies, as read off the real packets (spec §4); the meaning of
/// `serial` is a guess: `u32 node, u16 serial, u8 nameLen, name (the node ID in hex text),
/// u16 neighbourCount, neighbourCount × (u32 neighbour, u32 RTT)`.
struct GCKNodeRecord {
    var node: UInt32
    var serial: UInt16
    var name: String
    var neighbours: [(id: UInt32, rtt: UInt32)]

    static let maxNeighbours = 64

    /// Reads one record at the cursor; nil (cursor unchanged) when it does not fit.
    static func read(_ c: inout ByteCursor) -> GCKNodeRecord? {
        var r = c
        guard let node = r.u32be(), let serial = r.u16be(), let nl = r.u8(), let name = r.take(Int(nl)),
              let count = r.u16be(), Int(count) <= maxNeighbours else { return nil }
        var ns: [(UInt32, UInt32)] = []
        for _ in 0 ..< Int(count) {
            guard let id = r.u32be(), let rtt = r.u32be() else { return nil }
            ns.append((id, rtt))
        }
        c = r
        return GCKNodeRecord(node: node, serial: serial, name: String(decoding: name.array, as: UTF8.self),
                             neighbours: ns.map { (id: $0.0, rtt: $0.1) })
    }

    var json: JSONValue {
        .object([
            ("node", .string(PeerIdentity.participantHex(node))),
            ("serial", .int(Int64(serial))),
            ("name", .string(name)),
            ("neighbours", .array(neighbours.map {
                .object([("id", .string(PeerIdentity.participantHex($0.id))), ("rtt", .uint(UInt64($0.rtt)))])
            })),
        ])
    }

    /// Reads `count` records from the cursor; stops at the first that does not fit.
    static func readAll(_ c: inout ByteCursor, count: Int) -> (records: [GCKNodeRecord], complete: Bool) {
        var out: [GCKNodeRecord] = []
        for _ in 0 ..< min(count, 64) {
            guard let r = read(&c) else { return (out, false) }
            out.append(r)
        }
        return (out, count <= 64)
    }
}

/// The inner header of GCK Data packets (bytes 16-35), read off the real `0xC105` packets (spec §4).
/// Two sub-kinds were seen: 69-byte packets with `kind` 5 and a 33-byte payload at byte 36, and
/// 44-byte packets with `kind` 7 and eight zero bytes, which mirror the data packets' sequence numbers
/// (read here as acknowledgements). Field names other than the participant IDs and `seq` are guesses.
struct GCKDataInner {
    static let size = 20
    static let payloadOffset = 36

    var kind: UInt8           // byte 16: 5 data, 7 ack (as observed)
    var kindFlags: UInt8      // byte 17: 0x00 on data, 0x0b on acks
    var checksum: UInt16      // bytes 18-19: a 16-bit ones'-complement-style sum (see `checksumMatchesObserved`)
    var source: UInt32        // bytes 20-23, little-endian
    var destination: UInt32   // bytes 24-27, little-endian
    var seq: UInt32           // bytes 28-31, little-endian
    var control: Bytes        // bytes 32-35: byte 32 = (cumulative ack << 2) | 2 as observed, byte 33 = seq, 34-35 grow by 4
    var rest: Bytes           // bytes 36...

    var kindName: String { GCKDataInner.kindName(kind) }

    static func kindName(_ kind: UInt8) -> String {
        switch kind {
        case 5: "data"
        case 7: "ack"
        default: "kind-\(kind)"
        }
    }

    /// Byte 32 >> 2: the peer's next expected sequence number, if the reading above is right.
    var ackHint: UInt8? { control.byte(0).map { $0 >> 2 } }

    init?(_ body: Bytes) {
        guard let k = body.byte(0), let kf = body.byte(1), let ck = body.u16be(2), let s = body.u32le(4),
              let d = body.u32le(8), let q = body.u32le(12), let ctl = body.slice(16, 4) else { return nil }
        kind = k
        kindFlags = kf
        checksum = ck
        source = s
        destination = d
        seq = q
        control = ctl
        rest = body.suffix(from: GCKDataInner.size)
    }

    /// On all 16 real Data packets the field equals `~sum + 0x0100`, where `sum` is the 16-bit
    /// ones'-complement sum of bytes 16... with the field zeroed. The `+ 0x0100` is unexplained, so a
    /// mismatch is reported as a fact, never as an error.
    static func checksumMatchesObserved(_ body: Bytes, given: UInt16) -> Bool {
        var sum: UInt32 = 0
        var i = 0
        while i < body.count {
            let hi = UInt32(body.byte(i) ?? 0)
            let lo = UInt32(body.byte(i + 1) ?? 0)
            if i != 2 { sum &+= hi << 8 | lo }
            i += 2
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) &+ (sum >> 16) }
        let c = (~UInt16(truncatingIfNeeded: sum)) &+ 0x0100
        return c == given
    }
}
