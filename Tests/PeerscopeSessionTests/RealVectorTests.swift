import PeerscopeCore
import PeerscopePlugins
import XCTest

/// The plaintext MPC session from ../shared/corpus/mpc-vectors (two macOS peers on 16401/16402).
final class RealVectorTests: XCTestCase {
    // From the MAPPED-ADDRESS attributes: the checks were between 192.168.1.218:16401 and :16402.
    let p16401 = Endpoint(v4(192, 168, 1, 218), 16401)
    let p16402 = Endpoint(v4(192, 168, 1, 218), 16402)

    /// Direction of each STUN line: requests 1 and 5 come from 16402 (their responses map 16402),
    /// request 2 from 16401; responses go back.
    func stunFlows() -> [(Endpoint, Endpoint)] {
        [(p16402, p16401), (p16401, p16402), (p16402, p16401), (p16401, p16402), (p16402, p16401), (p16401, p16402)]
    }

    /// Independent TLV walk: attribute types of a STUN message.
    func attributeTypes(_ p: [UInt8]) -> [UInt16] {
        var out: [UInt16] = []
        var o = 20
        while o + 4 <= p.count {
            let t = UInt16(p[o]) << 8 | UInt16(p[o + 1])
            let l = Int(p[o + 2]) << 8 | Int(p[o + 3])
            out.append(t)
            o += 4 + ((l + 3) / 4) * 4
        }
        return out
    }

    func testICEChecksDecodeWithMatchedTransactions() throws {
        let lines = try Shared.gckSession()
        XCTAssertGreaterThanOrEqual(lines.count, 6)
        let h = Harness()
        for (i, (s, d)) in stunFlows().enumerated() { h.udp(lines[i], s, d) }
        h.finish()

        let stunMessages = h.messages.filter { $0.plugin == "stun" }
        XCTAssertEqual(stunMessages.count, 6)
        for (i, line) in lines.prefix(6).enumerated() {
            let type = UInt16(line[0]) << 8 | UInt16(line[1])
            let txid = Bytes(Array(line[8 ..< 20])).hex
            let m = stunMessages[i]
            XCTAssertEqual(m.type, type == 0x0001 ? "binding-request" : "binding-success", "line \(i + 1)")
            XCTAssertEqual(m.field("txid"), .string(txid))
            // Every attribute the bytes carry is listed, with its type.
            let listed = (m.field("attributes")?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
            let expected = attributeTypes(line).map { t -> String in
                let s = String(t, radix: 16)
                return "0x" + String(repeating: "0", count: 4 - s.count) + s
            }
            XCTAssertEqual(listed, expected, "line \(i + 1)")
            for apple in [0x8001, 0x8003, 0x8004] {
                XCTAssertTrue(listed.contains("0x" + String(apple, radix: 16)), "line \(i + 1) lacks \(apple)")
            }
            // USERNAME is binary: shown as hex and as the two tokens, never as text.
            let user = (m.field("attributes")?.arrayValue ?? []).first { $0["type"] == .string("0x0006") }
            XCTAssertEqual(user?["hex"], .string(Bytes(Array(line[24 ..< 44])).hex))
            XCTAssertEqual(user?["to"], .string(Bytes(Array(line[24 ..< 28])).hex))
            XCTAssertEqual(user?["from"], .string(Bytes(Array(line[34 ..< 38])).hex))
        }
        // Line 6 carries the 0x8009 candidate blob, lines 3, 4, 6 the 0x8005 attribute.
        XCTAssertTrue(attributeTypes(lines[5]).contains(0x8009))

        let requests = h.events(.iceRequest), successes = h.events(.iceSuccess)
        XCTAssertEqual(requests.count, 3)
        XCTAssertEqual(successes.count, 3)
        let requestTx = Set(requests.compactMap { $0.attrs["txid"] })
        let successTx = Set(successes.compactMap { $0.attrs["txid"] })
        XCTAssertEqual(requestTx, successTx)
        XCTAssertTrue(successes.allSatisfy { $0.attrs["matched"] == "true" })
        // The mapped address of each success is the requester's endpoint.
        for s in successes {
            let req = try XCTUnwrap(requests.first { $0.attrs["txid"] == s.attrs["txid"] })
            XCTAssertEqual(s.attrs["mapped"], req.flow?.src.description)
            XCTAssertEqual(s.flow?.src, req.flow?.dst)
        }
        XCTAssertEqual(requests.first { $0.attrs["txid"] == Bytes(Array(lines[4][8 ..< 20])).hex }?.attrs["useCandidate"], "true")
        XCTAssertTrue(h.events(.iceUnanswered).isEmpty)
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))")
    }

    func testUnansweredCheckIsReported() throws {
        let lines = try Shared.gckSession()
        let h = Harness()
        h.udp(lines[0], p16402, p16401)                      // never answered
        h.udp(lines[1], p16401, p16402)
        h.udp(lines[2], p16402, p16401)                      // answers line 2
        h.udp(lines[0], p16402, p16401, dt: 2 * CaptureTime.second)  // retransmission of line 1
        h.udp(lines[4], p16402, p16401, dt: 15 * CaptureTime.second) // a later check, unanswered at the end
        h.finish(after: CaptureTime.second)
        let un = h.events(.iceUnanswered)
        XCTAssertEqual(un.count, 2)
        let first = try XCTUnwrap(un.first { $0.attrs["txid"] == Bytes(Array(lines[0][8 ..< 20])).hex })
        XCTAssertEqual(first.attrs["retransmits"], "1")
        XCTAssertEqual(first.evidence, .frame(input: 0, frame: 1))
        XCTAssertNil(first.attrs["atEnd"])
        let last = try XCTUnwrap(un.first { $0.attrs["txid"] == Bytes(Array(lines[4][8 ..< 20])).hex })
        XCTAssertEqual(last.attrs["atEnd"], "true")
        XCTAssertEqual(h.events(.iceRequest).filter { $0.attrs["retransmit"] == "1" }.count, 1)
    }

    func gckKind(_ type: UInt8) -> EventKind? {
        switch type {
        case 1: .gckHello
        case 2: .gckDD
        case 3: .gckLSA
        case 4: .gckLSAACK
        case 5: .gckData
        case 8: .gckHeartbeat
        default: nil
        }
    }

    func testGCKPacketsDecodeInOrderWithValidCRC() throws {
        let lines = try Shared.gckSession()
        let gck = lines.filter { $0.first.map { $0 & 0xF0 == 0xC0 } ?? false }
        XCTAssertEqual(gck.count, lines.count - 6)
        let participants: Set<UInt32> = [0x294C_B86B, 0x4138_0245]

        // What the file says, read independently: types from byte 1, CRC from bytes 6-7.
        var expected: [EventKind] = []
        for p in gck {
            XCTAssertEqual(Int(p[2]) << 8 | Int(p[3]), p.count)
            var z = p
            z[6] = 0; z[7] = 0
            XCTAssertEqual(TestCRC.crc16ARC(z), UInt16(p[6]) << 8 | UInt16(p[7]))
            expected.append(try XCTUnwrap(gckKind(p[1])))
        }
        XCTAssertEqual(Array(expected.prefix(6)), [.gckHello, .gckHello, .gckDD, .gckDD, .gckLSA, .gckLSAACK])
        XCTAssertEqual(Array(expected.suffix(2)), [.gckHeartbeat, .gckHeartbeat])
        XCTAssertTrue(expected.dropFirst(6).dropLast(2).allSatisfy { $0 == .gckData })

        let h = Harness()
        for p in gck {
            let src = UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
            // Which port each participant used is not in the dump; any consistent choice will do.
            h.udp(p, src == 0x294C_B86B ? p16402 : p16401, src == 0x294C_B86B ? p16401 : p16402)
        }
        h.finish()
        let got = h.events.filter { $0.kind.family == "gck" }
        XCTAssertEqual(got.map(\.kind), expected)
        XCTAssertTrue(h.diagnostics.filter { $0.id == "gck.bad_crc" || $0.id == "gck.length" }.isEmpty)
        XCTAssertTrue(h.events(.checksumError).isEmpty)
        XCTAssertTrue(h.messages.allSatisfy { $0.field("crcValid") == .bool(true) })
        for (e, p) in zip(got, gck) {
            let src = UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
            let dst = UInt32(p[12]) << 24 | UInt32(p[13]) << 16 | UInt32(p[14]) << 8 | UInt32(p[15])
            XCTAssertEqual(e.from.participantID, src)
            XCTAssertEqual(e.to.participantID, dst)
            XCTAssertTrue(participants.contains(src) && participants.contains(dst))
            XCTAssertTrue(e.source.hasPrefix("gck-"))
        }
        // Data: 69-byte packets are data with a 33-byte payload, 44-byte ones the acknowledgements.
        let data = got.filter { $0.kind == .gckData }
        for (e, p) in zip(data, gck.filter { $0[1] == 5 }) {
            let seq = UInt32(p[28]) | UInt32(p[29]) << 8 | UInt32(p[30]) << 16 | UInt32(p[31]) << 24
            XCTAssertEqual(e.attrs["seq"], String(seq))
            if p.count == 69 {
                XCTAssertEqual(e.attrs["kind"], "data")
                XCTAssertEqual(e.attrs["payloadSize"], "33")
            } else {
                XCTAssertEqual(p.count, 44)
                XCTAssertEqual(e.attrs["kind"], "ack")
            }
        }
        // The observed inner checksum reading holds on every real Data packet.
        XCTAssertTrue(h.messages.filter { $0.plugin == "gck-data" }.allSatisfy { $0.field("innerChecksumAsObserved") == .bool(true) })
        // DD and LSA bodies read as node records naming the two participants.
        let dd = try XCTUnwrap(h.messages.first { $0.plugin == "gck-dd" })
        let node = try XCTUnwrap(dd.field("nodes")?.arrayValue?.first)
        XCTAssertEqual(node["node"], .string("294CB86B"))
        XCTAssertEqual(node["name"], .string("294CB86B"))
        XCTAssertEqual(node["neighbours"]?.arrayValue?.first?["id"], .string("41380245"))
        XCTAssertTrue(h.diagnostics.isEmpty, "\(h.diagnostics.map(\.line))")
    }

    /// A plugin that records what GCK Data hands on.
    final class PayloadSink: DecoderPlugin {
        nonisolated(unsafe) static var payloads: [[UInt8]] = []
        static let descriptor = PluginDescriptor(id: "test-sink", summary: "", claims: [.carried("gck.data")], messageTypes: [])
        init() {}
        func decode(_ input: PluginInput, _ ctx: PluginContext) { Self.payloads.append(input.payload.array) }
    }

    func testDataPayloadHandedOnFromByte36() throws {
        let lines = try Shared.gckSession()
        PayloadSink.payloads = []
        let h = Harness(Harness.session + [AppJSONPlugin.self, PayloadSink.self])
        for p in lines.dropFirst(6) { h.udp(p, p16402, p16401) }
        let dataPackets = lines.filter { $0.count > 1 && $0[0] == 0xC1 && $0[1] == 5 && $0[16] == 5 }
        XCTAssertEqual(dataPackets.count, 8)
        // app-json sees the binary payload first and rejects it; the sink gets each one.
        XCTAssertEqual(PayloadSink.payloads, dataPackets.map { Array($0[36...]) })
        XCTAssertTrue(PayloadSink.payloads.allSatisfy { $0.count == 33 && $0[1] == 1 && $0[15] == 15 })
        XCTAssertTrue(h.events.filter { $0.kind.family == "app" }.isEmpty)
    }

    /// Analysis runs without messages: the same events and diagnostics, no messages built.
    func testEventsDoNotDependOnMessages() throws {
        let lines = try Shared.gckSession()
        var runs: [Harness] = []
        for wants in [true, false] {
            let h = Harness(wantsMessages: wants)
            for (i, p) in lines.enumerated() { h.udp(p, i % 2 == 0 ? p16402 : p16401, i % 2 == 0 ? p16401 : p16402) }
            for m in Seeds.all { h.udp(gckData(Array(m.utf8)), p16402, p16401) }
            var bad = lines[10]
            bad[20] ^= 0xFF
            h.udp(bad, p16402, p16401)
            h.finish(after: 30 * CaptureTime.second)
            runs.append(h)
        }
        XCTAssertEqual(runs[0].events, runs[1].events)
        XCTAssertEqual(runs[0].diagnostics, runs[1].diagnostics)
        XCTAssertTrue(runs[1].messages.isEmpty)
        XCTAssertGreaterThan(runs[0].events.count, 30)
    }

    func testParticipantHintsResolveThroughDirectory() throws {
        let lines = try Shared.gckSession()
        let dir = PeerDirectory()
        let pid: UInt64 = 0x1234_5678_294C_B86B   // low 31 bits = participant 294cb86b
        dir.learn(peerID: pid, displayName: "Test Mac")
        let h = Harness(Harness.session, directory: dir)
        h.udp(lines[6], p16402, p16401)   // Hello from 294cb86b
        h.udp(lines[7], p16401, p16402)   // Hello from 41380245
        let hello = h.events(.gckHello)
        XCTAssertEqual(hello.count, 2)
        XCTAssertEqual(hello[0].from.peerID, pid)
        XCTAssertEqual(hello[0].from.displayName, "Test Mac")
        XCTAssertNil(hello[0].to.peerID)
        XCTAssertEqual(hello[0].to.participantID, 0x4138_0245)
        XCTAssertEqual(hello[1].to.peerID, pid)
        // The plugins taught the directory nothing.
        XCTAssertEqual(dir.entries.count, 1)
        XCTAssertNil(dir.peerID(forParticipant: 0x4138_0245))
    }

    func testGCKOnEphemeralPortsNeedsValidCRC() throws {
        let lines = try Shared.gckSession()
        let a = Endpoint(v4(10, 0, 0, 1), 50111), b = Endpoint(v4(10, 0, 0, 2), 61222)
        let h = Harness(Harness.session)
        h.udp(lines[28], a, b)                 // valid heartbeat on ephemeral ports: taken
        var bad = lines[29]
        bad[19] ^= 0x01                        // CRC no longer verifies: not GCK as far as the heuristic knows
        h.udp(bad, b, a)
        XCTAssertEqual(h.events(.gckHeartbeat).count, 1)
        XCTAssertEqual(h.pipeline.unclaimed["udp"], 1)
        XCTAssertTrue(h.diagnostics.isEmpty)
    }
}
