import Yams

/// Limits on the YAML files the user gives (`--config`, `--patterns`), checked on the text before
/// parsing: a configuration file is small and plain, and a hostile one must not turn into a swap storm
/// (an alias bomb: nine levels of ten aliases each expand to 10^9 nodes) or a stack overflow (deep
/// nesting).
public enum YAMLLimits {
    /// Largest file read as configuration.
    public static let maxBytes = 1 << 20
    /// Most aliases (`*name`) in a file: 16 aliases can expand to a few hundred nodes at most.
    public static let maxAliases = 16
    /// Deepest nesting of flow collections (`[`, `{`) and block levels (indentation, `- ` items).
    public static let maxDepth = 64

    /// Parses a user's YAML file into plain values (`Yams.load`), after the limits above and a check
    /// of the document's shape: Yams traps on a mapping key that is not a scalar (`? [a, b]: 1`), so
    /// such keys are refused here first. Throws `YAMLRefusal` (limits, shape) or Yams' parse error.
    public static func load(_ text: String) throws -> Any? {
        if let why = problem(text) { throw YAMLRefusal(message: why) }
        guard let node = try Yams.compose(yaml: text) else { return nil }
        if let why = shapeProblem(node, depth: 0) { throw YAMLRefusal(message: why) }
        // The node already composed (what `Yams.load` would parse a second time).
        return node.any
    }

    static func shapeProblem(_ node: Node, depth: Int) -> String? {
        if depth > maxDepth { return "nesting deeper than \(maxDepth) levels" }
        switch node {
        case .scalar, .alias: return nil
        case .sequence(let seq):
            for n in seq { if let why = shapeProblem(n, depth: depth + 1) { return why } }
            return nil
        case .mapping(let map):
            for (k, v) in map {
                guard k.scalar != nil else { return "a mapping key that is not plain text (line \(k.mark?.line ?? 0)); keys must be names" }
                if let why = shapeProblem(v, depth: depth + 1) { return why }
            }
            return nil
        }
    }

    /// Why `text` is refused, or nil when it is within the limits.
    public static func problem(_ text: String) -> String? {
        let b = Array(text.utf8)
        if b.count > maxBytes { return "the file has \(b.count) bytes; a configuration file may have at most \(maxBytes)" }
        var aliases = 0
        var flowDepth = 0
        var quote: UInt8 = 0
        var lineStart = true
        var blockDepth = 0
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == 0x0A {
                lineStart = true
                blockDepth = 0
                i += 1
                continue
            }
            if lineStart {
                // Indentation and leading `- ` items: each is one more block level.
                var col = 0
                while i < b.count, b[i] == 0x20 || (b[i] == 0x2D && i + 1 < b.count && b[i + 1] == 0x20) {
                    if b[i] == 0x2D { blockDepth += 1 }
                    col += 1
                    i += 1
                }
                blockDepth += col / 2
                if blockDepth > maxDepth { return "nesting deeper than \(maxDepth) levels" }
                lineStart = false
                continue
            }
            if quote != 0 {
                if c == quote { quote = 0 }
            } else if c == 0x27 || c == 0x22 {
                quote = c
            } else if c == 0x23, i == 0 || b[i - 1] == 0x20 {
                // A comment: skip to the end of the line.
                while i < b.count, b[i] != 0x0A { i += 1 }
                continue
            } else if c == 0x5B || c == 0x7B {
                flowDepth += 1
                if flowDepth + blockDepth > maxDepth { return "nesting deeper than \(maxDepth) levels" }
            } else if c == 0x5D || c == 0x7D {
                flowDepth = max(0, flowDepth - 1)
            } else if c == 0x2A, i == 0 || [0x20, 0x09, 0x5B, 0x7B, 0x2C, 0x3A].contains(b[i - 1]) {
                aliases += 1
                if aliases > maxAliases {
                    return "more than \(maxAliases) aliases (*name); refusing what may be an alias bomb"
                }
            }
            i += 1
        }
        return nil
    }
}

/// A YAML file refused before (or instead of) being read into values.
public struct YAMLRefusal: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}
