import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// The terminal report: summary first (inputs, peers, sessions, findings by kind), then per-peer
/// timelines, then findings with evidence. Colour (ANSI) only when asked. Never message contents.
public enum TextReportWriter {
    /// Timeline entries shown per peer unless `showAllTimeline` (the first and last halves).
    public static let timelineLimit = 40

    public static func render(_ r: Report, colour: Bool = false, showAllTimeline: Bool = false, marks: FindingMarks? = nil) -> String {
        var out = ""
        let c = Paint(on: colour)

        // Summary
        out += c.bold("peerscope report") + " (\(Report.schemaID))\n"
        out += "inputs: " + (r.inputs.isEmpty ? "none" : clean(r.inputs.joined(separator: ", ")))
            + (r.complete ? "" : c.yellow("  [incomplete]")) + "\n"
        // A live interface's loss is said once, in the "live capture" block below, beside its counts.
        let inLiveBlock = Set(r.stats.capture?.interfaces.map(\.inputProblem) ?? [])
        for p in r.inputProblems where !inLiveBlock.contains(p) { out += "  input problem: \(clean(p))\n" }
        var cap = r.stats.frames == 0 && r.stats.logLines > 0 ? "capture: none" : "capture: \(r.stats.frames) frames, \(r.stats.bytes) bytes"
        if let a = r.stats.firstT, let b = r.stats.lastT {
            cap += ", \(CaptureTime.iso8601(a)) to \(CaptureTime.iso8601(b)) (\(CaptureTime.duration(b &- a)))"
        }
        if r.stats.logLines > 0 { cap += ", \(r.stats.logLines) log lines" }
        out += cap + "\n"
        if let live = r.stats.capture {
            out += "live capture: stopped (\(live.stopReason)); " + (live.complete ? c.green("nothing lost") : c.yellow("\(live.lost) packet(s) lost")) + "\n"
            for i in live.interfaces { out += "  \(clean(i.line))\n" }
        }
        if !r.captureLosses.isEmpty {
            out += "capture loss: \(r.captureLosses.count) window(s)\n"
            for l in r.captureLosses.prefix(8) { out += "  \(clean(l.caveat))\n" }
            if r.captureLosses.count > 8 { out += "  ... \(r.captureLosses.count - 8) more\n" }
        }
        let peers = r.timelines.peers
        let twins = sharedLabels(r)
        let shownPeers = peers.prefix(12).map { name($0.peer.ref, r, twins) } + (peers.count > 12 ? ["... \(peers.count - 12) more"] : [])
        out += "peers: \(peers.count)" + (peers.isEmpty ? "" : " (" + shownPeers.joined(separator: ", ") + ")") + "\n"
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
            for d in r.diagnosticCounts.prefix(5) {
                var at: [String] = []
                if let f = d.first { at.append(place(f, r)) }
                if let o = d.firstOffset { at.append("offset \(o)") }
                out += "  \(d.id): \(clean(d.message))" + (at.isEmpty ? "" : " (first at " + at.joined(separator: ", ") + ")") + "\n"
            }
        }

        // Discovery
        out += discoverySection(r, c)

        // Sessions
        if !sessions.isEmpty {
            out += "\n" + c.bold("Sessions") + "\n"
            for s in sessions {
                // The originator first: the session's history is written from its side (upper case).
                let first = s.originator == s.pair.b ? s.pair.b : s.pair.a
                let a = name(first, r, twins), b = name(s.pair.other(first), r, twins)
                var line = "  \(a) <-> \(b) #\(s.number)  \(r.relative(s.start))"
                if let e = s.end { line += " .. \(r.relative(e))" } else { line += " .. (open)" }
                line += s.established != nil ? "  established" : "  not established"
                if s.encrypted { line += ", encrypted" }
                if let p = s.plane { line += ", plane \(p.rawValue)" }
                if let reason = s.endReason { line += ", \(clean(reason))" }
                if !s.history.isEmpty { line += "  history \(s.history)" }
                out += line + "\n"
            }
        }

        // Timelines
        if !peers.isEmpty {
            out += "\n" + c.bold("Timelines") + "\n"
            out += "  history letters (upper case = this peer sent it, lower case = the other side): "
                + HistoryBuilder.legend.map { "\($0.letter) \($0.meaning.prefix { $0 != "(" }.trimmingSuffixSpaces)" }
                    .joined(separator: ", ") + "\n"
            for p in peers {
                var head = "  " + c.bold(clean(p.peer.label))
                var ids: [String] = []
                if let id = p.peer.idString { ids.append("peer \(id)") }
                if let pid = p.peer.participantHex { ids.append("participant \(pid)") }
                if !p.peer.addresses.isEmpty { ids.append(p.peer.addresses.map { "\($0)" }.joined(separator: " ")) }
                if !ids.isEmpty { head += " (" + ids.joined(separator: ", ") + ")" }
                out += head + "\n"
                if !p.history.isEmpty { out += "    history: \(p.history)\n" }
                let entries = p.entries
                if showAllTimeline {
                    for e in entries { out += line(e, r, c, twins) }
                } else {
                    for item in folded(entries) {
                        switch item {
                        case .entry(let e): out += line(e, r, c, twins)
                        case .hidden(let n): out += "    ... \(n) more entr\(n == 1 ? "y" : "ies") (--full-timeline shows all)\n"
                        }
                    }
                }
            }
        }

        // Findings
        let m = marks ?? FindingMarks(r)
        if !r.findings.isEmpty || !m.absent.isEmpty {
            out += "\n" + c.bold("Findings") + "\n"
            for (i, f) in r.findings.enumerated() {
                let sev = c.severity(f.severity, f.severity.rawValue.uppercased())
                out += "  \(sev) \(f.kind)  \(clean(f.peer))\(f.peerID.map { " (\($0))" } ?? "")  \(r.relative(f.t))"
                    + (f.openAtEnd ? "  [open at end of input]" : "")
                    + (m.state(i).map { "  [\($0 == .new ? "new" : "in baseline")]" } ?? "")
                    + (m.suppressedBy[i] != nil ? "  [suppressed]" : "")
                    + (f.confidence == .uncertain ? "  " + c.yellow("[uncertain]") : "") + "\n"
                out += "    \(clean(f.message))\n"
                for cv in f.caveats { out += "    uncertain: \(clean(cv))\n" }
                if !f.evidence.isEmpty {
                    let shown = f.evidence.prefix(8).map { r.describe($0) }.joined(separator: ", ")
                    out += "    evidence: \(shown)" + (f.evidence.count > 8 ? ", ... (\(f.evidence.count) in all)" : "") + "\n"
                }
                if let s = m.suppressedBy[i] { out += "    suppressed by \(clean(s.origin)): \(clean(s.reason))\n" }
                if m.fingerprints.indices.contains(i) { out += "    fingerprint: \(m.fingerprints[i])\n" }
            }
            for b in m.absent {
                out += "  gone since the baseline: \(b.kind)  \(clean(b.peer))  (fingerprint \(b.fingerprint))\n"
            }
        }
        return out
    }

    enum Folded { case entry(TimelineEntry), hidden(Int) }

    /// Problem states stay visible when a long timeline is folded.
    static func isProblem(_ s: TimelineState) -> Bool {
        switch s {
        case .error, .timeout, .disconnected, .lost, .invitationDeclined, .channelClosed: true
        default: false
        }
    }

    /// A long timeline shows its first and last `timelineLimit / 2` entries and, between them, every
    /// problem entry (errors, timeouts, disconnects; at most `timelineLimit`), so folding never hides
    /// what went wrong.
    static func folded(_ entries: [TimelineEntry]) -> [Folded] {
        let limit = timelineLimit
        guard entries.count > limit else { return entries.map { .entry($0) } }
        let head = limit / 2
        let tailStart = entries.count - limit / 2
        var out: [Folded] = entries[..<head].map { .entry($0) }
        var hidden = 0, shownProblems = 0
        for e in entries[head..<tailStart] {
            if isProblem(e.state), shownProblems < limit {
                if hidden > 0 { out.append(.hidden(hidden)); hidden = 0 }
                out.append(.entry(e))
                shownProblems += 1
            } else {
                hidden += 1
            }
        }
        if hidden > 0 { out.append(.hidden(hidden)) }
        out += entries[tailStart...].map { .entry($0) }
        return out
    }

    /// The message an entry stands for where its state alone does not say (`gck-handshake DD`):
    /// the kind's label in the event catalogue.
    static func messageLabel(_ k: EventKind) -> String? { EventCatalogue.label(k) }

    /// A peer's label, with its peer ID when another peer shows the same name (two devices named
    /// alike, an app relaunched with a new MCPeerID).
    /// Text from the wire or a log (names, TXT values, messages) with control and bidirectional
    /// formatting characters shown as `\u{1B}`: a nearby device cannot forge report lines or drive
    /// the terminal through its display name.
    static func clean(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: isUnsafe) else { return s }
        var out = ""
        for u in s.unicodeScalars {
            if isUnsafe(u) { out += "\\u{" + String(u.value, radix: 16, uppercase: true) + "}" } else { out.unicodeScalars.append(u) }
        }
        return out
    }

    static func isUnsafe(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00 ... 0x1F, 0x7F ... 0x9F, 0x200E, 0x200F, 0x202A ... 0x202E, 0x2066 ... 0x2069: true
        default: false
        }
    }

    /// Labels more than one peer shows (worked out once per report, not per line).
    static func sharedLabels(_ r: Report) -> Set<String> {
        var seen: Set<String> = [], twins: Set<String> = []
        for p in r.timelines.peers where !seen.insert(p.peer.label).inserted { twins.insert(p.peer.label) }
        return twins
    }

    static func name(_ ref: PeerRef, _ r: Report, _ twins: Set<String>) -> String {
        let raw = r.timelines.label(ref)
        guard twins.contains(raw), let id = r.timelines.idString(ref) else {
            return clean(raw)
        }
        return "\(clean(raw)) [\(id)]"
    }

    /// Evidence as a user opens it: `frame 12` in the first capture, `device.log:21` for a log line.
    static func place(_ e: Evidence, _ r: Report) -> String {
        switch e {
        case .frame(let i, let f): return i == 0 ? "frame \(f)" : "\(baseName(r.inputName(i))) frame \(f)"
        case .logLine(let i, let l): return "\(baseName(r.inputName(i))):\(l)"
        }
    }

    static func baseName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }

    static func line(_ e: TimelineEntry, _ r: Report, _ c: Paint, _ twins: Set<String>) -> String {
        var s = "    \(r.relative(e.t))  "
        let arrow = e.sent ? "->" : "<-"
        var what = e.state.rawValue
        if let label = messageLabel(e.kind) { what += " " + label }
        if e.count > 1 { what += " x\(e.count) until \(r.relative(e.lastT))" }
        s += e.state.category == "problem" ? c.red(what) : what
        if let cp = e.counterpart { s += " \(arrow) \(name(cp, r, twins))" }
        if let sk = e.session { s += " [#\(sk.number)]" }
        if !e.detail.isEmpty { s += "  \(clean(e.detail))" }
        s += "  (\(e.source); " + e.evidence.map { place($0, r) }.joined(separator: " .. ")
        if !e.corroboration.isEmpty { s += "; also " + e.corroboration.map { place($0.evidence, r) }.joined(separator: ", ") }
        s += ")"
        return s + "\n"
    }

    /// Services seen, then each advertising peer: names, IDs, addresses, port, discovery info, times.
    static func discoverySection(_ r: Report, _ c: Paint) -> String {
        let d = r.discovery
        guard !d.services.isEmpty || !d.peers.isEmpty else { return "" }
        var out = "\n" + c.bold("Discovery") + "\n"
        for s in d.services {
            out += "  service \(clean(s.name)): "
                + (s.instances == 0 ? "browsed, no instance seen" : "\(s.instances) instance\(s.instances == 1 ? "" : "s")") + ", "
                + "\(r.relative(s.firstSeen)) .. \(r.relative(s.lastSeen))\n"
        }
        // Hosts without an MPC peer ID (printers, other Bonjour services): one line per host.
        var others: [String: (addresses: Set<String>, services: Set<String>, ports: Set<UInt16>)] = [:]
        for p in d.peers where p.peerID == nil {
            let key = p.host ?? p.addresses.first ?? "unknown host"
            var o = others[key] ?? ([], [], [])
            o.addresses.formUnion(p.addresses)
            o.services.formUnion(p.services)
            o.ports.formUnion(p.ports)
            if let port = p.port { o.ports.insert(port) }
            others[key] = o
        }
        for p in d.peers where p.peerID != nil {
            var head = "  " + clean(p.displayName ?? p.peerID ?? "unknown peer")
            var ids: [String] = []
            if let id = p.peerID { ids.append("peer \(id)") }
            if let pid = p.participantID { ids.append("participant \(pid)") }
            if !ids.isEmpty { head += " (" + ids.joined(separator: ", ") + ")" }
            out += head + "\n"
            var facts: [String] = []
            if !p.addresses.isEmpty { facts.append("addresses " + clean(p.addresses.joined(separator: " "))) }
            if let port = p.port { facts.append("port \(port)") }
            if !p.services.isEmpty { facts.append("services " + clean(p.services.joined(separator: " "))) }
            if !facts.isEmpty { out += "    " + facts.joined(separator: ", ") + "\n" }
            if !p.info.isEmpty {
                out += "    discovery info: " + clean(p.info.keys.sorted().map { "\($0)=\(p.info[$0] ?? "")" }.joined(separator: " ")) + "\n"
            }
            var times: [String] = []
            if let f = p.firstSeen { times.append("first seen \(r.relative(f))") }
            if let l = p.lastSeen { times.append("last seen \(r.relative(l))") }
            if let g = p.gone { times.append("no longer advertised \(r.relative(g))") }
            if !times.isEmpty { out += "    " + times.joined(separator: ", ") + "\n" }
        }
        if !others.isEmpty {
            out += "  other hosts (no MPC peer ID):\n"
            for key in others.keys.sorted() {
                guard let o = others[key] else { continue }
                var line = "    \(key): " + o.services.sorted().joined(separator: " ")
                if !o.ports.isEmpty { line += ", port" + (o.ports.count > 1 ? "s " : " ") + o.ports.sorted().map(String.init).joined(separator: " ") }
                let addrs = o.addresses.subtracting([key]).sorted()
                if !addrs.isEmpty { line += ", " + (addrs.count > 3 ? addrs.prefix(3).joined(separator: " ") + " +\(addrs.count - 3)" : addrs.joined(separator: " ")) }
                out += clean(line) + "\n"
            }
        }
        return out
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

extension Substring {
    var trimmingSuffixSpaces: Substring {
        var s = self
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
