import PeerscopeCore

/// A STUN message (RFC 5389/8489 framing) as MPC's ICE connectivity checks use it.
/// Parsing is pure: it knows nothing about flows or events.
struct STUNMessage {
    static let magicCookie: UInt32 = 0x2112_A442
    static let fingerprintXor: UInt32 = 0x5354_554E

    enum Class: UInt8 {
        case request = 0, indication = 1, success = 2, error = 3
        var name: String {
            switch self {
            case .request: "request"
            case .indication: "indication"
            case .success: "success"
            case .error: "error"
            }
        }
    }

    struct Attribute {
        var type: UInt16
        var offset: Int
        var value: Bytes
    }

    /// A problem found while walking the attributes; the message is still usable up to it.
    struct Problem {
        var id: String
        var message: String
        var offset: Int
    }

    var type: UInt16
    var method: UInt16
    var messageClass: Class
    var length: Int
    var transactionID: Bytes
    var attributes: [Attribute]
    var problems: [Problem]

    /// Cheap framing check: 20-byte header, top two bits zero, magic cookie, length a multiple of 4
    /// that matches the datagram exactly.
    static func looksLikeSTUN(_ b: Bytes) -> Bool {
        guard b.count >= 20, let t = b.byte(0), t & 0xC0 == 0, let len = b.u16be(2), len & 3 == 0,
              b.u32be(4) == magicCookie else { return false }
        return Int(len) == b.count - 20
    }

    static func method(of type: UInt16) -> UInt16 {
        (type & 0x000F) | ((type >> 1) & 0x0070) | ((type >> 2) & 0x0F80)
    }

    static func messageClass(of type: UInt16) -> Class {
        Class(rawValue: UInt8(truncatingIfNeeded: ((type >> 7) & 2) | ((type >> 4) & 1))) ?? .request
    }

    /// Parses the header and walks the attributes; nil when the header itself is unusable.
    init?(_ b: Bytes) {
        guard b.count >= 20, let t = b.u16be(0), t & 0xC000 == 0, let len = b.u16be(2),
              b.u32be(4) == STUNMessage.magicCookie, let tx = b.slice(8, 12) else { return nil }
        type = t
        method = STUNMessage.method(of: t)
        messageClass = STUNMessage.messageClass(of: t)
        length = Int(len)
        transactionID = tx
        attributes = []
        problems = []
        if Int(len) != b.count - 20 {
            problems.append(Problem(id: "length", message: "header says \(len) attribute bytes, datagram has \(b.count - 20)", offset: 2))
        }
        let end = min(b.count, 20 + Int(len))
        var o = 20
        while o < end {
            guard let at = b.u16be(o), let al = b.u16be(o + 2) else {
                problems.append(Problem(id: "attribute.truncated", message: "attribute header cut short", offset: o))
                break
            }
            let vlen = Int(al)
            guard let value = b.slice(o + 4, vlen), o + 4 + vlen <= end else {
                problems.append(Problem(id: "attribute.truncated",
                                        message: SessionHex.x16(at) + " declares \(vlen) bytes, \(max(0, end - o - 4)) left",
                                        offset: o))
                break
            }
            attributes.append(Attribute(type: at, offset: o, value: value))
            let padded = (vlen + 3) & ~3
            o += 4 + padded
        }
    }

    func attribute(_ type: UInt16) -> Attribute? { attributes.first { $0.type == type } }

    static func attributeName(_ t: UInt16) -> String {
        switch t {
        case 0x0001: "MAPPED-ADDRESS"
        case 0x0006: "USERNAME"
        case 0x0008: "MESSAGE-INTEGRITY"
        case 0x0009: "ERROR-CODE"
        case 0x000A: "UNKNOWN-ATTRIBUTES"
        case 0x0014: "REALM"
        case 0x0015: "NONCE"
        case 0x001C: "MESSAGE-INTEGRITY-SHA256"
        case 0x0020: "XOR-MAPPED-ADDRESS"
        case 0x0024: "PRIORITY"
        case 0x0025: "USE-CANDIDATE"
        case 0x8022: "SOFTWARE"
        case 0x8023: "ALTERNATE-SERVER"
        case 0x8028: "FINGERPRINT"
        case 0x8029: "ICE-CONTROLLED"
        case 0x802A: "ICE-CONTROLLING"
        case 0x8001, 0x8003, 0x8004, 0x8005, 0x8008, 0x8009: "APPLE-PRIVATE-" + SessionHex.x16(t)
        default: SessionHex.x16(t)
        }
    }

    static func methodName(_ m: UInt16) -> String {
        switch m {
        case 0x001: "Binding"
        case 0x003: "Allocate"
        case 0x004: "Refresh"
        case 0x006: "Send"
        case 0x007: "Data"
        case 0x008: "CreatePermission"
        case 0x009: "ChannelBind"
        default: "method-" + SessionHex.x16(m)
        }
    }

    /// MAPPED-ADDRESS / XOR-MAPPED-ADDRESS value.
    static func address(_ v: Bytes, xor: Bool, transactionID: Bytes) -> Endpoint? {
        guard let family = v.byte(1), let rawPort = v.u16be(2) else { return nil }
        let port = xor ? rawPort ^ 0x2112 : rawPort
        switch family {
        case 1:
            guard v.count == 8, let a = v.u32be(4) else { return nil }
            return Endpoint(.v4(xor ? a ^ magicCookie : a), port)
        case 2:
            guard v.count == 20, var hi = v.u64be(4), var lo = v.u64be(12) else { return nil }
            if xor {
                guard let t0 = transactionID.u32be(0), let t1 = transactionID.u64be(4) else { return nil }
                hi ^= UInt64(magicCookie) << 32 | UInt64(t0)
                lo ^= t1
            }
            return Endpoint(.v6(hi: hi, lo: lo, scope: nil), port)
        default:
            return nil
        }
    }

    /// ERROR-CODE value: (code, reason).
    static func errorCode(_ v: Bytes) -> (Int, String)? {
        guard v.count >= 4, let cls = v.byte(2), let num = v.byte(3) else { return nil }
        let code = Int(cls & 0x07) * 100 + Int(num)
        let reason = String(decoding: v.suffix(from: 4).array, as: UTF8.self)
        return (code, reason)
    }

    /// MPC's USERNAME: 20 binary bytes, `to-token 00000000 0001 from-token 00000000 0001` (spec §4).
    static func mpcUsername(_ v: Bytes) -> (to: UInt32, from: UInt32)? {
        guard v.count == 20, let a = v.u32be(0), let b = v.u32be(10),
              v.u32be(4) == 0, v.u16be(8) == 1, v.u32be(14) == 0, v.u16be(18) == 1 else { return nil }
        return (a, b)
    }
}

enum SessionHex {
    /// `0x8009`-style hex for a 16-bit value.
    static func x16(_ v: UInt16) -> String { "0x" + u16(v) }

    /// Eight lower-case hex digits.
    static func u32(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 8 - s.count)) + s
    }

    static func u16(_ v: UInt16) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    static func u8(_ v: UInt8) -> String {
        let s = String(v, radix: 16)
        return s.count < 2 ? "0" + s : s
    }
}
