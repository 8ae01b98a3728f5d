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
    /// letter; nil until the first traffic letter after a control letter (then all of them are zero).
    /// Allocated only when needed: a long capture has a history per peer and per instance, and most
    /// peers of an mDNS-heavy capture never have a traffic letter (128 B inline each before, 2.9 MB
    /// over 25,695 peers). Reset to nil, so nil means exactly "all zero" (the synthesized equality holds).
    private var counts: [Int]?
    private var last: Character?

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

    /// Whether the traffic counters are allocated (a traffic letter since the last control letter).
    var hasTrafficCounts: Bool { counts != nil }

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
            let before = counts?[slot] ?? 0
            let (n, overflow) = before.addingReportingOverflow(max(1, times))
            let after = overflow ? Int.max : n
            if counts == nil { counts = Array(repeating: 0, count: HistoryBuilder.slotCount) }
            counts?[slot] = after
            // One letter per power of ten reached in (before, after].
            var p = 1
            while p <= after {
                if p > before {
                    text.append(c)
                    last = c
                }
                let (next, o) = p.multipliedReportingOverflow(by: 10)
                if o { break }
                p = next
            }
        } else {
            counts = nil
            if last != c {
                text.append(c)
                last = c
            }
        }
    }

    static func isPowerOfTen(_ n: Int) -> Bool {
        var v = n
        guard v >= 1 else { return false }
        while v % 10 == 0 { v /= 10 }
        return v == 1
    }
}
