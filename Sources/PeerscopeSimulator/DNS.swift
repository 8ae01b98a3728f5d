// A small mDNS / DNS-SD message encoder (RFC 1035 framing, RFC 6762 cache-flush and QU bits),
// with name compression.

public enum DNSType: UInt16, Sendable {
    case a = 1, ptr = 12, txt = 16, aaaa = 28, srv = 33, nsec = 47, any = 255
}

public struct DNSQuestion: Sendable {
    public var name: String
    public var type: DNSType
    public var unicastResponse: Bool
    public init(name: String, type: DNSType, unicastResponse: Bool = false) {
        self.name = name; self.type = type; self.unicastResponse = unicastResponse
    }
}

public enum DNSRecordData: Sendable {
    case a([UInt8])
    case aaaa([UInt8])
    case ptr(String)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: String)
    case txt([String])
}

public struct DNSRecord: Sendable {
    public var name: String
    public var ttl: UInt32
    public var cacheFlush: Bool
    public var data: DNSRecordData
    public init(name: String, ttl: UInt32, cacheFlush: Bool, data: DNSRecordData) {
        self.name = name; self.ttl = ttl; self.cacheFlush = cacheFlush; self.data = data
    }

    var type: DNSType {
        switch data {
        case .a: return .a
        case .aaaa: return .aaaa
        case .ptr: return .ptr
        case .srv: return .srv
        case .txt: return .txt
        }
    }
}

public struct DNSMessage: Sendable {
    public var id: UInt16 = 0
    public var isResponse: Bool
    public var questions: [DNSQuestion] = []
    public var answers: [DNSRecord] = []
    public var additionals: [DNSRecord] = []

    public init(isResponse: Bool, questions: [DNSQuestion] = [], answers: [DNSRecord] = [], additionals: [DNSRecord] = []) {
        self.isResponse = isResponse; self.questions = questions; self.answers = answers; self.additionals = additionals
    }

    public func encode() -> [UInt8] {
        var enc = DNSEncoder()
        enc.w.u16(id)
        enc.w.u16(isResponse ? 0x8400 : 0x0000)  // QR + AA for mDNS responses
        enc.w.u16(UInt16(questions.count))
        enc.w.u16(UInt16(answers.count))
        enc.w.u16(0)
        enc.w.u16(UInt16(additionals.count))
        for q in questions {
            enc.name(q.name)
            enc.w.u16(q.type.rawValue)
            enc.w.u16(q.unicastResponse ? 0x8001 : 0x0001)
        }
        for r in answers + additionals { enc.record(r) }
        return enc.w.bytes
    }
}

struct DNSEncoder {
    var w = ByteWriter()
    private var offsets: [String: Int] = [:]

    /// Writes a name, pointing at an earlier copy of the longest suffix already written.
    mutating func name(_ full: String) {
        var labels = full.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
        while !labels.isEmpty {
            let key = labels.joined(separator: ".").lowercased()
            if let off = offsets[key] {
                w.u16(0xC000 | UInt16(off))
                return
            }
            if w.count < 0x3FFF { offsets[key] = w.count }
            let label = Array(labels[0].utf8.prefix(63))
            w.u8(UInt8(label.count))
            w.append(label)
            labels.removeFirst()
        }
        w.u8(0)
    }

    mutating func record(_ r: DNSRecord) {
        name(r.name)
        w.u16(r.type.rawValue)
        w.u16(r.cacheFlush ? 0x8001 : 0x0001)
        w.u32(r.ttl)
        let lenAt = w.count
        w.u16(0)
        let start = w.count
        switch r.data {
        case .a(let b), .aaaa(let b): w.append(b)
        case .ptr(let target): name(target)
        case let .srv(priority, weight, port, target):
            w.u16(priority); w.u16(weight); w.u16(port); name(target)
        case .txt(let strings):
            if strings.isEmpty { w.u8(0) }
            for s in strings {
                let b = Array(s.utf8.prefix(255))
                w.u8(UInt8(b.count)); w.append(b)
            }
        }
        w.set16(UInt16(w.count - start), at: lenAt)
    }
}
