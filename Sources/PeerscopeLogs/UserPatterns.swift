import Foundation
import PeerscopeCore
import Yams

/// A file of user patterns could not be used at all (unreadable, not YAML, wrong shape): like a log
/// that cannot be read, the file and the reason.
public typealias LogPatternFileError = LogInputError

/// A plugin from a user's YAML pattern (`--patterns FILE`), no recompiling:
///
/// ```yaml
/// patterns:
///   - id: lobby-timeout                  # optional; the plugin id becomes log-user-lobby-timeout
///     regex: 'Lobby timeout for (?<displayName>.+)'
///     kind: app.timeout                  # a kind the timeline knows, or user.NAME of your own (see README)
///     contains: 'Lobby timeout'          # optional cheap prefilter; derived from the regex when absent
///     summary: the lobby gave up on a peer
///     attrs: { what: lobby }             # extra attributes; `${name}` inserts a capture
/// ```
/// Named captures `peer` (any peer text), `participant` (hex), `peerID` (idString), `displayName` fill the
/// event's `from` peer; `toPeer`, `toParticipant`, `toPeerID`, `toDisplayName` its `to` peer; `channel`
/// makes repeated lines per channel coalesce; every other named capture becomes an attribute.
public struct UserPatternPlugin: LogPlugin {
    public let descriptor: LogPluginDescriptor
    public let rules: [LogRule]
    /// The event kind the pattern's lines become.
    public let kind: EventKind
    /// The attributes the pattern sets (templates not yet filled).
    public let attrs: [String: String]

    public init(id: String, summary: String, regex: SharedRegex, needle: String?, kind: EventKind, attrs: [String: String]) {
        self.kind = kind
        self.attrs = attrs
        descriptor = LogPluginDescriptor(id: id, summary: summary, matches: [regex.regex.pattern], example: "")
        rules = [LogRule(regex: regex, needle: needle) { c, _ in
            var from = PeerHint()
            var to = PeerHint()
            var out: [String: String] = [:]
            var channel: Int? = nil
            for (name, value) in c.named {
                switch name {
                case "peer": from = UserPatternPlugin.merge(from, PeerText.hint(value))
                case "participant": from.participantID = PeerText.participant(value)
                case "peerID":
                    if let v = PeerIdentity.parse(idString: value.trimmingSpaces) {
                        from.peerID = v
                        from.participantID = PeerIdentity.participantID(v)
                    }
                case "displayName": from.displayName = value
                case "toPeer": to = UserPatternPlugin.merge(to, PeerText.hint(value))
                case "toParticipant": to.participantID = PeerText.participant(value)
                case "toPeerID":
                    if let v = PeerIdentity.parse(idString: value.trimmingSpaces) {
                        to.peerID = v
                        to.participantID = PeerIdentity.participantID(v)
                    }
                case "toDisplayName": to.displayName = value
                case "channel": channel = Int(value.trimmingSpaces)
                default: out[name] = value
                }
            }
            for (k, v) in attrs { out[k] = UserPatternPlugin.substitute(v, c.named) }
            var learn: [LogMatch.Learned] = []
            if let id = from.peerID, let n = from.displayName { learn.append(.init(peerID: id, displayName: n)) }
            return LogMatch(kind: kind, from: from, to: to, attrs: out, channel: channel, learn: learn)
        }]
    }

    static func merge(_ a: PeerHint, _ b: PeerHint) -> PeerHint {
        var h = a
        if let v = b.peerID { h.peerID = v }
        if let v = b.participantID { h.participantID = v }
        if let v = b.displayName { h.displayName = v }
        return h
    }

    static func substitute(_ template: String, _ named: [String: String]) -> String {
        guard template.contains("${") else { return template }
        var s = template
        for (k, v) in named { s = s.replacingOccurrences(of: "${\(k)}", with: v) }
        return s
    }

    /// A literal every match must contain, read conservatively from the regex (top level only, no
    /// alternation, no case-insensitive flag); nil when none is certain.
    public static func derivedNeedle(_ pattern: String) -> String? {
        let b = Array(pattern)
        var depth = 0
        var inClass = false
        var best = ""
        var run = ""
        func end() { if run.count > best.count { best = run }; run = "" }
        if pattern.contains("(?i") || pattern.contains("(?x") { return nil }
        var i = 0
        while i < b.count {
            let c = b[i]
            if inClass {
                if c == "\\" { i += 2; continue }
                if c == "]" { inClass = false }
                i += 1
                continue
            }
            switch c {
            case "\\":
                guard i + 1 < b.count else { end(); i += 1; continue }
                let n = b[i + 1]
                if depth == 0, ".[]()*+?{}|^$\\/-: ".contains(n) || n == "\"" || n == "'" {
                    if i + 2 < b.count, "*?{".contains(b[i + 2]) { end() } else if i + 2 < b.count, b[i + 2] == "+" { run.append(n); end() } else { run.append(n) }
                } else {
                    end()
                }
                i += 2
                continue
            case "(": depth += 1; end()
            case ")": depth -= 1; end()
            case "[": inClass = true; end()
            case "|": return nil
            case ".", "^", "$": end()
            case "*", "?", "{":
                if !run.isEmpty { run.removeLast() }
                end()
            case "+": end()
            default:
                if depth == 0 {
                    if i + 1 < b.count, "*?{".contains(b[i + 1]) { end() } else { run.append(c) }
                } else {
                    end()
                }
            }
            i += 1
        }
        end()
        return best.count >= 3 ? best : nil
    }

    /// Reads a pattern file: the usable patterns, and one diagnostic per bad entry naming the file and
    /// the entry. Throws when the file cannot be read or is not a YAML list of patterns.
    public static func load(path: String) throws(LogPatternFileError) -> (plugins: [UserPatternPlugin], problems: [Diagnostic]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDir: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
            let why = !exists ? "no such file" : isDir.boolValue ? "is a directory, not a patterns file" : "cannot read the file (permission denied)"
            throw LogPatternFileError(path: path, reason: "cannot read the patterns file: \(why)")
        }
        return try parse(yaml: String(decoding: data, as: UTF8.self), file: path)
    }

    public static func parse(yaml: String, file: String) throws(LogPatternFileError) -> (plugins: [UserPatternPlugin], problems: [Diagnostic]) {
        let root: Any?
        do {
            root = try YAMLLimits.load(yaml)
        } catch let refusal as YAMLRefusal {
            throw LogPatternFileError(path: file, reason: refusal.message)
        } catch {
            throw LogPatternFileError(path: file, reason: "not valid YAML: \(error)")
        }
        let list: [Any]
        if let l = root as? [Any] {
            list = l
        } else if let d = root as? [String: Any], let l = d["patterns"] as? [Any] {
            list = l
        } else if root == nil {
            list = []
        } else {
            throw LogPatternFileError(path: file, reason: "expected a list of patterns (or `patterns:` with a list)")
        }
        var plugins: [UserPatternPlugin] = []
        var problems: [Diagnostic] = []
        var seen: Set<String> = []
        for (i, item) in list.enumerated() {
            let n = i + 1
            func bad(_ why: String, _ id: String?) {
                let name = id.map { "entry \(n) (\($0))" } ?? "entry \(n)"
                problems.append(Diagnostic(id: "log.patterns.invalid", severity: .error, message: "\(file): \(name): \(why)"))
            }
            guard let d = item as? [String: Any] else { bad("not a mapping", nil); continue }
            let rawID = (d["id"] as? String) ?? (d["id"].map { "\($0)" })
            guard let pattern = d["regex"] as? String ?? d["pattern"] as? String, !pattern.isEmpty else {
                bad("missing `regex`", rawID); continue
            }
            guard let kindName = d["kind"] as? String, !kindName.isEmpty,
                  kindName.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }) else {
                bad("missing or malformed `kind` (a dotted name such as app.timeout)", rawID); continue
            }
            let re: NSRegularExpression
            do {
                re = try NSRegularExpression(pattern: pattern, options: [])
            } catch {
                bad("bad regex `\(pattern)`: \(error.localizedDescription)", rawID); continue
            }
            var attrs: [String: String] = [:]
            if let a = d["attrs"] {
                guard let m = a as? [String: Any] else { bad("`attrs` must be a mapping", rawID); continue }
                for (k, v) in m { attrs[k] = "\(v)" }
            }
            let base = (rawID ?? "\(n)").lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }
            let id = "log-user-" + String(base)
            guard !seen.contains(id) else { bad("duplicate id", rawID); continue }
            seen.insert(id)
            let needle = (d["contains"] as? String) ?? derivedNeedle(pattern)
            let summary = d["summary"] as? String ?? "user pattern \(rawID ?? "\(n)") from \(file)"
            plugins.append(UserPatternPlugin(id: id, summary: summary,
                                             regex: SharedRegex(re, groupNames: LogRule.groupNames(in: pattern)),
                                             needle: needle, kind: EventKind(kindName), attrs: attrs))
        }
        return (plugins, problems)
    }
}
