import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// The one report model every writer renders (text, JSON, SARIF, JUnit, HTML).
public struct Report: Sendable {
    /// The JSON report's `schema` value; changes within a version are additive only.
    public static let schemaID = "peerscope.report/1"
    public static let toolName = "peerscope"
    public static let defaultToolVersion = "0.1.0"

    public var toolVersion: String
    /// Input paths in the order given (`Evidence.input` indexes this).
    public var inputs: [String]
    /// False when an input was cut short.
    public var complete: Bool
    public var inputProblems: [String]
    public var stats: CaptureStats
    public var diagnostics: [Diagnostic]
    public var timelines: Timelines
    public var findings: [Finding]
    public var discovery: DiscoverySection
    /// Effective detector thresholds (defaults with overrides), in detector order.
    public var thresholds: [(String, Double)]
    /// Detector kinds that ran.
    public var detectorsRun: [String]
    /// Stretches of capture time with known packet loss (live drops, interface statistics in the file,
    /// snaplen cuts): findings resting on silence there are `uncertain`.
    public var captureLosses: [CaptureLoss] = []

    public init(inputs: [String], complete: Bool = true, inputProblems: [String] = [], stats: CaptureStats = CaptureStats(),
                diagnostics: [Diagnostic] = [], timelines: Timelines, findings: [Finding], config: DetectorConfig = .defaults,
                toolVersion: String = Report.defaultToolVersion) {
        self.toolVersion = toolVersion
        self.inputs = inputs
        self.complete = complete
        self.inputProblems = inputProblems
        self.stats = stats
        self.diagnostics = diagnostics
        self.timelines = timelines
        self.findings = findings
        discovery = DiscoverySection(timelines: timelines)
        thresholds = DetectorSuite.effectiveThresholds(config)
        detectorsRun = DetectorSuite.kinds.filter { config.isEnabled($0) }
    }

    // MARK: derived views

    /// The worst severity among findings (nil without findings).
    public var worstSeverity: Severity? { findings.map(\.severity).max() }

    /// Findings at or above a severity (what `peerscope check --fail-on` counts; uncertain findings
    /// count only when `strict`).
    public func findings(atLeast s: Severity, strict: Bool = true) -> [Finding] {
        findings.filter { $0.severity >= s && (strict || $0.confidence == .certain) }
    }

    /// Finding counts per kind, in detector order, kinds without findings left out.
    public var findingsByKind: [(String, Int)] {
        var c: [String: Int] = [:]
        for f in findings { c[f.kind, default: 0] += 1 }
        let known = DetectorSuite.kinds
        let extra = c.keys.filter { !known.contains($0) }.sorted()
        return (known + extra).compactMap { k in c[k].map { (k, $0) } }
    }

    public var findingsBySeverity: [(Severity, Int)] {
        Severity.allCases.reversed().compactMap { s in
            let n = findings.filter { $0.severity == s }.count
            return n > 0 ? (s, n) : nil
        }
    }

    public struct DiagnosticCount: Sendable, Hashable {
        public var id: String
        public var severity: Severity
        public var count: Int
        public var first: Evidence?
        /// Byte offset of the first occurrence within the unit its reporter decoded.
        public var firstOffset: Int?
        public var message: String
    }

    /// Exact counts per diagnostic id when `diagnostics` holds only the first few of each (the engine
    /// keeps a bounded sample); nil when `diagnostics` is complete.
    public var diagnosticTotals: [String: Int]?

    /// Diagnostics counted by id (worst severity, first evidence), most frequent first.
    public var diagnosticCounts: [DiagnosticCount] {
        var m: [String: DiagnosticCount] = [:]
        for d in diagnostics {
            if var c = m[d.id] {
                c.count += 1
                if d.severity > c.severity { c.severity = d.severity }
                if c.first == nil { c.first = d.evidence; c.firstOffset = d.offset }
                m[d.id] = c
            } else {
                m[d.id] = DiagnosticCount(id: d.id, severity: d.severity, count: 1, first: d.evidence, firstOffset: d.offset,
                                          message: d.message)
            }
        }
        if let totals = diagnosticTotals {
            for (id, n) in totals {
                if var c = m[id] { c.count = max(c.count, n); m[id] = c }
            }
        }
        return m.values.sorted { $0.count != $1.count ? $0.count > $1.count : $0.id < $1.id }
    }

    /// Where a piece of evidence came from, for writers: `capture.pcap frame 12`.
    public func describe(_ e: Evidence) -> String {
        switch e {
        case .frame(let i, let f): return "\(inputName(i)) frame \(f)"
        case .logLine(let i, let l): return "\(inputName(i)):\(l)"
        }
    }

    public func inputName(_ i: Int) -> String { inputs.indices.contains(i) ? inputs[i] : "input \(i + 1)" }

    /// Origin for relative times: the first frame or event.
    public var origin: Nanos? {
        [stats.firstT, timelines.start].compactMap { $0 }.min()
    }

    public func relative(_ t: Nanos) -> String { CaptureTime.relative(t, to: origin ?? t) }
}
