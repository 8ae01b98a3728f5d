import Foundation
import XCTest
import PeerscopeSimulator

/// Counters a sender keeps go up with time: DTLS record sequence numbers (per direction and epoch)
/// and GCK reliable serials, read back from the written capture by a parser of its own.
final class SequenceOrderTests: XCTestCase {
    struct Datagram { var flow: String; var payload: [UInt8] }

    /// UDP datagrams in capture order from a little-endian pcapng (Ethernet or Linux SLL, IPv4/IPv6).
    static func datagrams(_ b: [UInt8]) throws -> [Datagram] {
        func u16(_ o: Int) -> Int { Int(b[o]) << 8 | Int(b[o + 1]) }
        func le32(_ o: Int) throws -> Int {
            guard o >= 0, o + 4 <= b.count else { throw XCTSkip("truncated pcapng") }
            return Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24
        }
        var links: [Int] = []
        var out: [Datagram] = []
        var o = 0
        while o + 12 <= b.count {
            let type = try le32(o), len = try le32(o + 4)
            guard len >= 12, o + len <= b.count else { break }
            if type == 1 { links.append(Int(b[o + 8]) | Int(b[o + 9]) << 8) }
            if type == 6 {
                let iface = try le32(o + 8), cap = try le32(o + 20)
                let start = o + 28
                guard links.indices.contains(iface), start + cap <= b.count else { break }
                let ip = start + (links[iface] == 113 ? 16 : 14)
                let version = b[ip] >> 4
                let (proto, src, dst, l4): (UInt8, [UInt8], [UInt8], Int) = version == 4
                    ? (b[ip + 9], Array(b[ip + 12 ..< ip + 16]), Array(b[ip + 16 ..< ip + 20]), ip + Int(b[ip] & 0x0F) * 4)
                    : (b[ip + 6], Array(b[ip + 8 ..< ip + 24]), Array(b[ip + 24 ..< ip + 40]), ip + 40)
                if proto == 17 {
                    let sport = u16(l4), dport = u16(l4 + 2), ulen = u16(l4 + 4)
                    let flow = "\(src):\(sport)>\(dst):\(dport)"
                    out.append(Datagram(flow: flow, payload: Array(b[l4 + 8 ..< l4 + ulen])))
                }
            }
            o += len
        }
        return out
    }

    func testEachSendersCountersIncreaseWithTime() throws {
        var dtlsRecords = 0, serials = 0, acks = 0
        for (name, encrypted) in [("healthy-pair", false), ("healthy-pair-encrypted", true), ("keepalive-timeout", true),
                                  ("keepalive-timeout", false), ("duplicate-connection", true), ("channel-error-dtls-alert", true),
                                  ("channel-error-icmp", true), ("group-8", true), ("handshake-timeout-dtls", true)] {
            for seed: UInt64 in [1, 2] {
                let r = try Simulator.run(name, options: SimulationOptions(seed: seed, encrypted: encrypted))
                let label = "\(name) seed \(seed)\(encrypted ? " encrypted" : "")"
                var lastSeq: [String: Int] = [:]        // flow|epoch -> last DTLS sequence number
                var lastSerial: [String: Int] = [:]     // flow -> last GCK reliable serial
                var sentSerials: [String: Set<Int>] = [:]
                for d in try Self.datagrams(r.capture) {
                    let p = d.payload
                    if p.count >= 14, p[0] == 0xD0 {
                        let epoch = Int(p[4]) << 8 | Int(p[5])
                        let seq = p[6 ..< 12].reduce(0) { $0 << 8 | Int($1) }
                        let k = "\(d.flow)|\(epoch)"
                        if let last = lastSeq[k] { XCTAssertGreaterThan(seq, last, "\(label): DTLS \(k) went from \(last) to \(seq)") }
                        lastSeq[k] = seq
                        dtlsRecords += 1
                    } else if p.count >= 32, p[0] == 0xC1, p[1] == 5 {
                        let serial = Int(p[28]) | Int(p[29]) << 8 | Int(p[30]) << 16 | Int(p[31]) << 24
                        if p[16] == 5 {
                            if let last = lastSerial[d.flow] { XCTAssertGreaterThan(serial, last, "\(label): serial on \(d.flow) went from \(last) to \(serial)") }
                            lastSerial[d.flow] = serial
                            sentSerials[d.flow, default: []].insert(serial)
                            serials += 1
                        } else if p[16] == 7 {
                            // The ack goes the other way and echoes a serial already sent.
                            let parts = d.flow.split(separator: ">").map(String.init)
                            let back = parts.count == 2 ? "\(parts[1])>\(parts[0])" : d.flow
                            XCTAssertTrue(sentSerials[back]?.contains(serial) ?? false, "\(label): ack of unsent serial \(serial) on \(d.flow)")
                            acks += 1
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(dtlsRecords, 500)
        XCTAssertGreaterThan(serials, 50)
        XCTAssertGreaterThan(acks, 50)
    }
}
