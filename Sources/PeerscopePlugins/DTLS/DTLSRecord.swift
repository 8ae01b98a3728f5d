import PeerscopeCore

/// DTLS record framing (RFC 6347 DTLSPlaintext, RFC 9147 unified header), pure parsing.
enum DTLSWire {
    static let versions: Set<UInt16> = [0xFEFF, 0xFEFD, 0xFEFC]
    static let headerSize = 13
    static let mpcPrefix: UInt8 = 0xD0

    static func versionName(_ v: UInt16) -> String {
        switch v {
        case 0xFEFF: "DTLS 1.0"
        case 0xFEFD: "DTLS 1.2"
        case 0xFEFC: "DTLS 1.3"
        default: SessionHex.x16(v)
        }
    }

    static func contentTypeName(_ t: UInt8) -> String {
        switch t {
        case 20: "change_cipher_spec"
        case 21: "alert"
        case 22: "handshake"
        case 23: "application_data"
        case 24: "heartbeat"
        case 25: "tls12_cid"
        default: "content-\(t)"
        }
    }

    static func handshakeName(_ t: UInt8) -> String {
        switch t {
        case 0: "HelloRequest"
        case 1: "ClientHello"
        case 2: "ServerHello"
        case 3: "HelloVerifyRequest"
        case 4: "NewSessionTicket"
        case 5: "EndOfEarlyData"
        case 6: "HelloRetryRequest"
        case 8: "EncryptedExtensions"
        case 11: "Certificate"
        case 12: "ServerKeyExchange"
        case 13: "CertificateRequest"
        case 14: "ServerHelloDone"
        case 15: "CertificateVerify"
        case 16: "ClientKeyExchange"
        case 20: "Finished"
        case 24: "KeyUpdate"
        default: "handshake-\(t)"
        }
    }

    static func alertLevelName(_ l: UInt8) -> String {
        switch l {
        case 1: "warning"
        case 2: "fatal"
        default: "level-\(l)"
        }
    }

    static func alertDescriptionName(_ d: UInt8) -> String {
        switch d {
        case 0: "close_notify"
        case 10: "unexpected_message"
        case 20: "bad_record_mac"
        case 21: "decryption_failed"
        case 22: "record_overflow"
        case 30: "decompression_failure"
        case 40: "handshake_failure"
        case 41: "no_certificate"
        case 42: "bad_certificate"
        case 43: "unsupported_certificate"
        case 44: "certificate_revoked"
        case 45: "certificate_expired"
        case 46: "certificate_unknown"
        case 47: "illegal_parameter"
        case 48: "unknown_ca"
        case 49: "access_denied"
        case 50: "decode_error"
        case 51: "decrypt_error"
        case 60: "export_restriction"
        case 70: "protocol_version"
        case 71: "insufficient_security"
        case 80: "internal_error"
        case 86: "inappropriate_fallback"
        case 90: "user_canceled"
        case 100: "no_renegotiation"
        case 109: "missing_extension"
        case 110: "unsupported_extension"
        case 112: "unrecognized_name"
        case 116: "certificate_required"
        case 120: "no_application_protocol"
        default: "alert-\(d)"
        }
    }

    /// Plain DTLSPlaintext header at `o` with a known content type and version.
    static func plainHeaderAt(_ b: Bytes, _ o: Int) -> Bool {
        guard let t = b.byte(o), (20 ... 25).contains(t), let v = b.u16be(o + 1) else { return false }
        return versions.contains(v)
    }

    /// Strict: a whole plain record header whose length fits the datagram.
    static func plainRecordFits(_ b: Bytes, _ o: Int) -> Bool {
        guard plainHeaderAt(b, o), let len = b.u16be(o + 11) else { return false }
        return Int(len) <= b.count - o - headerSize
    }

    struct Record {
        var offset: Int
        var contentType: UInt8
        var version: UInt16
        var epoch: UInt16
        var sequence: UInt64
        var fragment: Bytes
    }

    struct HandshakeHeader {
        var type: UInt8
        var length: Int
        var messageSeq: UInt16
        var fragmentOffset: Int
        var fragmentLength: Int
        var body: Bytes

        var isFragment: Bool { fragmentOffset != 0 || fragmentLength != length }

        static let size = 12

        static func u24(_ b: Bytes, _ o: Int) -> Int? {
            guard let hi = b.byte(o), let mid = b.u16be(o + 1) else { return nil }
            return Int(hi) << 16 | Int(mid)
        }

        /// Reads one handshake message (or fragment) header and body at `o`.
        static func read(_ b: Bytes, _ o: Int) -> HandshakeHeader? {
            guard let t = b.byte(o), let len = u24(b, o + 1), let seq = b.u16be(o + 4), let fo = u24(b, o + 6),
                  let fl = u24(b, o + 9), let body = b.slice(o + size, fl) else { return nil }
            return HandshakeHeader(type: t, length: len, messageSeq: seq, fragmentOffset: fo, fragmentLength: fl, body: body)
        }
    }

    /// Cipher suites offered by a ClientHello (whole, unfragmented body), as hex strings.
    static func clientHelloSuites(_ body: Bytes) -> [String]? {
        var c = ByteCursor(body)
        guard c.skip(2 + 32), let sl = c.u8(), c.skip(Int(sl)), let cl = c.u8(), c.skip(Int(cl)),
              let n = c.u16be(), n % 2 == 0, let suites = c.take(Int(n)) else { return nil }
        var out: [String] = []
        var i = 0
        while i + 1 < suites.count, out.count < 64 {
            if let s = suites.u16be(i) { out.append(SessionHex.u16(s)) }
            i += 2
        }
        return out
    }

    /// The cipher suite a ServerHello chose.
    static func serverHelloSuite(_ body: Bytes) -> String? {
        var c = ByteCursor(body)
        guard c.skip(2 + 32), let sl = c.u8(), c.skip(Int(sl)), let s = c.u16be() else { return nil }
        return SessionHex.u16(s)
    }
}
