import XCTest
import PeerscopeCore
@testable import PeerscopePlugins
import PeerscopeSimulator

final class InvitationMalformedTests: XCTestCase {
    typealias X = InvitationExchangeTests
    let conn = InvitationExchangeTests.conn
    let hello = frame(0x07D0, seq: 0, body: helloBody(id: "2d9omqtkz17st", name: "Antani"))

    /// The browser's side of the exchange, as one byte stream, and the offsets where its frames start.
    func browserStream() -> [UInt8] { X.exchange().filter { $0.0 == .toServer }.flatMap(\.1) }

    func frameStarts(_ s: [UInt8]) -> [Int] {
        var out: [Int] = []
        var at = 0
        while let h = InvitationFrameHeader(Bytes(s), at: at) {
            out.append(at)
            at += 16 + Int(h.length)
        }
        return out
    }

    func testTruncationAtEveryOffset() {
        let s = browserStream()
        let starts = Set(frameStarts(s) + [s.count])
        let firstFrameEnd = frameStarts(s)[1]
        for n in 0 ... s.count {
            let h = Harness()
            h.send(conn, .toServer, Array(s.prefix(n)), chunk: 9)
            h.tcpEvent(conn, .toServer, .closed)
            let truncated = h.diagnostics("mpc-invitation.truncated")
            // Before the first frame is whole the probe is still waiting: the stream was never claimed.
            let expectTruncated = n >= firstFrameEnd && !starts.contains(n)
            XCTAssertEqual(truncated.count, expectTruncated ? 1 : 0, "cut at \(n)")
            XCTAssertEqual(h.diagnostics.filter { $0.id != "mpc-invitation.truncated" && $0.id != "mpc-invitation.receipt.unmatched" }.map(\.id),
                           [], "cut at \(n)")
            if let d = truncated.first { XCTAssertTrue(starts.contains(d.offset ?? -1), "offset is the frame start: \(d.line)") }
        }
    }

    func testBadCRCResynchronises() throws {
        var s = browserStream()
        let starts = frameStarts(s)
        let inviteAt = starts[3]  // Hello, receipt, receipt, invite Data
        s[inviteAt + 40] ^= 0x20  // a byte of the invite's plist
        let h = Harness()
        h.send(conn, .toServer, s, chunk: 11)
        let bad = try XCTUnwrap(h.diagnostics("mpc-invitation.bad_crc").first)
        XCTAssertEqual(bad.offset, inviteAt + 8)
        XCTAssertEqual(bad.evidence.map { "\($0)" }?.hasPrefix("frame"), true)
        XCTAssertEqual(h.diagnostics("mpc-invitation.resync").first?.offset, starts[4])
        XCTAssertTrue(h.events(.invite).isEmpty)
        XCTAssertEqual(h.events(.inviteConnect).count, 1, "decoding goes on after the bad frame")
    }

    func testWrongLengthIsACRCError() {
        // Header says 10 bytes shorter than the body: the CRC over the wrong span fails.
        let body = X.invite()
        var f = frame(0x0834, seq: 1, body: body)
        let wrong = be32(UInt32(body.count - 10))
        f.replaceSubrange(4 ..< 8, with: wrong)
        let h = Harness()
        h.send(conn, .toServer, hello + f + frame(0x0834, seq: 2, body: X.connect()))
        XCTAssertEqual(h.diagnostics("mpc-invitation.bad_crc").count, 1)
        XCTAssertEqual(h.events(.inviteConnect).count, 1)
        XCTAssertTrue(h.events(.invite).isEmpty)
    }

    func testHeaderProblems() {
        let cases: [(String, [UInt8], Int)] = [
            ("mpc-invitation.unknown_type", frame(0x07D1, seq: 1), 0),
            ("mpc-invitation.bad_flags", frame(0x07D0, flags: 2, seq: 1), 2),
            ("mpc-invitation.oversize", be16(0x0834) + be16(0) + be32(0x500_0001) + be32(0) + be32(1), 4),
            ("mpc-invitation.bad_sequence", frame(0x0898, seq: 0x8000_0001), 12),
        ]
        for (id, bad, field) in cases {
            let h = Harness()
            h.send(conn, .toServer, hello + bad + frame(0x0898, seq: 2), chunk: 4)
            XCTAssertEqual(h.diagnostics(id).first?.offset, hello.count + field, id)
            XCTAssertEqual(h.events(.invitationHello).count, 1, id)
            XCTAssertEqual(h.events(.invitationAccept).count, 1, "\(id): resynchronised onto the Accept")
        }
    }

    func testTooManyErrorsStopsTheDirection() {
        let h = Harness()
        var s = hello
        // Bad-CRC frames alternating with good Accepts: each bad one is a framing error, each good one resynchronises.
        for i in 0 ..< 12 { s += frame(0x0898, seq: UInt32(100 + i), crc: 0xDEAD_BEEF) + frame(0x0898, seq: UInt32(i)) }
        h.send(conn, .toServer, s, chunk: 16)
        let limit = InvitationFramingPlugin.maxFramingErrors
        XCTAssertEqual(h.diagnostics("mpc-invitation.stopped").count, 1)
        XCTAssertEqual(h.diagnostics("mpc-invitation.bad_crc").count, limit)
        XCTAssertEqual(h.diagnostics("mpc-invitation.resync").count, limit - 1)
        XCTAssertEqual(h.events(.invitationAccept).count, limit - 1, "nothing after the stop")
        // The other direction still decodes.
        h.send(conn, .toClient, frame(0x0898, seq: 1))
        XCTAssertEqual(h.events(.invitationAccept).count, limit)
    }

    func testRunOfBadFramesIsSkippedByOneResync() {
        let h = Harness()
        var junk: [UInt8] = []
        for i in 0 ..< 20 { junk += frame(0x0898, seq: UInt32(i), crc: 0xDEAD_BEEF) }
        h.send(conn, .toServer, hello + junk + frame(0x0898, seq: 99), chunk: 16)
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.bad_crc", "mpc-invitation.resync"])
        XCTAssertEqual(h.diagnostics.last?.offset, hello.count + junk.count)
        XCTAssertEqual(h.events(.invitationAccept).first?.attrs["seq"], "99")
    }

    func testRandomGarbageAfterAValidFrame() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0 ..< 20 {
            var junk = [UInt8](repeating: 0, count: 3000)
            for i in junk.indices { junk[i] = UInt8.random(in: 0 ... 255, using: &rng) }
            let h = Harness()
            h.send(conn, .toServer, hello + junk, chunk: Int.random(in: 1 ... 64, using: &rng))
            h.tcpEvent(conn, .toServer, .closed)
            XCTAssertEqual(h.events(.invitationHello).count, 1)
        }
    }

    func testHelloBodies() {
        func helloFrame(_ body: [UInt8]) -> [UInt8] { frame(0x07D0, seq: 0, body: body) }
        let name = Array("2d9omqtkz17st+Antani".utf8)
        let cases: [(String, [UInt8], Int)] = [
            ("mpc-invitation.hello.unterminated", be32(6) + be16(UInt16(name.count + 1)) + name + [0x41], 16 + 6 + name.count),
            ("mpc-invitation.hello.name_length", be32(6) + be16(200) + name + [0], 16 + 4),
            ("mpc-invitation.hello.short", [0, 0, 0], 16),
            ("mpc-invitation.hello.bad_id", helloBody(id: "not_base36!", name: "x"), 16 + 6),
            ("mpc-invitation.hello.no_separator", be32(6) + be16(4) + Array("abc".utf8) + [0], 16 + 6),
            ("mpc-invitation.hello.bad_utf8", be32(6) + be16(5) + [0x61, 0x2B, 0xC3, 0x28, 0], 16 + 6),
        ]
        for (id, body, offset) in cases {
            let h = Harness()
            h.send(conn, .toServer, helloFrame(body) + frame(0x0898, seq: 1))
            XCTAssertEqual(h.diagnostics.map(\.id), [id])
            XCTAssertEqual(h.diagnostics.first?.offset, offset, id)
            XCTAssertEqual(h.events(.invitationHello).first?.attrs["malformed"], "true", id)
            XCTAssertEqual(h.events(.invitationAccept).count, 1, "\(id): the stream goes on")
            XCTAssertTrue(h.context.directory.entries.isEmpty, id)
        }
    }

    func testDataBodies() {
        let cases: [(String, [UInt8])] = [
            ("mpc-invitation.data.bad_plist", Array("not a plist at all, just text".utf8)),
            ("mpc-invitation.data.no_message_id", bplist(.dict([("MCNearbyServiceInviteIDKey", .int(1))]))),
            ("mpc-invitation.data.unknown_message_id", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(9))]))),
            ("mpc-invite.missing_key", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)), ("MCNearbyServiceInviteIDKey", .int(1)),
                                                     ("MCNearbyServiceSenderPeerIDKey", .data(serializedPeer(1, "a")))]))),
            ("mpc-invite.bad_type", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)), ("MCNearbyServiceInviteIDKey", .str("one"))]))),
            ("mpc-invite.peer_id.length_mismatch", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)),
                                                                 ("MCNearbyServiceSenderPeerIDKey", .data(be64(1) + [40] + [0x41]))]))),
            ("mpc-invite-connect.missing_key", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(3))]))),
            ("mpc-invite-response.bad_type", bplist(.dict([("MCNearbyServiceMessageIDKey", .int(2)),
                                                           ("MCNearbyServiceAcceptInviteKey", .str("yes"))]))),
        ]
        for (id, body) in cases {
            let h = Harness()
            h.send(conn, .toServer, frame(0x0834, seq: 1, body: body))
            XCTAssertTrue(h.diagnostics.contains { $0.id == id }, "\(id): \(h.diagnostics.map(\.id))")
            XCTAssertEqual(h.messages("data").count, 1, id)
        }
    }

    /// Every truncation of each message plist, framed with a correct CRC: diagnostics, never a trap, no events.
    func testMessagePlistTruncations() {
        for (id, body) in [(1, X.invite()), (2, X.response(accept: true)), (3, X.connect())] {
            for n in 0 ..< body.count {
                let h = Harness()
                h.send(conn, .toServer, frame(0x0834, seq: 1, body: Array(body.prefix(n))))
                XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.data.bad_plist"], "message \(id) cut at \(n)")
                XCTAssertTrue(h.events.isEmpty)
            }
        }
    }

    /// Single-byte corruptions of the connection data inside a valid plist: no trap, and the event still comes.
    func testConnectionDataCorruptions() {
        let blob = connectionData(flags: 0x05, participant: 7, v4: [("192.168.1.10", 16402)], v6: [(X.advertiserV6, 16402)])
        for i in 0 ..< blob.count {
            var b = blob
            b[i] ^= 0xFF
            let body = bplist(.dict([("MCNearbyServiceMessageIDKey", .int(3)), ("MCNearbyServiceConnectionDataKey", .data(b)),
                                     ("MCNearbyServiceInviteIDKey", .int(1))]))
            let h = Harness()
            h.send(conn, .toServer, frame(0x0834, seq: 1, body: body))
            XCTAssertEqual(h.events(.inviteConnect).count, 1, "byte \(i)")
        }
    }

    func testFrameTooLargeIsSkipped() {
        let big = InvitationFramingPlugin.maxBuffer + 10
        let h = Harness()
        let header = be16(0x0834) + be16(0) + be32(UInt32(big)) + be32(0) + be32(1)
        h.send(conn, .toServer, hello + header)
        var left = big
        while left > 0 {
            let n = min(left, 65536)
            h.send(conn, .toServer, [UInt8](repeating: 0x55, count: n))
            left -= n
        }
        h.send(conn, .toServer, frame(0x0898, seq: 2))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.frame_too_large"])
        XCTAssertEqual(h.events(.invitationAccept).count, 1)
    }

    func testProbeRejectsOtherProtocols() {
        let p = InvitationFramingPlugin()
        func probe(_ b: [UInt8]) -> ProbeResult {
            p.probe(PluginInput(frame: FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1),
                                delivery: .stream(conn, .toServer), flow: conn.flow(.toServer), payload: Bytes(b)))
        }
        XCTAssertEqual(probe(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)), .reject)
        XCTAssertEqual(probe([0x16, 0x03, 0x01, 0x02, 0x00]), .reject)  // TLS
        XCTAssertEqual(probe([0x07, 0xD0]), .needMoreBytes)
        XCTAssertEqual(probe([0x07, 0xD0, 0x00, 0x02]), .reject)
        XCTAssertEqual(probe(frame(0x0898, seq: 1, crc: 1)), .reject)
        XCTAssertEqual(probe(frame(0x0898, seq: 0x8000_0000)), .reject)
        // A large Data frame is accepted on its header alone; a small one waits for its CRC.
        let bigData = frame(0x0834, seq: 1, body: [UInt8](repeating: 1, count: 2000))
        XCTAssertEqual(probe(Array(bigData.prefix(100))), .accept)
        let smallData = frame(0x0834, seq: 1, body: [UInt8](repeating: 1, count: 100))
        XCTAssertEqual(probe(Array(smallData.prefix(100))), .needMoreBytes)
    }
}

final class InvitationHostileStreamTests: XCTestCase {
    let conn = InvitationExchangeTests.conn

    /// Plausible headers at every 8th byte, each claiming a 60000-byte body that never checks out:
    /// resynchronisation gives up after a bounded number of CRC attempts instead of grinding.
    func testResyncWorkIsBounded() {
        let h = Harness()
        var s = frame(0x0898, seq: 1) + frame(0x0898, seq: 2, crc: 7)
        for _ in 0 ..< 20_000 { s += [0x07, 0xD0, 0x00, 0x00, 0x00, 0x00, 0xEA, 0x60] }
        let start = Date()
        h.send(conn, .toServer, s, chunk: 4096)
        XCTAssertLessThan(Date().timeIntervalSince(start), 20)
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.bad_crc", "mpc-invitation.resync_failed"])
    }

    /// A large Data frame fed one byte per delivery stays linear.
    func testDripFeedLargeFrame() {
        let h = Harness()
        let body = bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)), ("MCNearbyServiceInviteIDKey", .int(3)),
                                 ("MCNearbyServiceInviteContextKey", .data([UInt8](repeating: 0xAB, count: 30_000)))]))
        h.send(conn, .toServer, frame(0x0898, seq: 0) + frame(0x0834, seq: 1, body: body), chunk: 1)
        XCTAssertEqual(h.events(.invite).first?.attrs["contextSize"], "30000")
    }
}

final class InvitationLargeDeliveryTests: XCTestCase {
    let conn = InvitationExchangeTests.conn

    /// One delivery larger than the buffer bound, made of many small valid frames: all decode.
    func testHugeDeliveryOfSmallFrames() {
        typealias X = InvitationExchangeTests
        let body = bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)),
                                 ("MCNearbyServiceSenderPeerIDKey", .data(serializedPeer(X.browserID, "Alice"))),
                                 ("MCNearbyServiceRecipientPeerIDKey", .data(serializedPeer(X.advertiserID, "Antani"))),
                                 ("MCNearbyServiceInviteIDKey", .int(1)),
                                 ("MCNearbyServiceInviteContextKey", .data([UInt8](repeating: 0x11, count: 4000)))]))
        var s: [UInt8] = []
        for i in 0 ..< 280 { s += frame(0x0834, seq: UInt32(i), body: body) }
        XCTAssertGreaterThan(s.count, InvitationFramingPlugin.maxBuffer)
        let h = Harness()
        h.send(conn, .toServer, s)
        XCTAssertEqual(h.events(.invite).count, 280)
        XCTAssertTrue(h.diagnostics.isEmpty)
    }

    /// An oversized frame header and its whole body in one delivery, followed by a good frame.
    func testTooLargeFrameInOneDelivery() {
        let big = InvitationFramingPlugin.maxBuffer
        let s = be16(0x0834) + be16(0) + be32(UInt32(big)) + be32(0) + be32(1) + [UInt8](repeating: 0, count: big) + frame(0x0898, seq: 2)
        let h = Harness()
        h.send(conn, .toServer, frame(0x0898, seq: 1) + s)
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.frame_too_large"])
        XCTAssertEqual(h.events(.invitationAccept).map { $0.attrs["seq"] }, ["1", "2"])
    }

    /// Garbage with no frame in it, more than the buffer bound: dropped as it is scanned, no overflow, no trap.
    func testLongGarbageIsScannedAndDropped() {
        let h = Harness()
        h.send(conn, .toServer, frame(0x0898, seq: 1) + [0xFF, 0xFF] + [UInt8](repeating: 0x42, count: 1_200_000), chunk: 60_000)
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.unknown_type"])
        h.send(conn, .toServer, frame(0x0898, seq: 2))
        XCTAssertEqual(h.events(.invitationAccept).count, 2)
    }
}

final class InvitationGapTests: XCTestCase {
    let conn = InvitationExchangeTests.conn

    /// Bytes lost mid-frame: the pipeline forwards the stream's gap to the framer, which drops the
    /// partial frame and locks onto the next valid frame without calling it a CRC error.
    func testGapResynchronisesQuietly() {
        typealias X = InvitationExchangeTests
        let invite = frame(0x0834, seq: 1, body: X.invite())
        let h = Harness()
        h.send(conn, .toServer, frame(0x0898, seq: 0) + Array(invite.prefix(50)))
        h.tcpEvent(conn, .toServer, .gap)
        h.send(conn, .toServer, Array(invite.suffix(from: 80)) + frame(0x0898, seq: 2))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.gap", "mpc-invitation.resync"])
        XCTAssertEqual(h.diagnostics.first?.offset, 16, "the gap is placed after the bytes framed")
        XCTAssertEqual(h.events(.invitationAccept).map { $0.attrs["seq"] }, ["0", "2"])
        XCTAssertTrue(h.events(.checksumError).isEmpty)
    }

    /// Without the gap the framer waits for the cut frame's missing bytes: the next frame is lost inside it.
    func testWithoutTheGapTheNextFrameIsSwallowed() {
        typealias X = InvitationExchangeTests
        let invite = frame(0x0834, seq: 1, body: X.invite())
        let h = Harness()
        h.send(conn, .toServer, frame(0x0898, seq: 0) + Array(invite.prefix(50)))
        h.send(conn, .toServer, Array(invite.suffix(from: 80)) + frame(0x0898, seq: 2))
        XCTAssertEqual(h.diagnostics.map(\.id), [])
        XCTAssertEqual(h.events(.invitationAccept).map { $0.attrs["seq"] }, ["0"])
    }

    func testBadCRCIsAChannelChecksumEvent() throws {
        let h = Harness()
        h.send(conn, .toServer, frame(0x0898, seq: 0) + frame(0x0898, seq: 1, crc: 0x1234_5678))
        let e = try XCTUnwrap(h.events(.checksumError).first)
        XCTAssertEqual(e.attrs["field"], "12345678")
        let expected = String(referenceCRC32(be16(0x0898) + be16(0) + be32(0) + be32(0) + be32(1)), radix: 16)
        XCTAssertEqual(e.attrs["computed"], String(repeating: "0", count: 8 - expected.count) + expected)
        XCTAssertEqual(e.attrs["frameType"], "accept")
    }
}

/// Seeded mutation runs: whatever the bytes, decoding ends without a trap and every diagnostic has an id
/// under the plugin that reported it.
final class InvitationMutationTests: XCTestCase {
    typealias X = InvitationExchangeTests

    func checkDiagnostics(_ h: Harness, _ label: String) {
        let owners = ["mpc-invitation.", "mpc-invite.", "mpc-invite-response.", "mpc-invite-connect."]
        for d in h.diagnostics {
            XCTAssertTrue(owners.contains { d.id.hasPrefix($0) }, "\(label): \(d.id)")
            XCTAssertNotNil(d.evidence, "\(label): \(d.id)")
        }
    }

    /// Message plists with random byte changes, framed with correct CRCs so the message plugins see them.
    func testMutatedMessagesInValidFrames() {
        var rng = SimRandom(seed: 0x5EED)
        let bodies = [X.invite(), X.response(accept: true), X.response(accept: false), X.connect()]
        for i in 0 ..< 400 {
            var body = bodies[i % bodies.count]
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &rng) {
                body[Int.random(in: 0 ..< body.count, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng)
            }
            let h = Harness()
            h.send(X.conn, .toServer, frame(0x0834, seq: 1, body: body), chunk: Int.random(in: 1 ... 64, using: &rng))
            checkDiagnostics(h, "case \(i)")
            XCTAssertEqual(h.messages("data").count, 1, "case \(i): the frame itself is fine")
        }
    }

    /// The whole exchange with random byte changes anywhere (headers included) and random chunking.
    func testMutatedStreams() {
        var rng = SimRandom(seed: 0xC0FFEE)
        for i in 0 ..< 150 {
            let h = Harness()
            for (dir, turn) in X.exchange() {
                var bytes = turn
                if Int.random(in: 0 ..< 3, using: &rng) == 0 {
                    bytes[Int.random(in: 0 ..< bytes.count, using: &rng)] ^= UInt8.random(in: 1 ... 255, using: &rng)
                }
                h.send(X.conn, dir, bytes, chunk: Int.random(in: 1 ... 40, using: &rng))
            }
            h.tcpEvent(X.conn, .toClient, .closed)
            checkDiagnostics(h, "case \(i)")
        }
    }
}
