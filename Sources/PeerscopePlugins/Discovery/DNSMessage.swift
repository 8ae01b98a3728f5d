import PeerscopeCore

/// Something wrong with a DNS message. `id` is relative (`name.loop`); the plugin prefixes `mdns.`.
public struct DNSProblem: Sendable, Hashable, CustomStringConvertible {
    public var id: String
    public var message: String
    /// Byte offset within the DNS message.
    public var offset: Int

    public init(_ id: String, _ message: String, offset: Int) {
        self.id = id
        self.message = message
        self.offset = offset
    }

    public var description: String { "offset \(offset): \(id): \(message)" }
}

public struct DNSHeader: Sendable, Hashable {
    public var id: UInt16
    public var flags: UInt16
    public var questionCount: UInt16
    public var answerCount: UInt16
    public var authorityCount: UInt16
    public var additionalCount: UInt16

    public var isResponse: Bool { flags & 0x8000 != 0 }
    public var opcode: UInt8 { UInt8(truncatingIfNeeded: (flags >> 11) & 0xF) }
    public var authoritative: Bool { flags & 0x0400 != 0 }
    public var truncated: Bool { flags & 0x0200 != 0 }
    public var recursionDesired: Bool { flags & 0x0100 != 0 }
    public var recursionAvailable: Bool { flags & 0x0080 != 0 }
    public var rcode: UInt8 { UInt8(truncatingIfNeeded: flags & 0xF) }
}

/// DNS RR types discovery cares about, with the mnemonics tshark prints.
public enum DNSType {
    public static let a: UInt16 = 1
    public static let ns: UInt16 = 2
    public static let cname: UInt16 = 5
    public static let ptr: UInt16 = 12
    public static let hinfo: UInt16 = 13
    public static let txt: UInt16 = 16
    public static let aaaa: UInt16 = 28
    public static let srv: UInt16 = 33
    public static let opt: UInt16 = 41
    public static let nsec: UInt16 = 47
    public static let any: UInt16 = 255

    /// `PTR`, `SRV`, ...; `TYPE65` style for types without a mnemonic here.
    public static func mnemonic(_ t: UInt16) -> String {
        switch t {
        case 1: "A"
        case 2: "NS"
        case 5: "CNAME"
        case 6: "SOA"
        case 10: "NULL"
        case 12: "PTR"
        case 13: "HINFO"
        case 15: "MX"
        case 16: "TXT"
        case 25: "KEY"
        case 28: "AAAA"
        case 33: "SRV"
        case 41: "OPT"
        case 43: "DS"
        case 46: "RRSIG"
        case 47: "NSEC"
        case 48: "DNSKEY"
        case 50: "NSEC3"
        case 64: "SVCB"
        case 65: "HTTPS"
        case 99: "SPF"
        case 251: "IXFR"
        case 252: "AXFR"
        case 255: "ANY"
        default: "TYPE\(t)"
        }
    }
}

public struct DNSQuestion: Sendable, Equatable {
    public var name: DNSName
    public var type: UInt16
    /// The class without the QU bit.
    public var qclass: UInt16
    /// mDNS "unicast response requested" (top bit of the class).
    public var unicastResponse: Bool
    public var offset: Int
}

public enum DNSSection: String, Sendable, Hashable {
    case answer, authority, additional
}

public enum DNSRData: Sendable, Equatable {
    case a(IPAddress)
    case aaaa(IPAddress)
    case ptr(DNSName)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    /// The character-strings, raw.
    case txt([Bytes])
    case hinfo(cpu: Bytes, os: Bytes)
    case nsec(next: DNSName, types: [UInt16])
    /// EDNS(0): the options as (code, length).
    case opt([OptOption])
    /// Any other type, or rdata that did not parse: kept as its length.
    case other(length: Int)

    public struct OptOption: Sendable, Hashable {
        public var code: UInt16
        public var length: Int
        public init(code: UInt16, length: Int) {
            self.code = code
            self.length = length
        }
    }
}

public struct DNSRecord: Sendable, Equatable {
    public var section: DNSSection
    public var name: DNSName
    public var type: UInt16
    /// The class without the cache-flush bit.
    public var rrclass: UInt16
    /// mDNS cache-flush (top bit of the class).
    public var cacheFlush: Bool
    public var ttl: UInt32
    public var data: DNSRData
    /// Offset of the owner name, and of the rdata, in the message.
    public var offset: Int
    public var rdataOffset: Int
    public var rdataLength: Int
    /// False when the rdata did not parse as its type (then `data` is `.other`).
    public var rdataValid: Bool
}

/// A DNS message as mDNS uses it. `parse` never traps and always terminates: every problem in the
/// bytes becomes a `DNSProblem`, and whatever decoded before the problem is kept.
public struct DNSMessage: Sendable, Equatable {
    public var header: DNSHeader
    public var questions: [DNSQuestion] = []
    /// Answers, authorities and additionals, in wire order (each knows its `section`).
    public var records: [DNSRecord] = []
    /// False when decoding stopped before all the header's counts were read.
    public var complete: Bool = true
    /// Compression pointers followed while decoding (cached targets included).
    public var pointerHops: Int = 0

    public var isResponse: Bool { header.isResponse }

    public var answers: [DNSRecord] { records.filter { $0.section == .answer } }
    public var authorities: [DNSRecord] { records.filter { $0.section == .authority } }
    public var additionals: [DNSRecord] { records.filter { $0.section == .additional } }

    /// Names longer than this (wire octets, RFC 1035) are cut and reported.
    public static let maxNameLength = 255

    /// Compression pointers one message may use (cached targets count too): far above any real
    /// message, low enough that a hostile one stays cheap.
    public static let maxPointerHops = 8192

    /// Decodes `bytes`; nil only when even the 12-byte header is missing.
    public static func parse(_ bytes: Bytes, maxPointerHops: Int = DNSMessage.maxPointerHops) -> (DNSMessage?, [DNSProblem]) {
        var problems: [DNSProblem] = []
        guard let id = bytes.u16be(0), let flags = bytes.u16be(2), let qd = bytes.u16be(4), let an = bytes.u16be(6),
              let ns = bytes.u16be(8), let ar = bytes.u16be(10)
        else {
            problems.append(DNSProblem("header.short", "\(bytes.count) bytes, a DNS header needs 12", offset: 0))
            return (nil, problems)
        }
        let header = DNSHeader(id: id, flags: flags, questionCount: qd, answerCount: an, authorityCount: ns,
                               additionalCount: ar)
        var msg = DNSMessage(header: header)
        // Each question needs at least 5 bytes, each record 11: say at once when the counts cannot fit.
        let minimum = 12 + Int(qd) * 5 + (Int(an) + Int(ns) + Int(ar)) * 11
        if minimum > bytes.count {
            problems.append(DNSProblem("count.overrun",
                                       "header counts (\(qd) questions, \(an)/\(ns)/\(ar) records) need at least \(minimum) bytes, message has \(bytes.count)",
                                       offset: 4))
        }
        var reader = Reader(bytes: bytes, maxPointerHops: maxPointerHops)
        // Counts are untrusted: reserve no more than the bytes can hold.
        let room = max(0, bytes.count - 12) / 11
        msg.questions.reserveCapacity(min(Int(qd), room * 2))
        msg.records.reserveCapacity(min(Int(an) + Int(ns) + Int(ar), room))
        var off = 12
        for _ in 0 ..< Int(qd) {
            guard let q = reader.question(at: off, &problems) else {
                msg.complete = false
                msg.pointerHops = reader.pointerHops
                return (msg, problems)
            }
            msg.questions.append(q.0)
            off = q.1
        }
        let sections: [(DNSSection, Int)] = [(.answer, Int(an)), (.authority, Int(ns)), (.additional, Int(ar))]
        for (section, count) in sections {
            for _ in 0 ..< count {
                guard let r = reader.record(at: off, section: section, &problems) else {
                    msg.complete = false
                    msg.pointerHops = reader.pointerHops
                    return (msg, problems)
                }
                msg.records.append(r.0)
                off = r.1
            }
        }
        if off < bytes.count {
            problems.append(DNSProblem("trailing", "\(bytes.count - off) bytes after the last record", offset: off))
        }
        msg.pointerHops = reader.pointerHops
        return (msg, problems)
    }

    // MARK: - Reading

    /// The reader's names by offset (see `Reader.cache`): a message holds a few dozen, found faster in a
    /// short list than by hashing into a dictionary made afresh for every message (and grown as it
    /// fills). Past `listLimit` entries (a message of many names) they move to a dictionary. An offset
    /// keeps the entry it got first.
    struct NameCache {
        static let listLimit = 32
        private(set) var offsets: [Int] = []
        private(set) var entries: [(DNSName, Int, Int)] = []
        private(set) var table: [Int: (DNSName, Int, Int)] = [:]

        var count: Int { table.isEmpty ? offsets.count : table.count }

        func entry(at offset: Int) -> (DNSName, Int, Int)? {
            guard table.isEmpty else { return table[offset] }
            for i in offsets.indices where offsets[i] == offset { return entries[i] }
            return nil
        }

        /// Adds `e` at `offset` unless the offset has an entry already.
        mutating func add(at offset: Int, _ e: (DNSName, Int, Int)) {
            if table.isEmpty {
                if offsets.contains(offset) { return }
                if offsets.count < Self.listLimit {
                    if offsets.isEmpty {
                        offsets.reserveCapacity(16)
                        entries.reserveCapacity(16)
                    }
                    offsets.append(offset)
                    entries.append(e)
                    return
                }
                table.reserveCapacity(Self.listLimit * 2)
                for i in offsets.indices { table[offsets[i]] = entries[i] }
                offsets = []
                entries = []
            }
            if table[offset] == nil { table[offset] = e }
        }
    }

    struct Reader {
        let bytes: Bytes
        /// Names already decoded, by offset: a name's start or a compression pointer's target, each
        /// with (name, offset after its first segment, wire length). Every offset is resolved once,
        /// so a message of pointers into pointer chains costs time linear in its size.
        var cache = NameCache()
        /// Compression pointers followed in this message (cached targets included), and the most allowed.
        var pointerHops = 0
        let maxPointerHops: Int
        /// Set once the budget ran out: every later name fails without a further problem.
        var exhausted = false

        func cached(_ offset: Int) -> (DNSName, Int, Int)? { cache.entry(at: offset) }

        init(bytes: Bytes, maxPointerHops: Int = DNSMessage.maxPointerHops) {
            self.bytes = bytes
            self.maxPointerHops = maxPointerHops
        }

        /// Reads a possibly compressed name at `start`, whose first segment must end by `limit`. Returns the
        /// name, the offset after it in the enclosing data and its wire length, or nil (with a problem) when
        /// it cannot be read. A pointer must point strictly before the start of the segment that holds it,
        /// which rules out loops: every jump goes to a smaller offset. What each pointer target turned out
        /// to hold is cached, and the pointers of a message are counted against `maxPointerHops`.
        mutating func name(at start: Int, limit: Int, _ problems: inout [DNSProblem]) -> (DNSName, Int, Int)? {
            if exhausted { return nil }
            var labels: [String] = []
            labels.reserveCapacity(4)
            var labelWire: [Int] = []
            var text = ""
            var pos = start
            var segmentStart = start
            var lim = limit
            var end: Int? = nil
            var wireLength = 1
            // Pointer targets passed on the way: (target, labels before it, offset after its first segment).
            var jumps: [(target: Int, labelIndex: Int, segmentEnd: Int)] = []
            func endSegment(at after: Int) {
                if let last = jumps.indices.last, jumps[last].segmentEnd < 0 { jumps[last].segmentEnd = after }
            }
            while true {
                guard pos < lim, let len = bytes.byte(pos) else {
                    problems.append(DNSProblem("name.truncated", "name runs past the end of its data", offset: pos))
                    return nil
                }
                switch len & 0xC0 {
                case 0x00:
                    if len == 0 {
                        endSegment(at: pos + 1)
                        let name = DNSName(labels: labels, text: text)
                        remember(jumps, labels, labelWire, tail: (DNSName.root, 1))
                        return (name, end ?? (pos + 1), wireLength)
                    }
                    let l = Int(len)
                    guard pos + 1 + l <= lim, let label = bytes.slice(pos + 1, l) else {
                        problems.append(DNSProblem("name.truncated", "label of \(l) bytes runs past the end of its data",
                                                   offset: pos))
                        return nil
                    }
                    wireLength += 1 + l
                    if wireLength > DNSMessage.maxNameLength {
                        problems.append(DNSProblem("name.too_long",
                                                   "name longer than \(DNSMessage.maxNameLength) bytes", offset: start))
                        return nil
                    }
                    let l1 = DNSText.format(label)
                    if !labels.isEmpty { text.append(".") }
                    text.append(l1)
                    labels.append(l1)
                    labelWire.append(1 + l)
                    pos += 1 + l
                case 0xC0:
                    guard pos + 2 <= lim, let lo = bytes.byte(pos + 1) else {
                        problems.append(DNSProblem("name.truncated", "compression pointer cut off", offset: pos))
                        return nil
                    }
                    pointerHops += 1
                    if pointerHops > maxPointerHops {
                        exhausted = true
                        problems.append(DNSProblem("name.pointer_budget",
                                                   "more than \(maxPointerHops) compression pointers in one message; the rest is not read",
                                                   offset: pos))
                        return nil
                    }
                    let target = Int(len & 0x3F) << 8 | Int(lo)
                    if end == nil { end = pos + 2 }
                    endSegment(at: pos + 2)
                    if target >= bytes.count {
                        problems.append(DNSProblem("name.pointer_out_of_range",
                                                   "compression pointer to \(target), message has \(bytes.count) bytes",
                                                   offset: pos))
                        return nil
                    }
                    if target > pos {
                        problems.append(DNSProblem("name.pointer_forward",
                                                   "compression pointer forward to \(target)", offset: pos))
                        return nil
                    }
                    if target >= segmentStart {
                        problems.append(DNSProblem("name.loop", "compression pointer to \(target) loops", offset: pos))
                        return nil
                    }
                    // The rest is a name decoded before: reuse it.
                    if let cached = cached(target) {
                        let total = wireLength + cached.2 - 1
                        if total > DNSMessage.maxNameLength {
                            problems.append(DNSProblem("name.too_long",
                                                       "name longer than \(DNSMessage.maxNameLength) bytes", offset: start))
                            return nil
                        }
                        let name = labels.isEmpty || cached.0.isRoot ? (labels.isEmpty ? cached.0 : DNSName(labels: labels, text: text))
                            : DNSName(labels: labels + cached.0.labels, text: text + "." + cached.0.text)
                        remember(jumps, labels, labelWire, tail: (cached.0, cached.2))
                        return (name, end ?? (pos + 2), total)
                    }
                    jumps.append((target, labels.count, -1))
                    segmentStart = target
                    pos = target
                    lim = bytes.count
                default:
                    problems.append(DNSProblem("name.label_type",
                                               "label length byte 0x\(String(len, radix: 16)) (extended or reserved label type)",
                                               offset: pos))
                    return nil
                }
            }
        }

        /// Caches the name held at each pointer target a decoded name passed through: its labels from
        /// that point on, then `tail` (the name the last pointer led to, or the root).
        private mutating func remember(_ jumps: [(target: Int, labelIndex: Int, segmentEnd: Int)], _ labels: [String],
                                       _ labelWire: [Int], tail: (DNSName, Int)) {
            guard !jumps.isEmpty else { return }
            var wire = tail.1
            var suffix = tail.0
            var next = labels.count
            for j in jumps.reversed() {
                if j.labelIndex < next {
                    for i in j.labelIndex ..< next { wire += labelWire[i] }
                    suffix = DNSName(labels: Array(labels[j.labelIndex ..< next]) + suffix.labels)
                    next = j.labelIndex
                }
                if j.segmentEnd >= 0 { cache.add(at: j.target, (suffix, j.segmentEnd, wire)) }
            }
        }

        mutating func cachedName(at start: Int, limit: Int, _ problems: inout [DNSProblem]) -> (DNSName, Int)? {
            if let c = cached(start), c.1 <= limit { return (c.0, c.1) }
            guard let r = name(at: start, limit: limit, &problems) else { return nil }
            cache.add(at: start, r)
            return (r.0, r.1)
        }

        mutating func question(at off: Int, _ problems: inout [DNSProblem]) -> (DNSQuestion, Int)? {
            guard let (n, after) = cachedName(at: off, limit: bytes.count, &problems) else { return nil }
            guard let type = bytes.u16be(after), let cls = bytes.u16be(after + 2) else {
                problems.append(DNSProblem("question.truncated", "question ends before its type and class", offset: after))
                return nil
            }
            return (DNSQuestion(name: n, type: type, qclass: cls & 0x7FFF, unicastResponse: cls & 0x8000 != 0, offset: off),
                    after + 4)
        }

        mutating func record(at off: Int, section: DNSSection, _ problems: inout [DNSProblem]) -> (DNSRecord, Int)? {
            guard let (n, after) = cachedName(at: off, limit: bytes.count, &problems) else { return nil }
            guard let type = bytes.u16be(after), let cls = bytes.u16be(after + 2), let ttl = bytes.u32be(after + 4),
                  let rdlen = bytes.u16be(after + 8)
            else {
                problems.append(DNSProblem("record.truncated", "record ends before its fixed fields", offset: after))
                return nil
            }
            let rdOff = after + 10
            let rdLen = Int(rdlen)
            guard rdOff + rdLen <= bytes.count else {
                problems.append(DNSProblem("rdata.overrun",
                                           "rdata length \(rdLen) runs \(rdOff + rdLen - bytes.count) bytes past the end",
                                           offset: after + 8))
                return nil
            }
            let (data, valid) = rdata(type: type, cls: cls, at: rdOff, length: rdLen, &problems)
            let isOpt = type == DNSType.opt
            let rec = DNSRecord(section: section, name: n, type: type, rrclass: isOpt ? cls : cls & 0x7FFF,
                                cacheFlush: isOpt ? false : cls & 0x8000 != 0, ttl: ttl, data: data, offset: off,
                                rdataOffset: rdOff, rdataLength: rdLen, rdataValid: valid)
            return (rec, rdOff + rdLen)
        }

        private mutating func rdata(type: UInt16, cls: UInt16, at o: Int, length l: Int,
                                    _ problems: inout [DNSProblem]) -> (DNSRData, Bool) {
            let end = o + l
            func bad(_ what: String) -> (DNSRData, Bool) {
                problems.append(DNSProblem("rdata.length", "\(DNSType.mnemonic(type)) rdata of \(l) bytes: \(what)", offset: o))
                return (.other(length: l), false)
            }
            switch type {
            case DNSType.a:
                guard l == 4, let a = IPAddress(v4: bytes, at: o) else { return bad("an A record has 4") }
                return (.a(a), true)
            case DNSType.aaaa:
                guard l == 16, let a = IPAddress(v6: bytes, at: o) else { return bad("an AAAA record has 16") }
                return (.aaaa(a), true)
            case DNSType.ptr, DNSType.cname, DNSType.ns:
                guard let (n, after) = cachedName(at: o, limit: end, &problems) else { return (.other(length: l), false) }
                if after != end { problems.append(DNSProblem("rdata.trailing", "\(end - after) bytes after the name", offset: after)) }
                return (.ptr(n), true)
            case DNSType.srv:
                guard l >= 7, let pr = bytes.u16be(o), let w = bytes.u16be(o + 2), let port = bytes.u16be(o + 4) else {
                    return bad("SRV needs at least 7")
                }
                guard let (n, after) = cachedName(at: o + 6, limit: end, &problems) else { return (.other(length: l), false) }
                if after != end { problems.append(DNSProblem("rdata.trailing", "\(end - after) bytes after the target", offset: after)) }
                return (.srv(priority: pr, weight: w, port: port, target: n), true)
            case DNSType.txt:
                var strings: [Bytes] = []
                var p = o
                while p < end {
                    guard let sl = bytes.byte(p) else { break }
                    let s = Int(sl)
                    guard p + 1 + s <= end, let str = bytes.slice(p + 1, s) else {
                        problems.append(DNSProblem("txt.overrun",
                                                   "TXT string of \(s) bytes runs past its record (\(end - p - 1) left)",
                                                   offset: p))
                        return (.txt(strings), false)
                    }
                    strings.append(str)
                    p += 1 + s
                }
                return (.txt(strings), true)
            case DNSType.hinfo:
                guard let cl = bytes.byte(o), o + 1 + Int(cl) < end, let cpu = bytes.slice(o + 1, Int(cl)),
                      let ol = bytes.byte(o + 1 + Int(cl)), o + 2 + Int(cl) + Int(ol) <= end,
                      let os = bytes.slice(o + 2 + Int(cl), Int(ol))
                else { return bad("HINFO strings overrun") }
                return (.hinfo(cpu: cpu, os: os), true)
            case DNSType.nsec:
                guard let (next, after) = cachedName(at: o, limit: end, &problems) else { return (.other(length: l), false) }
                var types: [UInt16] = []
                var p = after
                while p < end {
                    guard p + 2 <= end, let window = bytes.byte(p), let blen = bytes.byte(p + 1),
                          blen >= 1, blen <= 32, p + 2 + Int(blen) <= end
                    else {
                        problems.append(DNSProblem("nsec.bitmap", "NSEC type bitmap block does not fit its record", offset: p))
                        return (.nsec(next: next, types: types), false)
                    }
                    for i in 0 ..< Int(blen) {
                        guard let bits = bytes.byte(p + 2 + i) else { break }
                        for bit in 0 ..< 8 where bits & (0x80 >> UInt8(bit)) != 0 {
                            types.append(UInt16(window) << 8 | UInt16(i * 8 + bit))
                        }
                    }
                    p += 2 + Int(blen)
                }
                return (.nsec(next: next, types: types), true)
            case DNSType.opt:
                var options: [DNSRData.OptOption] = []
                var p = o
                while p < end {
                    guard p + 4 <= end, let code = bytes.u16be(p), let ol = bytes.u16be(p + 2), p + 4 + Int(ol) <= end else {
                        problems.append(DNSProblem("opt.overrun", "EDNS option runs past its record", offset: p))
                        return (.opt(options), false)
                    }
                    options.append(.init(code: code, length: Int(ol)))
                    p += 4 + Int(ol)
                }
                return (.opt(options), true)
            default:
                return (.other(length: l), true)
            }
        }
    }
}
