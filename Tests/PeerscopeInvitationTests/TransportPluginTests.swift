import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

final class TCPConnectionPluginTests: XCTestCase {
    let alice: UInt64 = 0x0123_4567_89AB_CDEF
    let antani: UInt64 = PeerIdentity.parse(idString: "2d9omqtkz17st") ?? 0
    let conn = TCPConnectionInfo(id: 5, client: endpoint("192.168.1.20", 50123), server: endpoint("192.168.1.10", 56076), sawSYN: true)

    func harness(knowServer: Bool = true) -> Harness {
        let h = Harness([TCPConnectionPlugin.self])
        if knowServer {
            // As discovery would: the advertiser's SRV endpoint.
            h.context.directory.learn(peerID: antani, displayName: "Antani")
            h.context.directory.learn(peerID: antani, endpoint: conn.server)
        }
        return h
    }

    func testOpenedAndClosedByFIN() throws {
        let h = harness()
        h.tcpEvent(conn, .toServer, .syn)
        h.tcpEvent(conn, .toClient, .established)
        h.tcpEvent(conn, .toServer, .fin)
        h.tcpEvent(conn, .toClient, .fin)
        h.tcpEvent(conn, .toClient, .closed)
        XCTAssertEqual(h.events.map(\.kind), [.tcpOpened, .tcpClosed])
        let opened = h.events[0]
        XCTAssertEqual(opened.from.endpoint, conn.client)
        XCTAssertNil(opened.from.peerID)
        XCTAssertEqual(opened.to.peerID, antani)
        XCTAssertEqual(opened.to.displayName, "Antani")
        XCTAssertEqual(opened.attrs["client"], conn.client.description)
        XCTAssertEqual(opened.attrs["server"], conn.server.description)
        XCTAssertEqual(opened.attrs["sawSYN"], "true")
        XCTAssertEqual(opened.attrs["handshakeNs"], String(CaptureTime.millisecond))
        XCTAssertEqual(opened.attrs["invitation"], "true")
        XCTAssertEqual(opened.source, "tcp-connection")
        let closed = h.events[1]
        XCTAssertEqual(closed.attrs["how"], "fin")
        XCTAssertEqual(closed.attrs["by"], "client")
        XCTAssertEqual(closed.attrs["durationNs"], String(3 * CaptureTime.millisecond))
        XCTAssertEqual(closed.from.endpoint, conn.client)
        XCTAssertEqual(h.messages.map(\.type), ["syn", "opened", "fin", "fin", "closed"])
        // In decode output, numbers and yes/no values are JSON numbers and booleans.
        let openedJSON = h.messages[1].json(includeInput: false)
        XCTAssertEqual(openedJSON["sawSYN"], .bool(true))
        XCTAssertEqual(openedJSON["invitation"], .bool(true))
        XCTAssertEqual(openedJSON["handshakeNs"], .int(CaptureTime.millisecond))
        XCTAssertEqual(h.messages[4].json(includeInput: false)["durationNs"], .int(3 * CaptureTime.millisecond))
        XCTAssertEqual(h.messages[4].json(includeInput: false)["how"], .string("fin"))
    }

    func testRefused() throws {
        let h = harness()
        h.tcpEvent(conn, .toServer, .syn)
        h.tcpEvent(conn, .toClient, .refused)
        let e = try XCTUnwrap(h.events.first)
        XCTAssertEqual(h.events.map(\.kind), [.tcpRefused])
        XCTAssertEqual(e.attrs["by"], "server")
        XCTAssertEqual(e.from.peerID, antani, "the RST came from the advertiser's port")
        XCTAssertEqual(e.to.endpoint, conn.client)
    }

    func testResetByClientThenClosed() throws {
        let h = harness(knowServer: false)
        h.tcpEvent(conn, .toServer, .syn)
        h.tcpEvent(conn, .toClient, .established)
        h.tcpEvent(conn, .toServer, .reset)
        h.tcpEvent(conn, .toServer, .closed)
        XCTAssertEqual(h.events.map(\.kind), [.tcpOpened, .tcpReset, .tcpClosed])
        XCTAssertEqual(h.events[1].attrs["by"], "client")
        XCTAssertEqual(h.events[1].from.endpoint, conn.client)
        XCTAssertNil(h.events[1].attrs["invitation"])
        XCTAssertEqual(h.events[2].attrs["how"], "reset")
        XCTAssertEqual(h.events[2].attrs["by"], "client")
    }

    func testMidStreamPickupAndEviction() {
        let h = harness()
        let mid = TCPConnectionInfo(id: 6, client: conn.client, server: conn.server, sawSYN: false)
        h.tcpEvent(mid, .toServer, .established)
        h.tcpEvent(mid, .toServer, .gap)
        h.tcpEvent(mid, .toServer, .idleEvicted)
        XCTAssertEqual(h.events.map(\.kind), [.tcpOpened])
        XCTAssertEqual(h.events[0].attrs["sawSYN"], "false")
        XCTAssertNil(h.events[0].attrs["handshakeNs"])
        XCTAssertEqual(h.messages.map(\.type), ["opened", "gap", "idle_evicted"])
        // A later close of an evicted connection has no state, and says so.
        h.tcpEvent(mid, .toServer, .closed)
        XCTAssertEqual(h.events.last?.attrs["how"], "unknown")
    }

    /// With the framing plugin in the same pipeline: a Hello teaches the client endpoint, the close says invitation.
    func testInvitationSeenOnConnection() {
        let h = Harness()
        h.tcpEvent(conn, .toServer, .syn)
        h.tcpEvent(conn, .toClient, .established)
        h.send(conn, .toServer, frame(0x07D0, seq: 0, body: helloBody(id: PeerIdentity.idString(alice), name: "Alice")))
        h.tcpEvent(conn, .toServer, .fin)
        h.tcpEvent(conn, .toServer, .closed)
        XCTAssertNil(h.events(.tcpOpened).first?.attrs["invitation"])
        XCTAssertEqual(h.events(.tcpClosed).first?.attrs["invitation"], "true")
        XCTAssertEqual(h.events(.tcpClosed).first?.from.displayName, "Alice")
    }
}

final class ICMPErrorPluginTests: XCTestCase {
    let alice: UInt64 = 0x0123_4567_89AB_CDEF
    let antani: UInt64 = PeerIdentity.parse(idString: "2d9omqtkz17st") ?? 0

    func icmp(_ h: Harness, _ info: ICMPErrorInfo) {
        h.pipeline.process(.icmpError(frame: h.nextFrame(), info: info))
    }

    func testPortUnreachableForASessionFlow() throws {
        let h = Harness([ICMPErrorPlugin.self])
        let a = endpoint("192.168.1.20", 16401), b = endpoint("192.168.1.10", 16402)
        h.context.directory.learn(peerID: alice, displayName: "Alice")
        h.context.directory.learn(peerID: alice, endpoint: a)
        h.context.directory.learn(peerID: antani, displayName: "Antani")
        h.context.directory.learn(peerID: antani, endpoint: b)
        let quoted = FlowKey(.udp, a, b)
        icmp(h, ICMPErrorInfo(reporter: b.address, isV6: false, type: 3, code: 3, quoted: quoted))
        let e = try XCTUnwrap(h.events.first)
        XCTAssertEqual(e.kind, .icmpUnreachable)
        XCTAssertEqual(e.from.peerID, alice)
        XCTAssertEqual(e.to.peerID, antani)
        XCTAssertEqual(e.to.displayName, "Antani")
        XCTAssertEqual(e.attrs["summary"], "port unreachable")
        XCTAssertEqual(e.attrs["reporter"], b.address.description)
        XCTAssertEqual(e.quotedFlow, quoted, "the quoted flow, typed")
        XCTAssertNil(e.attrs["quoted"], "not as text")
        XCTAssertEqual(h.messages.map(\.type), ["unreachable"])
        XCTAssertTrue(h.diagnostics.isEmpty)
    }

    func testICMPv6AddressUnreachable() throws {
        let h = Harness([ICMPErrorPlugin.self])
        let src = endpoint("fe80::1", 16402), dst = endpoint("fe80::2", 16401)
        icmp(h, ICMPErrorInfo(reporter: src.address, isV6: true, type: 1, code: 3, quoted: FlowKey(.udp, src, dst)))
        let e = try XCTUnwrap(h.events.first)
        XCTAssertEqual(e.attrs["summary"], "address unreachable")
        XCTAssertEqual(e.from.endpoint, src)
        XCTAssertEqual(e.to.endpoint, dst)
    }

    func testOtherErrorsAreMessagesOnly() {
        let h = Harness([ICMPErrorPlugin.self])
        icmp(h, ICMPErrorInfo(reporter: IPAddress("10.0.0.1") ?? .v4(0), isV6: false, type: 11, code: 0,
                              quoted: FlowKey(.udp, endpoint("10.0.0.2", 1), endpoint("10.0.0.3", 2))))
        XCTAssertTrue(h.events.isEmpty)
        XCTAssertEqual(h.messages.map(\.type), ["error"])
    }

    func testUnreachableWithoutQuotedFlow() {
        let h = Harness([ICMPErrorPlugin.self])
        icmp(h, ICMPErrorInfo(reporter: IPAddress("10.0.0.1") ?? .v4(0), isV6: false, type: 3, code: 1, quoted: nil))
        XCTAssertEqual(h.events.first?.kind, .icmpUnreachable)
        XCTAssertEqual(h.events.first?.from, .unknown)
        XCTAssertEqual(h.diagnostics.map(\.id), ["icmp-error.no_quoted_flow"])
    }
}

final class InvitationRegistryTests: XCTestCase {
    func testDescriptors() {
        let ids = (PluginRegistry.invitation + PluginRegistry.transport).map { $0.descriptor.id }
        XCTAssertEqual(ids, ["mpc-invitation", "mpc-invite", "mpc-invite-response", "mpc-invite-connect", "tcp-connection", "icmp-error"])
        XCTAssertEqual(InviteResponsePlugin.descriptor.claims, [.carried("mpc.invitation.data", key: "2")])
        XCTAssertEqual(InvitationFramingPlugin.descriptor.claims, [.tcpHeuristic])
        for t in PluginRegistry.invitation + PluginRegistry.transport {
            XCTAssertFalse(t.descriptor.claims.isEmpty)
            XCTAssertFalse(t.descriptor.messageTypes.isEmpty)
        }
    }
}
