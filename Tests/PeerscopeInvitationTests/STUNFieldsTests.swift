import XCTest
import PeerscopeCore
@testable import PeerscopePlugins
import PeerscopeSimulator

/// Issue 13: the direct writers of STUN and GCK messages (`STUNFields`, `GCKDataFields`,
/// `GCKHeartbeatFields`) write the bytes of the field lists they replace, on random messages: every
/// attribute the writer treats apart (addresses of both families, good and garbled, MPC and text and
/// binary usernames, error codes with text needing escapes, priorities, tie-breakers, fingerprints
/// checked or not, software, unknown attributes of every length) and random GCK Data and Heartbeat
/// packets (every kind byte, short bodies, with and without `--show-payloads`).
final class STUNFieldsTests: XCTestCase {
    static func bytes(_ n: Int, _ rng: inout SimRandom) -> [UInt8] { (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } }

    static func attribute(_ rng: inout SimRandom) -> (UInt16, [UInt8]) {
        let types: [UInt16] = [0x0001, 0x0020, 0x0006, 0x0009, 0x0024, 0x8029, 0x802A, 0x8028, 0x8022, 0x8001, 0x0008, 0x0025,
                               UInt16.random(in: 0 ... 0xFFFF, using: &rng)]
        let t = types[Int.random(in: 0 ..< types.count, using: &rng)]
        var v: [UInt8]
        switch (t, Int.random(in: 0 ..< 4, using: &rng)) {
        case (0x0001, 0...1), (0x0020, 0...1):
            v = [0, 1] + bytes(6, &rng)
        case (0x0001, 2), (0x0020, 2):
            v = [0, 2] + bytes(18, &rng)
        case (0x0006, 0):
            v = bytes(4, &rng) + [0, 0, 0, 0, 0, 1] + bytes(4, &rng) + [0, 0, 0, 0, 0, 1]
        case (0x0006, 1):
            v = Array("ufrag\(rng.next() % 1000):remote \"q\"\\".utf8)
        case (0x0009, _), (0x8022, _):
            v = [0, 0, UInt8.random(in: 0 ... 7, using: &rng), UInt8.random(in: 0 ... 99, using: &rng)]
                + Array("Bad \"request\"\t\u{01} é😀".utf8) + (rng.next() % 2 == 0 ? [0xFF, 0xC3] : [])
        default:
            v = bytes(Int.random(in: 0 ... 24, using: &rng), &rng)
        }
        return (t, v)
    }

    static func stunPayload(_ rng: inout SimRandom) -> [UInt8] {
        var attrs: [UInt8] = []
        for _ in 0 ..< Int.random(in: 0 ... 7, using: &rng) {
            let (t, v) = attribute(&rng)
            attrs += [UInt8(t >> 8), UInt8(t & 0xFF), UInt8(v.count >> 8), UInt8(v.count & 0xFF)] + v
            attrs += Array(repeating: 0, count: (4 - v.count % 4) % 4)
        }
        let type = UInt16.random(in: 0 ... 0x3FFF, using: &rng) & (rng.next() % 2 == 0 ? 0x0111 : 0x3FFF)
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(attrs.count >> 8), UInt8(attrs.count & 0xFF), 0x21, 0x12, 0xA4, 0x42]
            + bytes(12, &rng) + attrs
    }

    func members(_ w: some MessageFieldsWriter) -> (direct: String, list: String) {
        var direct = JSONBytes(), list = JSONBytes()
        w.writeMembers(to: &direct)
        list.members(w.fields)
        return (String(decoding: direct.bytes, as: UTF8.self), String(decoding: list.bytes, as: UTF8.self))
    }

    func testSTUNWriterWritesTheFieldListsBytesOnRandomMessages() throws {
        var rng = SimRandom(seed: 0x57_0E)
        var checked = 0, addresses = 0
        for _ in 0 ..< 3000 {
            guard let m = STUNMessage(Bytes(Self.stunPayload(&rng))) else { continue }
            for ok in [nil, true, false] as [Bool?] {
                let (direct, list) = members(STUNFields(message: m, txid: m.transactionID.hex, fingerprintOK: ok))
                XCTAssertEqual(direct, list)
                if direct != list { return }
                if direct.contains("\"address\"") { addresses += 1 }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 6000)
        XCTAssertGreaterThan(addresses, 300, "addresses of both families were written")
    }

    func testGCKWritersWriteTheFieldListsBytesOnRandomPackets() throws {
        var rng = SimRandom(seed: 0x6C_4B)
        var data = 0
        for i in 0 ..< 3000 {
            var b = Self.bytes(16 + Int.random(in: 0 ... 80, using: &rng), &rng)
            if i % 3 == 0 { b[16 % b.count] = [5, 7][i % 2] }
            guard let h = GCKHeader(Bytes(b)) else { continue }
            let x = h.body.u16be(2)
            XCTAssertEqual(members(GCKHeartbeatFields(h, sn: h.body.u16be(0), x: x)).direct,
                           members(GCKHeartbeatFields(h, sn: h.body.u16be(0), x: x)).list)
            XCTAssertEqual(members(GCKHeartbeatFields(h, sn: nil, x: x)).direct, members(GCKHeartbeatFields(h, sn: nil, x: x)).list)
            guard let inner = GCKDataInner(h.body) else { continue }
            for show in [false, true] {
                let w = GCKDataFields(h, inner, checksumSeen: rng.next() % 2 == 0, showPayloads: show)
                let (direct, list) = members(w)
                XCTAssertEqual(direct, list)
                if direct != list { return }
                // The list is the one the plugin built before (`GCKDecoding.common` and the Data members).
                XCTAssertEqual(Array(w.fields.prefix(8)).map(\.0), GCKDecoding.common(h, .empty).map(\.0))
                data += 1
            }
        }
        XCTAssertGreaterThan(data, 1000)
    }

    /// Issue 13: the direct writers of GCK Hello and LSAACK and of invitation Receipts and Accepts write the
    /// bytes of the field lists they replace (the lists the plugins built before), on random packets
    /// and values: short bodies, no SN, every flag and CRC, acknowledged types known and unknown.
    func testHelloLSAACKReceiptAndAcceptWritersWriteTheFieldListsBytes() throws {
        var rng = SimRandom(seed: 0x4E_11)
        var n = 0
        for i in 0 ..< 3000 {
            let b = Self.bytes(16 + Int.random(in: 0 ... 90, using: &rng), &rng)
            guard let h = GCKHeader(Bytes(b)) else { continue }
            let hello = GCKHelloFields(h)
            XCTAssertEqual(members(hello).direct, members(hello).list)
            XCTAssertEqual(hello.fields.map(\.0), GCKDecoding.common(h, .empty).map(\.0) + ["bodyHex"])
            XCTAssertEqual(hello.fields.last.map { "\($0.1)" }, "\(JSONValue.string(h.body.prefix(64).hex))")
            for sn in [h.body.u16be(0), nil] {
                let ack = GCKLSAACKFields(h, sn: sn)
                XCTAssertEqual(members(ack).direct, members(ack).list)
                XCTAssertEqual(ack.fields.count, 8 + (sn == nil ? 0 : 1))
            }
            let seq = UInt32.random(in: 0 ... .max, using: &rng), crc = i % 7 == 0 ? UInt32(i) : UInt32.random(in: 0 ... .max, using: &rng)
            let types = ["Hello", "Data", "Accept", "0x" + String(i % 256, radix: 16), "é \"x\""]
            let receipt = InvitationFrameFields(ackedType: types[i % types.count], seq: seq, matched: i % 2 == 0, crc: crc)
            XCTAssertEqual(members(receipt).direct, members(receipt).list)
            XCTAssertEqual(receipt.fields.map(\.0), ["ackedType", "seq", "matched", "crc"])
            let accept = InvitationFrameFields(seq: seq, crc: crc)
            XCTAssertEqual(members(accept).direct, members(accept).list)
            XCTAssertEqual(accept.fields.map(\.0), ["seq", "crc"])
            n += 1
        }
        XCTAssertGreaterThan(n, 2000)
    }

    /// Issue 13, `peerscope decode` of the group file: the keep-alive's direct writer (`KeepAliveFields`,
    /// the most frequent app message) writes the bytes of the field list it replaces, for device IDs
    /// needing escapes and timestamps of every JSON kind, with either member missing; and the plugin's
    /// line through the pipeline is the field list's line.
    func testKeepAliveWriterWritesTheFieldListsBytes() throws {
        let ids: [String?] = [nil, "", "iPad-7", "a \"quoted\" \\ id\t\u{01}", "é😀", String(repeating: "x", count: 300)]
        let stamps: [JSONValue?] = [nil, .int(1_700_000_000), .int(-3), .double(1_700_000_000.25), .double(150), .string("2026-11-26"),
                                    .null, .bool(true), .array([.int(1), .string("a")]), .object([("k", .uint(7))])]
        var n = 0
        for id in ids {
            for ts in stamps {
                let (direct, list) = members(KeepAliveFields(deviceId: id, timestamp: ts))
                XCTAssertEqual(direct, list)
                n += 1
            }
        }
        XCTAssertEqual(n, 60)
        // Through the plugin: the message's writer gives the line its field list gives.
        let ctx = PluginContext(options: DecodeOptions(wantsMessages: true))
        ctx.wantsEvents = false
        var got: [DecodedMessage] = []
        ctx.onMessage = { got.append($0) }
        for text in [#"{"type":"keep_alive","timestamp":1700000000.5,"deviceId":"dev \"1\""}"#, #"{"type":"keep_alive"}"#,
                     #"{"type":"keep_alive","deviceId":42}"#] {
            let payload = Bytes(Array(text.utf8))
            let info = FrameInfo(input: 0, number: 1, t: 0, capturedLength: payload.count, originalLength: payload.count,
                                 linkType: LinkType.ethernet)
            let input = PluginInput(frame: info, delivery: .carried(carrier: "app.json", key: "keep_alive", parent: "app-json"),
                                    flow: nil, payload: payload)
            ctx.currentInput = input
            ctx.currentPlugin = AppKeepAlivePlugin.descriptor.id
            AppKeepAlivePlugin().decode(input, ctx)
        }
        XCTAssertEqual(got.count, 3)
        for m in got {
            var direct: [UInt8] = [], list: [UInt8] = []
            m.writeJSONLine(to: &direct, includeInput: false)
            DecodedMessage(plugin: m.plugin, type: m.type, frame: m.frame, flow: m.flow, fields: m.fields).writeJSONLine(to: &list, includeInput: false)
            XCTAssertEqual(String(decoding: direct, as: UTF8.self), String(decoding: list, as: UTF8.self))
        }
        XCTAssertTrue(String(decoding: { var b: [UInt8] = []; got[0].writeJSONLine(to: &b, includeInput: false); return b }(), as: UTF8.self)
            .contains(#""deviceId":"dev \"1\"","timestamp":1700000000.5"#))
    }
}
