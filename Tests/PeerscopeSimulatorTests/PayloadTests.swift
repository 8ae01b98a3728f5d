import Foundation
import XCTest
@testable import PeerscopeSimulator

/// The capture's payloads, pulled out by tshark and checked with code independent of the simulator's
/// encoders (bitwise CRCs here, Python's plistlib for the invitation dictionaries).
final class PayloadTests: XCTestCase {
    private func crc32(_ b: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for x in b {
            c ^= UInt32(x)
            for _ in 0 ..< 8 { c = (c >> 1) ^ ((c & 1) * 0xEDB8_8320) }
        }
        return ~c
    }

    private func crc16(_ b: [UInt8]) -> UInt16 {
        var c: UInt16 = 0
        for x in b {
            c ^= UInt16(x)
            for _ in 0 ..< 8 { c = (c >> 1) ^ ((c & 1) * 0xA001) }
        }
        return c
    }

    private struct Segment { var stream: Int; var src: String; var payload: [UInt8] }

    private func dump(_ r: SimulationResult) throws -> (udp: [[UInt8]], tcp: [Segment]) {
        guard let t = TestSupport.which("tshark") else { throw XCTSkip("tshark not installed") }
        let dir = try TestSupport.tempDirectory("payloads")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("c.pcapng").path
        try Data(r.capture).write(to: URL(fileURLWithPath: path))
        let (_, u) = try TestSupport.run(t, ["-r", path, "-Y", "udp && !mdns && !icmp && !icmpv6", "-T", "fields", "-e", "udp.payload"])
        let udp = u.split(separator: "\n").map { TestSupport.hexBytes(String($0)) }.filter { !$0.isEmpty }
        let (_, s) = try TestSupport.run(t, ["-r", path, "-Y", "tcp.len > 0", "-o", "tcp.desegment_tcp_streams:FALSE",
                                             "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.payload"])
        let tcp = s.split(separator: "\n").compactMap { line -> Segment? in
            let c = line.split(separator: "\t").map(String.init)
            guard c.count == 3, let st = Int(c[0]) else { return nil }
            return Segment(stream: st, src: c[1], payload: TestSupport.hexBytes(c[2]))
        }
        return (udp, tcp)
    }

    func testPlaintextSessionPacketsCarryValidGCKAndTheAppJSON() throws {
        let r = try Simulator.run("healthy-pair")
        let (udp, _) = try dump(r)
        var types: [String: Int] = [:]
        var gck = 0
        for p in udp where p.first == 0xC1 {
            gck += 1
            XCTAssertEqual(Int(p[2]) << 8 | Int(p[3]), p.count, "GCK length = datagram length")
            var z = p
            z[6] = 0; z[7] = 0
            XCTAssertEqual(crc16(z), UInt16(p[6]) << 8 | UInt16(p[7]), "CRC-16/ARC")
            if p[1] == 5 && p[16] == 5 {
                let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(p[36...])) as? [String: Any], "JSON at byte 36")
                if let type = json["type"] as? String { types[type, default: 0] += 1 }
                else {
                    XCTAssertNotNil(json["sender"] as? String); XCTAssertNotNil(json["content"] as? String)
                    XCTAssertNotNil(json["timestamp"] as? Double)
                    types["chat", default: 0] += 1
                }
            }
        }
        XCTAssertGreaterThan(gck, 20)
        XCTAssertEqual(types["handshake"], 1)
        XCTAssertEqual(types["handshake_response"], 1)
        XCTAssertEqual(types["chat"], 4)
        // keep_alive every 2 s each way over ~20 s.
        XCTAssertEqual(Double(types["keep_alive"] ?? 0), 20, accuracy: 2)
        XCTAssertEqual(udp.filter { $0.first == 0xD0 }.count, 0, "plaintext session: no DTLS")
    }

    func testEncryptedSessionIsOneDTLSRecordPerDatagram() throws {
        let r = try Simulator.run("healthy-pair-encrypted")
        let (udp, _) = try dump(r)
        let dtls = udp.filter { $0.first == 0xD0 }
        XCTAssertGreaterThan(dtls.count, 30)
        XCTAssertEqual(udp.filter { $0.first == 0xC1 }.count, 0, "no plaintext GCK in an encrypted session")
        var contentTypes: Set<UInt8> = []
        for p in dtls {
            XCTAssertEqual(Array(p[2 ..< 4]), [0xFE, 0xFF], "DTLS 1.0")
            XCTAssertEqual(Int(p[12]) << 8 | Int(p[13]), p.count - 14, "exactly one record after 0xD0")
            contentTypes.insert(p[1])
        }
        XCTAssertEqual(contentTypes, [20, 22, 23])
        // The ServerHello chooses c019.
        let serverHello = try XCTUnwrap(dtls.first { $0[1] == 22 && $0[14] == 2 })
        XCTAssertEqual(Array(serverHello[14 + 12 + 2 + 32 + 1 ..< 14 + 12 + 2 + 32 + 3]), [0xC0, 0x19])
    }

    func testEncryptedFlagTurnsAPlaintextScenarioIntoDTLSWithTheSameFindings() throws {
        let plain = try Simulator.run("keepalive-timeout")
        let enc = try Simulator.run("keepalive-timeout", options: SimulationOptions(encrypted: true))
        XCTAssertFalse(plain.encrypted)
        XCTAssertTrue(enc.encrypted)
        let (udp, tcp) = try dump(enc)
        XCTAssertEqual(udp.filter { $0.first == 0xC1 }.count, 0)
        XCTAssertGreaterThan(udp.filter { $0.first == 0xD0 }.count, 20)
        XCTAssertEqual(plain.findings.map(\.kind), enc.findings.map(\.kind))
        XCTAssertEqual(plain.findings.map(\.peer), enc.findings.map(\.peer))
        // The Response's connection data announces .required (flags & 3 == 1).
        let joined = tcp.flatMap(\.payload)
        let key = Array("MCNearbyServiceConnectionDataKey".utf8)
        XCTAssertTrue(joined.indices.contains { i in i + key.count <= joined.count && Array(joined[i ..< i + key.count]) == key })
        XCTAssertTrue(zip(joined, joined.dropFirst()).contains { $0 == 0x80 && $1 == 0x01 }, "MC segment 0x80 with preference 1")
    }

    func testInvitationChannelFramesAndPlists() throws {
        guard let python = TestSupport.which("python3") else { throw XCTSkip("python3 not installed") }
        let r = try Simulator.run("healthy-pair")
        let (_, tcp) = try dump(r)
        XCTAssertFalse(tcp.isEmpty)
        var bodies: [[UInt8]] = []
        var seenTypes: Set<UInt16> = []
        var byDirection: [String: [UInt8]] = [:]
        for s in tcp { byDirection["\(s.stream)/\(s.src)", default: []] += s.payload }
        for (_, stream) in byDirection {
            var off = 0
            var expectedSeq: UInt32 = 0
            while off + 16 <= stream.count {
                let h = Array(stream[off ..< off + 16])
                let type = UInt16(h[0]) << 8 | UInt16(h[1])
                let flags = UInt16(h[2]) << 8 | UInt16(h[3])
                let len = Int(h[4]) << 24 | Int(h[5]) << 16 | Int(h[6]) << 8 | Int(h[7])
                let crc = UInt32(h[8]) << 24 | UInt32(h[9]) << 16 | UInt32(h[10]) << 8 | UInt32(h[11])
                let seq = UInt32(h[12]) << 24 | UInt32(h[13]) << 16 | UInt32(h[14]) << 8 | UInt32(h[15])
                XCTAssertTrue([2000, 2100, 2200].contains(type))
                guard off + 16 + len <= stream.count else { return XCTFail("truncated frame") }
                var zeroed = Array(stream[off ..< off + 16 + len])
                for i in 8 ..< 12 { zeroed[i] = 0 }
                XCTAssertEqual(crc32(zeroed), crc, "CRC32 over header (field zeroed) + body")
                if flags == 0 {
                    XCTAssertEqual(seq, expectedSeq, "per-direction message counter")
                    expectedSeq += 1
                    seenTypes.insert(type)
                    if type == 2100 { bodies.append(Array(stream[off + 16 ..< off + 16 + len])) }
                } else {
                    XCTAssertEqual(flags, 1); XCTAssertEqual(len, 0, "receipts are header-only")
                }
                off += 16 + len
            }
            XCTAssertEqual(off, stream.count)
        }
        XCTAssertEqual(seenTypes, [2000, 2100, 2200])
        XCTAssertEqual(bodies.count, 3)
        let script = """
        import plistlib, sys
        d = plistlib.loads(sys.stdin.buffer.read())
        cd = d.get('MCNearbyServiceConnectionDataKey', b'')
        print(d['MCNearbyServiceMessageIDKey'], ','.join(sorted(d.keys())), cd[:2].hex() if cd else '-')
        """
        var ids: [String] = []
        for body in bodies {
            XCTAssertEqual(Array(body.prefix(8)), Array("bplist00".utf8))
            let (status, out) = try TestSupport.run(python, ["-c", script], stdin: Data(body))
            XCTAssertEqual(status, 0, out)
            let parts = out.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").map(String.init)
            ids.append(parts[0])
            XCTAssertTrue(parts[1].contains("MCNearbyServiceSenderPeerIDKey") && parts[1].contains("MCNearbyServiceRecipientPeerIDKey"))
            // Response and Connect carry connection data: MC segment 0x80, preference 2 (.none) in plaintext.
            if parts[0] != "1" { XCTAssertEqual(parts[2], "8002") }
        }
        XCTAssertEqual(ids.sorted(), ["1", "2", "3"])
    }
}
