import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// `peerscope explain KEY FILE...`: why one finding fired. The rule that fired, the thresholds
/// applied, the timeline entries around it (the peer's and its counterpart's, within `window` of the
/// finding and of each piece of its evidence), what the capture could not see there, and what
/// evidence would have cleared it.
public enum ExplainWriter {
    /// The findings a key names: a fingerprint, a finding key, an index (`#2`, from 1) or a kind.
    public static func select(_ key: String, in r: Report) -> [Int] {
        let marks = FindingMarks(r)
        if key.hasPrefix("#"), let n = Int(key.dropFirst()), n >= 1, n <= r.findings.count { return [n - 1] }
        let byPrint = r.findings.indices.filter { marks.fingerprints.indices.contains($0) && marks.fingerprints[$0].hasPrefix(key) && key.count >= 6 }
        if !byPrint.isEmpty { return byPrint }
        let byKey = r.findings.indices.filter { r.findings[$0].key == key }
        if !byKey.isEmpty { return byKey }
        return r.findings.indices.filter { r.findings[$0].kind == key }
    }

    /// What would have cleared a finding, by kind and case: the evidence whose presence would have
    /// made the detector stay silent.
    public static func wouldClear(_ f: Finding) -> String {
        switch (f.kind, f.detailAttrs["case"] ?? f.detailAttrs["phase"] ?? f.detailAttrs["level"] ?? "") {
        case ("handshake-timeout", let phase):
            return "an answer from \(f.peer) to the \(phase.isEmpty ? "handshake" : phase) step within the threshold (an ICE success, a DTLS "
                + "ServerHello/ChangeCipherSpec, a GCK Hello back, or the app's handshake_response), or a log line saying the channel was already connected"
        case ("keepalive-timeout", _):
            return "any keep-alive (or, at session level, a GCK heartbeat or data packet) from \(f.peer) inside the silence, or the session ending "
                + "(a disconnect) before the threshold passed"
        case ("duplicate-connection", "overlap-traffic"):
            return "the older session going quiet within the grace period after the newer one's first packet (it would then be superseded: a reconnect)"
        case ("duplicate-connection", "crossing-invitations"):
            return "a response to the first invitation before the other side invited (or more than the invite window between them)"
        case ("duplicate-connection", _):
            return "the two instances, channels or peer IDs not overlapping in time"
        case ("reconnect-storm", _):
            return "no more reconnect attempts than the count within the window (a session that stays up, or longer back-off between attempts)"
        case ("channel-error", "encryption"):
            return "both sides sending the same plane (both DTLS, or both plaintext GCK), or their connection data naming compatible preferences"
        case ("channel-error", "permission"):
            return "no -72008/NoAuth error: the Info.plist keys present and the user allowing local network access"
        case ("channel-error", _):
            return "no error on the channel: no alert, reset, ICMP unreachable, bad checksum or send error for this peer"
        case ("declined-invitation", _):
            return "an invitation response with MCNearbyServiceAcceptInviteKey = true"
        case ("invitation-storm", _):
            return "the peer found or invited no more than the count within the window (the browser not restarted in a loop)"
        case ("flapping", _):
            return "sessions that stay Connected longer than the hold time, or fewer drops than the count within the window"
        default:
            return "evidence contradicting the rule above"
        }
    }

    public static func render(_ r: Report, indexes: [Int], window: Nanos = 5 * CaptureTime.second, config: DetectorConfig = .defaults) -> String {
        let c = TextReportWriter.Paint(on: false)
        let twins = TextReportWriter.sharedLabels(r)
        let marks = FindingMarks(r)
        var out = ""
        for i in indexes where r.findings.indices.contains(i) {
            let f = r.findings[i]
            out += "Finding #\(i + 1): \(f.severity.rawValue.uppercased()) \(f.kind)  \(TextReportWriter.clean(f.peer))"
                + "\(f.peerID.map { " (\($0))" } ?? "")  \(r.relative(f.t))\n"
            out += "  \(TextReportWriter.clean(f.message))\n"
            if marks.fingerprints.indices.contains(i) { out += "  fingerprint: \(marks.fingerprints[i])  key: \(TextReportWriter.clean(f.key))\n" }
            let descriptor = DetectorSuite.all.first { $0.kind == f.kind }
            out += "\nRule that fired\n"
            out += "  \(f.kind): \(descriptor?.summary ?? "(no detector description)")"
                + (f.detailAttrs["case"].map { " — case \($0)" } ?? "") + (f.detailAttrs["phase"].map { " — phase \($0)" } ?? "") + "\n"
            let details = f.detailAttrs.sorted { $0.key < $1.key }.map { "\($0.key)=\(TextReportWriter.clean($0.value))" }
            if !details.isEmpty { out += "  details: \(details.joined(separator: ", "))\n" }
            out += "\nThresholds applied\n"
            let ths = descriptor?.thresholds ?? []
            if ths.isEmpty { out += "  none: this rule has no threshold\n" }
            if f.kind == "duplicate-connection" || f.kind == "reconnect-storm" {
                out += "  session grace = \(secondsText(Double(TimelineBuilder().supersedeGrace) / 1e9))  "
                    + "(an older instance's packets this soon after a newer one's first do not keep it alive; quieter, it is superseded)\n"
            }
            for t in ths {
                out += "  \(t.name) = \(formatValue(config.value(t.name), unit: t.unit))  (\(t.summary))\n"
            }
            out += "\nTimeline around it (within \(CaptureTime.duration(window)) of the finding and of its evidence)\n"
            let shown = entries(around: f, in: r, window: window)
            if shown.isEmpty { out += "  (no timeline entries near it)\n" }
            for (peer, e) in shown {
                out += "  [\(TextReportWriter.name(peer, r, twins))] " + String(TextReportWriter.line(e, r, c, twins).drop { $0 == " " }).trimmingSuffixNewlines + "\n"
            }
            out += "\nWhat the capture could not see\n"
            if let s = f.silence {
                let near = r.captureLosses.filter { $0.overlaps(s.lowerBound, s.upperBound) }
                out += near.isEmpty ? "  no known loss in the silence this rests on (\(r.relative(s.lowerBound)) .. \(r.relative(s.upperBound)))\n"
                    : near.map { "  \(TextReportWriter.clean($0.caveat))\n" }.joined()
            } else {
                out += "  this rule does not rest on silence\n"
            }
            out += "  confidence: \(f.confidence.rawValue)\n"
            out += "\nWhat would have cleared it\n  \(wouldClear(f))\n\n"
        }
        return out
    }

    static func formatValue(_ v: Double, unit: String) -> String {
        unit == "count" ? String(Int(v.isFinite ? v : 0)) : secondsText(v)
    }

    /// The finding's peer's timeline entries (and its counterpart's, when both are peers of the report)
    /// near the finding's time or near an entry that carries one of its evidence items, in time order.
    static func entries(around f: Finding, in r: Report, window: Nanos) -> [(PeerRef, TimelineEntry)] {
        guard let p = f.peerRef, let tl = r.timelines.timeline(p) else { return [] }
        let evidence = Set(f.evidence)
        var anchors: [Nanos] = [f.t]
        if let s = f.silence { anchors.append(s.lowerBound) }
        for e in tl.entries {
            // A run's first evidence is at its start, its last at its end.
            if let first = e.evidence.first, evidence.contains(first) { anchors.append(e.t) }
            if e.evidence.count > 1, let last = e.evidence.last, evidence.contains(last) { anchors.append(e.lastT) }
        }
        func near(_ e: TimelineEntry) -> Bool {
            anchors.contains { abs(e.t &- $0) <= window || abs(e.lastT &- $0) <= window }
        }
        var out: [(PeerRef, TimelineEntry)] = tl.entries.filter(near).map { (p, $0) }
        if out.count > 40 { out = Array(out.prefix(20)) + Array(out.suffix(20)) }
        return out
    }
}

extension String {
    var trimmingSuffixNewlines: String {
        var s = self
        while s.hasSuffix("\n") { s.removeLast() }
        return s
    }
}
