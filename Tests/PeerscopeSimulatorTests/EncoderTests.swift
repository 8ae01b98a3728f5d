import Foundation
import XCTest
@testable import PeerscopeSimulator

/// The simulator's encoders against real MPC bytes (../shared/corpus/mpc-vectors) and external parsers.
final class EncoderTests: XCTestCase {
    private func vectors(_ file: String) throws -> [String] {
        let url = try TestSupport.sharedDirectory().appendingPathComponent("corpus/mpc-vectors/\(file)")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw XCTSkip("\(file) not readable") }
        return text.split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    func testCRC32OfRealHelloAndReceipt() throws {
        let lines = try vectors("invitation-frames.hex")
        let hello = TestSupport.hexBytes(String(try XCTUnwrap(lines.first { $0.hasPrefix("hello") }).dropFirst(5)))
        let receipt = TestSupport.hexBytes(String(try XCTUnwrap(lines.first { $0.hasPrefix("receipt") }).dropFirst(7)))
        var zeroed = hello
        for i in 8 ..< 12 { zeroed[i] = 0 }
        XCTAssertEqual(SimChecksum.crc32(zeroed), 0xD85A_FD5D)
        var zr = receipt
        for i in 8 ..< 12 { zr[i] = 0 }
        XCTAssertEqual(SimChecksum.crc32(zr), 0x0CCA_7E2C)
    }

    func testHelloFrameRebuiltFromItsPeerStringMatchesRealBytes() throws {
        let lines = try vectors("invitation-frames.hex")
        let hello = TestSupport.hexBytes(String(try XCTUnwrap(lines.first { $0.hasPrefix("hello") }).dropFirst(5)))
        // The real peer string is "<idString>+<name>\0" at offset 22.
        let nameBytes = Array(hello[22 ..< hello.count - 1])
        let peerString = String(decoding: nameBytes, as: UTF8.self)
        let parts = peerString.split(separator: "+", maxSplits: 1).map(String.init)
        XCTAssertEqual(parts.count, 2)
        let pid = try XCTUnwrap(UInt64(parts[0], radix: 36))
        let peer = SimPeerID(displayName: parts[1], pid64: pid)
        XCTAssertEqual(peer.idString, parts[0], "base-36 round trip of a real 13-char instance name")
        let rebuilt = InvitationFrame.encode(type: .hello, sequence: 0, body: InvitationFrame.helloBody(peer))
        XCTAssertEqual(rebuilt, hello)
        let receipt = InvitationFrame.encode(type: .hello, receipt: true, sequence: 0, body: [])
        XCTAssertEqual(Hex.string(receipt), "07d0000100000000" + "0cca7e2c00000000")
    }

    func testCRC16ARCReproducesEveryRealGCKPacket() throws {
        let packets = try vectors("gck-plaintext-session.hex").map(TestSupport.hexBytes).filter { $0.first == 0xC1 }
        XCTAssertGreaterThan(packets.count, 20)
        for p in packets {
            var z = p
            z[6] = 0; z[7] = 0
            XCTAssertEqual(SimChecksum.crc16ARC(z), UInt16(p[6]) << 8 | UInt16(p[7]), Hex.string(p))
        }
    }

    func testGCKPacketsRebuiltFromTheirFieldsMatchRealBytes() throws {
        let packets = try vectors("gck-plaintext-session.hex").map(TestSupport.hexBytes).filter { $0.first == 0xC1 }
        func u32(_ p: [UInt8], _ o: Int) -> UInt32 { p[o ..< o + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        var checked: Set<UInt8> = []
        for p in packets {
            let src = u32(p, 8), dst = u32(p, 12)
            var rebuilt: [UInt8]?
            switch p[1] {
            case 1: rebuilt = GCKPacket.hello(source: src, destination: dst, token: u32(p, 16))
            case 2: rebuilt = GCKPacket.dd(source: src, destination: dst, sequence: u32(p, 39))
            case 3: rebuilt = GCKPacket.lsa(source: src, destination: dst, sequence: u32(p, 41))
            case 4: rebuilt = GCKPacket.lsaAck(source: src, destination: dst, sequence: UInt16(p[16]) << 8 | UInt16(p[17]))
            case 8: rebuilt = GCKPacket.heartbeat(source: src, destination: dst, sequence: UInt16(p[16]) << 8 | UInt16(p[17]))
            case 5:
                let serial = UInt32(p[28]) | UInt32(p[29]) << 8 | UInt32(p[30]) << 16 | UInt32(p[31]) << 24
                rebuilt = p[16] == 0x05
                    ? GCKPacket.data(source: src, destination: dst, serial: serial, payload: Array(p[36...]))
                    : GCKPacket.dataAck(source: src, destination: dst, serial: serial)
            default: break
            }
            if let r = rebuilt {
                XCTAssertEqual(Hex.string(r), Hex.string(p))
                checked.insert(p[1])
            }
        }
        XCTAssertEqual(checked, [1, 2, 3, 4, 5, 8])
    }

    func testSTUNRequestRebuiltFromItsFieldsMatchesRealBytes() throws {
        // The throwing call stays outside XCTUnwrap: its XCTSkip (no ../shared) must stay a skip.
        let lines = try vectors("gck-plaintext-session.hex")
        let first = TestSupport.hexBytes(try XCTUnwrap(lines.first))
        XCTAssertEqual(Array(first[4 ..< 8]), [0x21, 0x12, 0xA4, 0x42])
        func u32(_ o: Int) -> UInt32 { first[o ..< o + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        // USERNAME value at 24: destination token, zeros, 0001, source token, zeros, 0001.
        let rebuilt = STUN.message(type: 0x0001, transactionID: Array(first[8 ..< 20]), attributes: [
            STUN.username(destinationToken: u32(24), sourceToken: u32(34)),
            STUN.u32(0x8001, u32(48)), STUN.u32(0x8003, u32(56)), STUN.u32(0x8004, u32(64)),
            STUNAttribute(0x802A, Array(first[72 ..< 80])),
        ])
        XCTAssertEqual(Hex.string(rebuilt), Hex.string(first))
    }

    func testInternetChecksumKnownValue() {
        // RFC 1071 example bytes: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2, checksum 0x220d.
        XCTAssertEqual(SimChecksum.onesComplementSum([0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]), 0xDDF2)
        XCTAssertEqual(SimChecksum.internet([0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]), 0x220D)
        XCTAssertEqual(SimChecksum.crc32(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(SimChecksum.crc16ARC(Array("123456789".utf8)), 0xBB3D)
    }

    func testBinaryPlistParsedByPythonPlistlib() throws {
        guard let python = TestSupport.which("python3") else { throw XCTSkip("python3 not installed") }
        let alice = SimPeerID(displayName: "Alice's iPhone ☕", pid64: 0x5A2D_DCB4_2308_149F)
        let bob = SimPeerID(displayName: "Bob's iPad", pid64: 0x0123_4567_89AB_CDEF)
        let cd = ConnectionData.encode(participant: bob.participant, preference: .required,
                                       endpoints: [ConnectionEndpoint(address: [192, 0, 2, 20], port: 16402, token: 0xDEAD_BEEF)])
        let value = InvitationMessage.response(sender: bob, recipient: alice, inviteID: 300, accept: true, connectionData: cd)
        let bytes = BinaryPlistWriter.encode(value)
        XCTAssertEqual(Array(bytes.prefix(8)), Array("bplist00".utf8))
        let script = """
        import plistlib, sys, json
        d = plistlib.loads(sys.stdin.buffer.read())
        print(json.dumps({k: (v.hex() if isinstance(v, bytes) else v) for k, v in d.items()}, sort_keys=True, ensure_ascii=True))
        """
        let (status, out) = try TestSupport.run(python, ["-c", script], stdin: Data(bytes))
        XCTAssertEqual(status, 0, out)
        let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        XCTAssertEqual(parsed["MCNearbyServiceMessageIDKey"] as? Int, 2)
        XCTAssertEqual(parsed["MCNearbyServiceAcceptInviteKey"] as? Bool, true)
        XCTAssertEqual(parsed["MCNearbyServiceInviteIDKey"] as? Int, 300)
        XCTAssertEqual(parsed["MCNearbyServiceSenderPeerIDKey"] as? String, Hex.string(bob.serialized))
        XCTAssertEqual(parsed["MCNearbyServiceRecipientPeerIDKey"] as? String, Hex.string(alice.serialized))
        XCTAssertEqual(parsed["MCNearbyServiceConnectionDataKey"] as? String, Hex.string(cd))
        XCTAssertEqual(parsed.count, 6)
        // Connection data: MC segment 0x80, encryption preference in the low bits, length incl. header, port LE.
        XCTAssertEqual(cd[0], 0x80)
        XCTAssertEqual(cd[1] & 3, 1)
        XCTAssertEqual(Int(cd[2]) << 8 | Int(cd[3]), cd.count)
        XCTAssertEqual(Array(cd.suffix(2)), [0x12, 0x40])

        // A non-ASCII string value and a long string, round-tripped too.
        let long = String(repeating: "x", count: 300)
        let b2 = BinaryPlistWriter.encode(.dict([("k", .string(long)), ("n", .string("Zoë")), ("big", .int(70_000)), ("no", .bool(false))]))
        let (s2, o2) = try TestSupport.run(python, ["-c", script], stdin: Data(b2))
        XCTAssertEqual(s2, 0, o2)
        let p2 = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(o2.utf8)) as? [String: Any])
        XCTAssertEqual(p2["k"] as? String, long)
        XCTAssertEqual(p2["n"] as? String, "Zoë")
        XCTAssertEqual(p2["big"] as? Int, 70_000)
        XCTAssertEqual(p2["no"] as? Bool, false)
    }

    func testPeerIDDerivedValues() {
        // From the spec: int("1ddatjp8m3xy7", 36) == 0x5a2ddcb42308149f, participant 2308149F.
        let p = SimPeerID(displayName: "the-air", pid64: 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(p.idString, "1ddatjp8m3xy7")
        XCTAssertEqual(p.participantHex, "2308149F")
        XCTAssertEqual(p.displayNameAndPID, "the-air,2308149F")
        XCTAssertEqual(SimPeerID(displayName: "x", pid64: 5).idString, "0000000000005")
        XCTAssertEqual(SimPeerID(displayName: "x", pid64: .max).idString.count, 13)
    }
}
