import PeerscopeCore

/// A named, overridable threshold of a detector.
public struct ThresholdDescriptor: Sendable, Hashable {
    /// `detector.threshold`, e.g. `keepalive-timeout.app`.
    public var name: String
    public var defaultValue: Double
    /// `s` for seconds, `count` for counts.
    public var unit: String
    public var summary: String

    public init(_ name: String, _ defaultValue: Double, unit: String = "s", _ summary: String) {
        self.name = name
        self.defaultValue = defaultValue
        self.unit = unit
        self.summary = summary
    }
}

public struct DetectorConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Threshold overrides and which detector kinds run.
///
/// YAML shape accepted by `init(dictionary:)` (optionally under a top-level `detectors:` key):
/// ```yaml
/// only: [handshake-timeout, keepalive-timeout]   # or a comma-separated string
/// ignore: [declined-invitation]
/// thresholds:
///   handshake-timeout.ice: 5        # seconds; "5s", "500ms", "2m" also read
///   keepalive-timeout: { app: 8 }
/// reconnect-storm:                  # per-kind blocks work too
///   count: 5
///   enabled: false                  # same as listing it under ignore
/// ```
public struct DetectorConfig: Sendable {
    public var values: [String: Double]
    public var only: Set<String>?
    public var ignore: Set<String>

    public init(values: [String: Double] = [:], only: Set<String>? = nil, ignore: Set<String> = []) {
        self.values = values
        self.only = only
        self.ignore = ignore
    }

    public static let defaults = DetectorConfig()

    /// Is a detector kind enabled?
    public func isEnabled(_ kind: String) -> Bool {
        if ignore.contains(kind) { return false }
        if let only { return only.contains(kind) }
        return true
    }

    /// A threshold's value: the override, else the registered default, else `fallback`.
    public func value(_ name: String, fallback: Double = 0) -> Double {
        if let v = values[name] { return v }
        return DetectorSuite.threshold(named: name)?.defaultValue ?? fallback
    }

    public func nanos(_ name: String) -> Nanos { CaptureTime.nanos(seconds: value(name)) }

    /// A count threshold as a whole number; `fallback` when the value is not a usable count.
    public func count(_ name: String, fallback: Int) -> Int {
        let c = value(name)
        return c.isFinite && c >= 0 && c < 1e9 ? Int(c) : fallback
    }

    /// Override names and kinds that no detector knows (typos), for the CLI to reject.
    public func problems() -> [String] {
        var out: [String] = []
        let kinds = Set(DetectorSuite.all.map(\.kind))
        for name in values.keys.sorted() where DetectorSuite.threshold(named: name) == nil {
            out.append("unknown threshold '\(name)'")
        }
        for k in (only ?? []).union(ignore).sorted() where !kinds.contains(k) {
            out.append("unknown detector kind '\(k)'")
        }
        return out
    }

    /// Reads a YAML-shaped dictionary (see the type's documentation). Unknown names and values that
    /// are not durations or numbers throw, so a typo does not silently keep a default.
    public init(dictionary raw: [String: Any]) throws(DetectorConfigError) {
        var d = raw
        // A whole configuration file may keep the detector settings under `detectors:`.
        if let v = raw["detectors"], let inner = DetectorConfig.mapping(v) { d = inner }
        var values: [String: Double] = [:]
        var only: Set<String>?
        var ignore: Set<String> = []
        let kinds = Set(DetectorSuite.all.map(\.kind))

        func setValue(_ name: String, _ v: Any) throws(DetectorConfigError) {
            guard let t = DetectorSuite.threshold(named: name) else {
                throw DetectorConfigError("unknown threshold '\(name)'")
            }
            guard let x = DetectorConfig.number(v, unit: t.unit), x >= 0 else {
                throw DetectorConfigError("threshold '\(name)': '\(v)' is not a \(t.unit == "s" ? "duration" : "count")")
            }
            values[name] = x
        }

        for (key, v) in d {
            switch key {
            case "only":
                only = try DetectorConfig.kindList(v, key, kinds)
            case "ignore":
                ignore.formUnion(try DetectorConfig.kindList(v, key, kinds))
            case "thresholds":
                guard let m = DetectorConfig.mapping(v) else { throw DetectorConfigError("'thresholds' must be a mapping") }
                for (name, x) in m {
                    if let sub = DetectorConfig.mapping(x) {
                        for (n2, y) in sub { try setValue("\(name).\(n2)", y) }
                    } else {
                        try setValue(name, x)
                    }
                }
            default:
                if kinds.contains(key), let sub = DetectorConfig.mapping(v) {
                    for (n2, y) in sub {
                        if n2 == "enabled" {
                            guard let b = DetectorConfig.bool(y) else {
                                throw DetectorConfigError("'\(key).enabled' must be true or false")
                            }
                            if !b { ignore.insert(key) }
                        } else {
                            try setValue("\(key).\(n2)", y)
                        }
                    }
                } else if key.contains(".") {
                    try setValue(key, v)
                } else {
                    throw DetectorConfigError("unknown detector setting '\(key)'")
                }
            }
        }
        self.init(values: values, only: only, ignore: ignore)
    }

    /// A mapping with string keys, as YAML parsers return it (`[String: Any]` or `[AnyHashable: Any]`).
    public static func mapping(_ v: Any) -> [String: Any]? {
        if let m = v as? [String: Any] { return m }
        if let m = v as? [AnyHashable: Any] {
            var out: [String: Any] = [:]
            for (k, x) in m {
                guard let s = k.base as? String else { return nil }
                out[s] = x
            }
            return out
        }
        return nil
    }

    static func kindList(_ v: Any, _ key: String, _ kinds: Set<String>) throws(DetectorConfigError) -> Set<String> {
        var names: [String] = []
        if let s = v as? String {
            names = s.split(separator: ",").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        } else if let a = v as? [Any] {
            for x in a {
                guard let s = x as? String else { throw DetectorConfigError("'\(key)' must list detector kinds") }
                names.append(s)
            }
        } else {
            throw DetectorConfigError("'\(key)' must list detector kinds")
        }
        for n in names where !kinds.contains(n) {
            throw DetectorConfigError("'\(key)': unknown detector kind '\(n)' (known: \(kinds.sorted().joined(separator: ", ")))")
        }
        return Set(names)
    }

    static func bool(_ v: Any) -> Bool? {
        if let b = v as? Bool { return b }
        if let s = v as? String {
            switch s.lowercased() {
            case "true", "yes", "on": return true
            case "false", "no", "off": return false
            default: return nil
            }
        }
        return nil
    }

    /// A number, or a duration string (`5`, `5s`, `500ms`, `2m`, `1.5 s`) in seconds.
    public static func number(_ v: Any, unit: String = "s") -> Double? {
        if let b = v as? Bool { _ = b; return nil }
        if let d = v as? Double { return d.isFinite ? d : nil }
        if let i = v as? Int { return Double(i) }
        if let i = v as? Int64 { return Double(i) }
        if let f = v as? Float { return Double(f) }
        guard let s0 = v as? String else { return nil }
        let s = s0.trimmingCharacters().lowercased()
        var scale = 1.0
        var body = Substring(s)
        if unit == "s" {
            for (suffix, k) in [("ms", 0.001), ("sec", 1.0), ("s", 1.0), ("min", 60.0), ("m", 60.0)] where body.hasSuffix(suffix) {
                body = body.dropLast(suffix.count)
                scale = k
                break
            }
        }
        guard let x = Double(String(body).trimmingCharacters()), x.isFinite else { return nil }
        return x * scale
    }
}

extension StringProtocol {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
