import Foundation
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports
import Yams

/// A JSON report read back for comparison: its findings by fingerprint, its peers and sessions by
/// stable identity (`peerscope diff`, `check --baseline`).
public struct SavedReport: Sendable {
    public var path: String
    public var findings: [BaselineFinding]
    /// Stable identity -> label, per peer.
    public var peers: [(identity: String, label: String)]
    public var sessions: [String]

    public init(path: String, findings: [BaselineFinding], peers: [(identity: String, label: String)], sessions: [String]) {
        self.path = path
        self.findings = findings
        self.peers = peers
        self.sessions = sessions
    }

    /// Reads a `peerscope.report/1` JSON report. Errors name the file and what is wrong (not JSON,
    /// another schema, a report written before findings had fingerprints).
    public static func load(path: String) throws(InputError) -> SavedReport {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw InputError(path: path, message: "\(path): \(why)")
        }
        let doc: JSONValue
        do { doc = try JSONParser.parse(Bytes([UInt8](data))) } catch {
            throw InputError(path: path, message: "\(path): not a peerscope JSON report (\(error.description))")
        }
        guard doc["schema"]?.stringValue == Report.schemaID else {
            throw InputError(path: path, message: "\(path): not a peerscope JSON report (no \"schema\": \"\(Report.schemaID)\"; "
                             + "write one with --format json)")
        }
        var findings: [BaselineFinding] = []
        for (i, f) in (doc["findings"]?.arrayValue ?? []).enumerated() {
            guard let fp = f["fingerprint"]?.stringValue, !fp.isEmpty else {
                throw InputError(path: path, message: "\(path): finding \(i + 1) has no fingerprint (a report from an older "
                                 + "peerscope: analyse its capture again to make a baseline)")
            }
            findings.append(BaselineFinding(fingerprint: fp, kind: f["kind"]?.stringValue ?? "?",
                                            severity: f["severity"]?.stringValue.flatMap(Severity.init(rawValue:)) ?? .warning,
                                            peer: f["peer"]?.stringValue ?? "?", message: f["message"]?.stringValue ?? ""))
        }
        let peers = (doc["peers"]?.arrayValue ?? []).map { p in
            let label = p["label"]?.stringValue ?? "?"
            return (identity: p["identity"]?.stringValue ?? "name:" + label, label: label)
        }
        let sessions = (doc["sessions"]?.arrayValue ?? []).compactMap { $0["identity"]?.stringValue ?? $0["id"]?.stringValue }
        return SavedReport(path: path, findings: findings, peers: peers, sessions: sessions)
    }
}

/// `peerscope diff OLD NEW`: findings new, fixed and unchanged by fingerprint (repeats counted), and
/// the peers and sessions that appeared or vanished, by stable identity.
public struct ReportDiff: Sendable {
    public var old: String
    public var new: String
    public var newFindings: [BaselineFinding] = []
    public var fixedFindings: [BaselineFinding] = []
    public var unchangedFindings: [BaselineFinding] = []
    public var peersAppeared: [String] = []
    public var peersVanished: [String] = []
    public var sessionsAppeared: [String] = []
    public var sessionsVanished: [String] = []

    public init(old a: SavedReport, new b: SavedReport) {
        old = a.path
        new = b.path
        var left: [String: Int] = [:]
        for f in a.findings { left[f.fingerprint, default: 0] += 1 }
        for f in b.findings {
            if let n = left[f.fingerprint], n > 0 {
                left[f.fingerprint] = n - 1
                unchangedFindings.append(f)
            } else {
                newFindings.append(f)
            }
        }
        for f in a.findings {
            if let n = left[f.fingerprint], n > 0 {
                left[f.fingerprint] = n - 1
                fixedFindings.append(f)
            }
        }
        let oldPeers = Set(a.peers.map(\.identity)), newPeers = Set(b.peers.map(\.identity))
        peersAppeared = Self.unique(b.peers.map(\.identity).filter { !oldPeers.contains($0) })
        peersVanished = Self.unique(a.peers.map(\.identity).filter { !newPeers.contains($0) })
        let oldSessions = Set(a.sessions), newSessions = Set(b.sessions)
        sessionsAppeared = Self.unique(b.sessions.filter { !oldSessions.contains($0) })
        sessionsVanished = Self.unique(a.sessions.filter { !newSessions.contains($0) })
    }

    static func unique(_ xs: [String]) -> [String] {
        var seen: Set<String> = []
        return xs.filter { seen.insert($0).inserted }
    }

    /// New findings at or above `severity`.
    public func newFindings(atLeast severity: Severity) -> [BaselineFinding] { newFindings.filter { $0.severity >= severity } }

    public var text: String {
        func line(_ f: BaselineFinding) -> String { "  \(f.severity.rawValue.uppercased()) \(f.kind)  \(f.peer)  \(f.fingerprint)\n    \(f.message)\n" }
        var out = "peerscope diff \(old) -> \(new)\n"
        out += "findings: \(newFindings.count) new, \(fixedFindings.count) fixed, \(unchangedFindings.count) unchanged\n"
        for (title, list) in [("New", newFindings), ("Fixed", fixedFindings), ("Unchanged", unchangedFindings)] where !list.isEmpty {
            out += "\n\(title)\n" + list.map(line).joined()
        }
        for (title, list) in [("Peers appeared", peersAppeared), ("Peers vanished", peersVanished),
                              ("Sessions appeared", sessionsAppeared), ("Sessions vanished", sessionsVanished)] where !list.isEmpty {
            out += "\n\(title)\n" + list.map { "  \($0)\n" }.joined()
        }
        return out
    }

    public var json: JSONValue {
        let list: ([BaselineFinding]) -> JSONValue = { .array($0.map(JSONReportWriter.baselineFinding)) }
        let strings: ([String]) -> JSONValue = { .array($0.map { .string($0) }) }
        return .object([
            ("schema", .string("peerscope.diff/1")),
            ("old", .string(old)), ("new", .string(new)),
            ("summary", .object([("new", .int(Int64(newFindings.count))), ("fixed", .int(Int64(fixedFindings.count))),
                                 ("unchanged", .int(Int64(unchangedFindings.count)))])),
            ("findings", .object([("new", list(newFindings)), ("fixed", list(fixedFindings)), ("unchanged", list(unchangedFindings))])),
            ("peers", .object([("appeared", strings(peersAppeared)), ("vanished", strings(peersVanished))])),
            ("sessions", .object([("appeared", strings(sessionsAppeared)), ("vanished", strings(sessionsVanished))])),
        ])
    }
}

/// Suppression lists: the `suppressions` section of `peerscope.yml` or a file given with `--suppress`
/// (the same section, or the list alone):
/// ```yaml
/// suppressions:
///   - fingerprint: 3f2a9c0d11b7e845
///     reason: Bob's iPad runs iOS 15 in the lab; fixed in the next image
///     expires: 2026-12-31
///   - kind: declined-invitation
///     peer: "Lobby*"
///     reason: the lobby declines on purpose
/// ```
/// Each entry names a fingerprint, or a kind and/or a peer pattern, and must give a `reason`;
/// `expires` (YYYY-MM-DD, UTC) is the last day it applies.
public enum SuppressionList {
    static let keys: Set<String> = ["fingerprint", "kind", "peer", "reason", "expires"]

    /// Reads the suppressions of a YAML file; `optional`: a file without a `suppressions` section
    /// gives none (a `peerscope.yml` of detector settings only). Errors name the file and the entry.
    public static func load(path: String, optional: Bool = false) throws(InputError) -> [Suppression] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw InputError(path: path, message: "\(path): cannot read the suppression file")
        }
        let any: Any?
        do { any = try YAMLLimits.load(String(decoding: data, as: UTF8.self)) } catch let refusal as YAMLRefusal {
            throw InputError(path: path, message: "\(path): \(refusal.message)")
        } catch {
            throw InputError(path: path, message: "\(path): not valid YAML: \(error)")
        }
        var list: Any? = any
        if let m = any.flatMap(DetectorConfig.mapping) {
            guard let s = m["suppressions"] else {
                if optional { return [] }
                throw InputError(path: path, message: "\(path): no `suppressions` list")
            }
            list = s
        } else if any == nil {
            if optional { return [] }
            throw InputError(path: path, message: "\(path): no `suppressions` list")
        }
        guard let entries = list as? [Any] else {
            throw InputError(path: path, message: "\(path): `suppressions` must be a list of entries")
        }
        return try entries.enumerated().map { (i, e) throws(InputError) in try entry(e, origin: "\(path): suppressions[\(i + 1)]") }
    }

    static func entry(_ e: Any, origin: String) throws(InputError) -> Suppression {
        func fail(_ why: String) -> InputError { InputError(path: origin, message: "\(origin): \(why)") }
        guard let m = DetectorConfig.mapping(e) else { throw fail("an entry must be a mapping (fingerprint or kind/peer, reason, expires)") }
        if let bad = m.keys.sorted().first(where: { !keys.contains($0) }) {
            throw fail("unknown key `\(bad)`; an entry has \(keys.sorted().joined(separator: ", "))")
        }
        func text(_ k: String) throws(InputError) -> String? {
            guard let v = m[k] else { return nil }
            if let s = v as? String { return s.trimmingCharacters(in: .whitespaces) }
            if let d = v as? Date { return String(CaptureTime.iso8601(CaptureTime.nanos(seconds: d.timeIntervalSince1970)).prefix(10)) }
            if let n = v as? Int { return String(n) }
            throw fail("`\(k)` must be text")
        }
        guard let reason = try text("reason"), !reason.isEmpty else { throw fail("`reason` is required: say why the finding is accepted") }
        let fp = try text("fingerprint")?.lowercased()
        if let fp, fp.count != 16 || !fp.allSatisfy(\.isHexDigit) {
            throw fail("`fingerprint` must be the 16 hex digits a report shows, got `\(fp)`")
        }
        let kind = try text("kind"), peer = try text("peer")
        if fp == nil && kind == nil && peer == nil { throw fail("give a `fingerprint`, or a `kind` and/or a `peer` pattern") }
        if let kind, !kind.contains("*"), !kind.contains("?"), !DetectorSuite.kinds.contains(kind) {
            throw fail("unknown kind `\(kind)`; known: \(DetectorSuite.kinds.joined(separator: ", "))")
        }
        let expires = try text("expires")
        if let expires, !isDate(expires) { throw fail("`expires` must be a date YYYY-MM-DD, got `\(expires)`") }
        return Suppression(fingerprint: fp, kind: kind, peer: peer, reason: reason, expires: expires, origin: origin)
    }

    /// `YYYY-MM-DD` with a month 1-12 and a day 1-31.
    public static func isDate(_ s: String) -> Bool {
        let p = s.split(separator: "-", omittingEmptySubsequences: false)
        guard p.count == 3, p[0].count == 4, p[1].count == 2, p[2].count == 2,
              p.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let m = Int(p[1]), let d = Int(p[2]) else { return false }
        return (1 ... 12).contains(m) && (1 ... 31).contains(d)
    }

    /// The day suppressions expire against: `explicit` (`--today`), else `PEERSCOPE_TODAY`, else the
    /// UTC date of the wall clock. This is the only use of the wall clock: it decides which
    /// suppressions are in force, never what the analysis finds or the times it reports.
    public static func today(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit { return explicit }
        if let e = environment["PEERSCOPE_TODAY"], isDate(e) { return e }
        return String(CaptureTime.iso8601(CaptureTime.nanos(seconds: Date().timeIntervalSince1970)).prefix(10))
    }
}
