import PeerscopeSimulator

// The simulator's deterministic generator (SplitMix64), named in this module so that a file importing
// PeerscopePlugins need not import the simulator too (both have a `DNSMessage`).
typealias SimRandom = PeerscopeSimulator.SimRandom

/// Corrupted copies for the hostile-input tests, from the simulator's deterministic generator (SplitMix64).
extension SimRandom {
    /// `base` with 1 to 6 random bytes changed and, one time in four, cut short at a random length.
    mutating func corrupted(_ base: [UInt8]) -> [UInt8] {
        var bytes = base
        for _ in 0 ..< 1 + Int(next() % 6) {
            let i = Int(next() % UInt64(bytes.count))
            bytes[i] = UInt8(truncatingIfNeeded: next())
        }
        if next() % 4 == 0 { bytes.removeLast(Int(next() % UInt64(bytes.count))) }
        return bytes
    }
}
