import PeerscopeCore

/// mDNS / DNS-SD on UDP 5353 (multicast and unicast, IPv4 and IPv6): decodes every message, prints it
/// for `peerscope decode`, and turns DNS-SD records into discovery events (browse, announced, resolved,
/// updated, goodbye, expired, conflicts) with MPC peer identities, teaching the `PeerDirectory`.
public final class MDNSPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "mdns",
        summary: "mDNS / DNS-SD: service browsing, announcements, SRV/TXT/addresses, MPC peer IDs and display names",
        claims: [.udpPorts(5353 ... 5353)],
        messageTypes: ["query", "response"]
    ,
        diagnostics: [
            DiagnosticSpec("header.short", .warning, "fewer than 12 bytes: no DNS header"),
            DiagnosticSpec("header.opcode", .warning, "an undefined opcode: not a DNS message"),
            DiagnosticSpec("header.empty", .warning, "zero counts but bytes follow: not a DNS message"),
            DiagnosticSpec("count.overrun", .warning, "the header counts more records than the message holds"),
            DiagnosticSpec("question.truncated", .warning, "a question cut short"),
            DiagnosticSpec("record.truncated", .warning, "a record cut short"),
            DiagnosticSpec("name.*", .warning, "a malformed name (truncated, loop, bad pointer, too long, bad label type)"),
            DiagnosticSpec("rdata.*", .warning, "record data of the wrong length or running past the record"),
            DiagnosticSpec("txt.overrun", .warning, "a TXT string past its record"),
            DiagnosticSpec("nsec.bitmap", .warning, "a malformed NSEC type bitmap"),
            DiagnosticSpec("opt.overrun", .warning, "an EDNS option past its record"),
            DiagnosticSpec("trailing", .info, "bytes after the last record"),
            DiagnosticSpec("instances_evicted", .info, "more service instances than tracked: the least recently seen are forgotten"),
            DiagnosticSpec("hosts_evicted", .info, "more host names than tracked: the least recently seen are forgotten"),
        ])

    let tracker = DiscoveryTracker()
    static let instancesEvicted = "more than \(DiscoveryTracker.maxInstances) service instances tracked: the least recently seen were forgotten"
    static let hostsEvicted = "more than \(DiscoveryTracker.maxHosts) host names tracked: the least recently seen were forgotten"

    public init() {}

    /// Everything on UDP 5353 is mDNS's: what does not even look like a DNS message (too short, an
    /// undefined opcode, no counts but bytes after the header) is diagnosed in `decode`, not passed
    /// on to other plugins.
    public func probe(_ input: PluginInput) -> ProbeResult { .accept }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        let p = input.payload
        tracker.messages &+= 1
        if let flags = p.u16be(2), let qd = p.u16be(4), let an = p.u16be(6), let ns = p.u16be(8), let ar = p.u16be(10) {
            let opcode = (flags >> 11) & 0xF
            var problem: DNSProblem?
            if opcode > 6 || opcode == 3 {
                problem = DNSProblem("header.opcode", "DNS opcode \(opcode) is not a defined one; not a DNS message", offset: 2)
            } else if qd == 0 && an == 0 && ns == 0 && ar == 0 && p.count > 12 {
                problem = DNSProblem("header.empty", "header counts are all zero but \(p.count - 12) bytes follow; not a DNS message",
                                     offset: 4)
            }
            if let problem {
                tracker.malformed &+= 1
                ctx.diagnose(problem.id, problem.message, offset: problem.offset)
                return
            }
        }
        // A response that repeats, byte for byte, one read before from the same source (see DiscoveryRefresh.swift).
        // `peerscope decode` takes it too: the tracker's work is skipped, the message is still parsed and printed,
        // when it is written (remembered responses had no problems, so parsing them again reports none).
        var fast: (hash: UInt64, src: IPAddress)?
        if ctx.options.fastPaths, let flags = p.u16be(2), let src = input.flow?.src.address {
            let hash = p.byteHash
            let response = flags & 0x8000 != 0
            // A repeated browse query within its window does nothing either (see `QueryRepeat`); without
            // events no query does anything, so any repeat of a remembered one is skipped.
            if response ? tracker.refresh(p, hash: hash, src: src, input, ctx) : tracker.repeatedQuery(p, hash: hash, src: src, t: input.t, windows: ctx.wantsEvents) {
                if ctx.wantsMessages { ctx.message(response ? "response" : "query", writing: DNSPayloadFields(p, hash: hash)) }
                return
            }
            fast = (hash, src)
        }
        let (parsed, problems) = DNSMessage.parse(p)
        if !problems.isEmpty { tracker.malformed &+= 1 }
        for p in problems {
            ctx.diagnose(p.id, p.message, offset: p.offset, severity: p.id == "trailing" ? .info : .warning)
        }
        guard let msg = parsed else { return }
        if ctx.wantsMessages {
            ctx.message(msg.isResponse ? "response" : "query", writing: DNSMessageFields(msg))
        }
        let (instancesBefore, hostsBefore) = (tracker.evictedInstances, tracker.evictedHosts)
        tracker.process(msg, input, ctx)
        // Bounded tables: each eviction is one diagnostic, so the report counts them all (one message, built once).
        for _ in instancesBefore ..< tracker.evictedInstances {
            ctx.diagnose("instances_evicted", Self.instancesEvicted, severity: .info)
        }
        for _ in hostsBefore ..< tracker.evictedHosts {
            ctx.diagnose("hosts_evicted", Self.hostsEvicted, severity: .info)
        }
        if let fast, problems.isEmpty {
            if msg.isResponse {
                tracker.remember(p, hash: fast.hash, msg, src: fast.src, input)
            } else {
                tracker.rememberQuery(p, hash: fast.hash, msg, src: fast.src, t: input.t)
            }
        }
    }

    /// Responses the refresh fast path took.
    public var fastRefreshes: UInt64 { tracker.fastRefreshes }
    /// Repeated browse queries skipped unparsed.
    public var fastQueries: UInt64 { tracker.fastQueries }

    public func tick(_ t: Nanos, _ ctx: PluginContext) {
        tracker.tick(t, ctx)
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        tracker.tick(t, ctx)
    }

    /// What discovery saw so far: services, instances (with MPC identities), browsers.
    public func summary() -> DiscoverySummary { tracker.summary() }

    // MARK: - decode output

    /// The `peerscope decode` fields of a message: the reference `DNSMessageFields` writes without building them.
    public static func fields(_ m: DNSMessage) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = [
            ("id", .uint(UInt64(m.header.id))),
            ("response", .bool(m.isResponse)),
        ]
        if m.header.opcode != 0 { f.append(("opcode", .uint(UInt64(m.header.opcode)))) }
        if m.header.authoritative { f.append(("authoritative", .bool(true))) }
        if m.header.truncated { f.append(("truncated", .bool(true))) }
        if m.header.rcode != 0 { f.append(("rcode", .uint(UInt64(m.header.rcode)))) }
        f.append(("questions", .array(m.questions.map { q in
            var o: [(String, JSONValue)] = [("name", .string(q.name.text)), ("type", .string(DNSType.mnemonic(q.type))),
                                            ("qu", .bool(q.unicastResponse))]
            if q.qclass != 1 { o.append(("class", .uint(UInt64(q.qclass)))) }
            return .object(o)
        })))
        f.append(("answers", .array(m.answers.map(record))))
        f.append(("authorities", .array(m.authorities.map(record))))
        f.append(("additionals", .array(m.additionals.map(record))))
        if !m.complete { f.append(("complete", .bool(false))) }
        return f
    }

    static func record(_ r: DNSRecord) -> JSONValue {
        var o: [(String, JSONValue)] = [("name", .string(r.name.text)), ("type", .string(DNSType.mnemonic(r.type)))]
        if r.type == DNSType.opt {
            o.append(("udpPayloadSize", .uint(UInt64(r.rrclass))))
            o.append(("extendedRcode", .uint(UInt64(r.ttl >> 24))))
            o.append(("version", .uint(UInt64((r.ttl >> 16) & 0xFF))))
            // The TTL field of OPT holds extended rcode, version and flags (RFC 6891); DO is its top flag bit.
            o.append(("ttl", .uint(UInt64(r.ttl))))
            o.append(("do", .bool(r.ttl & 0x8000 != 0)))
        } else {
            o.append(("ttl", .uint(UInt64(r.ttl))))
            o.append(("cacheFlush", .bool(r.cacheFlush)))
            if r.rrclass != 1 { o.append(("class", .uint(UInt64(r.rrclass)))) }
        }
        switch r.data {
        case .a(let a), .aaaa(let a):
            o.append(("address", .string(a.description)))
        case .ptr(let n):
            o.append(("target", .string(n.text)))
        case .srv(let pr, let w, let port, let target):
            o.append(("priority", .uint(UInt64(pr))))
            o.append(("weight", .uint(UInt64(w))))
            o.append(("port", .uint(UInt64(port))))
            o.append(("target", .string(target.text)))
        case .txt(let strings):
            o.append(("txt", .array(strings.map { .string(DNSText.txtValue($0)) })))
        case .hinfo(let cpu, let os):
            o.append(("cpu", .string(DNSText.txtValue(cpu))))
            o.append(("os", .string(DNSText.txtValue(os))))
        case .nsec(let next, let types):
            o.append(("next", .string(next.text)))
            o.append(("nsec", .array(types.map { .string(DNSType.mnemonic($0)) })))
        case .opt(let options):
            o.append(("options", .array(options.map { .object([("code", .uint(UInt64($0.code))), ("length", .int(Int64($0.length)))]) })))
        case .other(let length):
            o.append(("rdlength", .int(Int64(length))))
        }
        if !r.rdataValid { o.append(("malformed", .bool(true))) }
        return .object(o)
    }
}
