import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// A self-contained HTML page (inline CSS and SVG; no scripts, fonts or links to fetch): one lane
/// per peer, session instances as bars, timeline entries as marks coloured by category, findings
/// as highlighted markers in the lane of the peer at fault, then the findings and peers as tables.
/// Hovering a mark shows its details (SVG `<title>`).
public enum HTMLReportWriter {
    static let colours: [String: String] = [
        "discovery": "#7f8c8d", "invitation": "#8e44ad", "handshake": "#2980b9", "connected": "#27ae60",
        "keepalive": "#16a085", "data": "#34495e", "problem": "#e67e22", "disconnect": "#c0392b", "other": "#95a5a6",
    ]

    static func sevColour(_ s: Severity) -> String {
        switch s {
        case .critical, .error: "#c0392b"
        case .warning: "#e67e22"
        case .info: "#2980b9"
        }
    }

    public static func render(_ r: Report) -> String {
        let peers = r.timelines.peers
        let laneH = 44.0, left = 200.0, width = 1100.0, top = 30.0
        let plotW = width - left - 20
        let t0 = r.origin ?? 0
        var t1 = max(r.stats.lastT ?? t0, r.timelines.end)
        for f in r.findings { t1 = max(t1, f.t) }
        let span = max(Double(t1 &- t0), 1e9)
        func x(_ t: Nanos) -> Double { left + Double(t &- t0) / span * plotW }
        func fmt(_ v: Double) -> String {
            let r = (v * 10).rounded() / 10
            return r == r.rounded() ? String(Int(r)) : String(r)
        }
        var lane: [PeerRef: Int] = [:]
        for (i, p) in peers.enumerated() { lane[p.peer.ref] = i }
        let height = top + Double(max(peers.count, 1)) * laneH + 30

        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(fmt(width))\" height=\"\(fmt(height))\" viewBox=\"0 0 \(fmt(width)) \(fmt(height))\" role=\"img\" aria-label=\"peer timelines\">\n"
        // Axis
        let step = niceStep(span / 1e9 / 8)
        var secs = 0.0
        while secs <= span / 1e9 + 1e-9 {
            defer { secs += step }
            let tx = left + secs * 1e9 / span * plotW
            svg += "<line x1=\"\(fmt(tx))\" y1=\"\(fmt(top - 8))\" x2=\"\(fmt(tx))\" y2=\"\(fmt(height - 24))\" class=\"grid\" stroke=\"#e3e3e3\"/>"
            svg += "<text x=\"\(fmt(tx))\" y=\"\(fmt(top - 12))\" class=\"tick\" font-size=\"10\" fill=\"#888\" text-anchor=\"middle\" font-family=\"sans-serif\">+\(fmt(secs))s</text>\n"
        }
        // Lanes
        for (i, p) in peers.enumerated() {
            let y = top + Double(i) * laneH
            svg += "<rect x=\"0\" y=\"\(fmt(y))\" width=\"\(fmt(width))\" height=\"\(fmt(laneH))\" class=\"lane\(i % 2)\" fill=\"\(i % 2 == 0 ? "#fafafa" : "#f0f3f5")\"/>"
            svg += "<text x=\"8\" y=\"\(fmt(y + laneH / 2 + 4))\" class=\"label\" font-size=\"12\" fill=\"#222\" font-family=\"sans-serif\">\(esc(trim(p.peer.label, 26)))<title>\(esc(p.peer.label))\(p.peer.idString.map { " " + $0 } ?? "") history \(esc(p.history))</title></text>\n"
        }
        // Sessions as bars in both lanes
        for s in r.timelines.sessions {
            for ref in [s.pair.a, s.pair.b] {
                guard let li = lane[ref] else { continue }
                let y = top + Double(li) * laneH + laneH - 10
                let xs = x(s.start), xe = x(s.endOr(t1))
                let cls = s.established != nil ? "sess-up" : "sess-down"
                svg += "<rect x=\"\(fmt(xs))\" y=\"\(fmt(y))\" width=\"\(fmt(max(xe - xs, 1.5)))\" height=\"5\" class=\"\(cls)\" fill=\"\(s.established != nil ? "#27ae60" : "#e67e22")\" opacity=\"0.45\"><title>\(esc(r.timelines.label(s.pair.a))) - \(esc(r.timelines.label(s.pair.b))) #\(s.number): \(s.established != nil ? "established" : "not established")\(s.endReason.map { ", " + esc($0) } ?? ""), history \(esc(s.history))</title></rect>\n"
            }
        }
        // Entries
        for (i, p) in peers.enumerated() {
            let mid = top + Double(i) * laneH + laneH / 2 - 4
            for e in p.entries {
                let y = mid + (e.sent ? -4 : 4)
                let colour = colours[e.state.category] ?? "#95a5a6"
                let xs = x(e.t)
                let tip = "\(r.relative(e.t)) \(e.state.rawValue)\(e.count > 1 ? " x\(e.count)" : "")"
                    + (e.counterpart.map { (e.sent ? " to " : " from ") + r.timelines.label($0) } ?? "")
                    + (e.detail.isEmpty ? "" : " " + e.detail) + " (" + e.evidence.map { "\($0)" }.joined(separator: " .. ") + ")"
                if e.count > 1 {
                    svg += "<line x1=\"\(fmt(xs))\" y1=\"\(fmt(y))\" x2=\"\(fmt(x(e.lastT)))\" y2=\"\(fmt(y))\" stroke=\"\(colour)\" stroke-width=\"3\" opacity=\"0.6\"/>"
                }
                let r0 = e.sent ? 4.0 : 3.0
                let fill = e.sent ? colour : "white"
                svg += "<circle cx=\"\(fmt(xs))\" cy=\"\(fmt(y))\" r=\"\(fmt(r0))\" fill=\"\(fill)\" stroke=\"\(colour)\" stroke-width=\"1.5\"><title>\(esc(tip))</title></circle>\n"
            }
        }
        // Findings
        for (n, f) in r.findings.enumerated() {
            let li = f.peerRef.flatMap { lane[$0] }
            let fx = x(f.t)
            let y = li.map { top + Double($0) * laneH + 8 } ?? (top - 4)
            let c = sevColour(f.severity)
            svg += "<line x1=\"\(fmt(fx))\" y1=\"\(fmt(top))\" x2=\"\(fmt(fx))\" y2=\"\(fmt(height - 24))\" stroke=\"\(c)\" stroke-dasharray=\"3,3\" opacity=\"0.5\"/>"
            svg += "<path d=\"M\(fmt(fx)),\(fmt(y + 8)) l-6,-10 h12 z\" fill=\"\(c)\" class=\"finding\"><title>\(esc("#\(n + 1) \(f.severity.rawValue) \(f.kind) \(f.peer): \(f.message)"))</title></path>"
            svg += "<text x=\"\(fmt(fx + 7))\" y=\"\(fmt(y + 2))\" class=\"fnum\" font-size=\"10\" font-weight=\"bold\" font-family=\"sans-serif\" fill=\"\(c)\">\(n + 1)</text>\n"
        }
        svg += "</svg>\n"

        var h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        h += "<title>peerscope report</title>\n<style>\n" + css + "</style>\n</head>\n<body>\n"
        h += "<h1>peerscope report</h1>\n"
        h += "<p class=\"meta\">\(esc(Report.schemaID)) &middot; inputs: \(esc(r.inputs.joined(separator: ", ")))\(r.complete ? "" : " &middot; <strong>incomplete</strong>")"
        if let a = r.stats.firstT, let b = r.stats.lastT {
            h += " &middot; \(esc(CaptureTime.iso8601(a))) to \(esc(CaptureTime.iso8601(b)))"
        }
        h += "</p>\n<ul class=\"summary\">\n"
        h += "<li><b>\(peers.count)</b> peers</li><li><b>\(r.timelines.sessions.count)</b> sessions</li>"
        h += "<li><b>\(r.findings.count)</b> findings"
        if !r.findings.isEmpty { h += ": " + esc(r.findingsByKind.map { "\($0.0) \($0.1)" }.joined(separator: ", ")) }
        h += "</li><li><b>\(r.stats.frames)</b> frames</li></ul>\n"
        h += "<div class=\"chart\">\n" + svg + "</div>\n"
        h += "<p class=\"legend\">" + ["discovery", "invitation", "handshake", "connected", "keepalive", "data", "problem", "disconnect"]
            .map { "<span style=\"color:\(colours[$0] ?? "#000")\">&#9679;</span> \($0)" }.joined(separator: " ")
            + " &middot; filled, upper row = sent by the lane's peer; hollow, lower row = received &middot; &#9660; finding</p>\n"

        h += "<h2>Findings</h2>\n"
        if r.findings.isEmpty {
            h += "<p>No findings.</p>\n"
        } else {
            h += "<table><tr><th>#</th><th>severity</th><th>kind</th><th>peer</th><th>time</th><th>message</th><th>evidence</th></tr>\n"
            for (n, f) in r.findings.enumerated() {
                let ev = f.evidence.prefix(12).map { r.describe($0) }.joined(separator: ", ") + (f.evidence.count > 12 ? ", ..." : "")
                h += "<tr class=\"sev-\(f.severity.rawValue)\"><td>\(n + 1)</td><td>\(f.severity.rawValue)</td><td>\(esc(f.kind))</td><td>\(esc(f.peer))\(f.peerID.map { "<br><small>\(esc($0))</small>" } ?? "")</td><td>\(esc(r.relative(f.t)))</td><td>\(esc(f.message))\(f.openAtEnd ? " <em>(open at end)</em>" : "")</td><td><small>\(esc(ev))</small></td></tr>\n"
            }
            h += "</table>\n"
        }
        h += "<h2>Peers</h2>\n<table><tr><th>peer</th><th>peer ID</th><th>participant</th><th>addresses</th><th>history</th></tr>\n"
        for p in peers {
            h += "<tr><td>\(esc(p.peer.label))</td><td>\(esc(p.peer.idString ?? ""))</td><td>\(esc(p.peer.participantHex ?? ""))</td><td>\(esc(p.peer.addresses.map { "\($0)" }.joined(separator: " ")))</td><td><code>\(esc(p.history))</code></td></tr>\n"
        }
        h += "</table>\n<p class=\"legend\">History letters (upper case = this peer sent it, lower case = the other side): "
            + HistoryBuilder.legend.map { "<code>\(esc(String($0.letter)))</code> \(esc($0.meaning))" }.joined(separator: ", ")
            + ".</p>\n</body>\n</html>\n"
        return h
    }

    /// 1, 2 or 5 times a power of ten, at least `raw` (seconds per tick).
    static func niceStep(_ raw: Double) -> Double {
        guard raw.isFinite, raw > 0 else { return 1 }
        var p = 1.0
        while p * 10 <= raw { p *= 10 }
        while p > raw { p /= 10 }
        for m in [1.0, 2.0, 5.0, 10.0] where p * m >= raw { return p * m }
        return p * 10
    }

    static func trim(_ s: String, _ n: Int) -> String { s.count <= n ? s : String(s.prefix(n - 1)) + "\u{2026}" }

    static func esc(_ s: String) -> String { MarkupEscaping.escape(s, breaks: .literal) }

    static let css = """
        body { font: 14px -apple-system, system-ui, sans-serif; margin: 24px; color: #222; }
        h1 { font-size: 20px; margin-bottom: 4px; } h2 { font-size: 16px; margin-top: 28px; }
        .meta { color: #666; margin-top: 0; }
        .summary { list-style: none; padding: 0; display: flex; gap: 24px; }
        .chart { overflow-x: auto; border: 1px solid #ddd; }
        .lane0 { fill: #fafafa; } .lane1 { fill: #f0f3f5; }
        .grid { stroke: #e3e3e3; } .tick { font-size: 10px; fill: #888; text-anchor: middle; }
        .label { font-size: 12px; fill: #222; } .fnum { font-size: 10px; font-weight: bold; }
        .sess-up { fill: #27ae60; opacity: 0.45; } .sess-down { fill: #e67e22; opacity: 0.45; }
        .legend { color: #555; font-size: 12px; }
        table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; text-align: left; }
        tr.sev-error td:nth-child(2), tr.sev-critical td:nth-child(2) { color: #c0392b; font-weight: bold; }
        tr.sev-warning td:nth-child(2) { color: #e67e22; font-weight: bold; }
        code { font-size: 12px; }

        """
}
