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
/// occur since the last control letter, so `KkKk` means at least ten keep-alives each way.
public struct HistoryBuilder: Sendable, Hashable {
    public private(set) var text: String = ""
    private var counts: [Character: Int] = [:]
    private var last: Character?

    public init() {}

    public static let trafficLetters: Set<Character> = ["Q", "J", "E", "O", "K", "B", "D"]

    public static func isTraffic(_ c: Character) -> Bool {
        trafficLetters.contains(Character(c.uppercased()))
    }

    /// Adds `letter` in upper case when `sent` (this side sent it), lower case otherwise.
    public mutating func add(_ letter: Character, sent: Bool) {
        let c = sent ? Character(letter.uppercased()) : Character(letter.lowercased())
        if HistoryBuilder.isTraffic(c) {
            let n = (counts[c] ?? 0) &+ 1
            counts[c] = n
            if HistoryBuilder.isPowerOfTen(n) {
                text.append(c)
                last = c
            }
        } else {
            counts.removeAll(keepingCapacity: true)
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
