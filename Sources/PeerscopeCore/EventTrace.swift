/// Everything the stages after decoding need, as one value: the decoded inputs' events (identity
/// facts among them: `identity.*`), counts and diagnostics. `peerscope decode --events` writes it as
/// JSON Lines (`peerscope.events/2`) and `peerscope analyze --events` reads it back, giving the report
/// that analysing the inputs gives. Message contents are left out unless asked for.
public struct EventTrace: Sendable {
    public static let schemaID = "peerscope.events/2"
    /// The first version wrote identity facts as `identity` lines (a snapshot of the decoders'
    /// directory) beside the events; reading it turns them into `identity.*` events.
    public static let schemaV1 = "peerscope.events/1"

    public var inputs: [String]
    public var complete: Bool
    public var inputProblems: [String]
    public var stats: CaptureStats
    /// The first few diagnostics of each id; `diagnosticTotals` counts them all.
    public var diagnostics: [Diagnostic]
    public var diagnosticTotals: [String: Int]
    /// In capture-time order. With `queryRuns`, only the events not held in a run: the trace's events
    /// are then `events` with the runs' members in their places (`allEvents`, `forEachEvent`).
    public var events: [PeerEvent]
    /// Browse queries held compactly (analysis of captures; see `QueryRuns` for where each goes).
    public var queryRuns = QueryRuns()
    /// Known packet loss of the captures (see `CaptureLoss`).
    public var losses: [CaptureLoss] = []

    public init(inputs: [String], complete: Bool = true, inputProblems: [String] = [], stats: CaptureStats = CaptureStats(),
                diagnostics: [Diagnostic] = [], diagnosticTotals: [String: Int] = [:], events: [PeerEvent] = []) {
        self.inputs = inputs
        self.complete = complete
        self.inputProblems = inputProblems
        self.stats = stats
        self.diagnostics = diagnostics
        self.diagnosticTotals = diagnosticTotals
        self.events = events
    }

    // MARK: writing

    /// Writes the trace as JSON Lines: a header (`schema`, inputs, stats, diagnostics), then one
    /// `event` line per event (identity facts are events too). Attribute `content` (message
    /// contents, present only when decoding showed payloads) is written only when `payloads`.
    public func write(payloads: Bool, to line: (JSONValue) -> Void) {
        line(.object([
            ("schema", .string(Self.schemaID)),
            ("inputs", .array(inputs.map { .string($0) })),
            ("complete", .bool(complete)),
            ("inputProblems", .array(inputProblems.map { .string($0) })),
            ("stats", Self.json(stats)),
            ("diagnostics", .array(diagnostics.map(Self.json))),
            ("diagnosticTotals", Self.counts(diagnosticTotals.mapValues { UInt64(max(0, $0)) })),
        ] + (losses.isEmpty ? [] : [("captureLosses", .array(losses.map(Self.json)))])))
        forEachEvent { e in line(.object([("event", Self.json(e, payloads: payloads))])) }
    }

    /// Every event of the trace in order: `events` with the query runs' members in their places.
    public func forEachEvent(_ body: (PeerEvent) -> Void) {
        if queryRuns.isEmpty { for e in events { body(e) } } else { queryRuns.forEachMerged(events, body) }
    }

    /// Every event of the trace as one list (the query runs' members in their places).
    public var allEvents: [PeerEvent] { queryRuns.merged(events) }

    /// The time of the trace's last event (the list is in time order).
    public var lastEventT: Nanos? {
        guard let r = queryRuns.lastT else { return events.last?.t }
        return max(r, events.last?.t ?? r)
    }

    /// How many events the trace stands for (members of query runs included).
    public var eventCount: Int { events.count + queryRuns.count }

    /// Puts the query runs' members into `events` (a reader that edits the list as a whole).
    public mutating func expandQueryRuns() {
        guard !queryRuns.isEmpty else { return }
        events = queryRuns.merged(events)
        queryRuns = QueryRuns()
    }

    static func json(_ l: CaptureLoss) -> JSONValue {
        .object([("reason", .string(l.reason.rawValue)), ("start", .int(l.start)), ("end", .int(l.end)),
                 ("count", .int(Int64(l.count))), ("source", l.source.map { .string($0) } ?? .null)]
                + (l.flow.map { [("flow", json($0))] } ?? []))
    }

    static func json(_ f: FlowKey) -> JSONValue {
        .object([("proto", .string(f.proto.rawValue)), ("src", json(f.src)), ("dst", json(f.dst))])
    }

    static func flow(_ f: JSONValue) -> FlowKey? {
        guard let p = f["proto"]?.stringValue.flatMap(TransportProtocol.init(rawValue:)),
              let src = endpoint(f["src"]), let dst = endpoint(f["dst"]) else { return nil }
        return FlowKey(p, src, dst)
    }

    static func loss(_ v: JSONValue) -> CaptureLoss? {
        guard let r = v["reason"]?.stringValue.flatMap(CaptureLoss.Reason.init(rawValue:)),
              let s = v["start"]?.int64Value, let e = v["end"]?.int64Value, let n = v["count"]?.int64Value else { return nil }
        var flow: FlowKey?
        if let f = v["flow"] {
            guard let k = Self.flow(f) else { return nil }
            flow = k
        }
        return CaptureLoss(reason: r, start: s, end: e, count: Int(clamping: n), source: v["source"]?.stringValue, flow: flow)
    }

    static func counts(_ m: [String: UInt64]) -> JSONValue {
        .object(m.keys.sorted().map { ($0, .uint(m[$0] ?? 0)) })
    }

    static func json(_ s: CaptureStats) -> JSONValue {
        .object([
            ("frames", .uint(s.frames)), ("bytes", .uint(s.bytes)), ("capturedBytes", .uint(s.capturedBytes)),
            ("firstT", s.firstT.map { .int($0) } ?? .null), ("lastT", s.lastT.map { .int($0) } ?? .null),
            ("linkTypes", counts(s.linkTypes)), ("plugins", counts(s.plugins)),
            ("framesWithDiagnostics", .uint(s.framesWithDiagnostics)), ("undecoded", counts(s.undecoded)),
            ("truncatedFrames", .uint(s.truncatedFrames)), ("logLines", .uint(s.logLines)),
            ("logInputs", .uint(s.logInputs)), ("logEntries", .uint(s.logEntries)),
            ("logUnknown", counts(s.logUnknown)), ("logRecognized", counts(s.logRecognized)),
        ])
    }

    static func json(_ e: Evidence) -> JSONValue {
        switch e {
        case .frame(let i, let f): .object([("input", .int(Int64(i))), ("frame", .uint(f))])
        case .logLine(let i, let l): .object([("input", .int(Int64(i))), ("line", .int(Int64(l)))])
        }
    }

    static func json(_ d: Diagnostic) -> JSONValue {
        var o: [(String, JSONValue)] = [("id", .string(d.id)), ("severity", .string(d.severity.rawValue)),
                                        ("message", .string(d.message))]
        if let e = d.evidence { o.append(("evidence", json(e))) }
        if let off = d.offset { o.append(("offset", .int(Int64(off)))) }
        if let t = d.t { o.append(("t", .int(t))) }
        return .object(o)
    }

    static func json(_ ep: Endpoint) -> JSONValue {
        .object([("address", .string(ep.address.description)), ("port", .int(Int64(ep.port)))])
    }

    static func json(_ h: PeerHint) -> JSONValue {
        var o: [(String, JSONValue)] = []
        if let p = h.peerID { o.append(("peerID", .string(PeerIdentity.idString(p)))) }
        if let p = h.participantID { o.append(("participantID", .int(Int64(p)))) }
        if let n = h.displayName { o.append(("displayName", .string(n))) }
        if let ep = h.endpoint { o.append(("endpoint", json(ep))) }
        if let a = h.address { o.append(("address", .string(a.description))) }
        return .object(o)
    }

    static func json(_ e: PeerEvent, payloads: Bool) -> JSONValue {
        var o: [(String, JSONValue)] = [("kind", .string(e.kind.rawValue)), ("t", .int(e.t)), ("evidence", json(e.evidence))]
        if !e.from.isEmpty { o.append(("from", json(e.from))) }
        if !e.to.isEmpty { o.append(("to", json(e.to))) }
        if let f = e.flow { o.append(("flow", json(f))) }
        o.append(("source", .string(e.source)))
        let keys = e.attrs.keys.sorted().filter { payloads || $0 != EventAttribute<String>.content.key }
        if !keys.isEmpty { o.append(("attrs", .object(keys.map { ($0, .string(e.attrs[$0] ?? "")) }))) }
        if e.count != 1 { o.append(("count", .int(Int64(e.count)))) }
        if e.lastT != e.t { o.append(("lastT", .int(e.lastT))) }
        if let l = e.lastEvidence { o.append(("lastEvidence", json(l))) }
        return .object(o)
    }

    // MARK: reading

    /// A trace line that cannot be read: the file, the line and what is wrong.
    public struct ReadError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var reason: String
        public var description: String { line > 0 ? "\(path):\(line): \(reason)" : "\(path): \(reason)" }
    }

    /// Reads a trace written by `write`. A bad line stops the reading with an error naming it (a
    /// trace is one tool's output, not user input to be read around).
    public static func read(_ bytes: [UInt8], path: String) throws(ReadError) -> EventTrace {
        var trace = EventTrace(inputs: [])
        var sawHeader = false
        var v1 = false
        var v1Identities: [PeerEvent] = []
        var lineNo = 0
        var start = 0
        func fail(_ reason: String) -> ReadError { ReadError(path: path, line: lineNo, reason: reason) }
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            lineNo += 1
            let slice = bytes[start ..< end]
            start = end + 1
            if slice.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            let v: JSONValue
            do { v = try JSONParser.parse(Bytes(Array(slice))) } catch { throw fail(error.description) }
            if !sawHeader {
                let schema = v["schema"]?.stringValue
                guard schema == schemaID || schema == schemaV1 else {
                    throw fail("not a peerscope event trace (the first line must have \"schema\": \"\(schemaID)\")")
                }
                v1 = schema == schemaV1
                sawHeader = true
                guard let h = Header(v) else { throw fail("malformed header") }
                trace.inputs = h.inputs
                trace.complete = h.complete
                trace.inputProblems = h.inputProblems
                trace.stats = h.stats
                trace.diagnostics = h.diagnostics
                trace.diagnosticTotals = h.totals
                trace.losses = (v["captureLosses"]?.arrayValue ?? []).compactMap(Self.loss)
            } else if v1, let i = v["identity"] {
                guard let es = identityEvents(i, evidence: .frame(input: 0, frame: 0)) else { throw fail("malformed identity") }
                v1Identities += es
            } else if let e = v["event"] {
                guard let ev = event(e) else { throw fail("malformed event") }
                trace.events.append(ev)
            } else {
                throw fail(v1 ? "expected an \"identity\" or \"event\" line" : "expected an \"event\" line")
            }
        }
        guard sawHeader else { throw ReadError(path: path, line: 0, reason: "empty: not a peerscope event trace") }
        if !v1Identities.isEmpty {
            // Version 1 facts carry no time of their own: they stand at the start, in peer ID order
            // (advertisements at their first time), and the events keep their order.
            let advertised = v1Identities.lazy.filter { $0.kind == .identityAdvertised }.map(\.t).min()
            let earliest = min(trace.stats.firstT ?? Nanos.max, trace.events.first?.t ?? Nanos.max, advertised ?? Nanos.max)
            let start = earliest == Nanos.max ? 0 : earliest
            for i in v1Identities.indices where v1Identities[i].kind == .identityLearned { v1Identities[i].t = start; v1Identities[i].lastT = start }
            let all = v1Identities + trace.events
            let order = all.indices.sorted { all[$0].t != all[$1].t ? all[$0].t < all[$1].t : $0 < $1 }
            trace.events = order.map { all[$0] }
        }
        return trace
    }

    private struct Header {
        var inputs: [String], complete: Bool, inputProblems: [String], stats: CaptureStats
        var diagnostics: [Diagnostic], totals: [String: Int]
        init?(_ v: JSONValue) {
            guard let inputs = v["inputs"]?.arrayValue?.compactMap(\.stringValue), let complete = v["complete"]?.boolValue,
                  let problems = v["inputProblems"]?.arrayValue?.compactMap(\.stringValue),
                  let s = v["stats"], let stats = EventTrace.stats(s),
                  let diags = v["diagnostics"]?.arrayValue else { return nil }
            self.inputs = inputs
            self.complete = complete
            inputProblems = problems
            self.stats = stats
            var ds: [Diagnostic] = []
            for d in diags {
                guard let x = EventTrace.diagnostic(d) else { return nil }
                ds.append(x)
            }
            diagnostics = ds
            totals = (EventTrace.counts(v["diagnosticTotals"]) ?? [:]).mapValues { Int(clamping: $0) }
        }
    }

    static func uint(_ v: JSONValue?) -> UInt64? {
        switch v {
        case .uint(let u)?: u
        case .int(let i)? where i >= 0: UInt64(i)
        default: nil
        }
    }

    static func counts(_ v: JSONValue?) -> [String: UInt64]? {
        guard let o = v?.objectValue else { return nil }
        var m: [String: UInt64] = [:]
        for (k, x) in o {
            guard let n = uint(x) else { return nil }
            m[k] = n
        }
        return m
    }

    static func stats(_ v: JSONValue) -> CaptureStats? {
        var s = CaptureStats()
        guard let frames = uint(v["frames"]), let bytes = uint(v["bytes"]), let captured = uint(v["capturedBytes"]),
              let linkTypes = counts(v["linkTypes"]), let plugins = counts(v["plugins"]),
              let withDiag = uint(v["framesWithDiagnostics"]), let undecoded = counts(v["undecoded"]),
              let truncated = uint(v["truncatedFrames"]), let logLines = uint(v["logLines"]),
              let logInputs = uint(v["logInputs"]), let logEntries = uint(v["logEntries"]),
              let logUnknown = counts(v["logUnknown"]), let logRecognized = counts(v["logRecognized"]) else { return nil }
        s.frames = frames
        s.bytes = bytes
        s.capturedBytes = captured
        s.firstT = v["firstT"]?.int64Value
        s.lastT = v["lastT"]?.int64Value
        s.linkTypes = linkTypes
        s.plugins = plugins
        s.framesWithDiagnostics = withDiag
        s.undecoded = undecoded
        s.truncatedFrames = truncated
        s.logLines = logLines
        s.logInputs = logInputs
        s.logEntries = logEntries
        s.logUnknown = logUnknown
        s.logRecognized = logRecognized
        return s
    }

    static func evidence(_ v: JSONValue?) -> Evidence? {
        guard let v, let i = v["input"]?.int64Value, let input = Int(exactly: i), input >= 0 else { return nil }
        if let f = uint(v["frame"]) { return .frame(input: input, frame: f) }
        if let l = v["line"]?.int64Value, let line = Int(exactly: l) { return .logLine(input: input, line: line) }
        return nil
    }

    static func diagnostic(_ v: JSONValue) -> Diagnostic? {
        guard let id = v["id"]?.stringValue, let sev = v["severity"]?.stringValue.flatMap(Severity.init(rawValue:)),
              let message = v["message"]?.stringValue else { return nil }
        return Diagnostic(id: id, severity: sev, message: message, evidence: evidence(v["evidence"]),
                          offset: v["offset"]?.int64Value.flatMap { Int(exactly: $0) }, t: v["t"]?.int64Value)
    }

    static func address(_ s: String) -> IPAddress? { IPAddress(s) }

    static func endpoint(_ v: JSONValue?) -> Endpoint? {
        guard let v, let a = v["address"]?.stringValue.flatMap(Self.address), let p = uint(v["port"]),
              let port = UInt16(exactly: p) else { return nil }
        return Endpoint(a, port)
    }

    static func peerID(_ v: JSONValue?) -> UInt64? { v?.stringValue.flatMap { PeerIdentity.parse(idString: $0) } }

    /// A version 1 `identity` line as the identity events version 2 writes: the peer (with its
    /// display name), each address and endpoint, and its advertisements as one coalesced event.
    static func identityEvents(_ v: JSONValue, evidence: Evidence) -> [PeerEvent]? {
        guard let id = peerID(v["peerID"]), let addrs = v["addresses"]?.arrayValue, let eps = v["endpoints"]?.arrayValue else {
            return nil
        }
        func fact(_ h: PeerHint) -> PeerEvent {
            PeerEvent(kind: .identityLearned, t: 0, evidence: evidence, from: h, source: "trace-v1")
        }
        var out = [fact(PeerHint(peerID: id, displayName: v["displayName"]?.stringValue))]
        for a in addrs {
            guard let x = a.stringValue.flatMap(Self.address) else { return nil }
            out.append(fact(PeerHint(peerID: id, address: x)))
        }
        for p in eps {
            guard let x = endpoint(p) else { return nil }
            out.append(fact(PeerHint(peerID: id, endpoint: x)))
        }
        if let first = v["advertisedFirst"]?.int64Value {
            var e = PeerEvent(kind: .identityAdvertised, t: first, evidence: evidence, from: PeerHint(peerID: id), source: "trace-v1")
            if let last = v["advertisedLast"]?.int64Value, last > first {
                e.count = 2
                e.lastT = last
                e.lastEvidence = evidence
            }
            out.append(e)
        }
        return out
    }

    static func hint(_ v: JSONValue?) -> PeerHint? {
        guard let v else { return .unknown }
        guard v.objectValue != nil else { return nil }
        var h = PeerHint()
        // Fields as written: no defaults filled in (a participant ID without a peer ID stays so).
        h.peerID = peerID(v["peerID"])
        h.participantID = uint(v["participantID"]).flatMap { UInt32(exactly: $0) }
        h.displayName = v["displayName"]?.stringValue
        h.endpoint = endpoint(v["endpoint"])
        h.address = v["address"]?.stringValue.flatMap(Self.address)
        return h
    }

    static func event(_ v: JSONValue) -> PeerEvent? {
        guard let kind = v["kind"]?.stringValue, let t = v["t"]?.int64Value, let ev = evidence(v["evidence"]),
              let source = v["source"]?.stringValue, let from = hint(v["from"]), let to = hint(v["to"]) else { return nil }
        var flow: FlowKey?
        if let f = v["flow"] {
            guard let k = Self.flow(f) else { return nil }
            flow = k
        }
        var attrs: [String: String] = [:]
        if let a = v["attrs"] {
            guard let o = a.objectValue else { return nil }
            for (k, x) in o {
                guard let s = x.stringValue else { return nil }
                attrs[k] = s
            }
        }
        var e = PeerEvent(kind: EventKind(kind), t: t, evidence: ev, from: from, to: to, flow: flow, source: source, attrs: attrs)
        if let c = v["count"]?.int64Value {
            guard let n = Int(exactly: c), n >= 1 else { return nil }
            e.count = n
        }
        if let l = v["lastT"]?.int64Value { e.lastT = l }
        if v["lastEvidence"] != nil {
            guard let l = evidence(v["lastEvidence"]) else { return nil }
            e.lastEvidence = l
        }
        return e
    }
}
