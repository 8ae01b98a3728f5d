import PeerscopeCore
import XCTest
import PeerscopePlugins

final class MPCIdentityTests: XCTestCase {
    /// The MPC advertisement of spec §1.1: instance = base-36 idString, TXT `_d` = display name, app keys
    /// with a leading `_` escaped as `__`.
    func testMPCAnnouncementGivesPeerIDParticipantDisplayNameAndInfo() throws {
        var b = DNSBuilder(an: 1, ar: 2)
        let inst = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]
        b.ptr("_chat._tcp.local", inst, ttl: 4500)
        b.srv(inst, target: "7f3e1546-aaaa-bbbb-cccc-9fec010a93c6.local", port: 57389, ttl: 120)
        b.txt(inst, ["_d=the-air", "__private=yes", "room=lobby", "flag"], ttl: 4500)
        let (m, problems) = DNSMessage.parse(b.payload)
        XCTAssertEqual(problems, [])
        let msg = try XCTUnwrap(m)

        guard case .ptr(let target) = msg.answers[0].data else { return XCTFail() }
        let name = try XCTUnwrap(DNSSD.instanceName(target))
        XCTAssertEqual(name.instance, "1ddatjp8m3xy7")
        XCTAssertEqual(name.service.description, "_chat._tcp.local")
        guard case .txt(let raw) = msg.additionals[1].data else { return XCTFail() }
        let txt = DNSSD.TXTRecord(raw)
        let id = try XCTUnwrap(DNSSD.mpcIdentity(instance: name, txt: txt))
        // int("1ddatjp8m3xy7", 36) == 0x5a2ddcb42308149f, participant = low 31 bits (spec §1.1, [MCW]).
        XCTAssertEqual(id.peerID, 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(id.participantID, 0x2308_149F)
        XCTAssertEqual(id.participantHex, "2308149F")
        XCTAssertEqual(id.idString, "1ddatjp8m3xy7")
        XCTAssertEqual(id.displayName, "the-air")
        XCTAssertEqual(id.discoveryInfo, ["_private": "yes", "room": "lobby", "flag": ""])
        XCTAssertNil(id.discoveryInfo["_d"])
    }

    func testParticipantIDDropsTheTopBitOfTheLow32() throws {
        // 0x...F308149F: bit 31 set in the low word, the participant ID clears it.
        let pid64: UInt64 = 0x0123_4567_F308_149F
        let label = PeerIdentity.idString(pid64)
        XCTAssertEqual(label.count, 13)
        let name = try XCTUnwrap(DNSSD.instanceName(DNSName(labels: [label, "_x", "_tcp", "local"])))
        let id = try XCTUnwrap(DNSSD.mpcIdentity(instance: name, txt: nil))
        XCTAssertEqual(id.peerID, pid64)
        XCTAssertEqual(id.participantHex, "7308149F")
        XCTAssertNil(id.displayName)
    }

    func testNonMPCInstancesHaveNoPeerID() {
        for label in ["Luca’s iMac", "1ddatjp8m3xy", "1ddatjp8m3xy7z", "1ddatjp8m3-y7", "zzzzzzzzzzzzz"] {
            let n = DNSSD.instanceName(DNSName(labels: [label, "_smb", "_tcp", "local"]))
            XCTAssertNotNil(n, label)
            XCTAssertNil(n?.peerID, label)  // zzzzzzzzzzzzz overflows 64 bits
        }
        // MPC only registers _tcp services.
        let udp = DNSSD.instanceName(DNSName(labels: ["1ddatjp8m3xy7", "_x", "_udp", "local"]))
        XCTAssertNil(udp.flatMap { DNSSD.mpcIdentity(instance: $0, txt: nil) })
    }

    func testServiceTypesAndSubtypes() {
        XCTAssertEqual(DNSSD.serviceType(DNSName(labels: ["_chat", "_tcp", "local"]))?.description, "_chat._tcp.local")
        XCTAssertEqual(DNSSD.serviceType(DNSName(labels: ["8fb207de", "_sub", "_apple-mobdev2", "_tcp", "local"]))?.description,
                       "_apple-mobdev2._tcp.local")
        XCTAssertNil(DNSSD.serviceType(DNSName(labels: ["Lucas-iMac", "local"])))
        XCTAssertNil(DNSSD.serviceType(DNSName(labels: ["_services", "_dns-sd", "_udp", "local"])))
        XCTAssertNil(DNSSD.instanceName(DNSName(labels: ["8fb207de", "_sub", "_apple-mobdev2", "_tcp", "local"])))
        // Instance labels may contain dots.
        XCTAssertEqual(DNSSD.instanceName(DNSName(labels: ["a.b c", "_http", "_tcp", "local"]))?.instance, "a.b c")
    }
}
