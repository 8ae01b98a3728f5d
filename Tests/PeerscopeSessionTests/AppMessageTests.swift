import PeerscopeCore
@testable import PeerscopePlugins
import XCTest
import PeerscopeSimulator

/// The seeds' JSON messages (../shared/seeds 000-003): shapes copied from the apps' code.
enum Seeds {
    static let handshake = #"{"type":"handshake","deviceId":"Test iPad","platform":"iOS"}"#
    static let response = #"{"type":"handshake_response","status":"accepted"}"#
    static let keepAlive = #"{"type":"keep_alive","timestamp":1763795012.25,"deviceId":"Test iPad"}"#
    static let secret = "meet at the blue door"
    static let chat = #"{"sender":"Test iPad","content":"meet at the blue door","timestamp":785488212.5}"#
    static let other = #"{"type":"file_offer","name":"x.png","bytes":12}"#
    static let all = [handshake, response, keepAlive, chat, other]
    static let kinds: [EventKind] = [.appHandshake, .appHandshakeResponse, .appKeepAlive, .appChat, .appOther]
}

/// A GCK Data packet carrying `payload` at byte 36, with a valid CRC-16.
func gckData(_ payload: [UInt8], src: UInt32 = 0x294C_B86B, dst: UInt32 = 0x4138_0245, seq: UInt32 = 0) -> [UInt8] {
    func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    func le(_ v: UInt32) -> [UInt8] { Array(be(v).reversed()) }
    let inner: [UInt8] = [0x05, 0x00, 0x00, 0x00] + le(src) + le(dst) + le(seq) + [0x02, UInt8(seq & 0xFF), 0x00, 0x04]
    let total = 16 + inner.count + payload.count
    var p: [UInt8] = [0xC1, 0x05, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0, 0] + be(src) + be(dst) + inner + payload
    TestCRC.sealGCK(&p)
    return p
}

final class AppMessageTests: XCTestCase {
    let a = Endpoint(v4(10, 2, 0, 1), 50000)
    let b = Endpoint(v4(10, 2, 0, 2), 50001)
    let conn = TCPConnectionInfo(id: 7, client: Endpoint(v4(10, 2, 0, 1), 50500), server: Endpoint(v4(10, 2, 0, 2), 7000), sawSYN: true)

    func appEvents(_ h: Harness) -> [PeerEvent] { h.events.filter { $0.kind.family == "app" } }

    func checkSeedEvents(_ h: Harness, file: StaticString = #filePath, line: UInt = #line) {
        let ev = appEvents(h)
        XCTAssertEqual(ev.map(\.kind), Seeds.kinds, file: file, line: line)
        guard ev.count == 5 else { return }
        XCTAssertEqual(ev[0].attrs["deviceId"], "Test iPad", file: file, line: line)
        XCTAssertEqual(ev[0].attrs["platform"], "iOS", file: file, line: line)
        XCTAssertEqual(ev[1].attrs["status"], "accepted", file: file, line: line)
        XCTAssertEqual(ev[1].attrs["accepted"], "true", file: file, line: line)
        XCTAssertEqual(ev[2].attrs["deviceId"], "Test iPad", file: file, line: line)
        XCTAssertEqual(ev[3].attrs["size"], String(Seeds.secret.utf8.count), file: file, line: line)
        XCTAssertEqual(ev[3].attrs["sender"], "Test iPad", file: file, line: line)
        XCTAssertEqual(ev[4].attrs["type"], "file_offer", file: file, line: line)
        XCTAssertEqual(ev.map(\.source), ["app-handshake", "app-handshake-response", "app-keepalive", "app-chat", "app-other"],
                       file: file, line: line)
        XCTAssertFalse(h.allText.contains(Seeds.secret), "chat content leaked", file: file, line: line)
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))", file: file, line: line)
        let chat = h.messages.first { $0.type == "chat" }
        XCTAssertEqual(chat?.field("contentLength"), .int(Int64(Seeds.secret.utf8.count)), file: file, line: line)
        XCTAssertNil(chat?.field("content"), file: file, line: line)
    }

    func testSeedMessagesOverUDP() {
        let h = Harness()
        for m in Seeds.all { h.udp(Array(m.utf8), a, b) }
        checkSeedEvents(h)
        XCTAssertEqual(appEvents(h).first?.flow, FlowKey(.udp, a, b))
    }

    func testChatContentOnlyWithShowPayloads() {
        let h = Harness(showPayloads: true)
        h.udp(Array(Seeds.chat.utf8), a, b)
        let chat = h.messages.first { $0.type == "chat" }
        XCTAssertEqual(chat?.field("content"), .string(Seeds.secret))
        // Asked for, the event carries the contents too (the analyze report shows each message).
        XCTAssertEqual(h.events(.appChat).first?.attrs["content"], Seeds.secret)
        // Not asked for, neither the message nor any event has them.
        let quiet = Harness()
        quiet.udp(Array(Seeds.chat.utf8), a, b)
        XCTAssertNil(quiet.events(.appChat).first?.attrs["content"])
        XCTAssertFalse(quiet.events.map { "\($0.attrs)" }.joined().contains(Seeds.secret))
    }

    func testRejectedHandshakeResponse() {
        let h = Harness()
        h.udp(Array(#"{"type":"handshake_response","status":"rejected"}"#.utf8), a, b)
        XCTAssertEqual(h.events(.appHandshakeResponse).first?.attrs["accepted"], "false")
        XCTAssertEqual(h.events(.appHandshakeResponse).first?.attrs["status"], "rejected")
    }

    func testSeedMessagesOverTCPNewlineDelimitedOneBytePerDelivery() {
        let h = Harness()
        let stream = Array(Seeds.all.joined(separator: "\n").utf8) + [0x0A]
        for byte in stream { h.tcp([byte], conn, .toServer) }
        checkSeedEvents(h)
        XCTAssertEqual(appEvents(h).first?.flow, conn.flow(.toServer))
        h.tcpEvent(.closed, conn, .toServer)
        XCTAssertTrue(h.diagnostics.isEmpty)
    }

    func testConcatenatedAndPrettyPrintedObjectsOverTCP() {
        let h = Harness()
        let pretty = "{\n  \"type\" : \"handshake\",\n  \"deviceId\" : \"Test iPad\",\n  \"platform\" : \"iOS\"\n}"
        let rest = Seeds.all.dropFirst().joined()   // no separators at all
        h.tcp(Array((pretty + rest).utf8), conn, .toServer)
        checkSeedEvents(h)
    }

    func testSeedMessagesOverTCPLengthPrefixedOneBytePerDelivery() {
        let h = Harness()
        var stream: [UInt8] = []
        for m in Seeds.all {
            let body = Array(m.utf8)
            stream += [0, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        for byte in stream { h.tcp([byte], conn, .toClient) }
        checkSeedEvents(h)
        XCTAssertEqual(appEvents(h).first?.flow, conn.flow(.toClient))
    }

    func testBothDirectionsKeepTheirOwnFraming() {
        let h = Harness()
        // Client writes newline-delimited, server answers length-prefixed; bytes interleave.
        let up = Array((Seeds.handshake + "\n" + Seeds.keepAlive + "\n").utf8)
        let body = Array(Seeds.response.utf8)
        let down = [0, 0, 0, UInt8(body.count)] + body
        for i in 0 ..< max(up.count, down.count) {
            if i < up.count { h.tcp([up[i]], conn, .toServer) }
            if i < down.count { h.tcp([down[i]], conn, .toClient) }
        }
        let kinds = appEvents(h).map(\.kind)
        XCTAssertEqual(Set(kinds), [.appHandshake, .appHandshakeResponse, .appKeepAlive])
        XCTAssertEqual(kinds.count, 3)
        XCTAssertEqual(h.events(.appHandshakeResponse).first?.flow, conn.flow(.toClient))
    }

    func testSeedMessagesInsideGCKData() {
        let h = Harness()
        let s = Endpoint(v4(10, 2, 0, 1), 16402), d = Endpoint(v4(10, 2, 0, 2), 16401)
        for (i, m) in Seeds.all.enumerated() { h.udp(gckData(Array(m.utf8), seq: UInt32(i)), s, d) }
        checkSeedEvents(h)
        XCTAssertEqual(h.events(.gckData).count, 5)
        XCTAssertEqual(h.events(.gckData).map { $0.attrs["payloadSize"] }, Seeds.all.map { String($0.utf8.count) })
        XCTAssertEqual(appEvents(h).first?.flow, FlowKey(.udp, s, d))
        // The GCK Data message shows no payload bytes unless asked.
        XCTAssertNil(h.messages.first { $0.plugin == "gck-data" }?.field("restHex"))
    }

    func testMessageSplitOverTwoDataPackets() {
        let h = Harness()
        let src = Endpoint(v4(10, 2, 0, 1), 16402), dst = Endpoint(v4(10, 2, 0, 2), 16401)
        let chat = Array(Seeds.chat.utf8)
        h.udp(gckData(Array(chat[..<30]), seq: 0), src, dst)
        h.udp(gckData(Array(Seeds.keepAlive.utf8), src: 0x4138_0245, dst: 0x294C_B86B), dst, src)  // other direction between
        h.udp(gckData(Array(chat[30...]), seq: 1), src, dst)
        h.finish()
        XCTAssertEqual(appEvents(h).map(\.kind), [.appKeepAlive, .appChat])
        XCTAssertEqual(h.events(.appChat).first?.attrs["size"], String(Seeds.secret.utf8.count))
        XCTAssertTrue(h.diagnostics.isEmpty)
    }

    func testTheFallbackIsAskedLastWhateverTheOrder() {
        // app-other is a declared fallback: listed first or last, it only takes what app-chat does not.
        for plugins: [any DecoderPlugin.Type] in [[AppJSONPlugin.self, AppOtherPlugin.self, AppChatPlugin.self],
                                                 [AppChatPlugin.self, AppJSONPlugin.self, AppOtherPlugin.self]] {
            let h = Harness(plugins)
            h.udp(Array(Seeds.chat.utf8), a, b)
            h.udp(Array(#"{"type":"presence","who":"x"}"#.utf8), a, b)
            XCTAssertEqual(appEvents(h).map(\.kind), [.appChat, .appOther])
            XCTAssertEqual(appEvents(h).last?.attrs["type"], "presence")
            XCTAssertFalse(h.allText.contains(Seeds.secret))
        }
    }

    func testRegistryListsEveryTypeOnceAndDeclaresItsFallbacks() {
        let ids = PluginRegistry.decoders.map { $0.descriptor.id }
        let session = ["stun", "dtls", "gck-hello", "gck-dd", "gck-lsa", "gck-lsaack", "gck-data", "gck-heartbeat", "gck-other"]
        let app = ["app-json", "app-handshake", "app-handshake-response", "app-keepalive", "app-chat", "app-other"]
        XCTAssertEqual(ids.filter { session.contains($0) }, session)
        XCTAssertEqual(ids.filter { app.contains($0) }, app)
        // Fallbacks are declared, not placed: the app family's and the GCK family's.
        XCTAssertEqual(PluginRegistry.decoders.filter { $0.descriptor.priority == .fallback }.map { $0.descriptor.id }.sorted(),
                       ["app-other", "gck-other"])
        XCTAssertEqual(Set(ids).count, ids.count)
        for t in PluginRegistry.decoders { XCTAssertFalse(t.descriptor.claims.isEmpty, t.descriptor.id) }
    }

    func testNonJSONStreamIsNotClaimed() {
        let h = Harness()
        for byte in Array("GET / HTTP/1.1\r\n\r\n".utf8) { h.tcp([byte], conn, .toServer) }
        XCTAssertTrue(h.events.isEmpty)
        XCTAssertTrue(h.messages.isEmpty)
        XCTAssertGreaterThan(h.pipeline.unclaimed["tcp"] ?? 0, 0)
    }

    func testUnfinishedMessageWhenStreamEnds() {
        let h = Harness()
        h.tcp(Array((Seeds.handshake + "\n" + #"{"type":"keep_al"#).utf8), conn, .toServer)
        h.tcpEvent(.closed, conn, .toServer)
        XCTAssertEqual(appEvents(h).map(\.kind), [.appHandshake])
        XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.truncated"])
        // A new connection starts clean.
        let next = TCPConnectionInfo(id: 8, client: conn.client, server: conn.server, sawSYN: true)
        h.tcp(Array((Seeds.keepAlive + "\n").utf8), next, .toServer)
        XCTAssertEqual(appEvents(h).map(\.kind), [.appHandshake, .appKeepAlive])
    }
}

final class AppBroadcastTests: XCTestCase {
    func testBroadcastJSONIsNotAnAppMessage() {
        let h = Harness()
        let src = Endpoint(v4(192, 168, 2, 1), 17500)
        h.udp(Array(Seeds.handshake.utf8), src, Endpoint(v4(192, 168, 2, 255), 17500))
        h.udp(Array(Seeds.handshake.utf8), src, Endpoint(v4(255, 255, 255, 255), 17500))
        h.udp(Array(Seeds.handshake.utf8), src, Endpoint(v4(224, 0, 0, 251), 5353))
        XCTAssertTrue(h.events.isEmpty)
        h.udp(Array(Seeds.handshake.utf8), src, Endpoint(v4(192, 168, 2, 17), 17500))
        XCTAssertEqual(h.events.map(\.kind), [.appHandshake])
    }
}

/// A TCP stream is app JSON only on evidence from its first frames (`AppJSONStreamEvidence`), not on
/// its first byte: ciphertext and random bytes that start with `{` (or a zero byte) stay unclaimed and
/// silent, while an app stream is still decoded and its malformed frames still diagnosed.
final class AppStreamEvidenceTests: XCTestCase {
    let client = Endpoint(v4(10, 6, 0, 1), 50612)

    /// `count` pseudo-random bytes starting with `head`.
    func random(_ rng: inout SimRandom, _ head: [UInt8], _ count: Int) -> [UInt8] {
        head + (0 ..< max(0, count - head.count)).map { _ in rng.byte() }
    }

    /// Sends `bytes` in segments of `mss` bytes.
    func send(_ h: Harness, _ bytes: [UInt8], _ conn: TCPConnectionInfo, _ dir: TCPDirection, mss: Int = 1448) {
        var i = 0
        while i < bytes.count {
            let n = min(mss, bytes.count - i)
            h.tcp(Array(bytes[i ..< i + n]), conn, dir)
            i += n
        }
    }

    func testCiphertextStartingWithABraceOrAZeroIsNeitherClaimedNorDiagnosed() {
        var rng = SimRandom(seed: 0xC1F3)
        // Server data seen from mid-connection (no TLS record header), on 443 and on an ephemeral port.
        let heads: [[UInt8]] = [[0x7B], [0x7B, 0x22], [0x20, 0x0A, 0x7B], [0x00, 0x00, 0x01, 0x10], [0x00, 0x00, 0x00, 0x40, 0x7B]]
        for server in [UInt16(443), 51234] {
            let h = Harness()
            for k in 0 ..< 300 {
                let conn = TCPConnectionInfo(id: UInt64(k + 1), client: client, server: Endpoint(v4(10, 6, 0, 2), server), sawSYN: false)
                send(h, random(&rng, heads[k % heads.count], 6000), conn, .toClient)
                send(h, random(&rng, [0x7B], 700), conn, .toServer, mss: 100 + k)
                h.tcpEvent(.closed, conn, .toServer)
            }
            h.finish()
            XCTAssertTrue(h.diagnostics.isEmpty, "port \(server): \(Set(h.diagnostics.map(\.id)))")
            XCTAssertTrue(h.events.isEmpty, "port \(server)")
            XCTAssertTrue(h.messages.isEmpty, "port \(server)")
            XCTAssertGreaterThanOrEqual(h.pipeline.unclaimed["tcp"] ?? 0, 600, "port \(server)")
        }
    }

    func testOneUntypedOrUnknownObjectIsNotEvidence() {
        let server = Endpoint(v4(10, 6, 0, 2), 8080)
        let streams = [#"{}"# + "\n\u{1}\u{2}binary", #"{"a":1}"# + "\r\n" + "HTTP/1.1 200 OK", #"{"type":"file_offer"}"# + "\nxyz\n",
                       #"{"type":5,"sender":1}"# + "\n" + Seeds.keepAlive, "{\"type\":\"presence\"}{\"a\":x", "{\"a\":-\u{1}"]
        for (k, s) in streams.enumerated() {
            let h = Harness()
            let conn = TCPConnectionInfo(id: UInt64(k + 1), client: client, server: server, sawSYN: true)
            h.tcp(Array(s.utf8), conn, .toServer)
            h.tcpEvent(.closed, conn, .toServer)
            h.finish()
            XCTAssertTrue(h.events.isEmpty && h.diagnostics.isEmpty, "\(s): \(h.events.map(\.kind)) \(h.diagnostics.map(\.id))")
            XCTAssertEqual(h.pipeline.unclaimed["tcp"], 1, s)
        }
    }

    func testAKnownTypeFirstOrTwoTypedObjectsClaimTheStream() {
        let server = Endpoint(v4(10, 6, 0, 2), 8080)
        let streams: [(String, [EventKind])] = [
            (Seeds.keepAlive + "\n", [.appKeepAlive]),
            (Seeds.chat, [.appChat]),
            (Seeds.other + "\n" + #"{"type":"presence"}"# + "\n", [.appOther, .appOther]),
            ("\n " + Seeds.other + Seeds.handshake, [.appOther, .appHandshake]),
        ]
        for (k, (s, kinds)) in streams.enumerated() {
            let h = Harness()
            let conn = TCPConnectionInfo(id: UInt64(k + 1), client: client, server: server, sawSYN: true)
            for byte in Array(s.utf8) { h.tcp([byte], conn, .toServer) }
            XCTAssertEqual(h.events.map(\.kind), kinds, s)
            XCTAssertTrue(h.diagnostics.isEmpty, "\(s): \(h.diagnostics.map(\.id))")
        }
        // Length-prefixed: the same evidence.
        let h = Harness()
        let conn = TCPConnectionInfo(id: 9, client: client, server: server, sawSYN: true)
        var stream: [UInt8] = []
        for m in [Seeds.other, #"{"type":"presence"}"#] {
            let body = Array(m.utf8)
            stream += [0, 0, 0, UInt8(body.count)] + body
        }
        for byte in stream { h.tcp([byte], conn, .toClient) }
        XCTAssertEqual(h.events.map(\.kind), [.appOther, .appOther])
    }

    func testAFirstMessageLongerThanTheProbeWindowIsClaimedOnItsValidPrefix() {
        let h = Harness()
        let conn = TCPConnectionInfo(id: 1, client: client, server: Endpoint(v4(10, 6, 0, 2), 8080), sawSYN: true)
        let long = #"{"sender":"Test iPad","content":""# + String(repeating: "x", count: 2000) + #"","timestamp":1.5}"#
        send(h, Array((long + "\n" + Seeds.keepAlive + "\n").utf8), conn, .toServer, mss: 100)
        XCTAssertEqual(h.events.map(\.kind), [.appChat, .appKeepAlive])
        XCTAssertEqual(h.events(.appChat).first?.attrs["size"], "2000")
        XCTAssertLessThanOrEqual(h.pipeline.probeLimit, 2 * AppJSONStreamEvidence.longPrefix)
    }

    func testAMalformedFrameInTheMiddleOfAnAppStreamIsDiagnosedAtItsFrame() {
        for prefixed in [false, true] {
            let h = Harness()
            let conn = TCPConnectionInfo(id: 1, client: client, server: Endpoint(v4(10, 6, 0, 2), 51234), sawSYN: false)
            let frames = [Seeds.handshake, Seeds.response, #"{"type":"keep_alive","n":1,}"#, Seeds.keepAlive]
            var bad: UInt64 = 0
            for (k, m) in frames.enumerated() {
                let body = Array(m.utf8)
                h.tcp(prefixed ? [0, 0, 0, UInt8(body.count)] + body : body + [0x0A], conn, .toServer)
                if k == 2 { bad = h.frameNumber }
            }
            XCTAssertEqual(h.events.map(\.kind), [.appHandshake, .appHandshakeResponse, .appKeepAlive], "prefixed \(prefixed)")
            XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.invalid"], "prefixed \(prefixed)")
            XCTAssertEqual(h.diagnostics.first?.evidence, .frame(input: 0, frame: bad), "prefixed \(prefixed)")
            XCTAssertEqual(h.diagnostics.first?.severity, .warning)
        }
    }

    func testADatagramIsAppJSONWhenItIsAnObjectOrItsFlowCarriedOne() {
        var rng = SimRandom(seed: 0x0171C)
        let h = Harness()
        // QUIC-like datagrams (443 and ephemeral ports) that start with '{' and end with '}'.
        for k in 0 ..< 500 {
            let p = random(&rng, [0x7B], 20 + k % 1200) + [0x7D]
            h.udp(p, Endpoint(v4(10, 7, 0, 1), UInt16(40000 + k)), Endpoint(v4(10, 7, 0, 2), k % 2 == 0 ? 443 : 51000))
        }
        XCTAssertTrue(h.diagnostics.isEmpty, "\(Set(h.diagnostics.map(\.id)))")
        XCTAssertTrue(h.events.isEmpty)
        XCTAssertEqual(h.pipeline.unclaimed["udp"], 500)
        // On a flow that carried an object (in either direction), a broken one is diagnosed at its frame.
        let a = Endpoint(v4(10, 7, 0, 3), 50000), b = Endpoint(v4(10, 7, 0, 4), 50001)
        h.udp(Array(Seeds.handshake.utf8), a, b)
        h.udp(Array(#"{"type":"keep_alive",}"#.utf8), b, a)
        let bad = h.frameNumber
        h.udp(Array(Seeds.keepAlive.utf8), b, a)
        XCTAssertEqual(h.events.map(\.kind), [.appHandshake, .appKeepAlive])
        XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.invalid"])
        XCTAssertEqual(h.diagnostics.first?.evidence, .frame(input: 0, frame: bad))
    }

    func testTheKnownKeysAreTheAppPluginsClaims() {
        XCTAssertEqual(AppJSON.knownKeys, ["handshake", "handshake_response", "keep_alive", "chat"])
    }

    func testValidPrefix() {
        for s in [#"{"#, #"{"a"#, #"{"a":"#, #"{"a":-"#, #"{"a":1.5e"#, #"{"a":tr"#, #"{"a":"\u00"#, #"{"a":[1,{"b":null}"#] {
            XCTAssertTrue(AppJSONStreamEvidence.validPrefix(Bytes(Array(s.utf8))), s)
        }
        for s in [#"{a"#, #"{"a"1"#, #"{"a":-x"#, #"{"a":1}}"#, "{\"a\":\"\u{1}", #"{"a":tx"#] {
            XCTAssertFalse(AppJSONStreamEvidence.validPrefix(Bytes(Array(s.utf8))), s)
        }
    }
}
