import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// JUnit XML for CI dashboards: one test suite per detector kind that ran; one test case per finding,
/// failing when the finding is at or above `failAt` (what `check --fail-on` fails on; a warning by
/// default), passing with the finding in `system-out` below it; a kind without findings gets one
/// passing test case, so dashboards show what was checked. A finding the baseline already has
/// (`check --baseline`) or a suppression hides passes too, with the finding and why in `system-out`;
/// so does an uncertain finding (capture loss where its judgement rests on silence), with its
/// caveats, unless `strict` (as `check --strict`).
public enum JUnitWriter {
    public static func render(_ r: Report, failAt: Severity = .warning, strict: Bool = false, marks: FindingMarks? = nil) -> String {
        let m = marks ?? FindingMarks(r)
        var kinds = r.detectorsRun
        for f in r.findings where !kinds.contains(f.kind) { kinds.append(f.kind) }
        let tests = kinds.reduce(0) { n, k in n + max(1, r.findings.filter { $0.kind == k }.count) }
        let indexed = Array(r.findings.enumerated())
        func fails(_ i: Int, _ f: Finding) -> Bool {
            f.severity >= failAt && m.counts(i) && (strict || f.confidence == .certain)
        }
        let failing = indexed.filter { fails($0.offset, $0.element) }.count
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"peerscope\" tests=\"\(tests)\" failures=\"\(failing)\" errors=\"0\" time=\"0\">\n"
        for k in kinds {
            let fs = indexed.filter { $0.element.kind == k }
            let suite = "peerscope.\(k)"
            let suiteFailures = fs.filter { fails($0.offset, $0.element) }.count
            out += "  <testsuite name=\"\(esc(suite))\" tests=\"\(max(1, fs.count))\" failures=\"\(suiteFailures)\" errors=\"0\" skipped=\"0\" time=\"0\">\n"
            if fs.isEmpty {
                out += "    <testcase classname=\"\(esc(suite))\" name=\"no \(esc(k)) findings\" time=\"0\"/>\n"
            }
            for (i, f) in fs {
                let name = "\(f.peer) \(r.relative(f.t)): \(f.message)"
                out += "    <testcase classname=\"\(esc(suite))\" name=\"\(esc(name))\" time=\"0\">\n"
                let failed = fails(i, f)
                out += failed ? "      <failure type=\"\(esc(f.kind))\" message=\"\(esc(f.severity.rawValue + ": " + f.message))\">"
                    : "      <system-out>"
                var body = "severity: \(f.severity.rawValue)\npeer: \(f.peer)"
                if let id = f.peerID { body += " (\(id))" }
                body += "\ntime: \(CaptureTime.iso8601(f.t))"
                if f.openAtEnd { body += " (open at end of input)" }
                if f.confidence == .uncertain { body += "\nconfidence: uncertain" }
                for cv in f.caveats { body += "\ncaveat: \(cv)" }
                for e in f.evidence { body += "\nevidence: \(r.describe(e))" }
                if m.fingerprints.indices.contains(i) { body += "\nfingerprint: \(m.fingerprints[i])" }
                if let state = m.state(i) {
                    body += "\nbaseline: \(state.rawValue)" + (state == .unchanged ? " (known in \(m.baselineFile ?? "the baseline"))" : "")
                }
                if let s = m.suppressedBy[i] { body += "\nsuppressed by \(s.origin): \(s.reason)" }
                out += esc(body) + (failed ? "</failure>\n" : "</system-out>\n")
                out += "    </testcase>\n"
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    /// XML escaping for text and attribute values (`MarkupEscaping`, line breaks as references).
    public static func esc(_ s: String) -> String { MarkupEscaping.escape(s, breaks: .references) }
}
