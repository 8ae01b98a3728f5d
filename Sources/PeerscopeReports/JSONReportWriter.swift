import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// The JSON report: one document, keys in a fixed order, described by
/// `Schemas/peerscope.report.v1.schema.json`. Times are integer nanoseconds since the Unix epoch
/// (`t`) with an ISO 8601 twin (`time`) where people read them.
public enum JSONReportWriter {
    public static func render(_ r: Report, pretty: Bool = true, marks: FindingMarks? = nil) -> String {
        var out: [UInt8] = []
        write(r, pretty: pretty, marks: marks) { out.append(contentsOf: $0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The report's top-level members; the long lists (peers, sessions, findings) are built one
    /// element at a time so that `write` never holds the whole document.
    private enum Member {
        case value(JSONValue)
        /// `count` elements, each built as a value (`json`) or, when `write` is given, written
        /// straight into the output (the same bytes: the long lists' fast path).
        case list(Int, (Int) -> JSONValue, write: ((Int, inout [UInt8], String?, Int) -> Void)? = nil)
        /// A value made only when written and let go right after (`json` makes it whole); `write`
        /// writes the same bytes in pieces at `level`, handing the buffer to `flush` between them.
        case pieces(json: () -> JSONValue, write: (inout [UInt8], String?, Int, (inout [UInt8]) -> Void) -> Void)
    }

    private static func members(_ r: Report, _ m: FindingMarks, _ ids: FindingIdentities) -> [(String, Member)] {
        var list: [(String, Member)] = [
            ("schema", .value(.string(Report.schemaID))),
            ("tool", .value(.object([("name", .string(Report.toolName)), ("version", .string(r.toolVersion))]))),
            ("inputs", .value(.array(r.inputs.map { .string($0) }))),
            ("complete", .value(.bool(r.complete))),
            ("inputProblems", .value(.array(r.inputProblems.map { .string($0) }))),
            ("summary", .value(summary(r))),
            ("stats", .value(stats(r.stats))),
            ("captureLosses", .value(.array(r.captureLosses.map(loss)))),
            ("diagnostics", .value(diagnostics(r))),
            // Written a peer at a time, after the members above and before the peers: its values
            // are never all alive at once, nor alive while the long lists are written.
            ("discovery", .pieces(json: { discovery(r) }, write: { out, indent, level, flush in
                writeDiscovery(r, into: &out, indent: indent, level: level, flush: flush)
            })),
            ("peers", .list(r.timelines.peers.count, { peer(r.timelines.peers[$0], r, ids) }, write: { [names = PeerNames(r)] j, out, indent, level in
                writePeer(r.timelines.peers[j], r, ids, names, into: &out, indent: indent, level: level)
            })),
            ("sessions", .list(r.timelines.sessions.count) { session(r.timelines.sessions[$0], r, ids) }),
            ("findings", .list(r.findings.count) { finding(r.findings[$0], marks: m, index: $0) }),
            ("detectors", .value(.object([
                ("run", .array(r.detectorsRun.map { .string($0) })),
                ("thresholds", .object(r.thresholds.map { ($0.0, .double($0.1)) })),
            ]))),
        ]
        // Only when a baseline or a suppression list was given (additive).
        if m.hasBaseline || m.hasSuppressions { list.append(("ci", .value(ci(m)))) }
        return list
    }

    /// The `ci` member: the baseline comparison and the suppression list's state.
    static func ci(_ m: FindingMarks) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if let states = m.baselineStates {
            members.append(("baseline", .object([
                ("file", str(m.baselineFile)),
                ("new", .int(Int64(states.filter { $0 == .new }.count))),
                ("unchanged", .int(Int64(states.filter { $0 == .unchanged }.count))),
                ("absent", .array(m.absent.map(baselineFinding))),
            ])))
        }
        if let today = m.today {
            members.append(("suppressions", .object([
                ("today", .string(today)),
                ("suppressed", .int(Int64(m.suppressedBy.count))),
                ("expired", .array(m.expired.map { s, n in
                    .object(suppression(s).objectValue.map { $0 + [("wouldMatch", .int(Int64(n)))] } ?? [])
                })),
                ("unused", .array(m.unused.map(suppression))),
            ])))
        }
        return .object(members)
    }

    public static func baselineFinding(_ b: BaselineFinding) -> JSONValue {
        .object([("fingerprint", .string(b.fingerprint)), ("kind", .string(b.kind)), ("severity", .string(b.severity.rawValue)),
                 ("peer", .string(b.peer)), ("message", .string(b.message))])
    }

    public static func suppression(_ s: Suppression) -> JSONValue {
        .object([("origin", .string(s.origin)), ("fingerprint", str(s.fingerprint)), ("kind", str(s.kind)), ("peer", str(s.peer)),
                 ("reason", .string(s.reason)), ("expires", str(s.expires))])
    }

    /// `FindingMarks(r)` (fingerprints only) from identities already made for the report.
    static func marksOf(_ r: Report, _ ids: FindingIdentities) -> FindingMarks {
        FindingMarks(fingerprints: r.findings.map(ids.fingerprint))
    }

    /// The whole document as one JSON value (for callers that want the tree; `write` streams).
    public static func json(_ r: Report, marks: FindingMarks? = nil) -> JSONValue {
        let ids = FindingIdentities(r)
        return .object(members(r, marks ?? marksOf(r, ids), ids).map { key, m in
            switch m {
            case .value(let v): (key, v)
            case .list(let n, let make, _): (key, .array((0 ..< n).map(make)))
            case .pieces(let json, _): (key, json())
            }
        })
    }

    /// Writes the document as UTF-8 in pieces of about `chunk` bytes, byte for byte what `render`
    /// returns (with its final newline): a report of thousands of peers is never one string in memory.
    public static func write(_ r: Report, pretty: Bool = true, chunk: Int = 1 << 20, marks: FindingMarks? = nil,
                             to sink: ([UInt8]) -> Void) {
        let indent: String? = pretty ? "  " : nil
        var out: [UInt8] = []
        out.reserveCapacity(min(chunk, 1 << 20) + 4096)
        func flushIfFull() {
            if out.count >= chunk {
                sink(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        func newline(_ level: Int) {
            out.append(0x0A)
            for _ in 0 ..< level { out.append(contentsOf: indent?.utf8 ?? "".utf8) }
        }
        out.append(0x7B)
        let ids = FindingIdentities(r)
        for (i, (key, m)) in members(r, marks ?? marksOf(r, ids), ids).enumerated() {
            if i > 0 { out.append(0x2C) }
            if pretty { newline(1) }
            JSONValue.escape(key, into: &out)
            out.append(0x3A)
            if pretty { out.append(0x20) }
            switch m {
            case .value(let v):
                v.write(to: &out, indent: indent, level: 1)
            case .pieces(_, let write):
                write(&out, indent, 1) { buffer in
                    if buffer.count >= chunk {
                        sink(buffer)
                        buffer.removeAll(keepingCapacity: true)
                    }
                }
            case .list(let n, let make, let direct):
                out.append(0x5B)
                if n == 0 { out.append(0x5D); break }
                for j in 0 ..< n {
                    if j > 0 { out.append(0x2C) }
                    if pretty { newline(2) }
                    if let direct { direct(j, &out, indent, 2) } else { make(j).write(to: &out, indent: indent, level: 2) }
                    flushIfFull()
                }
                if pretty { newline(1) }
                out.append(0x5D)
            }
            flushIfFull()
        }
        if pretty { out.append(0x0A) }
        out.append(0x7D)
        out.append(0x0A)
        sink(out)
    }

    static func time(_ t: Nanos?) -> JSONValue { t.map { .string(CaptureTime.iso8601($0)) } ?? .null }
    static func int(_ t: Nanos?) -> JSONValue { t.map { .int($0) } ?? .null }
    static func str(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
    static func counts(_ m: [String: UInt64]) -> JSONValue {
        .object(m.sorted { $0.key < $1.key }.map { ($0.key, .uint($0.value)) })
    }

    public static func evidence(_ e: Evidence) -> JSONValue {
        switch e {
        case .frame(let i, let f): .object([("input", .int(Int64(i))), ("frame", .uint(f))])
        case .logLine(let i, let l): .object([("input", .int(Int64(i))), ("line", .int(Int64(l)))])
        }
    }

    static func summary(_ r: Report) -> JSONValue {
        .object([
            ("peers", .int(Int64(r.timelines.peers.count))),
            ("sessions", .int(Int64(r.timelines.sessions.count))),
            ("findings", .int(Int64(r.findings.count))),
            ("findingsByKind", .object(r.findingsByKind.map { ($0.0, .int(Int64($0.1))) })),
            ("findingsBySeverity", .object(r.findingsBySeverity.map { ($0.0.rawValue, .int(Int64($0.1))) })),
            ("worstSeverity", str(r.worstSeverity?.rawValue)),
        ])
    }

    static func stats(_ s: CaptureStats) -> JSONValue {
        var duration: JSONValue = .null
        if let a = s.firstT, let b = s.lastT { duration = .int(b &- a) }
        var members: [(String, JSONValue)] = [
            ("frames", .uint(s.frames)),
            ("bytes", .uint(s.bytes)),
            ("capturedBytes", .uint(s.capturedBytes)),
            ("firstT", int(s.firstT)),
            ("firstTime", time(s.firstT)),
            ("lastT", int(s.lastT)),
            ("lastTime", time(s.lastT)),
            ("durationNs", duration),
            ("linkTypes", counts(s.linkTypes)),
            ("plugins", counts(s.plugins)),
            ("framesWithDiagnostics", .uint(s.framesWithDiagnostics)),
            ("undecoded", counts(s.undecoded)),
            ("truncatedFrames", .uint(s.truncatedFrames)),
            ("logLines", .uint(s.logLines)),
        ]
        // Only when logs were read (additive: capture-only reports are unchanged).
        if s.logInputs > 0 {
            members.append(("logs", .object([
                ("inputs", .uint(s.logInputs)),
                ("lines", .uint(s.logLines)),
                ("entries", .uint(s.logEntries)),
                ("unknown", .uint(s.logUnknown.values.reduce(0) { $0 &+ $1 })),
                ("unknownByFormat", counts(s.logUnknown)),
                ("recognizedByPlugin", counts(s.logRecognized)),
            ])))
        }
        // Only for live captures (additive: file reports are unchanged).
        if let live = s.capture { members.append(("capture", capture(live))) }
        return .object(members)
    }

    /// `stats.capture`: per interface what was received and lost, why it stopped. `losses` repeats the
    /// live windows the report's `captureLosses` gives (where readers should take them): schema 1 is
    /// additive only, so the copy stays until schema 2.
    static func capture(_ c: LiveCaptureStats) -> JSONValue {
        .object([
            ("stopReason", .string(c.stopReason)),
            ("complete", .bool(c.complete)),
            ("lost", .uint(c.lost)),
            ("interfaces", .array(c.interfaces.map { i in
                .object([
                    ("interface", .string(i.interface)),
                    ("linkType", .string(LinkType.name(i.linkType))),
                    ("received", .uint(i.received)),
                    ("analysed", .uint(i.analysed)),
                    ("kernelDropped", .uint(i.kernelDropped)),
                    ("interfaceDropped", .uint(i.interfaceDropped)),
                    ("queueDropped", .uint(i.queueDropped)),
                    ("pcapReceived", .uint(i.pcapReceived)),
                    ("ended", str(i.ended)),
                ])
            })),
            ("losses", .array(c.losses.map { l in
                .object([
                    ("reason", .string(l.reason.rawValue)),
                    ("startT", .int(l.start)),
                    ("endT", .int(l.end)),
                    ("count", .int(Int64(l.count))),
                    ("source", str(l.source)),
                ])
            })),
        ])
    }

    static func diagnostics(_ r: Report) -> JSONValue {
        let c = r.diagnosticCounts
        return .object([
            ("total", .int(Int64(c.reduce(0) { $0 + $1.count }))),
            ("counts", .object(c.map { ($0.id, .int(Int64($0.count))) })),
            ("items", .array(c.map { d in
                .object([
                    ("id", .string(d.id)),
                    ("severity", .string(d.severity.rawValue)),
                    ("count", .int(Int64(d.count))),
                    ("message", .string(d.message)),
                    ("first", d.first.map(evidence) ?? .null),
                    ("offset", d.firstOffset.map { .int(Int64($0)) } ?? .null),
                ])
            })),
        ])
    }

    static func discovery(_ r: Report) -> JSONValue {
        .object([("services", discoveryServices(r)), ("peers", .array(r.discovery.peers.map(discoveryPeer)))])
    }

    /// `discovery(r)`'s bytes, its peers made and written one at a time (`flush` between them).
    static func writeDiscovery(_ r: Report, into out: inout [UInt8], indent: String?, level: Int,
                               flush: (inout [UInt8]) -> Void) {
        func newline(_ l: Int) {
            guard let indent else { return }
            out.append(0x0A)
            for _ in 0 ..< max(0, l) { out.append(contentsOf: indent.utf8) }
        }
        func key(_ k: String) {
            JSONValue.escape(k, into: &out)
            out.append(0x3A)
            if indent != nil { out.append(0x20) }
        }
        // As `JSONValue.object` writes itself: never on one line (its members are arrays).
        out.append(0x7B)
        newline(level + 1)
        key("services")
        discoveryServices(r).write(to: &out, indent: indent, level: level + 1)
        out.append(0x2C)
        newline(level + 1)
        key("peers")
        let peers = r.discovery.peers
        if peers.isEmpty {
            out.append(0x5B); out.append(0x5D)
        } else {
            // As `JSONValue.array` of objects writes itself: never on one line.
            out.append(0x5B)
            for (i, p) in peers.enumerated() {
                if i > 0 { out.append(0x2C) }
                newline(level + 2)
                discoveryPeer(p).write(to: &out, indent: indent, level: level + 2)
                flush(&out)
            }
            newline(level + 1)
            out.append(0x5D)
        }
        newline(level)
        out.append(0x7D)
    }

    static func discoveryServices(_ r: Report) -> JSONValue {
        .array(r.discovery.services.map { s in
            .object([
                ("name", .string(s.name)), ("instances", .int(Int64(s.instances))),
                ("firstT", .int(s.firstSeen)), ("firstTime", time(s.firstSeen)),
                ("lastT", .int(s.lastSeen)), ("lastTime", time(s.lastSeen)),
            ])
        })
    }

    static func discoveryPeer(_ p: DiscoverySection.Peer) -> JSONValue {
        .object([
            ("displayName", str(p.displayName)),
            ("peerID", str(p.peerID)),
            ("participantID", str(p.participantID)),
            ("addresses", .array(p.addresses.map { .string($0) })),
            ("port", p.port.map { .int(Int64($0)) } ?? .null),
            ("ports", .array(p.ports.map { .int(Int64($0)) })),
            ("host", str(p.host)),
            ("services", .array(p.services.map { .string($0) })),
            ("info", .object(p.info.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("firstT", int(p.firstSeen)), ("firstTime", time(p.firstSeen)),
            ("lastT", int(p.lastSeen)), ("lastTime", time(p.lastSeen)),
            ("goneT", int(p.gone)),
            ("events", .int(Int64(p.events))),
        ])
    }

    static func peerID(_ r: PeerRef?, _ rep: Report) -> JSONValue { str(rep.timelines.idString(r)) }

    static func peer(_ p: PeerTimeline, _ r: Report, _ ids: FindingIdentities) -> JSONValue {
        .object(peerHead(p, r, ids) + [("timeline", .array(p.entries.map { entry($0, r) }))])
    }

    /// A peer's members before its `timeline` (the last member).
    static func peerHead(_ p: PeerTimeline, _ r: Report, _ ids: FindingIdentities) -> [(String, JSONValue)] {
        let info = p.peer
        return [
            ("ref", .string(info.ref.description)),
            ("label", .string(info.label)),
            ("identity", .string(ids.identity(info.ref))),
            ("displayName", str(info.displayName)),
            ("peerID", str(info.idString)),
            ("participantID", str(info.participantHex)),
            ("addresses", .array(info.addresses.map { .string("\($0)") })),
            ("endpoints", .array(info.endpoints.map { .string("\($0)") })),
            ("firstT", int(info.firstSeen)),
            ("lastT", int(info.lastSeen)),
            ("history", .string(p.history)),
            ("sessions", .array(p.sessions.map { .string($0.description) })),
        ]
    }

    static func entry(_ e: TimelineEntry, _ r: Report) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("t", .int(e.t)),
            ("time", .string(CaptureTime.iso8601(e.t))),
            ("lastT", .int(e.lastT)),
            ("count", .int(Int64(e.count))),
            ("state", .string(e.state.rawValue)),
            ("event", .string(e.kind.rawValue)),
            ("direction", .string(e.sent ? "sent" : "received")),
            ("counterpart", e.counterpart.map { .string(r.timelines.label($0)) } ?? .null),
            ("counterpartPeerID", peerID(e.counterpart, r)),
            ("session", e.session.map { .string($0.description) } ?? .null),
            ("source", .string(e.source)),
            ("detail", .string(e.detail)),
            ("evidence", .array(e.evidence.map(evidence))),
        ]
        if !e.corroboration.isEmpty {
            members.append(("corroboration", .array(e.corroboration.map {
                .object([("source", .string($0.source)), ("evidence", evidence($0.evidence))])
            })))
        }
        return .object(members)
    }

    /// A session's stable identity: its peers' identities, sorted, and its number within the pair.
    static func sessionIdentity(_ s: SessionInstance, _ ids: FindingIdentities) -> String {
        [ids.identity(s.pair.a), ids.identity(s.pair.b)].sorted().joined(separator: " ~ ") + " #\(s.number)"
    }

    static func session(_ s: SessionInstance, _ r: Report, _ ids: FindingIdentities) -> JSONValue {
        .object([
            ("id", .string(s.key.description)),
            ("identity", .string(sessionIdentity(s, ids))),
            ("number", .int(Int64(s.number))),
            ("peers", .array([.string(r.timelines.label(s.pair.a)), .string(r.timelines.label(s.pair.b))])),
            ("peerIDs", .array([peerID(s.pair.a, r), peerID(s.pair.b, r)])),
            ("originator", s.originator.map { .string(r.timelines.label($0)) } ?? .null),
            ("startT", .int(s.start)),
            ("startTime", time(s.start)),
            ("endT", int(s.end)),
            ("endTime", time(s.end)),
            ("endReason", str(s.endReason)),
            ("establishedT", int(s.established)),
            ("encrypted", .bool(s.encrypted)),
            ("plane", s.plane.map { .string($0.rawValue) } ?? .null),
            ("planes", planes(s, r)),
            ("supersededBy", s.supersededBy.map { .int(Int64($0)) } ?? .null),
            ("overlapT", int(s.overlapT)),
            ("startedBeforeInput", .bool(s.startedBeforeInput)),
            ("history", .string(s.history)),
            ("events", .int(Int64(s.eventCount))),
            ("milestones", .array(s.milestones.map { m in
                .object([("state", .string(m.state.rawValue)), ("t", .int(m.t)),
                         ("by", m.by.map { .string(r.timelines.label($0)) } ?? .null),
                         ("evidence", evidence(m.evidence))])
            })),
        ])
    }

    /// Each side's plane by peer label, in label order.
    static func planes(_ s: SessionInstance, _ r: Report) -> JSONValue {
        let pairs: [(String, String)] = s.planeBySide.map { (r.timelines.label($0.key), $0.value.rawValue) }
        return .object(pairs.sorted { $0.0 < $1.0 }.map { ($0.0, JSONValue.string($0.1)) })
    }

    static func loss(_ l: CaptureLoss) -> JSONValue {
        .object([
            ("reason", .string(l.reason.rawValue)),
            ("startT", .int(l.start)), ("startTime", .string(CaptureTime.iso8601(l.start))),
            ("endT", .int(l.end)), ("endTime", .string(CaptureTime.iso8601(l.end))),
            ("count", .int(Int64(l.count))),
            ("source", l.source.map { .string($0) } ?? .null),
        ])
    }

    public static func finding(_ f: Finding, marks m: FindingMarks, index i: Int) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("kind", .string(f.kind)),
            ("severity", .string(f.severity.rawValue)),
            ("peer", .string(f.peer)),
            ("peerID", str(f.peerID)),
            ("t", .int(f.t)),
            ("time", .string(CaptureTime.iso8601(f.t))),
            ("message", .string(f.message)),
            ("evidence", .array(f.evidence.map(evidence))),
            ("openAtEnd", .bool(f.openAtEnd)),
            ("confidence", .string(f.confidence.rawValue)),
            ("caveats", .array(f.caveats.map { .string($0) })),
            ("key", .string(f.key)),
            ("fingerprint", .string(m.fingerprints.indices.contains(i) ? m.fingerprints[i] : "")),
            ("details", .object(f.detailAttrs.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
        ]
        if let state = m.state(i) { members.append(("baselineState", .string(state.rawValue))) }
        if let s = m.suppressedBy[i] {
            members.append(("suppressed", .object([("reason", .string(s.reason)), ("origin", .string(s.origin)),
                                                   ("expires", str(s.expires))])))
        }
        return .object(members)
    }
}
