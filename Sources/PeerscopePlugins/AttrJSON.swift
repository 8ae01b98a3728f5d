import PeerscopeCore

/// Event attributes are strings; in `peerscope decode` output the numeric and yes/no ones are JSON
/// numbers and booleans.
enum AttrJSON {
    /// Attributes that hold "true"/"false".
    static let booleans: Set<String> = ["sawSYN", "invitation", "accepted"]

    static func value(_ key: String, _ v: String) -> JSONValue {
        if booleans.contains(key), v == "true" || v == "false" { return .bool(v == "true") }
        if key.hasSuffix("Ns"), let n = Int64(v) { return .int(n) }
        return .string(v)
    }
}
