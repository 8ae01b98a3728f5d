import Foundation
import PeerscopeCore
import PeerscopePlugins
import XCTest

/// GCK packets that carry app payloads other than inner kind 5, and DD/LSA bodies with the
/// "compressed" flag bit: payload bytes never appear without --show-payloads, app messages are found.
final class GCKPayloadTests: XCTestCase {
    let s = Endpoint(v4(10, 2, 0, 1), 16402), d = Endpoint(v4(10, 2, 0, 2), 16401)
    let src: UInt32 = 0x294C_B86B, dst: UInt32 = 0x4138_0245
    let secretHex = Array(Seeds.secret.utf8).map { String(format: "%02x", $0) }.joined()

    func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

    /// A GCK packet of `type` with `body`, flags and a valid CRC.
    func gck(_ type: UInt8, _ body: [UInt8], flags: UInt16 = 0) -> [UInt8] {
        let total = 16 + body.count
        var p: [UInt8] = [0xC1, type, UInt8(total >> 8), UInt8(total & 0xFF), UInt8(flags >> 8), UInt8(flags & 0xFF), 0, 0]
            + be(src) + be(dst) + body
        TestCRC.sealGCK(&p)
        return p
    }

    /// The Data inner header with `kind`, participants repeated little-endian.
    func inner(_ kind: UInt8, seq: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [kind, 0, 0, 0] + Array(be(src).reversed()) + Array(be(dst).reversed()) + [seq, 0, 0, 0] + [2, seq, 0, 4] + payload
    }

    func sendAll(_ h: Harness) {
        let chat = Array(Seeds.chat.utf8)
        h.udp(gck(5, inner(5, seq: 0, chat)), s, d)                  // reliable data, as observed
        h.udp(gck(5, inner(6, seq: 1, chat)), s, d)                  // another inner kind carrying a message
        h.udp(gck(5, inner(9, seq: 2, chat)), s, d)
        h.udp(gck(5, inner(7, seq: 3, [UInt8](repeating: 0, count: 8))), s, d)  // acknowledgement
        h.udp(gck(10, inner(5, seq: 4, chat)), s, d)                 // type 10 with a Data-like inner header
        h.udp(gck(10, chat), s, d)                                   // type 10, the message right after the header
        h.udp(gck(12, chat), s, d)                                   // unknown type: not read, not shown
    }

    func testNoPayloadBytesWithoutShowPayloadsAndEveryMessageFound() {
        let h = Harness()
        sendAll(h)
        let text = h.allText
        XCTAssertFalse(text.contains(Seeds.secret), text)
        XCTAssertFalse(text.lowercased().contains(secretHex), "payload shown as hex: \(text)")
        for m in h.messages where m.plugin.hasPrefix("gck") {
            XCTAssertNil(m.field("restHex"), "\(m.plugin)/\(m.type)")
            XCTAssertNil(m.field("bodyHex"), "\(m.plugin)/\(m.type)")
        }
        XCTAssertEqual(h.events(.appChat).count, 5)
        let gckTypes = h.messages.filter { $0.plugin.hasPrefix("gck") }.map { "\($0.plugin)/\($0.type)" }
        XCTAssertEqual(gckTypes, ["gck-data/data", "gck-data/data", "gck-data/data", "gck-data/ack",
                                  "gck-other/type-10", "gck-other/type-10", "gck-other/unknown"])
        // Sizes are there.
        XCTAssertEqual(h.messages.first { $0.type == "ack" }?.field("payloadSize"), .int(8))
        XCTAssertEqual(h.messages.last?.field("bodySize"), .int(Int64(Seeds.chat.utf8.count)))
        // Typed peer events for the other types: type 10 is data, unknown types `gck.other`.
        let data = h.events(.gckData)
        XCTAssertEqual(data.count, 6)
        XCTAssertEqual(data.filter { $0.attrs["gckType"] == "10" }.count, 2)
        XCTAssertEqual(h.events(GCKOtherPlugin.otherEvent).map { $0.attrs["gckType"] }, ["12"])
        XCTAssertEqual(data.map { $0.from.participantID }, Array(repeating: src, count: 6))
        // Every kind and attribute these packets produce is declared (no sample has an unknown GCK type).
        XCTAssertEqual(h.events.flatMap { EventCatalogue.problems($0) }, [])
    }

    func testShowPayloadsShowsTheBytes() {
        let h = Harness(showPayloads: true)
        sendAll(h)
        let hexFields = h.messages.compactMap { ($0.field("restHex") ?? $0.field("bodyHex"))?.stringValue }
        // Bodies are shown up to 64 bytes: look for the start of the message.
        let start = Array(#"{"sender""#.utf8).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(hexFields.filter { $0.contains(start) }.count, 6, "\(hexFields)")
        XCTAssertEqual(hexFields.filter { $0.contains(secretHex) }.count, 5)
    }

    func testAcknowledgementsAreNotHandedOn() {
        // Zero bytes after an ack must not continue a message cut across Data packets.
        let h = Harness()
        let chat = Array(Seeds.chat.utf8)
        h.udp(gck(5, inner(5, seq: 0, Array(chat[..<30]))), s, d)
        h.udp(gck(5, inner(7, seq: 0, [UInt8](repeating: 0, count: 8))), s, d)
        h.udp(gck(5, inner(5, seq: 1, Array(chat[30...]))), s, d)
        h.finish()
        XCTAssertEqual(h.events(.appChat).count, 1)
        XCTAssertTrue(h.diagnostics.isEmpty, "\(h.diagnostics.map(\.line))")
    }

    // MARK: DD/LSA with flag bit 0 ("compressed", unconfirmed)

    static let ddBody: [UInt8] = hex("0001294cb86b000108323934434238364200014138024500000038")
    static let lsaBody: [UInt8] = hex("00000001294cb86b000108323934434238364200014138024500000038")
    /// `zlib.compress(ddBody)`.
    static let ddZlib: [UInt8] = hex("789c6360d4f4d991cdc0c8616469e2ec6461e6c4c0e868c1e4cac0c0600100453e0470")
    /// u16 length of `lsaBody`, then `lsaBody` as raw deflate (wbits -15).
    static let lsaDeflateWithLength: [UInt8] = hex("001d63606060d4f4d991cdc0c8616469e2ec6461e6c4c0e868c1e4cac0c0600100")

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next(), let v = UInt8(String([a, b]), radix: 16) { out.append(v) }
        return out
    }

    func nodes(_ m: DecodedMessage?) -> [String] {
        (m?.field("nodes")?.arrayValue ?? []).compactMap { $0["node"]?.stringValue }
    }

    func testFlaggedBodiesAreReadPlainOrInflated() {
        let h = Harness(Harness.session)
        h.udp(gck(2, Self.ddBody, flags: 1), s, d)                   // flag set, body plain (bit means something else)
        h.udp(gck(2, Self.ddZlib, flags: 1), s, d)                   // zlib
        h.udp(gck(3, Self.lsaDeflateWithLength, flags: 1), s, d)     // u16 length + raw deflate
        h.udp(gck(3, Self.lsaBody, flags: 0), s, d)
        XCTAssertEqual(h.messages.map { $0.field("compressed")?.stringValue ?? "-" }, ["no", "zlib", "deflate+length", "-"])
        for m in h.messages { XCTAssertEqual(nodes(m), ["294CB86B"], m.type) }
        XCTAssertEqual(h.events(.gckDD).map { $0.attrs["compressed"] }, ["no", "zlib"])
        XCTAssertEqual(h.events(.gckLSA).map { $0.attrs["sn"] }, ["0", "0"])
        XCTAssertTrue(h.diagnostics.isEmpty, "\(h.diagnostics.map(\.line))")
    }

    func testFlaggedBodyThatReadsNeitherWay() {
        let h = Harness(Harness.session)
        var broken = Self.ddZlib
        broken[8] ^= 0xFF
        h.udp(gck(2, broken, flags: 1), s, d)
        XCTAssertEqual(h.messages.first?.field("compressed")?.stringValue, "unreadable")
        XCTAssertEqual(h.diagnostics.map(\.id), ["gck.dd.body"])
        XCTAssertEqual(h.events(.gckDD).count, 1)
    }
}

/// Issue 14: one probe per protocol family. GCK datagrams are classified once by `GCKFamily` and run
/// by the one member plugin of their type; no member probes.
extension GCKPayloadTests {
    func testGCKIsProbedOncePerPacketAndDispatchedByType() {
        let t = self
        let h = Harness()
        t.sendAll(h)
        h.udp(t.gck(8, [0, 2, 0, 1]), t.s, t.d)          // heartbeat
        h.udp(t.gck(1, [UInt8](repeating: 0, count: 18)), t.s, t.d)  // hello
        let probes = h.pipeline.probeCounts
        XCTAssertEqual(probes["gck"], 9, "one family probe per GCK packet")
        XCTAssertEqual(probes.keys.filter { $0.hasPrefix("gck-") }, [], "no member plugin probes")
        let byPlugin = h.messages.filter { $0.plugin.hasPrefix("gck") }.map(\.plugin)
        XCTAssertEqual(byPlugin, ["gck-data", "gck-data", "gck-data", "gck-data", "gck-other", "gck-other", "gck-other",
                                  "gck-heartbeat", "gck-hello"])
    }

    func testOffMPCPortsTheFamilyProbeStillChecksLengthAndCRC() {
        let t = self
        let h = Harness()
        let a = Endpoint(v4(10, 2, 0, 1), 50000), b = Endpoint(v4(10, 2, 0, 2), 50001)
        var bad = t.gck(8, [0, 2, 0, 1])
        bad[7] ^= 1
        h.udp(bad, a, b)                          // bad CRC on an ephemeral port: not GCK
        h.udp(t.gck(8, [0, 2, 0, 1]), a, b)       // good: a heartbeat
        XCTAssertEqual(h.events(.gckHeartbeat).count, 1)
        XCTAssertEqual(h.pipeline.unclaimed["udp"], 1)
        XCTAssertEqual(h.pipeline.probeCounts["gck"], 2)
    }
}
