import Foundation
import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// The real frames in ../shared/corpus/mpc-vectors/invitation-frames.hex (read at run time).
final class InvitationVectorTests: XCTestCase {
    func vectors() throws -> [String: [UInt8]] {
        guard let shared = sharedDirectory() else { throw XCTSkip("../shared not found") }
        let url = shared.appendingPathComponent("corpus/mpc-vectors/invitation-frames.hex")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw XCTSkip("invitation-frames.hex absent") }
        var out: [String: [UInt8]] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let b = Bytes(hex: String(parts[1])) else { continue }
            out[String(parts[0])] = b.array
        }
        return out
    }

    func testHeadersAndCRCs() throws {
        let v = try vectors()
        let hello = try XCTUnwrap(v["hello"])
        let receipt = try XCTUnwrap(v["receipt"])

        let h = try XCTUnwrap(InvitationFrameHeader(Bytes(hello)))
        XCTAssertEqual(h.type, .hello)
        XCTAssertFalse(h.isReceipt)
        XCTAssertEqual(Int(h.length), hello.count - 16)
        XCTAssertNil(h.problem)
        XCTAssertEqual(h.crc, 0xD85A_FD5D)
        XCTAssertEqual(InvitationFrameHeader.crc(header: Bytes(hello), body: Bytes(hello).suffix(from: 16)), 0xD85A_FD5D)

        let r = try XCTUnwrap(InvitationFrameHeader(Bytes(receipt)))
        XCTAssertTrue(r.isReceipt)
        XCTAssertEqual(r.length, 0)
        XCTAssertEqual(r.crc, 0x0CCA_7E2C)
        XCTAssertEqual(InvitationFrameHeader.crc(header: Bytes(receipt), body: .empty), 0x0CCA_7E2C)
        // Writing the header back gives the same bytes.
        XCTAssertEqual(r.bytes, receipt)
    }

    func testHelloBody() throws {
        // The throwing call stays outside XCTUnwrap: its XCTSkip (no ../shared) must stay a skip.
        let v = try vectors()
        let hello = try XCTUnwrap(v["hello"])
        let parsed = try InvitationHello.parse(Bytes(hello).suffix(from: 16)).get()
        XCTAssertEqual(parsed.idString, "2d9omqtkz17st")
        XCTAssertEqual(parsed.displayName, "Antani")
        XCTAssertEqual(parsed.flags, 6)
        XCTAssertEqual(PeerIdentity.idString(parsed.peerID), "2d9omqtkz17st")
    }

    /// Both real frames through the pipeline: probe accepts, Hello teaches the directory, the receipt
    /// (browser's Hello acknowledged by the advertiser, as in the Logic Remote exchange) matches.
    func testThroughPipeline() throws {
        let v = try vectors()
        let hello = try XCTUnwrap(v["hello"]), receipt = try XCTUnwrap(v["receipt"])
        let h = Harness()
        let conn = TCPConnectionInfo(id: 1, client: endpoint("192.168.1.20", 50123), server: endpoint("192.168.1.10", 56076), sawSYN: true)
        h.send(conn, .toServer, hello)
        h.send(conn, .toClient, receipt)

        XCTAssertEqual(h.diagnostics.map(\.id), [])
        let e = try XCTUnwrap(h.events(.invitationHello).first)
        XCTAssertEqual(e.from.displayName, "Antani")
        XCTAssertEqual(e.from.peerID, PeerIdentity.parse(idString: "2d9omqtkz17st"))
        XCTAssertEqual(e.attrs["idString"], "2d9omqtkz17st")
        XCTAssertEqual(e.source, "mpc-invitation")
        XCTAssertEqual(e.evidence, .frame(input: 0, frame: 1))
        XCTAssertEqual(h.context.directory.peerID(for: conn.client), PeerIdentity.parse(idString: "2d9omqtkz17st"))

        let r = try XCTUnwrap(h.events(.invitationReceipt).first)
        XCTAssertEqual(r.attrs["matched"], "true")
        XCTAssertEqual(r.attrs["type"], "hello")
        XCTAssertEqual(r.attrs["ackedFrame"], "1")
        // The advertiser sent it, to the Hello's sender, now known by name.
        XCTAssertEqual(r.to.displayName, "Antani")
        XCTAssertEqual(h.messages("hello").first?.fields.first(where: { $0.0 == "crc" })?.1, .string("d85afd5d"))
        XCTAssertEqual(h.messages("receipt").first?.fields.first(where: { $0.0 == "crc" })?.1, .string("0cca7e2c"))
    }

    func testProbeOnRealFrames() throws {
        let v = try vectors()
        let hello = try XCTUnwrap(v["hello"])
        let p = InvitationFramingPlugin()
        let conn = TCPConnectionInfo(id: 1, client: endpoint("10.0.0.1", 1), server: endpoint("10.0.0.2", 2), sawSYN: true)
        func probe(_ b: [UInt8]) -> ProbeResult {
            p.probe(PluginInput(frame: FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1),
                                delivery: .stream(conn, .toServer), flow: conn.flow(.toServer), payload: Bytes(b)))
        }
        for n in 0 ..< hello.count { XCTAssertEqual(probe(Array(hello.prefix(n))), .needMoreBytes, "prefix \(n)") }
        XCTAssertEqual(probe(hello), .accept)
        var bad = hello
        bad[hello.count - 2] ^= 0x01
        XCTAssertEqual(probe(bad), .reject, "CRC must decide once the frame is whole")
        XCTAssertEqual(probe(try XCTUnwrap(v["receipt"])), .accept)
    }

    /// Constants quoted in ebowwa/mcwire `docs/mc-protocol.md` as byte-identical in every captured run:
    /// the advertiser's Accept ("0898 caps (2dc347ff)") and the advertiser's Data receipt ("ack 73e2f9bb").
    /// Our header layout reproduces both with flags 0 / seq 1 and flags 1 / seq 1.
    func testMCWireQuotedConstants() {
        XCTAssertEqual(InvitationFrameHeader.crc(header: Bytes(frame(0x0898, seq: 1)), body: .empty), 0x2DC3_47FF)
        XCTAssertEqual(InvitationFrameHeader.crc(header: Bytes(frame(0x0834, flags: 1, seq: 1)), body: .empty), 0x73E2_F9BB)
        XCTAssertEqual(InvitationFrameHeader(Bytes(frame(0x0898, seq: 1)))?.crc, 0x2DC3_47FF, "the test writer agrees")
    }
}
