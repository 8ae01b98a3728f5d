import PeerscopeCore

/// `-[MCPeerID serializedRepresentation]` as carried in the invitation plists: 8-byte big-endian
/// pid64, a 1-byte length, then the UTF-8 display name (spec §1.2). One source (mcwire) shows a
/// 4-byte prefix before the pid64; that reading is accepted when the standard one does not fit.
public struct SerializedPeerID: Sendable, Hashable {
    public var peerID: UInt64
    public var displayName: String
    /// Bytes before the pid64 (0 in the standard layout, 4 in the prefixed reading).
    public var prefixLength: Int

    public init(peerID: UInt64, displayName: String, prefixLength: Int = 0) {
        self.peerID = peerID
        self.displayName = displayName
        self.prefixLength = prefixLength
    }

    public var idString: String { PeerIdentity.idString(peerID) }

    public enum Problem: String, Sendable, Error {
        case short, lengthMismatch = "length_mismatch", badUTF8 = "bad_utf8"
    }

    /// Parses the representation; the length byte must account for every remaining byte.
    public static func parse(_ b: Bytes) -> Result<SerializedPeerID, Problem> {
        var firstProblem: Problem = .short
        for prefix in [0, 4] {
            guard let id = b.u64be(prefix), let n = b.byte(prefix + 8) else { continue }
            guard b.count == prefix + 9 + Int(n), let nameBytes = b.slice(prefix + 9, Int(n)) else {
                if prefix == 0 { firstProblem = .lengthMismatch }
                continue
            }
            guard let name = InvitationText.utf8(nameBytes) else { return .failure(.badUTF8) }
            return .success(SerializedPeerID(peerID: id, displayName: name, prefixLength: prefix))
        }
        return .failure(firstProblem)
    }

    /// The JSON for `decode` output.
    public var json: JSONValue {
        .object([("peerID", .string(idString)), ("participant", .string(PeerIdentity.participantHex(PeerIdentity.participantID(peerID)))),
                 ("displayName", .string(displayName))])
    }
}

enum InvitationText {
/// The peer the directory knows at exactly this endpoint (not just the address).
static func exactPeer(_ e: Endpoint, _ directory: PeerDirectory) -> UInt64? {
    guard let id = directory.peerID(for: e), directory.entries[id]?.endpoints.contains(e) == true else { return nil }
    return id
}

static func hex32(_ v: UInt32) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, 8 - s.count)) + s
}

/// Strict UTF-8 decoding (nil on invalid sequences).
static func utf8(_ b: Bytes) -> String? {
    var it = b.storage[b.lower ..< b.lower + b.count].makeIterator()
    var codec = UTF8()
    var out = String.UnicodeScalarView()
    while true {
        switch codec.decode(&it) {
        case .scalarValue(let s): out.append(s)
        case .emptyInput: return String(out)
        case .error: return nil
        }
    }
}
}

/// The sender's encryption preference carried in the connection-data flags (`flags & 3`).
public enum EncryptionPreference: UInt8, Sendable, CustomStringConvertible {
    case optional = 0, required = 1, none = 2, reserved = 3
    public var description: String {
        switch self {
        case .optional: "optional"
        case .required: "required"
        case .none: "none"
        case .reserved: "unknown(3)"
        }
    }
}

/// The value of `MCNearbyServiceConnectionDataKey`, decoded as far as the references allow.
///
/// Outer grammar [DEC `MCSessionPeerConnectionData.m`]: segments of
/// `[segID u8][flags u8][u16 BE length incl. this 4-byte header][payload]`; segID 0x80 is the MC segment,
/// `flags & 3` the encryption preference, `flags & 4` "security identity set".
/// MC segment payload (GCK connection data) [EVS `ConnectionDataHeader`/`ConnectionDataSegment`,
/// re-confirmed by MCW]: one byte of counts (high nibble IPv4, low nibble IPv6), the IPv4 addresses
/// (4 bytes each, byte-reversed), the IPv6 addresses (16 bytes each), then one 16-byte little-endian
/// entry per interface: `[0x61 (MCW also 0x6A)][participant u32][token u32][iface type: 0x5A IPv4 / 0x0A IPv6]
/// [3 bytes][index u8: 0x80|i IPv4, 0x90|i IPv6][UDP port u16]`.
/// Whose participant ID the entries carry is uncertain (EVS and MCW put the *remote* peer's there), so
/// it is reported, never taught to the directory.
public struct ConnectionData: Sendable {
    public struct Segment: Sendable {
        public var id: UInt8
        public var flags: UInt8
        public var offset: Int
        public var length: Int
        public var isMC: Bool { id == 0x80 }
    }

    public struct Interface: Sendable, Hashable {
        public var marker: UInt8
        public var participantID: UInt32
        public var token: UInt32
        public var ifaceType: UInt8
        public var index: UInt8
        public var port: UInt16
        /// The address the index points at, when it is in range.
        public var address: IPAddress?
        public var isV4: Bool { ifaceType == 0x5A }
        public var endpoint: Endpoint? { address.map { Endpoint($0, port) } }
    }

    public struct Problem: Sendable, Hashable {
        public var id: String
        public var message: String
        public var offset: Int
    }

    public var totalSize: Int
    public var segments: [Segment] = []
    public var encryption: EncryptionPreference?
    public var securityIdentity: Bool?
    public var ipv4: [IPAddress] = []
    public var ipv6: [IPAddress] = []
    public var interfaces: [Interface] = []
    /// MC-segment bytes the grammar above did not account for.
    public var undecodedBytes: Int = 0
    public var problems: [Problem] = []

    /// UDP endpoints of interface entries whose address is known, in order, without duplicates.
    public var endpoints: [Endpoint] {
        var seen = Set<Endpoint>()
        return interfaces.compactMap(\.endpoint).filter { seen.insert($0).inserted }
    }

    public init(_ b: Bytes) {
        totalSize = b.count
        var at = 0
        while at < b.count {
            guard let id = b.byte(at), let flags = b.byte(at + 1), let len16 = b.u16be(at + 2) else {
                problems.append(Problem(id: "connection_data.truncated", message: "segment header cut short", offset: at))
                return
            }
            let len = Int(len16)
            guard len >= 4, len <= b.count - at, let seg = b.slice(at, len) else {
                problems.append(Problem(id: "connection_data.bad_length",
                                        message: "segment length \(len) does not fit the \(b.count - at) remaining bytes", offset: at + 2))
                // Decode the MC segment as far as the bytes go: a wrong length must not hide the addresses.
                if id == 0x80, encryption == nil {
                    segments.append(Segment(id: id, flags: flags, offset: at, length: b.count - at))
                    readFlags(flags)
                    decodeMC(b.suffix(from: at), base: at)
                }
                return
            }
            segments.append(Segment(id: id, flags: flags, offset: at, length: len))
            if id == 0x80 {
                if encryption == nil {
                    readFlags(flags)
                    decodeMC(seg, base: at)
                } else {
                    problems.append(Problem(id: "connection_data.duplicate_segment", message: "second MC segment", offset: at))
                }
            }
            at += len
        }
        if segments.isEmpty {
            problems.append(Problem(id: "connection_data.empty", message: "no segments", offset: 0))
        } else if encryption == nil {
            problems.append(Problem(id: "connection_data.no_mc_segment", message: "no 0x80 segment", offset: 0))
        }
    }

    private mutating func readFlags(_ flags: UInt8) {
        encryption = EncryptionPreference(rawValue: flags & 3)
        securityIdentity = flags & 4 != 0
    }

    /// The GCK connection data of one MC segment `seg` (header included) that starts at `base` in the blob.
    private mutating func decodeMC(_ seg: Bytes, base: Int) {
        guard let counts = seg.byte(4) else {
            undecodedBytes = max(0, seg.count - 4)
            return
        }
        let n4 = Int(counts >> 4), n6 = Int(counts & 0x0F)
        var at = 5
        for i in 0 ..< n4 {
            guard let a = seg.slice(at, 4) else {
                problems.append(Problem(id: "connection_data.truncated", message: "IPv4 address \(i) of \(n4) cut short", offset: base + at))
                undecodedBytes = seg.count - at
                return
            }
            // Stored byte-reversed.
            let v = UInt32(a.byte(3) ?? 0) << 24 | UInt32(a.byte(2) ?? 0) << 16 | UInt32(a.byte(1) ?? 0) << 8 | UInt32(a.byte(0) ?? 0)
            ipv4.append(.v4(v))
            at += 4
        }
        for i in 0 ..< n6 {
            guard let a = IPAddress(v6: seg, at: at) else {
                problems.append(Problem(id: "connection_data.truncated", message: "IPv6 address \(i) of \(n6) cut short", offset: base + at))
                undecodedBytes = seg.count - at
                return
            }
            ipv6.append(a)
            at += 16
        }
        while at < seg.count {
            guard seg.count - at >= 16 else {
                problems.append(Problem(id: "connection_data.trailing",
                                        message: "\(seg.count - at) bytes after the interface entries", offset: base + at))
                undecodedBytes = seg.count - at
                return
            }
            let marker = seg.byte(at) ?? 0
            let participant = seg.u32le(at + 1) ?? 0
            let token = seg.u32le(at + 5) ?? 0
            let type = seg.byte(at + 9) ?? 0
            let index = seg.byte(at + 13) ?? 0
            let port = seg.u16le(at + 14) ?? 0
            if marker != 0x61 && marker != 0x6A {
                problems.append(Problem(id: "connection_data.unknown_entry",
                                        message: "interface entry marker \(marker) is neither 0x61 nor 0x6a", offset: base + at))
            }
            var address: IPAddress? = nil
            let i = Int(index & 0x0F)
            switch type {
            case 0x5A: address = i < ipv4.count ? ipv4[i] : nil
            case 0x0A: address = i < ipv6.count ? ipv6[i] : nil
            default:
                problems.append(Problem(id: "connection_data.unknown_iface", message: "interface type \(type)", offset: base + at + 9))
            }
            if address == nil, type == 0x5A || type == 0x0A {
                problems.append(Problem(id: "connection_data.bad_index",
                                        message: "interface index \(i) has no address", offset: base + at + 13))
            }
            interfaces.append(Interface(marker: marker, participantID: participant, token: token, ifaceType: type,
                                        index: index, port: port, address: address))
            at += 16
        }
        if interfaces.count != n4 + n6 {
            problems.append(Problem(id: "connection_data.count_mismatch",
                                    message: "\(interfaces.count) interface entries for \(n4 + n6) addresses", offset: base + 4))
        }
    }

    /// A summary for `decode` output (addresses and ports are connection metadata, not contents).
    public var json: JSONValue {
        var o: [(String, JSONValue)] = [("size", .int(Int64(totalSize)))]
        if let encryption { o.append(("encryption", .string(encryption.description))) }
        if let securityIdentity { o.append(("securityIdentity", .bool(securityIdentity))) }
        o.append(("interfaces", .array(interfaces.map { i in
            var e: [(String, JSONValue)] = [("type", .string(i.isV4 ? "ipv4" : i.ifaceType == 0x0A ? "ipv6" : "unknown")),
                                            ("port", .int(Int64(i.port))),
                                            ("participant", .string(PeerIdentity.participantHex(i.participantID)))]
            if let a = i.address { e.insert(("address", .string(a.description)), at: 1) }
            return .object(e)
        })))
        let unknown = segments.filter { !$0.isMC }
        if !unknown.isEmpty { o.append(("otherSegments", .array(unknown.map { .object([("id", .int(Int64($0.id))), ("size", .int(Int64($0.length)))]) }))) }
        if undecodedBytes > 0 { o.append(("undecodedBytes", .int(Int64(undecodedBytes)))) }
        return .object(o)
    }
}
