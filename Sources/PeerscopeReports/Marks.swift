import PeerscopeCore
import PeerscopeDetectors

/// Where a finding stands against a baseline report (SARIF's `baselineState` values).
public enum BaselineState: String, Sendable, Hashable {
    /// Not in the baseline: a new problem.
    case new
    /// In the baseline too: a known problem.
    case unchanged
    /// In the baseline only: gone (fixed, or not reproduced).
    case absent
}

/// A finding as a baseline remembers it (read back from a JSON report).
public struct BaselineFinding: Sendable, Hashable {
    public var fingerprint: String
    public var kind: String
    public var severity: Severity
    public var peer: String
    public var message: String

    public init(fingerprint: String, kind: String, severity: Severity, peer: String, message: String) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.severity = severity
        self.peer = peer
        self.message = message
    }
}

/// One entry of a suppression list: a fingerprint, or a kind and/or a peer pattern (`*` and `?`
/// wildcards, matched against the peer's label and its stable identity), with the reason it is
/// accepted and an optional last day (`YYYY-MM-DD`) after which it no longer applies.
public struct Suppression: Sendable, Hashable {
    public var fingerprint: String?
    public var kind: String?
    public var peer: String?
    public var reason: String
    /// Last day (UTC) the suppression applies, `YYYY-MM-DD`.
    public var expires: String?
    /// Where it was written: `peerscope.yml: suppressions[2]`.
    public var origin: String

    public init(fingerprint: String? = nil, kind: String? = nil, peer: String? = nil, reason: String,
                expires: String? = nil, origin: String) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.peer = peer
        self.reason = reason
        self.expires = expires
        self.origin = origin
    }

    /// Expired when `today` (`YYYY-MM-DD`) is after `expires` (ISO dates compare as strings).
    public func isExpired(today: String) -> Bool { expires.map { today > $0 } ?? false }

    public func matches(kind k: String, peer label: String, identity: String, fingerprint fp: String) -> Bool {
        if let fingerprint, fingerprint.lowercased() != fp { return false }
        if let kind, !Self.glob(kind, k) { return false }
        if let peer, !Self.glob(peer, label), !Self.glob(peer, identity) { return false }
        return true
    }

    /// What the entry names, for messages: `fingerprint 0123…`, `keepalive-timeout for Bob*`.
    public var subject: String {
        var parts: [String] = []
        if let fingerprint { parts.append("fingerprint \(fingerprint)") }
        if let kind { parts.append(kind) }
        if let peer { parts.append("peer \(peer)") }
        return parts.joined(separator: ", ")
    }

    /// `*` any run of characters, `?` one character; everything else literal.
    static func glob(_ pattern: String, _ s: String) -> Bool {
        let p = Array(pattern), t = Array(s)
        var pi = 0, ti = 0, star = -1, mark = 0
        while ti < t.count {
            if pi < p.count, p[pi] == "?" || (p[pi] != "*" && p[pi] == t[ti]) {
                pi += 1; ti += 1
            } else if pi < p.count, p[pi] == "*" {
                star = pi; mark = ti; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; ti = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}

/// What CI options said about a report's findings: their fingerprints, their state against a
/// baseline and the suppressions that apply. Writers show it; nothing in the analysis depends on it.
public struct FindingMarks: Sendable {
    /// Fingerprint per finding (same order as `Report.findings`).
    public var fingerprints: [String]
    /// Baseline state per finding, when a baseline was given.
    public var baselineStates: [BaselineState]?
    /// The baseline file, when one was given.
    public var baselineFile: String?
    /// Baseline findings this report does not have (counted: two in the baseline, one here: one absent).
    public var absent: [BaselineFinding] = []
    /// The suppression that hides a finding, by finding index.
    public var suppressedBy: [Int: Suppression] = [:]
    /// Suppressions past their `expires` day (they hide nothing), with how many findings they name.
    public var expired: [(Suppression, Int)] = []
    /// Suppressions in force that matched no finding.
    public var unused: [Suppression] = []
    /// The day expiry was judged against (`--today`, `PEERSCOPE_TODAY`, else the UTC date of the run),
    /// when a suppression list was given.
    public var today: String?

    public init(fingerprints: [String]) { self.fingerprints = fingerprints }

    /// Fingerprints only, computed from the report.
    public init(_ r: Report) {
        let ids = FindingIdentities(r)
        fingerprints = r.findings.map(ids.fingerprint)
    }

    public var hasBaseline: Bool { baselineStates != nil }
    public var hasSuppressions: Bool { today != nil }

    public func state(_ i: Int) -> BaselineState? {
        guard let s = baselineStates, s.indices.contains(i) else { return nil }
        return s[i]
    }

    /// Whether finding `i` counts against `check`: not suppressed and, with a baseline, new.
    public func counts(_ i: Int) -> Bool {
        suppressedBy[i] == nil && state(i) != .unchanged
    }

    /// Marks the findings of `r` against a baseline's findings, by fingerprint, counting repeats.
    public mutating func compare(with baseline: [BaselineFinding], file: String?, report r: Report) {
        var left: [String: Int] = [:]
        for b in baseline { left[b.fingerprint, default: 0] += 1 }
        var states: [BaselineState] = []
        for fp in fingerprints {
            if let n = left[fp], n > 0 {
                left[fp] = n - 1
                states.append(.unchanged)
            } else {
                states.append(.new)
            }
        }
        baselineStates = states
        baselineFile = file
        absent = []
        for b in baseline {
            if let n = left[b.fingerprint], n > 0 {
                left[b.fingerprint] = n - 1
                absent.append(b)
            }
        }
    }

    /// Applies a suppression list to the findings of `r`; `today` is `YYYY-MM-DD`.
    public mutating func suppress(_ rules: [Suppression], today: String, report r: Report) {
        self.today = today
        let ids = FindingIdentities(r)
        var used = Array(repeating: 0, count: rules.count)
        suppressedBy = [:]
        for (i, f) in r.findings.enumerated() where fingerprints.indices.contains(i) {
            let identity = ids.identity(f.peerRef, label: f.peer)
            for (k, rule) in rules.enumerated()
            where rule.matches(kind: f.kind, peer: f.peer, identity: identity, fingerprint: fingerprints[i]) {
                used[k] += 1
                if suppressedBy[i] == nil, !rule.isExpired(today: today) { suppressedBy[i] = rule }
            }
        }
        expired = rules.indices.filter { rules[$0].isExpired(today: today) }.map { (rules[$0], used[$0]) }
        unused = rules.indices.filter { !rules[$0].isExpired(today: today) && used[$0] == 0 }.map { rules[$0] }
    }

    /// One line per expired or unused suppression, for standard error.
    public var warnings: [String] {
        expired.map { "suppression \($0.0.origin) (\($0.0.subject)) expired on \($0.0.expires ?? "?"); "
            + "it no longer hides \($0.1) finding(s)" }
            + unused.map { "suppression \($0.origin) (\($0.subject)) matched no finding; remove it if the problem is gone" }
    }
}
