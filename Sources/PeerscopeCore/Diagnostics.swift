/// How bad something is. Ordered: `info < warning < error < critical`.
public enum Severity: String, Sendable, Codable, Comparable, CaseIterable {
    case info, warning, error, critical

    private var rank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .error: 2
        case .critical: 3
        }
    }

    public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
}

/// Where a fact came from: a frame of a capture input, or a line of a log input.
public enum Evidence: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// `input` indexes the run's inputs; `frame` is 1-based within that input, as tshark numbers frames.
    case frame(input: Int, frame: UInt64)
    /// `input` indexes the run's inputs; `line` is 1-based.
    case logLine(input: Int, line: Int)

    public var description: String {
        switch self {
        case .frame(let i, let f): "frame \(f)" + (i == 0 ? "" : " of input \(i + 1)")
        case .logLine(let i, let l): "line \(l)" + (i == 0 ? "" : " of input \(i + 1)")
        }
    }

    public static func < (a: Evidence, b: Evidence) -> Bool {
        switch (a, b) {
        case (.frame(let i1, let f1), .frame(let i2, let f2)): return (i1, f1) < (i2, f2)
        case (.logLine(let i1, let l1), .logLine(let i2, let l2)): return (i1, l1) < (i2, l2)
        case (.frame, .logLine): return true
        case (.logLine, .frame): return false
        }
    }
}

/// Malformed or surprising input, with a stable dotted id (`mdns.name.loop`, `tcp.reassembly.overflow`),
/// the frame or line it was found in, and the byte offset within the unit the reporter decoded.
public struct Diagnostic: Sendable, Hashable {
    public var id: String
    public var severity: Severity
    public var message: String
    public var evidence: Evidence?
    public var offset: Int?
    public var t: Nanos?

    public init(id: String, severity: Severity = .warning, message: String,
                evidence: Evidence? = nil, offset: Int? = nil, t: Nanos? = nil) {
        self.id = id
        self.severity = severity
        self.message = message
        self.evidence = evidence
        self.offset = offset
        self.t = t
    }

    /// `frame 12, offset 30: mdns.name.loop: compression pointer loop`
    public var line: String {
        var s = ""
        if let evidence { s += "\(evidence)" }
        if let offset { s += (s.isEmpty ? "" : ", ") + "offset \(offset)" }
        return (s.isEmpty ? "" : s + ": ") + "\(id): \(message)"
    }
}

/// The one per-id limit on kept diagnostics, shared by every stage (packets, plugins, logs, the
/// engine): the first `keptPerID` of each id are kept, the rest only counted, and the true total
/// per id is always known, so a flood of one malformed thing gives a few named lines and a count.
public struct DiagnosticLimiter: Sendable {
    public let keptPerID: Int
    /// Every diagnostic counted by id, past the limit too.
    public private(set) var totals: [String: Int] = [:]

    public init(keptPerID: Int) { self.keptPerID = keptPerID }

    /// Counts one diagnostic of `id`; true when it is within the limit (keep it), false when it is
    /// only counted (the caller need not even build its message).
    public mutating func admit(_ id: String) -> Bool {
        let n = totals[id, default: 0] &+ 1
        totals[id] = n
        return n <= keptPerID
    }

    /// The ids past the limit, in id order: how many were not kept, and how many there were in all.
    public var overflow: [(id: String, notKept: Int, total: Int)] {
        totals.keys.sorted().compactMap { id in
            let n = totals[id] ?? 0
            return n > keptPerID ? (id, n - keptPerID, n) : nil
        }
    }

    /// Forgets the counts (a new unit of input).
    public mutating func reset() { totals.removeAll() }

    /// Adds counts made elsewhere (a stage read apart, a log input): the totals stay true.
    public mutating func add(totals other: [String: Int]) {
        for (id, n) in other { totals[id, default: 0] &+= n }
    }
}

/// The one place a run's diagnostics go, from every stage (capture readers, packets, plugins, logs):
/// the first `keptPerID` of each id are kept in the order they came, every one is counted. A stage
/// that builds costly messages asks `admit` first and builds the diagnostic only when it is kept.
public final class DiagnosticCollector {
    public private(set) var limiter: DiagnosticLimiter
    /// The diagnostics kept, in the order they came.
    public private(set) var kept: [Diagnostic] = []
    /// How many diagnostics were counted in all (kept or not), to tell whether a step reported any.
    public private(set) var count = 0

    /// Kept diagnostics per id (what a stage read apart may still add under the limit).
    private var keptByID: [String: Int] = [:]

    public init(keptPerID: Int) { limiter = DiagnosticLimiter(keptPerID: keptPerID) }

    /// A collector that carries on from what a finished stage kept and counted (`kept` within the
    /// limit, `totals` true).
    public convenience init(keptPerID: Int, continuing kept: [Diagnostic], totals: [String: Int]) {
        self.init(keptPerID: keptPerID)
        self.kept = kept
        for d in kept { keptByID[d.id, default: 0] &+= 1 }
        limiter.add(totals: totals)
        count = totals.values.reduce(0, &+)
    }

    public var keptPerID: Int { limiter.keptPerID }
    /// Every diagnostic counted by id, past the limit too.
    public var totals: [String: Int] { limiter.totals }

    /// Counts one diagnostic of `id`: true when the caller should build it and `keep` it.
    public func admit(_ id: String) -> Bool {
        count &+= 1
        return limiter.admit(id)
    }

    /// Keeps a diagnostic `admit` let through.
    public func keep(_ d: Diagnostic) {
        kept.append(d)
        keptByID[d.id, default: 0] &+= 1
    }

    /// Counts `d` and keeps it when within the limit.
    public func record(_ d: Diagnostic) {
        if admit(d.id) { keep(d) }
    }

    /// Takes in what a stage read apart collected (a log input): its kept diagnostics, kept here
    /// while this collector's per-id limit allows, and its true totals. Kept diagnostics whose id
    /// the totals do not count are counted one each.
    public func absorb(kept more: [Diagnostic], totals: [String: Int]) {
        for d in more where keptByID[d.id, default: 0] < keptPerID { keep(d) }
        limiter.add(totals: totals)
        count &+= totals.values.reduce(0, &+)
        for d in more where totals[d.id] == nil {
            limiter.add(totals: [d.id: 1])
            count &+= 1
        }
    }
}

extension DiagnosticSpec {
    /// A diagnostic declared by its full id (a stage's, not a plugin's): `ipv4.truncated`.
    public static func id(_ id: String, _ severity: Severity, _ meaning: String) -> DiagnosticSpec {
        DiagnosticSpec(id, severity, meaning, absolute: true)
    }

    /// True when the declared id `declared` covers the diagnostic id `id`: a declared `prefix.*`
    /// covers `prefix.NAME`, a declared `*.suffix` covers `NAME.suffix`.
    public static func covers(_ declared: String, _ id: String) -> Bool {
        declared == id || (declared.hasSuffix(".*") && id.hasPrefix(declared.dropLast()))
            || (declared.hasPrefix("*.") && id.hasSuffix(declared.dropFirst()))
    }
}

/// The diagnostics one stage may report, like Wireshark's expert info: each id once, with its
/// severity and a one-line meaning. Plugins declare theirs in their descriptors; the capture readers,
/// the packet layers, log reading and the analysis declare theirs as a `DiagnosticLayer`, and
/// `peerscope plugins` lists them all by layer.
public struct DiagnosticLayer: Sendable {
    /// `capture`, `packets`, `plugins`, `logs`, `analysis`.
    public var name: String
    public var summary: String
    /// Full ids (a layer's diagnostics are not prefixed by anything).
    public var diagnostics: [DiagnosticSpec]

    public init(name: String, summary: String, diagnostics: [DiagnosticSpec]) {
        self.name = name
        self.summary = summary
        self.diagnostics = diagnostics
    }

    public var ids: [String] { diagnostics.map { $0.fullID(plugin: "") } }

    /// The declaration of diagnostic `id`, when this layer declares it.
    public func spec(for id: String) -> DiagnosticSpec? {
        diagnostics.first { DiagnosticSpec.covers($0.fullID(plugin: ""), id) }
    }
}
