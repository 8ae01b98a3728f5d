import PeerscopeCore
import PeerscopeTimeline

// The peers' timelines written straight into the output: byte for byte what `peer(_:_:_:)` built as a
// value writes (`JSONValue.write`), without a value per entry. A report of a large capture holds
// millions of entries; labels, peer IDs and session names are escaped once per peer, not per entry.
extension JSONReportWriter {
    /// Peer labels, peer IDs and session names as JSON string literals (quotes included), each made once.
    final class PeerNames {
        let timelines: Timelines
        private var peers: [PeerRef: (label: [UInt8], id: [UInt8])] = [:]
        private var sessions: [SessionKey: [UInt8]] = [:]
        var time = TimeText()

        private var separators: DirectJSON?

        init(_ r: Report) { timelines = r.timelines }

        /// Counterparts' names kept at most (then the cache starts again; the output is the same).
        static let cachedPeers = 1 << 12

        /// Separators for `indent`, made once per report.
        func json(_ indent: String?) -> DirectJSON {
            if let s = separators, s.indent == indent { return s }
            separators = DirectJSON(indent: indent)
            return separators ?? DirectJSON(indent: indent)
        }

        /// The last peer and session asked for: a timeline's consecutive entries mostly name the same
        /// ones, and comparing is cheaper than hashing.
        private var lastPeer: (ref: PeerRef, label: [UInt8], id: [UInt8])?
        private var lastSession: (key: SessionKey, text: [UInt8])?

        func peer(_ ref: PeerRef) -> (label: [UInt8], id: [UInt8]) {
            if let l = lastPeer, l.ref == ref { return (l.label, l.id) }
            if let known = peers[ref] {
                lastPeer = (ref, known.label, known.id)
                return known
            }
            var label: [UInt8] = [], id: [UInt8] = []
            JSONValue.escape(timelines.label(ref), into: &label)
            if let s = timelines.idString(ref) { JSONValue.escape(s, into: &id) } else { id = Array("null".utf8) }
            // A cache, not a table of every counterpart: a capture of tens of thousands of peers would
            // grow it (and its two small lists per peer) by megabytes while the report is written.
            if peers.count >= PeerNames.cachedPeers { peers.removeAll(keepingCapacity: true) }
            peers[ref] = (label, id)
            lastPeer = (ref, label, id)
            return (label, id)
        }

        func session(_ key: SessionKey) -> [UInt8] {
            if let l = lastSession, l.key == key { return l.text }
            if let known = sessions[key] {
                lastSession = (key, known)
                return known
            }
            var text: [UInt8] = []
            JSONValue.escape(key.description, into: &text)
            sessions[key] = text
            lastSession = (key, text)
            return text
        }

        /// Per timeline-entry key, in `writeEntry`'s order, what `DirectJSON.key(static:)` writes before
        /// its value at `level` (comma, newline, indentation, `"key":`, space), made once per level.
        private var entryKeyBytes: (indent: String?, level: Int, keys: [[UInt8]])?

        func entryKeys(_ indent: String?, _ level: Int) -> [[UInt8]] {
            if let k = entryKeyBytes, k.indent == indent, k.level == level { return k.keys }
            var w = json(indent)
            let keys: [[UInt8]] = EntryKey.allCases.map { k in
                var out: [UInt8] = []
                w.key(static: k.name, &out, level)
                return out
            }
            entryKeyBytes = (indent, level, keys)
            return keys
        }
    }

    /// A timeline entry's members in the order `entry(_:_:)` gives them (`corroboration` only when present).
    enum EntryKey: Int, CaseIterable {
        case t, time, lastT, count, state, event, direction, counterpart, counterpartPeerID, session, source, detail,
             evidence, corroboration

        var name: StaticString {
            switch self {
            case .t: "t"
            case .time: "time"
            case .lastT: "lastT"
            case .count: "count"
            case .state: "state"
            case .event: "event"
            case .direction: "direction"
            case .counterpart: "counterpart"
            case .counterpartPeerID: "counterpartPeerID"
            case .session: "session"
            case .source: "source"
            case .detail: "detail"
            case .evidence: "evidence"
            case .corroboration: "corroboration"
            }
        }
    }

    /// `CaptureTime.iso8601` as a JSON string, the text up to the second made once per second.
    struct TimeText {
        private var second: Int64?
        private var prefix: [UInt8] = []

        mutating func write(_ t: Nanos, into out: inout [UInt8]) {
            let (q, r) = t.quotientAndRemainder(dividingBy: CaptureTime.second)
            let s = r < 0 ? q - 1 : q, f = r < 0 ? r + CaptureTime.second : r
            if second != s {
                let (base, overflow) = s.multipliedReportingOverflow(by: CaptureTime.second)
                guard !overflow else { JSONValue.escape(CaptureTime.iso8601(t), into: &out); return }
                // Everything but the nine fractional digits and the `Z` (those of `base` are zeros).
                prefix = Array(CaptureTime.iso8601(base).utf8.dropLast(10))
                second = s
            }
            out.append(0x22)
            out.append(contentsOf: prefix)
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
            var v = UInt64(f)
            withUnsafeMutableBytes(of: &digits) { d in
                for i in stride(from: 8, through: 0, by: -1) {
                    d[i] = 0x30 &+ UInt8(truncatingIfNeeded: v % 10)
                    v /= 10
                }
                out.append(contentsOf: d)
            }
            out.append(0x5A)
            out.append(0x22)
        }
    }

    /// One peer of the `peers` list at `level`, as `peer(_:_:_:)` then `JSONValue.write` would write it.
    static func writePeer(_ p: PeerTimeline, _ r: Report, _ ids: FindingIdentities, _ names: PeerNames,
                          into out: inout [UInt8], indent: String?, level: Int) {
        var w = names.json(indent)
        out.append(0x7B)
        for (k, v) in peerHead(p, r, ids) {
            w.key(k, &out, level + 1)
            v.write(to: &out, indent: indent, level: level + 1)
        }
        w.key(static: "timeline", &out, level + 1)
        if p.entries.isEmpty {
            out.append(0x5B); out.append(0x5D)
        } else {
            out.append(0x5B)
            var first = true
            for e in p.entries {
                if !first { out.append(0x2C) }
                first = false
                w.newline(&out, level + 2)
                writeEntry(e, names, indent: indent, into: &out, level: level + 2)
            }
            w.newline(&out, level + 1)
            out.append(0x5D)
        }
        w.newline(&out, level)
        out.append(0x7D)
    }

    /// One timeline entry at `level`, as `entry(_:_:)` then `JSONValue.write` would write it.
    static func writeEntry(_ e: TimelineEntry, _ names: PeerNames, indent: String?, into out: inout [UInt8], level: Int) {
        let w = names.json(indent)
        let m = level + 1
        // Each key's separators and name, made once (what `w.key(static:)` would write, comma after the first).
        let keys = names.entryKeys(indent, m)
        func key(_ k: EntryKey) { out.append(contentsOf: keys[k.rawValue]) }
        out.append(0x7B)
        key(.t); JSONValue.appendInt(e.t, to: &out)
        key(.time); names.time.write(e.t, into: &out)
        key(.lastT); JSONValue.appendInt(e.lastT, to: &out)
        key(.count); JSONValue.appendInt(Int64(e.count), to: &out)
        key(.state); JSONValue.escape(e.state.rawValue, into: &out)
        key(.event); JSONValue.escape(e.kind.rawValue, into: &out)
        key(.direction); out.append(contentsOf: e.sent ? DirectJSON.sent : DirectJSON.received)
        let counterpart = e.counterpart.map(names.peer)
        key(.counterpart); out.append(contentsOf: counterpart?.label ?? DirectJSON.null)
        key(.counterpartPeerID); out.append(contentsOf: counterpart?.id ?? DirectJSON.null)
        key(.session)
        if let s = e.session { out.append(contentsOf: names.session(s)) } else { out.append(contentsOf: DirectJSON.null) }
        key(.source); JSONValue.escape(e.source, into: &out)
        key(.detail); JSONValue.escape(e.detail, into: &out)
        key(.evidence)
        // `evidence` is one or two items: written from its two ends, without the list the getter builds.
        let ends = e.evidenceEnds
        out.append(0x5B)
        w.newline(&out, m + 1)
        w.writeEvidence(ends.first, &out)
        if let last = ends.last {
            out.append(0x2C)
            w.newline(&out, m + 1)
            w.writeEvidence(last, &out)
        }
        w.newline(&out, m)
        out.append(0x5D)
        if !e.corroboration.isEmpty {
            key(.corroboration)
            JSONValue.array(e.corroboration.map {
                .object([("source", .string($0.source)), ("evidence", evidence($0.evidence))])
            }).write(to: &out, indent: w.indent, level: m)
        }
        w.newline(&out, level)
        out.append(0x7D)
    }

    /// Separators and indentation as `JSONValue.write` spaces them (`indent` nil: compact).
    struct DirectJSON {
        let indent: String?
        var first = true

        static let null: [UInt8] = Array("null".utf8)
        static let sent: [UInt8] = Array("\"sent\"".utf8)
        static let received: [UInt8] = Array("\"received\"".utf8)

        /// A newline and the indentation of each level up to 12 (deeper levels are built when asked).
        private let lines: [[UInt8]]

        init(indent: String?) {
            self.indent = indent
            lines = indent.map { i in (0 ... 12).map { [0x0A] + Array(String(repeating: i, count: $0).utf8) } } ?? []
        }

        func newline(_ out: inout [UInt8], _ level: Int) {
            guard let indent else { return }
            if level < lines.count { out.append(contentsOf: lines[max(0, level)]); return }
            out.append(0x0A)
            for _ in 0 ..< level { out.append(contentsOf: indent.utf8) }
        }

        /// `,` (after the first member), the newline and indentation, `"key":` and its space.
        mutating func key(static k: StaticString, _ out: inout [UInt8], _ level: Int) {
            if !first { out.append(0x2C) }
            first = false
            newline(&out, level)
            out.append(0x22)
            k.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(0x22)
            out.append(0x3A)
            if indent != nil { out.append(0x20) }
        }

        mutating func key(_ k: String, _ out: inout [UInt8], _ level: Int) {
            if !first { out.append(0x2C) }
            first = false
            newline(&out, level)
            JSONValue.escape(k, into: &out)
            out.append(0x3A)
            if indent != nil { out.append(0x20) }
        }

        /// `{"input": 0, "frame": 12}`: a short object of scalars, on one line when indenting.
        func writeEvidence(_ ev: Evidence, _ out: inout [UInt8]) {
            let (input, key, n): (Int, StaticString, UInt64) = switch ev {
            case .frame(let i, let f): (i, "frame", f)
            case .logLine(let i, let l): (i, "line", UInt64(bitPattern: Int64(l)))
            }
            let sep: StaticString = indent != nil ? ", " : ","
            let colon: StaticString = indent != nil ? ": " : ":"
            out.append(contentsOf: "{\"input\"".utf8)
            colon.withUTF8Buffer { out.append(contentsOf: $0) }
            JSONValue.appendInt(Int64(input), to: &out)
            sep.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(0x22)
            key.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(0x22)
            colon.withUTF8Buffer { out.append(contentsOf: $0) }
            if case .logLine(_, let l) = ev { JSONValue.appendInt(Int64(l), to: &out) } else {
                JSONValue.appendDecimal(n, to: &out)
            }
            out.append(0x7D)
        }
    }
}
