import PeerscopeCore

/// An mDNS message's `peerscope decode` fields, written straight from the parsed `DNSMessage` into the
/// output bytes: no field list or JSON tree per message. `fields` is `MDNSPlugin.fields`, the reference
/// these bytes must equal (`DecodeOutputTests`).
public struct DNSMessageFields: MessageFieldsWriter {
    public let message: DNSMessage

    public init(_ message: DNSMessage) { self.message = message }

    public var fields: [(String, JSONValue)] { MDNSPlugin.fields(message) }

    public func writeMembers(to out: inout JSONBytes) {
        let m = message, h = m.header
        out.key("id")
        out.uint(UInt64(h.id))
        out.key("response")
        out.bool(m.isResponse)
        if h.opcode != 0 { out.key("opcode"); out.uint(UInt64(h.opcode)) }
        if h.authoritative { out.key("authoritative"); out.bool(true) }
        if h.truncated { out.key("truncated"); out.bool(true) }
        if h.rcode != 0 { out.key("rcode"); out.uint(UInt64(h.rcode)) }
        out.key("questions")
        out.byte(0x5B)
        for (i, q) in m.questions.enumerated() {
            if i > 0 { out.byte(0x2C) }
            out.byte(0x7B)
            out.firstKey("name")
            out.string(q.name.text)
            out.key("type")
            out.string(DNSType.mnemonic(q.type))
            out.key("qu")
            out.bool(q.unicastResponse)
            if q.qclass != 1 { out.key("class"); out.uint(UInt64(q.qclass)) }
            out.byte(0x7D)
        }
        out.byte(0x5D)
        out.key("answers")
        Self.section(.answer, m.records, &out)
        out.key("authorities")
        Self.section(.authority, m.records, &out)
        out.key("additionals")
        Self.section(.additional, m.records, &out)
        if !m.complete { out.key("complete"); out.bool(false) }
    }

    /// `[record, ...]` for the records of one section, in message order.
    static func section(_ section: DNSSection, _ records: [DNSRecord], _ out: inout JSONBytes) {
        out.byte(0x5B)
        var first = true
        for r in records where r.section == section {
            if !first { out.byte(0x2C) }
            first = false
            record(r, &out)
        }
        out.byte(0x5D)
    }

    /// One record as `MDNSPlugin.record` builds it.
    static func record(_ r: DNSRecord, _ out: inout JSONBytes) {
        out.byte(0x7B)
        out.firstKey("name")
        out.string(r.name.text)
        out.key("type")
        out.string(DNSType.mnemonic(r.type))
        if r.type == DNSType.opt {
            out.key("udpPayloadSize")
            out.uint(UInt64(r.rrclass))
            out.key("extendedRcode")
            out.uint(UInt64(r.ttl >> 24))
            out.key("version")
            out.uint(UInt64((r.ttl >> 16) & 0xFF))
            out.key("ttl")
            out.uint(UInt64(r.ttl))
            out.key("do")
            out.bool(r.ttl & 0x8000 != 0)
        } else {
            out.key("ttl")
            out.uint(UInt64(r.ttl))
            out.key("cacheFlush")
            out.bool(r.cacheFlush)
            if r.rrclass != 1 { out.key("class"); out.uint(UInt64(r.rrclass)) }
        }
        switch r.data {
        case .a(let a), .aaaa(let a):
            out.key("address")
            out.address(a)
        case .ptr(let n):
            out.key("target")
            out.string(n.text)
        case .srv(let pr, let w, let port, let target):
            out.key("priority")
            out.uint(UInt64(pr))
            out.key("weight")
            out.uint(UInt64(w))
            out.key("port")
            out.uint(UInt64(port))
            out.key("target")
            out.string(target.text)
        case .txt(let strings):
            out.key("txt")
            out.byte(0x5B)
            for (i, s) in strings.enumerated() {
                if i > 0 { out.byte(0x2C) }
                txtValue(s, &out)
            }
            out.byte(0x5D)
        case .hinfo(let cpu, let os):
            out.key("cpu")
            txtValue(cpu, &out)
            out.key("os")
            txtValue(os, &out)
        case .nsec(let next, let types):
            out.key("next")
            out.string(next.text)
            out.key("nsec")
            out.byte(0x5B)
            for (i, t) in types.enumerated() {
                if i > 0 { out.byte(0x2C) }
                out.string(DNSType.mnemonic(t))
            }
            out.byte(0x5D)
        case .opt(let options):
            out.key("options")
            out.byte(0x5B)
            for (i, o) in options.enumerated() {
                if i > 0 { out.byte(0x2C) }
                out.byte(0x7B)
                out.firstKey("code")
                out.uint(UInt64(o.code))
                out.key("length")
                out.int(Int64(o.length))
                out.byte(0x7D)
            }
            out.byte(0x5D)
        case .other(let length):
            out.key("rdlength")
            out.int(Int64(length))
        }
        if !r.rdataValid { out.key("malformed"); out.bool(true) }
        out.byte(0x7D)
    }

    /// `DNSText.txtValue(b)` as a JSON string: plain ASCII (the common case) straight from the bytes,
    /// anything else through the string (invalid UTF-8 becomes U+FFFD there).
    static func txtValue(_ b: Bytes, _ out: inout JSONBytes) {
        let ascii: Bool = b.withUnsafeBytes { raw in
            var n = raw.count
            for i in 0 ..< raw.count where raw[i] == 0 || raw[i] >= 0x80 {
                if raw[i] >= 0x80 { return false }
                n = i
                break
            }
            out.string(utf8: UnsafeBufferPointer(rebasing: raw.assumingMemoryBound(to: UInt8.self)[0 ..< n]))
            return true
        }
        if !ascii { out.string(DNSText.txtValue(b)) }
    }
}

/// The fields of a message a fast path took (a refresh, a repeated browse query): the tracker needed
/// nothing parsed, so the bytes are parsed only when the message is written (on `peerscope decode`'s
/// writer thread). The message repeats, byte for byte, one that parsed without a problem, so it parses
/// again (an unparsable payload would write no fields).
public struct DNSPayloadFields: MessageFieldsWriter {
    public let payload: Bytes
    /// `ByteHash.hash` of `payload`, when the caller has it (see `MessageFieldsWriter.cacheKeyHash`).
    public let cacheKeyHash: UInt64?

    /// `hash`, when given, must be `ByteHash.hash` of `payload` (`payload.byteHash`).
    public init(_ payload: Bytes, hash: UInt64? = nil) {
        self.payload = payload
        cacheKeyHash = hash
    }

    public var fields: [(String, JSONValue)] { DNSMessage.parse(payload).0.map(MDNSPlugin.fields) ?? [] }

    /// The members are those of the payload parsed: repeats are written once (`MessageBodyCache`).
    public var cacheKey: Bytes? { payload }

    public func writeMembers(to out: inout JSONBytes) {
        if let m = DNSMessage.parse(payload).0 { DNSMessageFields(m).writeMembers(to: &out) }
    }
}
