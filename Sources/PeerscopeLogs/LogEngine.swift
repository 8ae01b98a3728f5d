import PeerscopeCore

/// All needles of all rules, found in one pass over a message (Aho-Corasick over bytes).
struct NeedleAutomaton: Sendable {
    private var next: [Int32] = []      // state * 256 + byte -> state
    private var out: [[Int32]] = []     // rules whose needle ends in this state (with suffix outputs)

    init(needles: [[UInt8]]) {
        var trie: [[UInt8: Int32]] = [[:]]
        var outs: [[Int32]] = [[]]
        for (i, n) in needles.enumerated() where !n.isEmpty {
            var s: Int32 = 0
            for c in n {
                if let t = trie[Int(s)][c] {
                    s = t
                } else {
                    trie.append([:])
                    outs.append([])
                    let t = Int32(trie.count - 1)
                    trie[Int(s)][c] = t
                    s = t
                }
            }
            outs[Int(s)].append(Int32(i))
        }
        let n = trie.count
        var fail = [Int32](repeating: 0, count: n)
        var goto = [Int32](repeating: 0, count: n * 256)
        var queue: [Int32] = []
        for c in 0..<256 {
            if let t = trie[0][UInt8(c)] {
                goto[c] = t
                queue.append(t)
            }
        }
        var head = 0
        while head < queue.count {
            let s = Int(queue[head])
            head += 1
            let f = Int(fail[s])
            outs[s].append(contentsOf: outs[f])
            // Transitions default to the fail state's, then the node's own children override them.
            for c in 0..<256 { goto[s * 256 + c] = goto[f * 256 + c] }
            for (c, t) in trie[s] {
                fail[Int(t)] = s == 0 ? 0 : goto[f * 256 + Int(c)]
                goto[s * 256 + Int(c)] = t
                queue.append(t)
            }
        }
        next = goto
        out = outs
    }

    /// Sets `hit[i]` for every needle i that occurs in `b`.
    func scan(_ b: UnsafeBufferPointer<UInt8>, _ hit: inout [Bool]) {
        var s = 0
        next.withUnsafeBufferPointer { g in
            for c in b {
                s = Int(g[s &* 256 &+ Int(c)])
                let o = out[s]
                if !o.isEmpty { for i in o { hit[Int(i)] = true } }
            }
        }
    }
}

/// The compiled set of log plugins for a run: built once, used for every line of every input.
public struct LogEngine: Sendable {
    public let plugins: [any LogPlugin]
    struct FlatRule: Sendable {
        var plugin: Int
        var rule: LogRule
    }
    let flat: [FlatRule]
    let automaton: NeedleAutomaton
    let alwaysTry: [Int]
    let ids: [String]

    public init(plugins: [any LogPlugin]) {
        self.plugins = plugins
        ids = plugins.map(\.descriptor.id)
        var flat: [FlatRule] = []
        for (i, p) in plugins.enumerated() {
            for r in p.rules { flat.append(FlatRule(plugin: i, rule: r)) }
        }
        self.flat = flat
        automaton = NeedleAutomaton(needles: flat.map(\.rule.needle))
        alwaysTry = flat.indices.filter { flat[$0].rule.needle.isEmpty }
    }

    /// The built-in plugins, compiled once per process.
    public static let builtin = LogEngine(plugins: LogPluginRegistry.builtins)

    /// The built-in plugins, plus the user's patterns when a file is named. Bad entries in the file are
    /// returned as diagnostics; an unreadable or malformed file throws.
    public static func standard(patternsFile: String? = nil) throws(LogPatternFileError) -> (engine: LogEngine, problems: [Diagnostic]) {
        guard let patternsFile else { return (builtin, []) }
        var plugins = LogPluginRegistry.builtins
        var problems: [Diagnostic] = []
        let (user, p) = try UserPatternPlugin.load(path: patternsFile)
        // User patterns go first: a user can refine what a built-in plugin reports.
        plugins = user + plugins
        problems = p
        return (LogEngine(plugins: plugins), problems)
    }

    /// The first rule (in plugin order) that understands the entry: its plugin id and what it means.
    func match(_ entry: LogEntry, hits: inout [Bool]) -> (source: String, match: LogMatch)? {
        var slow: [Int] = []
        return match(entry, hits: &hits, skip: [], slow: &slow)
    }

    /// As `match`, never trying the rules in `skip`; the rules that gave up on this entry (regex step
    /// budget spent) are added to `slow`.
    func match(_ entry: LogEntry, hits: inout [Bool], skip: Set<Int>, slow: inout [Int]) -> (source: String, match: LogMatch)? {
        var msg = entry.message
        return msg.withUTF8 { b -> (String, LogMatch)? in
            for i in hits.indices { hits[i] = false }
            automaton.scan(b, &hits)
            for i in alwaysTry { hits[i] = true }
            for i in flat.indices where hits[i] && !skip.contains(i) {
                let fr = flat[i]
                var gaveUp = false
                let caps = fr.rule.captures(entry.message, b, gaveUp: &gaveUp)
                if gaveUp { slow.append(i) }
                guard let caps, let m = fr.rule.build(caps, entry) else { continue }
                return (ids[fr.plugin], m)
            }
            return nil
        }
    }
}
