import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// SARIF 2.1.0 for code-hosting CI: one run, one rule per detector kind, one result per finding.
/// Log-line evidence becomes a region (`startLine`); frame evidence names the capture file, with the
/// frame numbers in the location's message and the result's properties.
public enum SARIFWriter {
    public static let schemaURI = "https://json.schemastore.org/sarif-2.1.0.json"
    public static let informationURI = "https://github.com/peerscope/peerscope"

    public static func level(_ s: Severity) -> String {
        switch s {
        case .critical, .error: "error"
        case .warning: "warning"
        case .info: "note"
        }
    }

    public static func render(_ r: Report, pretty: Bool = true, marks: FindingMarks? = nil) -> String {
        let v = json(r, marks: marks)
        return (pretty ? v.prettyText : v.jsonText) + "\n"
    }

    /// The key of `partialFingerprints` (see `FindingIdentities` for what goes into the value).
    public static let fingerprintKey = "peerscopeFingerprint/v1"

    public static func json(_ r: Report, marks: FindingMarks? = nil) -> JSONValue {
        let m = marks ?? FindingMarks(r)
        let descriptors = DetectorSuite.all
        var kinds = descriptors.map(\.kind)
        for f in r.findings where !kinds.contains(f.kind) { kinds.append(f.kind) }
        for b in m.absent where !kinds.contains(b.kind) { kinds.append(b.kind) }
        let rules: [JSONValue] = kinds.map { k in
            let d = descriptors.first { $0.kind == k }
            let worst = r.findings.filter { $0.kind == k }.map(\.severity).max() ?? .warning
            var props: [(String, JSONValue)] = []
            for t in d?.thresholds ?? [] {
                props.append((t.name, .double(r.thresholds.first { $0.0 == t.name }?.1 ?? t.defaultValue)))
            }
            return .object([
                ("id", .string(k)),
                ("name", .string(ruleName(k))),
                ("shortDescription", .object([("text", .string(d?.summary ?? k))])),
                ("defaultConfiguration", .object([("level", .string(level(worst)))])),
                ("properties", .object([("thresholds", .object(props))])),
            ])
        }
        let artifacts: [JSONValue] = r.inputs.map { .object([("location", .object([("uri", .string(uri($0)))]))]) }
        var results: [JSONValue] = r.findings.enumerated().map { i, f in
            var locs: [JSONValue] = []
            var frames: [String: [UInt64]] = [:]
            for e in f.evidence {
                switch e {
                case .logLine(let i, let l):
                    if locs.count < 10 {
                        locs.append(.object([("physicalLocation", .object([
                            ("artifactLocation", artifact(r, i)),
                            ("region", .object([("startLine", .int(Int64(max(1, l))))])),
                        ]))]))
                    }
                case .frame(let i, let n):
                    frames[r.inputName(i), default: []].append(n)
                }
            }
            for (i, name) in r.inputs.enumerated() {
                guard let fs = frames[name], !fs.isEmpty else { continue }
                locs.append(.object([
                    ("physicalLocation", .object([("artifactLocation", artifact(r, i))])),
                    ("message", .object([("text", .string("frames " + fs.prefix(20).map(String.init).joined(separator: ", ")))])),
                ]))
            }
            if locs.isEmpty, !r.inputs.isEmpty {
                locs.append(.object([("physicalLocation", .object([("artifactLocation", artifact(r, 0))]))]))
            }
            var result: [(String, JSONValue)] = [
                ("ruleId", .string(f.kind)),
                ("ruleIndex", .int(Int64(kinds.firstIndex(of: f.kind) ?? 0))),
                ("level", .string(level(f.severity))),
                ("message", .object([("text", .string("\(f.peer): \(f.message)"
                    + (f.caveats.isEmpty ? "" : " (uncertain: " + f.caveats.joined(separator: "; ") + ")")))])),
                ("locations", .array(locs)),
                ("partialFingerprints", .object([(fingerprintKey, .string(m.fingerprints.indices.contains(i) ? m.fingerprints[i] : ""))])),
            ]
            if let state = m.state(i) { result.append(("baselineState", .string(state.rawValue))) }
            if let s = m.suppressedBy[i] {
                result.append(("suppressions", .array([.object([
                    ("kind", .string("external")), ("status", .string("accepted")), ("justification", .string(s.reason)),
                    ("properties", .object([("origin", .string(s.origin)), ("expires", s.expires.map { .string($0) } ?? .null)])),
                ])])))
            }
            result.append(
                ("properties", .object([
                    ("peer", .string(f.peer)),
                    ("peerID", f.peerID.map { .string($0) } ?? .null),
                    ("t", .int(f.t)),
                    ("time", .string(CaptureTime.iso8601(f.t))),
                    ("severity", .string(f.severity.rawValue)),
                    ("openAtEnd", .bool(f.openAtEnd)),
                    ("confidence", .string(f.confidence.rawValue)),
                    ("caveats", .array(f.caveats.map { .string($0) })),
                    ("evidence", .array(f.evidence.map { .string(r.describe($0)) })),
                ])))
            return .object(result)
        }
        // Baseline findings this run no longer has: results with `baselineState` `absent`.
        for b in m.absent {
            results.append(.object([
                ("ruleId", .string(b.kind)),
                ("ruleIndex", .int(Int64(kinds.firstIndex(of: b.kind) ?? 0))),
                ("level", .string(level(b.severity))),
                ("message", .object([("text", .string("\(b.peer): \(b.message)"))])),
                ("partialFingerprints", .object([(fingerprintKey, .string(b.fingerprint))])),
                ("baselineState", .string(BaselineState.absent.rawValue)),
                ("properties", .object([("peer", .string(b.peer)), ("severity", .string(b.severity.rawValue))])),
            ]))
        }
        return .object([
            ("$schema", .string(schemaURI)),
            ("version", .string("2.1.0")),
            ("runs", .array([.object([
                ("tool", .object([("driver", .object([
                    ("name", .string(Report.toolName)),
                    ("version", .string(r.toolVersion)),
                    ("informationUri", .string(informationURI)),
                    ("rules", .array(rules)),
                ]))])),
                ("artifacts", .array(artifacts)),
                ("results", .array(results)),
                ("properties", .object([("complete", .bool(r.complete)), ("schema", .string(Report.schemaID))])),
            ])])),
        ])
    }

    static func artifact(_ r: Report, _ i: Int) -> JSONValue {
        var o: [(String, JSONValue)] = [("uri", .string(uri(r.inputName(i))))]
        if r.inputs.indices.contains(i) { o.append(("index", .int(Int64(i)))) }
        return .object(o)
    }

    /// A relative URI reference for a path (spaces and specials percent-encoded).
    static func uri(_ path: String) -> String {
        var s = ""
        for u in path.unicodeScalars {
            if (u.value >= 0x30 && u.value <= 0x39) || (u.value >= 0x41 && u.value <= 0x5A) || (u.value >= 0x61 && u.value <= 0x7A)
                || "-._~/:".unicodeScalars.contains(u) {
                s.unicodeScalars.append(u)
            } else {
                for b in String(u).utf8 {
                    let h = String(b, radix: 16, uppercase: true)
                    s += "%" + (h.count == 1 ? "0" + h : h)
                }
            }
        }
        return s
    }

    /// `handshake-timeout` -> `HandshakeTimeout`.
    static func ruleName(_ k: String) -> String {
        k.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
