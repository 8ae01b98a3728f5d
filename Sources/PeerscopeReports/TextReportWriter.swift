import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// The terminal report: summary first (inputs, peers, sessions, findings by kind), then per-peer
/// timelines, then findings with evidence. Colour (ANSI) only when asked. Never message contents.
public enum TextReportWriter {
    /// Timeline entries shown per peer unless `showAllTimeline` (the first and last halves).
    public static let timelineLimit = 40

    public static func render(_ r: Report, colour: Bool = false, showAllTimeline: Bool = false) -> String {
        var out = ""
        let c = Paint(on: colour)

        // Summary
        out += c.bold("peerscope report") + " (\(Report.schemaID))\n"
        out += "inputs: " + (r.inputs.isEmpty ? "none" : r.inputs.joined(separator: ", "))
            + (r.complete ? "" : c.yellow("  [incomplete]")) + "\n"
        for p in r.inputProblems { out += "  input problem: \(p)\n" }
        var cap = "capture: \(r.stats.frames) frames, \(r.stats.bytes) bytes"
        if let a = r.stats.firstT, let b = r.stats.lastT {
            cap += ", \(CaptureTime.iso8601(a)) to \(CaptureTime.iso8601(b)) (\(CaptureTime.duration(b &- a)))"
        }
        if r.stats.logLines > 0 { cap += ", \(r.stats.logLines) log lines" }
        out += cap + "\n"
        let peers = r.timelines.peers
        out += "peers: \(peers.count)" + (peers.isEmpty ? "" : " (" + peers.map { $0.peer.label }.joined(separator: ", ") + ")") + "\n"
        let sessions = r.timelines.sessions
        let established = sessions.filter { $0.established != nil }.count
        out += "sessions: \(sessions.count) (\(established) established, \(sessions.filter { $0.end == nil }.count) open at end)\n"
        if r.findings.isEmpty {
            out += "findings: " + c.green("none") + "\n"
        } else {
            let bySev = r.findingsBySeverity.map { "\($0.1) \($0.0.rawValue)" }.joined(separator: ", ")
            out += "findings: \(r.findings.count) (\(bySev))\n"
            for (k, n) in r.findingsByKind { out += "  \(k): \(n)\n" }
        }
        if !r.diagnostics.isEmpty {
            let top = r.diagnosticCounts.prefix(5).map { "\($0.id) x\($0.count)" }.joined(separator: ", ")
            out += "diagnostics: \(r.diagnostics.count) (\(top))\n"
        }

        // Sessions
        if !sessions.isEmpty {
            out += "\n" + c.bold("Sessions") + "\n"
            for s in sessions {
                let a = r.timelines.label(s.pair.a), b = r.timelines.label(s.pair.b)
                var line = "  \(a) <-> \(b) #\(s.number)  \(r.relative(s.start))"
                if let e = s.end { line += " .. \(r.relative(e))" } else { line += " .. (open)" }
                line += s.established != nil ? "  established" : "  not established"
                if s.encrypted { line += ", encrypted" }
                if let reason = s.endReason { line += ", \(reason)" }
                if !s.history.isEmpty { line += "  history \(s.history)" }
                out += line + "\n"
            }
        }

        // Timelines
        if !peers.isEmpty {
            out += "\n" + c.bold("Timelines") + "\n"
            for p in peers {
                var head = "  " + c.bold(p.peer.label)
                var ids: [String] = []
                if let id = p.peer.idString { ids.append("peer \(id)") }
                if let pid = p.peer.participantHex { ids.append("participant \(pid)") }
                if !p.peer.addresses.isEmpty { ids.append(p.peer.addresses.map { "\($0)" }.joined(separator: " ")) }
                if !ids.isEmpty { head += " (" + ids.joined(separator: ", ") + ")" }
                out += head + "\n"
                if !p.history.isEmpty { out += "    history: \(p.history)\n" }
                let entries = p.entries
                let limit = TextReportWriter.timelineLimit
                if showAllTimeline || entries.count <= limit {
                    for e in entries { out += line(e, r, c) }
                } else {
                    for e in entries.prefix(limit / 2) { out += line(e, r, c) }
                    out += "    ... \(entries.count - limit) more entries (show all with --all)\n"
                    for e in entries.suffix(limit / 2) { out += line(e, r, c) }
                }
            }
        }

        // Findings
        if !r.findings.isEmpty {
            out += "\n" + c.bold("Findings") + "\n"
            for f in r.findings {
                let sev = c.severity(f.severity, f.severity.rawValue.uppercased())
                out += "  \(sev) \(f.kind)  \(f.peer)\(f.peerID.map { " (\($0))" } ?? "")  \(r.relative(f.t))"
                    + (f.openAtEnd ? "  [open at end of input]" : "") + "\n"
                out += "    \(f.message)\n"
                if !f.evidence.isEmpty {
                    let shown = f.evidence.prefix(8).map { r.describe($0) }.joined(separator: ", ")
                    out += "    evidence: \(shown)" + (f.evidence.count > 8 ? ", ... (\(f.evidence.count) in all)" : "") + "\n"
                }
            }
        }
        return out
    }

    static func line(_ e: TimelineEntry, _ r: Report, _ c: Paint) -> String {
        var s = "    \(r.relative(e.t))  "
        let arrow = e.sent ? "->" : "<-"
        var what = e.state.rawValue
        if e.count > 1 { what += " x\(e.count) until \(r.relative(e.lastT))" }
        s += e.state.category == "problem" ? c.red(what) : what
        if let cp = e.counterpart { s += " \(arrow) \(r.timelines.label(cp))" }
        if let sk = e.session { s += " [#\(sk.number)]" }
        if !e.detail.isEmpty { s += "  \(e.detail)" }
        s += "  (\(e.source); " + e.evidence.map { "\($0)" }.joined(separator: " .. ") + ")"
        return s + "\n"
    }

    struct Paint {
        var on: Bool
        func wrap(_ code: String, _ s: String) -> String { on ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        func bold(_ s: String) -> String { wrap("1", s) }
        func red(_ s: String) -> String { wrap("31", s) }
        func yellow(_ s: String) -> String { wrap("33", s) }
        func green(_ s: String) -> String { wrap("32", s) }
        func cyan(_ s: String) -> String { wrap("36", s) }
        func severity(_ sev: Severity, _ s: String) -> String {
            switch sev {
            case .critical, .error: red(s)
            case .warning: yellow(s)
            case .info: cyan(s)
            }
        }
    }
}
