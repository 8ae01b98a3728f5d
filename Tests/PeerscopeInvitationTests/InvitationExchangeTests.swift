import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// A whole invitation exchange built byte by byte, through framing -> message plugins via PluginPipeline.
final class InvitationExchangeTests: XCTestCase {
    static let browserID: UInt64 = 0x0123_4567_89AB_CDEF
    static let advertiserID: UInt64 = PeerIdentity.parse(idString: "2d9omqtkz17st") ?? 0
    static let conn = TCPConnectionInfo(id: 42, client: endpoint("192.168.1.20", 50123), server: endpoint("192.168.1.10", 56076),
                                        sawSYN: true)
    static let context = Array("secret-context".utf8)
    static let advertiserV6 = "fe80::1c78:b065:b483:f72c"

    typealias Turn = (TCPDirection, [UInt8])

    static func invite(inviteID: Int64 = 7) -> [UInt8] {
        bplist(.dict([("MCNearbyServiceMessageIDKey", .int(1)),
                      ("MCNearbyServiceSenderPeerIDKey", .data(serializedPeer(browserID, "Alice"))),
                      ("MCNearbyServiceRecipientPeerIDKey", .data(serializedPeer(advertiserID, "Antani"))),
                      ("MCNearbyServiceInviteIDKey", .int(inviteID)),
                      ("MCNearbyServiceInviteContextKey", .data(context))]))
    }

    static func response(accept: Bool) -> [UInt8] {
        var d: [(String, PV)] = [("MCNearbyServiceMessageIDKey", .int(2)),
                                 ("MCNearbyServiceAcceptInviteKey", .bool(accept)),
                                 ("MCNearbyServiceInviteIDKey", .int(7)),
                                 ("MCNearbyServiceSenderPeerIDKey", .data(serializedPeer(advertiserID, "Antani"))),
                                 ("MCNearbyServiceRecipientPeerIDKey", .data(serializedPeer(browserID, "Alice")))]
        if accept {
            // Required encryption (1) with a security identity (4); the entries carry the browser's participant ID.
            d.append(("MCNearbyServiceConnectionDataKey",
                      .data(connectionData(flags: 0x05, participant: PeerIdentity.participantID(browserID),
                                           v4: [("192.168.1.10", 16402)], v6: [(advertiserV6, 16402)]))))
        }
        return bplist(.dict(d))
    }

    static func connect() -> [UInt8] {
        bplist(.dict([("MCNearbyServiceMessageIDKey", .int(3)),
                      ("MCNearbyServiceConnectionDataKey",
                       .data(connectionData(flags: 0x02, participant: PeerIdentity.participantID(advertiserID),
                                            v4: [("192.168.1.20", 16401)], v6: []))),
                      ("MCNearbyServiceInviteIDKey", .int(7)),
                      ("MCNearbyServiceSenderPeerIDKey", .data(serializedPeer(browserID, "Alice"))),
                      ("MCNearbyServiceRecipientPeerIDKey", .data(serializedPeer(advertiserID, "Antani")))]))
    }

    static func exchange(accept: Bool = true) -> [Turn] {
        let hello: UInt16 = 0x07D0, data: UInt16 = 0x0834, acc: UInt16 = 0x0898
        var turns: [Turn] = [
            (.toServer, frame(hello, seq: 0, body: helloBody(id: PeerIdentity.idString(browserID), name: "Alice"))),
            (.toClient, frame(hello, flags: 1, seq: 0) + frame(hello, seq: 0, body: helloBody(id: "2d9omqtkz17st", name: "Antani"))
                + frame(acc, seq: 1)),
            (.toServer, frame(hello, flags: 1, seq: 0) + frame(acc, flags: 1, seq: 1) + frame(data, seq: 1, body: invite())),
            (.toClient, frame(data, flags: 1, seq: 1) + frame(data, seq: 2, body: response(accept: accept))),
        ]
        if accept {
            turns.append((.toServer, frame(data, flags: 1, seq: 2) + frame(data, seq: 2, body: connect())))
            turns.append((.toClient, frame(data, flags: 1, seq: 2)))
        }
        return turns
    }

    func run(_ turns: [Turn], chunk: Int?) -> Harness {
        let h = Harness()
        for (dir, bytes) in turns {
            if let chunk { h.send(Self.conn, dir, bytes, chunk: chunk) } else { h.send(Self.conn, dir, bytes) }
        }
        return h
    }

    func checkAccepted(_ h: Harness, _ label: String) throws {
        XCTAssertEqual(h.diagnostics.map(\.id), [], label)
        let hellos = h.events(.invitationHello)
        XCTAssertEqual(hellos.map { $0.from.displayName }, ["Alice", "Antani"], label)
        XCTAssertEqual(hellos.map { $0.attrs["role"] }, ["browser", "advertiser"], label)
        XCTAssertEqual(h.events(.invitationAccept).first?.from.peerID, Self.advertiserID, label)
        let receipts = h.events(.invitationReceipt)
        XCTAssertEqual(receipts.count, 6, label)
        XCTAssertTrue(receipts.allSatisfy { $0.attrs["matched"] == "true" }, label)

        let inv = try XCTUnwrap(h.events(.invite).first, label)
        XCTAssertEqual(inv.from.peerID, Self.browserID)
        XCTAssertEqual(inv.from.displayName, "Alice")
        XCTAssertEqual(inv.to.peerID, Self.advertiserID)
        XCTAssertEqual(inv.to.displayName, "Antani")
        XCTAssertEqual(inv.attrs["inviteID"], "7")
        XCTAssertEqual(inv.attrs["contextSize"], "14")
        XCTAssertEqual(inv.source, "mpc-invite")

        let resp = try XCTUnwrap(h.events(.inviteResponse).first, label)
        XCTAssertEqual(resp.attrs["accepted"], "true")
        XCTAssertEqual(resp.attrs["inviteID"], "7")
        XCTAssertEqual(resp.attrs["encryption"], "required")
        XCTAssertEqual(resp.attrs["securityIdentity"], "true")
        XCTAssertEqual(resp.attrs["entryParticipant"], "recipient")
        XCTAssertEqual(resp.from.peerID, Self.advertiserID)
        XCTAssertEqual(resp.to.peerID, Self.browserID)
        let v6 = Endpoint(IPAddress(Self.advertiserV6) ?? .v4(0), 16402)
        XCTAssertEqual(resp.attrs["udpEndpoints"], "\(endpoint("192.168.1.10", 16402)),\(v6)")

        let con = try XCTUnwrap(h.events(.inviteConnect).first, label)
        XCTAssertEqual(con.attrs["encryption"], "none")
        XCTAssertEqual(con.attrs["inviteID"], "7")
        XCTAssertEqual(con.from.displayName, "Alice")
        XCTAssertEqual(con.attrs["udpEndpoints"], endpoint("192.168.1.20", 16401).description)

        // The directory learnt the session UDP endpoints from the connection data.
        let dir = h.context.directory
        XCTAssertEqual(dir.peerID(for: endpoint("192.168.1.10", 16402)), Self.advertiserID)
        XCTAssertEqual(dir.peerID(for: v6), Self.advertiserID)
        XCTAssertEqual(dir.peerID(for: endpoint("192.168.1.20", 16401)), Self.browserID)
        XCTAssertEqual(dir.entries[Self.browserID]?.displayName, "Alice")
        XCTAssertEqual(dir.entries[Self.advertiserID]?.displayName, "Antani")
        XCTAssertEqual(dir.peerID(forParticipant: PeerIdentity.participantID(Self.advertiserID)), Self.advertiserID)

        // decode output: the context is only a size.
        let m = try XCTUnwrap(h.messages("invite").first)
        XCTAssertEqual(m.plugin, "mpc-invite")
        XCTAssertEqual(m.fields.first(where: { $0.0 == "contextSize" })?.1, .int(14))
        let rendered = "\(m.json(includeInput: false))"
        XCTAssertFalse(rendered.contains("secret"), rendered)
        XCTAssertFalse(rendered.contains(Bytes(Self.context).hex), rendered)
        XCTAssertEqual(h.messages("data").count, 3)
        XCTAssertEqual(h.messages("invite-response").count, 1)
        XCTAssertEqual(h.messages("invite-connect").count, 1)
    }

    func testWholeTurnsPacked() throws {
        try checkAccepted(run(Self.exchange(), chunk: nil), "packed")
    }

    func testOneBytePerDelivery() throws {
        let h = run(Self.exchange(), chunk: 1)
        try checkAccepted(h, "one byte")
        // The event is at the frame that completed the message.
        let inv = try XCTUnwrap(h.events(.invite).first)
        guard case .frame(_, let n) = inv.evidence else { return XCTFail("evidence") }
        let before = Self.exchange().prefix(3).reduce(0) { $0 + $1.1.count }
        XCTAssertEqual(n, UInt64(before))
    }

    func testOddChunks() throws {
        for chunk in [3, 7, 15, 16, 17, 100] { try checkAccepted(run(Self.exchange(), chunk: chunk), "chunk \(chunk)") }
    }

    func testAllOneDirectionPackedInOneDelivery() throws {
        // Everything the advertiser says arrives in one delivery after everything the browser says.
        let turns = Self.exchange()
        let up = turns.filter { $0.0 == .toServer }.flatMap(\.1)
        let h = run([(.toServer, up)], chunk: nil)
        XCTAssertEqual(h.events(.invite).count, 1)
        XCTAssertEqual(h.events(.inviteConnect).count, 1)
        // The browser's three receipts (advertiser Hello, Accept, Response) acknowledge messages never seen.
        XCTAssertEqual(h.diagnostics("mpc-invitation.receipt.unmatched").count, 3)
        XCTAssertEqual(h.events(.invitationReceipt).filter { $0.attrs["matched"] == "false" }.count, 3)
    }

    func testDecline() throws {
        let h = run(Self.exchange(accept: false), chunk: 5)
        XCTAssertEqual(h.diagnostics.map(\.id), [])
        let resp = try XCTUnwrap(h.events(.inviteResponse).first)
        XCTAssertEqual(resp.attrs["accepted"], "false")
        XCTAssertEqual(resp.attrs["connectionData"], "false")
        XCTAssertNil(resp.attrs["encryption"])
        XCTAssertEqual(resp.from.displayName, "Antani")
        XCTAssertTrue(h.events(.inviteConnect).isEmpty)
    }

    func testAcceptWithoutConnectionDataIsDiagnosed() throws {
        let body = bplist(.dict([("MCNearbyServiceMessageIDKey", .int(2)), ("MCNearbyServiceAcceptInviteKey", .bool(true)),
                                 ("MCNearbyServiceInviteIDKey", .int(1))]))
        let h = Harness()
        h.send(Self.conn, .toClient, frame(0x0834, seq: 2, body: body))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invite-response.no_connection_data"])
        XCTAssertEqual(h.events(.inviteResponse).first?.attrs["accepted"], "true")
    }

    func testConnectionDataModel() throws {
        let blob = connectionData(flags: 0x01, participant: 0x2308_149F, v4: [("10.0.0.7", 16402), ("192.0.2.218", 16401)],
                                  v6: [("fe80::1", 16400)])
        let cd = ConnectionData(Bytes(blob))
        XCTAssertTrue(cd.problems.isEmpty, "\(cd.problems)")
        XCTAssertEqual(cd.encryption, .required)
        XCTAssertEqual(cd.securityIdentity, false)
        XCTAssertEqual(cd.ipv4, [IPAddress("10.0.0.7"), IPAddress("192.0.2.218")].compactMap { $0 })
        XCTAssertEqual(cd.interfaces.map(\.port), [16402, 16401, 16400])
        XCTAssertEqual(cd.interfaces.map(\.participantID), [0x2308_149F, 0x2308_149F, 0x2308_149F])
        XCTAssertEqual(cd.endpoints.map(\.description),
                       [endpoint("10.0.0.7", 16402), endpoint("192.0.2.218", 16401), endpoint("fe80::1", 16400)].map(\.description))
        XCTAssertEqual(cd.totalSize, 4 + 1 + 2 * 4 + 16 + 3 * 16)  // header, counts, addresses, entries
        // An unknown extra segment after the MC one is kept as a size.
        let extra = ConnectionData(Bytes(blob + [0x81, 0, 0, 6, 0xAA, 0xBB]))
        XCTAssertTrue(extra.problems.isEmpty)
        XCTAssertEqual(extra.segments.map(\.id), [0x80, 0x81])
        XCTAssertEqual(extra.segments.last?.length, 6)
    }

    func testConnectionDataTruncationsNeverTrap() {
        let blob = connectionData(flags: 0x00, participant: 1, v4: [("10.0.0.7", 16402)], v6: [("fe80::1", 16400)])
        for n in 0 ..< blob.count {
            let cd = ConnectionData(Bytes(Array(blob.prefix(n))))
            XCTAssertFalse(cd.problems.isEmpty, "prefix \(n) must report a problem")
            XCTAssertTrue(cd.problems.allSatisfy { $0.offset >= 0 && $0.offset <= n }, "prefix \(n): \(cd.problems)")
        }
    }

    func testPrefixedPeerIDReading() throws {
        // mcwire shows a 4-byte prefix before the pid64; accepted when the standard reading does not fit.
        let p = try SerializedPeerID.parse(Bytes([9, 9, 9, 9] + serializedPeer(Self.browserID, "Alice"))).get()
        XCTAssertEqual(p.peerID, Self.browserID)
        XCTAssertEqual(p.prefixLength, 4)
        XCTAssertEqual(try SerializedPeerID.parse(Bytes(serializedPeer(Self.browserID, "Alice"))).get().prefixLength, 0)
        XCTAssertThrowsError(try SerializedPeerID.parse(Bytes(serializedPeer(Self.browserID, "Alice") + [0])).get())
        XCTAssertThrowsError(try SerializedPeerID.parse(Bytes(be64(1) + [2, 0xC3, 0x28])).get())  // invalid UTF-8
    }
}

final class InvitationIdentityTests: XCTestCase {
    typealias X = InvitationExchangeTests

    /// Discovery said the advertiser's port belongs to one peer; the Hello from it names another (a stale
    /// instance answering): the Hello event says so and a diagnostic explains it.
    func testStaleIdentifierInHello() throws {
        let h = Harness()
        let discovered: UInt64 = 0x1111_2222_3333_4444
        h.context.directory.learn(peerID: discovered, displayName: "Antani")
        h.context.directory.learn(peerID: discovered, endpoint: X.conn.server)
        h.send(X.conn, .toClient, frame(0x07D0, seq: 0, body: helloBody(id: "2d9omqtkz17st", name: "Antani")))
        let e = try XCTUnwrap(h.events(.invitationHello).first)
        XCTAssertEqual(e.attrs["identityMismatch"], "true")
        XCTAssertEqual(e.attrs["expectedIdString"], PeerIdentity.idString(discovered))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invitation.hello.unexpected_identity"])
        XCTAssertEqual(h.diagnostics.first?.offset, 22)
    }

    func testMatchingIdentityIsQuiet() {
        let h = Harness()
        h.context.directory.learn(peerID: X.advertiserID, endpoint: X.conn.server)
        h.send(X.conn, .toClient, frame(0x07D0, seq: 0, body: helloBody(id: "2d9omqtkz17st", name: "Antani")))
        XCTAssertTrue(h.diagnostics.isEmpty)
        XCTAssertNil(h.events(.invitationHello).first?.attrs["identityMismatch"])
    }

    func testInviteSenderDiffersFromHello() {
        let h = Harness()
        h.send(X.conn, .toServer, frame(0x07D0, seq: 0, body: helloBody(id: PeerIdentity.idString(42), name: "Bob"))
            + frame(0x0834, seq: 1, body: X.invite()))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invite.sender_mismatch"])
        XCTAssertEqual(h.events(.invite).first?.from.peerID, X.browserID)
    }
}

final class ConnectionDataDiagnosticTests: XCTestCase {
    /// Problems inside the blob are reported at their offset within the plist, and the addresses that
    /// were readable are still learnt.
    func testTruncatedBlobOffsets() throws {
        let blob = Array(connectionData(flags: 0x02, participant: 1, v4: [("192.168.1.20", 16401)], v6: [("fe80::1", 16401)]).prefix(10))
        let body = bplist(.dict([("MCNearbyServiceMessageIDKey", .int(3)), ("MCNearbyServiceInviteIDKey", .int(1)),
                                 ("MCNearbyServiceConnectionDataKey", .data(blob))]))
        // The blob follows its one-byte data marker (0x4A = 10 bytes).
        let at = try XCTUnwrap((0 ..< body.count - blob.count).first { Array(body[$0 ..< $0 + blob.count]) == blob })
        XCTAssertEqual(body[at - 1], 0x4A)
        let h = Harness()
        h.send(InvitationExchangeTests.conn, .toServer, frame(0x0834, seq: 1, body: body))
        XCTAssertEqual(h.diagnostics.map(\.id), ["mpc-invite-connect.connection_data.bad_length", "mpc-invite-connect.connection_data.truncated"])
        XCTAssertEqual(h.diagnostics.map(\.offset), [at + 2, at + 9])
        let e = try XCTUnwrap(h.events(.inviteConnect).first)
        XCTAssertEqual(e.attrs["encryption"], "none")
        XCTAssertNil(e.attrs["udpEndpoints"], "no interface entries survived, so no endpoint is claimed")
    }
}

final class ConnectionDataReferenceTests: XCTestCase {
    /// The first 41 bytes of the 89-byte blob quoted in ebowwa/mcwire `docs/mc-protocol.md`
    /// (`80020059 12 da01a8c0 fe80…1c78b065b483f72c fe80…0cefd5fffe9005c3`), completed with three
    /// 16-byte entries in the EVS layout (participant/token/ports made up here).
    func testMCWireQuotedHeader() throws {
        var blob = Bytes(hex: "80020059 12 da01a8c0 fe80000000000000 1c78b065b483f72c fe80000000000000 0cefd5fffe9005c3")?.array ?? []
        XCTAssertEqual(blob.count, 41)
        blob += [0x61] + le32(0x2308_149F) + le32(1) + [0x5A, 0, 0, 0, 0x80] + le16(16402)
        blob += [0x61] + le32(0x2308_149F) + le32(2) + [0x0A, 0, 0, 0, 0x90] + le16(16402)
        blob += [0x6A] + le32(0x2308_149F) + le32(3) + [0x0A, 0, 0, 0, 0x91] + le16(16401)
        XCTAssertEqual(blob.count, 0x59)
        let cd = ConnectionData(Bytes(blob))
        XCTAssertTrue(cd.problems.isEmpty, "\(cd.problems)")
        XCTAssertEqual(cd.encryption, EncryptionPreference.none)
        XCTAssertEqual(cd.ipv4.map(\.description), ["192.168.1.218"])
        XCTAssertEqual(cd.ipv6, [IPAddress("fe80::1c78:b065:b483:f72c"), IPAddress("fe80::cef:d5ff:fe90:5c3")].compactMap { $0 })
        XCTAssertEqual(cd.endpoints.map(\.port), [16402, 16402, 16401])
        XCTAssertEqual(cd.endpoints.last?.address, IPAddress("fe80::cef:d5ff:fe90:5c3"))
        XCTAssertEqual(cd.interfaces.map(\.marker), [0x61, 0x61, 0x6A])
    }
}
