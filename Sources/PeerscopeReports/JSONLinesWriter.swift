import PeerscopeCore
import PeerscopeDetectors
import PeerscopeTimeline

/// `--format jsonl`: the report as JSON Lines, one compact object per line, for log shippers
/// (Vector, Fluent Bit, Filebeat), `jq` and `read_json` in DuckDB. Every record has `type`, `schema`
/// (the JSON report's schema ID) and `capture` (the first input); the records, in this order:
/// - `report` (one): inputs, complete, inputProblems, summary and, with CI options, `ci`;
/// - `session` (one per session): the members of a JSON report session;
/// - `timeline` (one per timeline entry): the peer (`peer`, `peerIdentity`, `peerID`) and the
///   members of a JSON report timeline entry;
/// - `finding` (one per finding): the members of a JSON report finding.
/// `Schemas/peerscope.jsonl.v1.schema.json` describes each record type.
public enum JSONLinesWriter {
    public static func write(_ r: Report, marks: FindingMarks? = nil, chunk: Int = 1 << 20, to sink: ([UInt8]) -> Void) {
        let m = marks ?? FindingMarks(r)
        let ids = FindingIdentities(r)
        let head: [(String, JSONValue)] = [("schema", .string(Report.schemaID)), ("capture", .string(r.inputs.first ?? ""))]
        var out: [UInt8] = []
        func emit(_ type: String, _ members: [(String, JSONValue)]) {
            JSONValue.object([("type", .string(type))] + head + members).write(to: &out, indent: nil, level: 0)
            out.append(0x0A)
            if out.count >= chunk {
                sink(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        var report: [(String, JSONValue)] = [
            ("inputs", .array(r.inputs.map { .string($0) })),
            ("complete", .bool(r.complete)),
            ("inputProblems", .array(r.inputProblems.map { .string($0) })),
            ("summary", JSONReportWriter.summary(r)),
        ]
        if m.hasBaseline || m.hasSuppressions { report.append(("ci", JSONReportWriter.ci(m))) }
        emit("report", report)
        for s in r.timelines.sessions {
            emit("session", JSONReportWriter.session(s, r, ids).objectValue ?? [])
        }
        for p in r.timelines.peers {
            let peer: [(String, JSONValue)] = [("peer", .string(p.peer.label)), ("peerIdentity", .string(ids.identity(p.peer.ref))),
                                               ("peerID", JSONReportWriter.str(p.peer.idString))]
            for e in p.entries { emit("timeline", peer + (JSONReportWriter.entry(e, r).objectValue ?? [])) }
        }
        for (i, f) in r.findings.enumerated() {
            emit("finding", JSONReportWriter.finding(f, marks: m, index: i).objectValue ?? [])
        }
        sink(out)
    }

    public static func render(_ r: Report, marks: FindingMarks? = nil) -> String {
        var out: [UInt8] = []
        write(r, marks: marks) { out.append(contentsOf: $0) }
        return String(decoding: out, as: UTF8.self)
    }
}
