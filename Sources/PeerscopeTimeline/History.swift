/// A compact history string in the spirit of Zeek's `conn.log` `history`: one letter per thing that
/// happened, upper case when this peer sent or did it, lower case when the other side did.
///
/// | letter | meaning |
/// |---|---|
/// | `V` | discovery: announced, resolved, updated, found by a browser |
/// | `L` | lost: goodbye, expired, browser lost the peer |
/// | `S` | invitation channel opened (TCP connection, Hello/Accept frames) |
/// | `I` | invitation sent |
/// | `A` | invitation accepted (response) |
/// | `N` | invitation declined (response, or a log decision that declines) |
/// | `C` | connection data sent (invite connect) |
/// | `P` | connecting (state change to Connecting, reconnect attempt) |
/// | `Q` | ICE connectivity check |
/// | `J` | ICE check answered (STUN success) |
/// | `E` | DTLS handshake message |
/// | `U` | secure channel up (DTLS established) |
/// | `O` | GCK setup: Hello, DD, LSA, LSAACK |
/// | `G` | connected (GCK Hello answered, or state change to Connected) |
/// | `W` | app `handshake` |
/// | `H` | app `handshake_response` |
/// | `K` | app `keep_alive` |
/// | `B` | GCK heartbeat |
/// | `D` | data (app messages, GCK data, DTLS application data) |
/// | `T` | a timeout reported by a log (invite, ICE, DTLS, GCK, app) |
/// | `X` | disconnected |
/// | `R` | TCP reset or refused |
/// | `F` | TCP connection closed |
/// | `!` | an error: DTLS alert, ICMP unreachable, bad checksum, send error, encryption mismatch, conflict |
///
/// Compression, as Zeek does: a control letter is written once per consecutive run (`IIII` -> `I`).
/// Traffic letters (`Q J E O K B D`, either case) are written the 1st, 10th, 100th, ... time they
/// occur since the last control letter, so `KkKk` means at least ten keep-alives each way. Steady
/// traffic coalesced by the engine (`EventCoalescer`) is counted where its run begins.
public struct HistoryBuilder: Sendable, Hashable {
    public private(set) var text: String = ""
    /// How many of each traffic letter (either case: `slot`, 14 counters) since the last control
    /// letter. The first two distinct letters are counted inline (`pair0`, `pair1`: the slot plus one
    /// in the top 5 bits, the count below, 0 when unused): a session's traffic is mostly one letter each
    /// way (`Bb`, `Kk`). From a third distinct letter (or a count beyond a pair's 59 bits) all 14 are in
    /// `counts`, and the pairs are 0. A control letter empties both, so the state is canonical: a
    /// history with no traffic letter since its last control letter holds no counter block (a long
    /// capture has a history per peer and per instance; a freed block per instance with traffic left
    /// resident pieces after the timeline stage).
    private var pair0: UInt64 = 0
    private var pair1: UInt64 = 0
    private var counts: [Int]?
    static let pairCountBits: UInt64 = 59
    static let pairCountMask: UInt64 = (1 << 59) - 1

    public init() {}

    public static let trafficLetters: Set<Character> = ["Q", "J", "E", "O", "K", "B", "D"]

    /// The letters and what they mean (upper case; lower case is the same from the other side).
    public static let legend: [(letter: Character, meaning: String)] = [
        ("V", "discovered (announced, resolved, updated, found)"), ("L", "lost (goodbye, expired, browser lost)"),
        ("S", "invitation channel opened"), ("I", "invitation sent"), ("A", "invitation accepted"),
        ("N", "invitation declined"), ("C", "connection data sent"), ("P", "connecting"), ("Q", "ICE check"),
        ("J", "ICE check answered"), ("E", "DTLS handshake message"), ("U", "secure channel up"),
        ("O", "GCK Hello/DD/LSA/LSAACK"), ("G", "connected"), ("W", "app handshake"), ("H", "app handshake response"),
        ("K", "app keep-alive"), ("B", "GCK heartbeat"), ("D", "data"), ("T", "timeout (log)"), ("X", "disconnected"),
        ("R", "TCP reset or refused"), ("F", "TCP closed"), ("!", "error (alert, ICMP, checksum, send error, mismatch)"),
    ]

    public static func isTraffic(_ c: Character) -> Bool {
        trafficLetters.contains(cased(c, upper: true))
    }

    /// Whether a traffic letter came since the last control letter (some counter is not zero).
    var hasTrafficCounts: Bool { pair0 != 0 || counts != nil }
    /// Whether the counters are in a block of their own (a third distinct traffic letter since the last
    /// control letter), not inline.
    var hasCounterBlock: Bool { counts != nil }

    /// The counter of `slot`.
    func count(_ slot: Int) -> Int {
        if let counts { return counts[slot] }
        let tag = UInt64(slot + 1)
        if pair0 >> HistoryBuilder.pairCountBits == tag { return Int(pair0 & HistoryBuilder.pairCountMask) }
        if pair1 >> HistoryBuilder.pairCountBits == tag { return Int(pair1 & HistoryBuilder.pairCountMask) }
        return 0
    }

    /// Sets the counter of `slot` to `n` (n >= 1): inline when it is one of the first two letters and
    /// fits, else every counter moves into `counts`.
    private mutating func setCount(_ slot: Int, _ n: Int) {
        if counts != nil {
            counts?[slot] = n
            return
        }
        let tag = UInt64(slot + 1)
        if n >= 0, UInt64(n) <= HistoryBuilder.pairCountMask {
            let word = tag << HistoryBuilder.pairCountBits | UInt64(n)
            if pair0 == 0 || pair0 >> HistoryBuilder.pairCountBits == tag {
                pair0 = word
                return
            }
            if pair1 == 0 || pair1 >> HistoryBuilder.pairCountBits == tag {
                pair1 = word
                return
            }
        }
        var all = Array(repeating: 0, count: HistoryBuilder.slotCount)
        if pair0 != 0 { all[Int(pair0 >> HistoryBuilder.pairCountBits) - 1] = Int(pair0 & HistoryBuilder.pairCountMask) }
        if pair1 != 0 { all[Int(pair1 >> HistoryBuilder.pairCountBits) - 1] = Int(pair1 & HistoryBuilder.pairCountMask) }
        all[slot] = n
        pair0 = 0
        pair1 = 0
        counts = all
    }

    /// Whether `c` is the last character written: for a one-byte ASCII character (every letter of the
    /// catalogue) the last byte of `text` (no other character ends in an ASCII byte, but `"\r\n"`, which
    /// no one adds), else its last character. No copy of the last letter is kept: 16 bytes in every
    /// history (the builder is 40 bytes, as it was with one counter block).
    private func isLast(_ c: Character) -> Bool {
        if let v = HistoryBuilder.byte(c) { return text.utf8.last == v }
        return text.last == c
    }

    private mutating func write(_ c: Character) { text.append(c) }

    /// The byte of a one-byte ASCII character (not `"\r\n"`, whose `asciiValue` is that of `"\n"`).
    static func byte(_ c: Character) -> UInt8? {
        guard let v = c.asciiValue, c.utf8.count == 1 else { return nil }
        return v
    }

    public static func == (a: HistoryBuilder, b: HistoryBuilder) -> Bool {
        a.text == b.text && (0 ..< slotCount).allSatisfy { a.count($0) == b.count($0) }
    }

    public func hash(into h: inout Hasher) {
        h.combine(text)
        for i in 0 ..< HistoryBuilder.slotCount { h.combine(count(i)) }
    }

    /// How many counters `slot` numbers.
    static let slotCount = 14

    /// The counter of a traffic letter (`Q J E O K B D` upper case 0-6, lower case 7-13); nil for any
    /// other character (exactly when `isTraffic` is false).
    static func slot(_ c: Character) -> Int? {
        guard let v = c.asciiValue else { return nil }
        let lower = v >= 0x61 && v <= 0x7A
        let i: Int
        switch lower ? v - 0x20 : v {
        case 0x51: i = 0  // Q
        case 0x4A: i = 1  // J
        case 0x45: i = 2  // E
        case 0x4F: i = 3  // O
        case 0x4B: i = 4  // K
        case 0x42: i = 5  // B
        case 0x44: i = 6  // D
        default: return nil
        }
        return lower ? i + 7 : i
    }

    /// ASCII case change without allocating (other characters unchanged).
    static func cased(_ c: Character, upper: Bool) -> Character {
        guard let v = c.asciiValue else { return c }
        if upper, v >= 0x61, v <= 0x7A { return Character(Unicode.Scalar(v - 0x20)) }
        if !upper, v >= 0x41, v <= 0x5A { return Character(Unicode.Scalar(v + 0x20)) }
        return c
    }

    /// Adds `letter` in upper case when `sent` (this side sent it), lower case otherwise.
    /// Adds `times` occurrences of `letter` (a coalesced run of traffic counts as all of them).
    public mutating func add(_ letter: Character, sent: Bool, times: Int = 1) {
        let c = HistoryBuilder.cased(letter, upper: sent)
        if let slot = HistoryBuilder.slot(c) {
            let before = count(slot)
            let (n, overflow) = before.addingReportingOverflow(max(1, times))
            let after = overflow ? Int.max : n
            setCount(slot, after)
            // One letter per power of ten reached in (before, after].
            var p = 1
            while p <= after {
                if p > before { write(c) }
                let (next, o) = p.multipliedReportingOverflow(by: 10)
                if o { break }
                p = next
            }
        } else {
            pair0 = 0
            pair1 = 0
            counts = nil
            if !isLast(c) { write(c) }
        }
    }

    static func isPowerOfTen(_ n: Int) -> Bool {
        var v = n
        guard v >= 1 else { return false }
        while v % 10 == 0 { v /= 10 }
        return v == 1
    }
}
