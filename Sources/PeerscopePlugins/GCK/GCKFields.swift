import PeerscopeCore

/// GCK messages' `peerscope decode` fields written straight into the output bytes (issue 13): Data and
/// Heartbeat are most of a GCK session's packets, and building their field lists per message on the
/// writer thread cost more than the rest of their line. `fields` is the list these bytes must equal
/// (the writers they replace built it; `GCKFieldsTests` and the decode tests compare).

/// The members every GCK message starts with (`GCKDecoding.common`).
struct GCKCommonFields {
    var type: UInt8
    var version: UInt8
    var length: UInt16
    var flags: UInt16
    var crc: UInt16
    var crcOK: Bool
    var source: UInt32
    var destination: UInt32

    init(_ h: GCKHeader) {
        type = h.type
        version = h.version
        length = h.length
        flags = h.flags
        crc = h.crc
        crcOK = h.crcOK
        source = h.source
        destination = h.destination
    }

    var fields: [(String, JSONValue)] {
        [
            ("gckType", .int(Int64(type))),
            ("version", .int(Int64(version))),
            ("length", .int(Int64(length))),
            ("flags", .string(SessionHex.u16(flags))),
            ("crc", .string(SessionHex.u16(crc))),
            ("crcValid", .bool(crcOK)),
            ("source", .string(PeerIdentity.participantHex(source))),
            ("destination", .string(PeerIdentity.participantHex(destination))),
        ]
    }

    func writeMembers(to out: inout JSONBytes) {
        out.key("gckType")
        out.uint(UInt64(type))
        out.key("version")
        out.uint(UInt64(version))
        out.key("length")
        out.uint(UInt64(length))
        out.key("flags")
        out.fixedHex(UInt64(flags), digits: 4)
        out.key("crc")
        out.fixedHex(UInt64(crc), digits: 4)
        out.key("crcValid")
        out.bool(crcOK)
        out.key("source")
        out.fixedHex(UInt64(source), digits: 8, uppercase: true)
        out.key("destination")
        out.fixedHex(UInt64(destination), digits: 8, uppercase: true)
    }
}

/// A GCK Data packet with its inner header (`GCKDataPlugin`).
public struct GCKDataFields: MessageFieldsWriter {
    let common: GCKCommonFields
    let kind: UInt8
    let kindFlags: UInt8
    let checksum: UInt16
    let checksumSeen: Bool
    let seq: UInt32
    let control: Bytes
    let rest: Bytes
    let showPayloads: Bool

    init(_ h: GCKHeader, _ inner: GCKDataInner, checksumSeen: Bool, showPayloads: Bool) {
        common = GCKCommonFields(h)
        kind = inner.kind
        kindFlags = inner.kindFlags
        checksum = inner.checksum
        self.checksumSeen = checksumSeen
        seq = inner.seq
        control = inner.control
        rest = inner.rest
        self.showPayloads = showPayloads
    }

    var kindName: String { GCKDataInner.kindName(kind) }

    public var fields: [(String, JSONValue)] {
        var fields = common.fields
        fields.append(contentsOf: [
            ("kind", .string(kindName)),
            ("kindFlags", .string(SessionHex.u8(kindFlags))),
            ("innerChecksum", .string(SessionHex.u16(checksum))),
            ("innerChecksumAsObserved", .bool(checksumSeen)),
            ("seq", .uint(UInt64(seq))),
            ("control", .string(control.hex)),
            ("payloadSize", .int(Int64(rest.count))),
        ])
        if showPayloads { fields.append(("restHex", .string(rest.prefix(256).hex))) }
        return fields
    }

    public func writeMembers(to out: inout JSONBytes) {
        common.writeMembers(to: &out)
        out.key("kind")
        switch kind {
        case 5: out.literal("data")
        case 7: out.literal("ack")
        default: out.string(kindName)
        }
        out.key("kindFlags")
        out.fixedHex(UInt64(kindFlags), digits: 2)
        out.key("innerChecksum")
        out.fixedHex(UInt64(checksum), digits: 4)
        out.key("innerChecksumAsObserved")
        out.bool(checksumSeen)
        out.key("seq")
        out.uint(UInt64(seq))
        out.key("control")
        out.hex(control)
        out.key("payloadSize")
        out.uint(UInt64(rest.count))
        if showPayloads {
            out.key("restHex")
            out.hex(rest.prefix(256))
        }
    }
}

/// A GCK Heartbeat (`GCKHeartbeatPlugin`): the common members, then `sn` and `field18` when the body
/// holds them.
public struct GCKHeartbeatFields: MessageFieldsWriter {
    let common: GCKCommonFields
    /// `sn` and `field18`, when the body is long enough for both.
    let body: (sn: UInt16, x: UInt16)?

    init(_ h: GCKHeader, sn: UInt16?, x: UInt16?) {
        common = GCKCommonFields(h)
        if let sn, let x { body = (sn, x) } else { body = nil }
    }

    public var fields: [(String, JSONValue)] {
        var fields = common.fields
        if let body {
            fields.append(("sn", .int(Int64(body.sn))))
            fields.append(("field18", .int(Int64(body.x))))
        }
        return fields
    }

    public func writeMembers(to out: inout JSONBytes) {
        common.writeMembers(to: &out)
        if let body {
            out.key("sn")
            out.uint(UInt64(body.sn))
            out.key("field18")
            out.uint(UInt64(body.x))
        }
    }
}

/// A GCK Hello (`GCKHelloPlugin`): the common members and the body's first 64 bytes as hex.
public struct GCKHelloFields: MessageFieldsWriter {
    let common: GCKCommonFields
    let body: Bytes

    init(_ h: GCKHeader) {
        common = GCKCommonFields(h)
        body = h.body.prefix(64)
    }

    public var fields: [(String, JSONValue)] { common.fields + [("bodyHex", .string(body.hex))] }

    public func writeMembers(to out: inout JSONBytes) {
        common.writeMembers(to: &out)
        out.key("bodyHex")
        out.hex(body)
    }
}

/// A GCK LSAACK (`GCKLSAACKPlugin`): the common members and the SN when the body has one.
public struct GCKLSAACKFields: MessageFieldsWriter {
    let common: GCKCommonFields
    let sn: UInt16?

    init(_ h: GCKHeader, sn: UInt16?) {
        common = GCKCommonFields(h)
        self.sn = sn
    }

    public var fields: [(String, JSONValue)] {
        var f = common.fields
        if let sn { f.append(("sn", .int(Int64(sn)))) }
        return f
    }

    public func writeMembers(to out: inout JSONBytes) {
        common.writeMembers(to: &out)
        if let sn {
            out.key("sn")
            out.uint(UInt64(sn))
        }
    }
}
