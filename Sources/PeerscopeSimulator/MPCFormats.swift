// Encoders for the MultipeerConnectivity wire formats (spec §1.1-1.3, corrected by §4).

/// An MCPeerID as it appears on the wire.
public struct SimPeerID: Sendable, Hashable {
    public var displayName: String
    public var pid64: UInt64

    public init(displayName: String, pid64: UInt64) { self.displayName = displayName; self.pid64 = pid64 }

    /// 13-character, zero-padded base-36 of `pid64` (the Bonjour instance name).
    public var idString: String { Self.base36(pid64) }
    /// The GCK participant ID: `pid64 & 0x7FFFFFFF`.
    public var participant: UInt32 { UInt32(pid64 & 0x7FFF_FFFF) }
    public var participantHex: String { Hex.upper8(participant) }
    /// `displayNameAndPID`: "%@,%08X".
    public var displayNameAndPID: String { "\(displayName),\(participantHex)" }
    /// `-[MCPeerID serializedRepresentation]`: 8-byte BE pid64, 1-byte length, UTF-8 name.
    public var serialized: [UInt8] {
        var w = ByteWriter()
        w.u64(pid64)
        let name = Array(displayName.utf8.prefix(255))
        w.u8(UInt8(name.count)); w.append(name)
        return w.bytes
    }

    public static func base36(_ value: UInt64) -> String {
        let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        var v = value
        var out: [Character] = []
        while v > 0 { out.append(digits[Int(v % 36)]); v /= 36 }
        while out.count < 13 { out.append("0") }
        return String(out.reversed())
    }
}

// MARK: - Invitation channel (TCP)

public enum InvitationFrameType: UInt16, Sendable {
    case hello = 2000, data = 2100, accept = 2200
    var logName: String {
        switch self { case .hello: return "Hello"; case .data: return "Data"; case .accept: return "Accept" }
    }
}

public enum InvitationFrame {
    /// A framed message: 16-byte header (type, flags, length, CRC32 with the field zeroed, seq), then body.
    public static func encode(type: InvitationFrameType, receipt: Bool = false, sequence: UInt32, body: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u16(type.rawValue)
        w.u16(receipt ? 1 : 0)
        w.u32(UInt32(body.count))
        w.u32(0)
        w.u32(sequence & 0x7FFF_FFFF)
        w.append(body)
        let crc = SimChecksum.crc32(w.bytes)
        w.set32(crc, at: 8)
        return w.bytes
    }

    /// Hello body: u32 flags, u16 name length (counting the NUL), "<idString>+<displayName>\0".
    public static func helloBody(_ peer: SimPeerID, flags: UInt32 = 6) -> [UInt8] {
        var name = Array("\(peer.idString)+\(peer.displayName)".utf8)
        name.append(0)
        var w = ByteWriter()
        w.u32(flags)
        w.u16(UInt16(name.count))
        w.append(name)
        return w.bytes
    }
}

public enum EncryptionPreference: UInt8, Sendable {
    case optional = 0, required = 1, none = 2
    public var name: String {
        switch self { case .optional: return "Optional"; case .required: return "Required"; case .none: return "None" }
    }
}

/// One local interface a peer offers for the GCK session.
public struct ConnectionEndpoint: Sendable {
    public var address: [UInt8]  // 4 or 16 bytes
    public var port: UInt16
    public var token: UInt32
    public init(address: [UInt8], port: UInt16, token: UInt32) { self.address = address; self.port = port; self.token = token }
}

public enum ConnectionData {
    /// MC segment 0x80: flags & 3 = encryption preference, u16 BE length including the 4-byte header,
    /// then the GCK connection data: entries byte (IPv4 count << 4 | IPv6 count), IPv4 addresses
    /// byte-reversed, IPv6 addresses, then one 16-byte little-endian entry per interface
    /// (0x61, participant, token, family 0x5A/0x0A, 3 bytes, index, port).
    public static func encode(participant: UInt32, preference: EncryptionPreference, endpoints: [ConnectionEndpoint]) -> [UInt8] {
        let v4 = endpoints.filter { $0.address.count == 4 }
        let v6 = endpoints.filter { $0.address.count == 16 }
        var body = ByteWriter()
        body.u8(UInt8((v4.count & 0xF) << 4 | (v6.count & 0xF)))
        for e in v4 { body.append(e.address.reversed()) }
        for e in v6 { body.append(e.address) }
        for (i, e) in v4.enumerated() { entry(&body, participant, e, family: 0x5A, kind: 1, index: 0x80 | UInt8(i & 0xF)) }
        for (i, e) in v6.enumerated() { entry(&body, participant, e, family: 0x0A, kind: 2, index: 0x90 | UInt8(i & 0xF)) }
        var w = ByteWriter()
        w.u8(0x80)
        w.u8(preference.rawValue & 3)
        w.u16(UInt16(4 + body.count))
        w.append(body.bytes)
        return w.bytes
    }

    private static func entry(_ w: inout ByteWriter, _ participant: UInt32, _ e: ConnectionEndpoint, family: UInt8, kind: UInt8, index: UInt8) {
        w.u8(0x61)
        w.u32le(participant)
        w.u32(e.token)
        w.u8(family)
        w.u8(0); w.u8(kind); w.u8(0)
        w.u8(index)
        w.u16le(e.port)
    }
}

public enum InvitationMessage {
    public static func invite(sender: SimPeerID, recipient: SimPeerID, inviteID: Int64) -> PlistValue {
        .dict([
            ("MCNearbyServiceMessageIDKey", .int(1)),
            ("MCNearbyServiceSenderPeerIDKey", .data(sender.serialized)),
            ("MCNearbyServiceRecipientPeerIDKey", .data(recipient.serialized)),
            ("MCNearbyServiceInviteIDKey", .int(inviteID)),
        ])
    }

    public static func response(sender: SimPeerID, recipient: SimPeerID, inviteID: Int64, accept: Bool, connectionData: [UInt8]?) -> PlistValue {
        var pairs: [(String, PlistValue)] = [
            ("MCNearbyServiceMessageIDKey", .int(2)),
            ("MCNearbyServiceAcceptInviteKey", .bool(accept)),
            ("MCNearbyServiceSenderPeerIDKey", .data(sender.serialized)),
            ("MCNearbyServiceRecipientPeerIDKey", .data(recipient.serialized)),
            ("MCNearbyServiceInviteIDKey", .int(inviteID)),
        ]
        if accept, let cd = connectionData { pairs.append(("MCNearbyServiceConnectionDataKey", .data(cd))) }
        return .dict(pairs)
    }

    public static func connect(sender: SimPeerID, recipient: SimPeerID, inviteID: Int64, connectionData: [UInt8]) -> PlistValue {
        .dict([
            ("MCNearbyServiceMessageIDKey", .int(3)),
            ("MCNearbyServiceSenderPeerIDKey", .data(sender.serialized)),
            ("MCNearbyServiceRecipientPeerIDKey", .data(recipient.serialized)),
            ("MCNearbyServiceInviteIDKey", .int(inviteID)),
            ("MCNearbyServiceConnectionDataKey", .data(connectionData)),
        ])
    }
}

// MARK: - STUN (ICE connectivity checks)

public struct STUNAttribute: Sendable {
    public var type: UInt16
    public var value: [UInt8]
    public init(_ type: UInt16, _ value: [UInt8]) { self.type = type; self.value = value }
}

public enum STUN {
    public static let magicCookie: UInt32 = 0x2112_A442

    public static func message(type: UInt16, transactionID: [UInt8], attributes: [STUNAttribute]) -> [UInt8] {
        var body = ByteWriter()
        for a in attributes {
            body.u16(a.type)
            body.u16(UInt16(a.value.count))
            body.append(a.value)
            body.pad(to: 4)
        }
        var w = ByteWriter()
        w.u16(type)
        w.u16(UInt16(body.count))
        w.u32(magicCookie)
        w.append(Array(transactionID.prefix(12)))
        w.zeros(12 - min(12, transactionID.count))
        w.append(body.bytes)
        return w.bytes
    }

    /// USERNAME as MPC sends it: 20 binary bytes: destination token, 4 zeros, 0001, source token, 4 zeros, 0001.
    public static func username(destinationToken: UInt32, sourceToken: UInt32) -> STUNAttribute {
        var w = ByteWriter()
        w.u32(destinationToken); w.u32(0); w.u16(1)
        w.u32(sourceToken); w.u32(0); w.u16(1)
        return STUNAttribute(0x0006, w.bytes)
    }

    public static func mappedAddress(address: [UInt8], port: UInt16) -> STUNAttribute {
        var w = ByteWriter()
        w.u8(0)
        w.u8(address.count == 16 ? 2 : 1)
        w.u16(port)
        w.append(address)
        return STUNAttribute(0x0001, w.bytes)
    }

    public static func u32(_ type: UInt16, _ v: UInt32) -> STUNAttribute {
        var w = ByteWriter(); w.u32(v); return STUNAttribute(type, w.bytes)
    }
}

// MARK: - GCK (OSPF-like) packets

public enum GCKType: UInt8, Sendable {
    case hello = 1, dd = 2, lsa = 3, lsaack = 4, data = 5, heartbeat = 8
}

public enum GCKPacket {
    /// 16-byte header (0xC1, type, u16 length, u16 flags, CRC-16/ARC with the field zeroed, source and
    /// destination participant) followed by `body`.
    public static func encode(type: GCKType, flags: UInt16 = 0, source: UInt32, destination: UInt32, body: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(0xC1)
        w.u8(type.rawValue)
        w.u16(UInt16(16 + body.count))
        w.u16(flags)
        w.u16(0)
        w.u32(source)
        w.u32(destination)
        w.append(body)
        w.set16(SimChecksum.crc16ARC(w.bytes), at: 6)
        return w.bytes
    }

    /// Hello (34 bytes, flags 0x0003 as in the real captures).
    public static func hello(source: UInt32, destination: UInt32, token: UInt32) -> [UInt8] {
        var b = ByteWriter()
        b.u32(token); b.u32(0x0010_0B02); b.u32(0x0000_8000); b.u32(0); b.u16(2)
        return encode(type: .hello, flags: 3, source: source, destination: destination, body: b.bytes)
    }

    /// Database description (43 bytes): the sender's node and its neighbour.
    public static func dd(source: UInt32, destination: UInt32, sequence: UInt32) -> [UInt8] {
        var b = ByteWriter()
        b.u16(1); b.u32(source); b.u16(1)
        b.u8(8); b.utf8(Hex.upper8(source))
        b.u16(1); b.u32(destination); b.u32(sequence)
        return encode(type: .dd, source: source, destination: destination, body: b.bytes)
    }

    /// Link-state advertisement (45 bytes).
    public static func lsa(source: UInt32, destination: UInt32, sequence: UInt32) -> [UInt8] {
        var b = ByteWriter()
        b.u32(1); b.u32(source); b.u16(1)
        b.u8(8); b.utf8(Hex.upper8(source))
        b.u16(1); b.u32(destination); b.u32(sequence)
        return encode(type: .lsa, source: source, destination: destination, body: b.bytes)
    }

    /// LSA acknowledgement (18 bytes).
    public static func lsaAck(source: UInt32, destination: UInt32, sequence: UInt16) -> [UInt8] {
        var b = ByteWriter(); b.u16(sequence)
        return encode(type: .lsaack, source: source, destination: destination, body: b.bytes)
    }

    /// Heartbeat (20 bytes): u16 sequence number, u16 1.
    public static func heartbeat(source: UInt32, destination: UInt32, sequence: UInt16) -> [UInt8] {
        var b = ByteWriter(); b.u16(sequence); b.u16(1)
        return encode(type: .heartbeat, source: source, destination: destination, body: b.bytes)
    }

    /// Reliable data (type 5) with the 20-byte inner header: kind 0x05, 0x00, inner checksum,
    /// participants little-endian, u32 LE serial, 4 bytes of counters; app payload at byte 36.
    public static func data(source: UInt32, destination: UInt32, serial: UInt32, payload: [UInt8]) -> [UInt8] {
        encode(type: .data, source: source, destination: destination,
               body: inner(kind: 0x05, sub: 0x00, source: source, destination: destination, serial: serial, tail: payload))
    }

    /// The acknowledgement of a reliable data packet (44 bytes): inner kind 0x07.
    public static func dataAck(source: UInt32, destination: UInt32, serial: UInt32) -> [UInt8] {
        encode(type: .data, source: source, destination: destination,
               body: inner(kind: 0x07, sub: 0x0B, source: source, destination: destination, serial: serial,
                           counterBias: 4, tail: [UInt8](repeating: 0, count: 8)))
    }

    private static func inner(kind: UInt8, sub: UInt8, source: UInt32, destination: UInt32, serial: UInt32,
                              counterBias: UInt32 = 0, tail: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(kind); w.u8(sub); w.u16(0)
        w.u32le(source); w.u32le(destination)
        w.u32le(serial)
        w.u8(UInt8(truncatingIfNeeded: 2 &+ 4 &* serial &+ counterBias))
        w.u8(UInt8(truncatingIfNeeded: serial))
        w.u16(UInt16(truncatingIfNeeded: 4 &* (serial &+ 1)))
        w.append(tail)
        // Observed on real packets: ones'-complement checksum of the inner part, kind byte counted one lower.
        var forSum = w.bytes
        forSum[0] = forSum[0] &- 1
        w.set16(SimChecksum.internet(forSum), at: 2)
        return w.bytes
    }
}

// MARK: - DTLS 1.0 records behind the 0xD0 prefix

public enum DTLSContentType: UInt8, Sendable { case changeCipherSpec = 20, alert = 21, handshake = 22, applicationData = 23 }

public enum DTLSRecord {
    /// 0xD0, then one DTLS 1.0 record: type, version FEFF, u16 epoch, u48 sequence, u16 length, fragment.
    public static func wrapped(_ type: DTLSContentType, epoch: UInt16, sequence: UInt64, fragment: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(0xD0)
        w.u8(type.rawValue)
        w.u16(0xFEFF)
        w.u16(epoch)
        w.u48(sequence)
        w.u16(UInt16(fragment.count))
        w.append(fragment)
        return w.bytes
    }

    /// A handshake message with its DTLS header (unfragmented).
    public static func handshake(type: UInt8, messageSeq: UInt16, body: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(type)
        w.u24(UInt32(body.count))
        w.u16(messageSeq)
        w.u24(0)
        w.u24(UInt32(body.count))
        w.append(body)
        return w.bytes
    }

    static func clientHello(random: [UInt8]) -> [UInt8] {
        var b = ByteWriter()
        b.u16(0xFEFF); b.append(random)
        b.u8(0)  // session id
        b.u8(0)  // cookie
        let suites: [UInt16] = [0xC019, 0xC018, 0x006D, 0x003A, 0x006C, 0x0034]
        b.u16(UInt16(suites.count * 2)); for s in suites { b.u16(s) }
        b.u8(1); b.u8(0)
        var ext = ByteWriter()
        ext.u16(0x000A); ext.u16(8); ext.u16(6); ext.u16(0x0017); ext.u16(0x0018); ext.u16(0x0019)
        ext.u16(0x000B); ext.u16(2); ext.u8(1); ext.u8(0)
        b.u16(UInt16(ext.count)); b.append(ext.bytes)
        return b.bytes
    }

    static func serverHello(random: [UInt8]) -> [UInt8] {
        var b = ByteWriter()
        b.u16(0xFEFF); b.append(random)
        b.u8(0)
        b.u16(0xC019)
        b.u8(0)
        var ext = ByteWriter()
        ext.u16(0x000B); ext.u16(2); ext.u8(1); ext.u8(0)
        b.u16(UInt16(ext.count)); b.append(ext.bytes)
        return b.bytes
    }

    /// Anonymous ECDH: named curve secp256r1 and an uncompressed point; no signature.
    static func ecdhParams(point: [UInt8]) -> [UInt8] {
        var b = ByteWriter()
        b.u8(3); b.u16(0x0017); b.u8(UInt8(point.count)); b.append(point)
        return b.bytes
    }

    /// Size of an AES-CBC + HMAC-SHA1 record body for `plaintext` bytes: IV, data, MAC, padding.
    public static func cbcSize(_ plaintext: Int) -> Int {
        let block = 16
        let withMac = plaintext + 20 + 1
        return 16 + ((withMac + block - 1) / block) * block
    }
}
