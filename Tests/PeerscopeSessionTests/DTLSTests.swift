import PeerscopeCore
import PeerscopePlugins
import XCTest

/// DTLS records built by hand (RFC 6347 layouts), plain and with MPC's 0xD0 prefix.
enum DTLSBuild {
    static func record(_ type: UInt8, epoch: UInt16 = 0, seq: UInt64, version: UInt16 = 0xFEFF, _ body: [UInt8]) -> [UInt8] {
        var r: [UInt8] = [type, UInt8(version >> 8), UInt8(version & 0xFF), UInt8(epoch >> 8), UInt8(epoch & 0xFF)]
        for i in (0 ..< 6).reversed() { r.append(UInt8(truncatingIfNeeded: seq >> (UInt64(i) * 8))) }
        r += [UInt8(body.count >> 8), UInt8(body.count & 0xFF)]
        return r + body
    }

    static func u24(_ v: Int) -> [UInt8] { [UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

    static func handshake(_ type: UInt8, msgSeq: UInt16, _ body: [UInt8], fragmentOffset: Int = 0, total: Int? = nil) -> [UInt8] {
        [type] + u24(total ?? body.count) + [UInt8(msgSeq >> 8), UInt8(msgSeq & 0xFF)] + u24(fragmentOffset) + u24(body.count) + body
    }

    static func clientHello(cookie: [UInt8] = []) -> [UInt8] {
        [0xFE, 0xFF] + [UInt8](repeating: 0x11, count: 32) + [0] + [UInt8(cookie.count)] + cookie
            + [0x00, 0x04, 0xC0, 0x19, 0xC0, 0x18] + [1, 0]
    }

    static func serverHello() -> [UInt8] {
        [0xFE, 0xFF] + [UInt8](repeating: 0x22, count: 32) + [0] + [0xC0, 0x19] + [0]
    }

    /// One full DTLS 1.0 handshake and a little application data: (from client?, datagram records).
    static func flights() -> [(Bool, [[UInt8]])] {
        let cookie: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        return [
            (true, [record(22, seq: 0, handshake(1, msgSeq: 0, clientHello()))]),
            (false, [record(22, seq: 0, handshake(3, msgSeq: 0, [0xFE, 0xFF, UInt8(cookie.count)] + cookie))]),
            (true, [record(22, seq: 1, handshake(1, msgSeq: 1, clientHello(cookie: cookie)))]),
            (false, [
                record(22, seq: 1, handshake(2, msgSeq: 1, serverHello())),
                record(22, seq: 2, handshake(12, msgSeq: 2, [UInt8](repeating: 0x33, count: 70))),
                record(22, seq: 3, handshake(14, msgSeq: 3, [])),
            ]),
            (true, [
                record(22, seq: 2, handshake(16, msgSeq: 2, [UInt8](repeating: 0x44, count: 66))),
                record(20, seq: 3, [1]),
                record(22, epoch: 1, seq: 0, [UInt8](repeating: 0x55, count: 64)),
            ]),
            (false, [
                record(20, seq: 4, [1]),
                record(22, epoch: 1, seq: 0, [UInt8](repeating: 0x66, count: 64)),
            ]),
            (true, [record(23, epoch: 1, seq: 1, [UInt8](repeating: 0x77, count: 48))]),
            (false, [record(23, epoch: 1, seq: 1, [UInt8](repeating: 0x88, count: 80))]),
        ]
    }
}

final class DTLSTests: XCTestCase {
    let client = Endpoint(v4(10, 1, 0, 1), 16402)
    let server = Endpoint(v4(10, 1, 0, 2), 16401)

    /// Sends the flights: all records of a flight in one datagram (`perRecord` false) or one datagram
    /// per record; `wrap` prefixes each datagram with 0xD0.
    func run(wrap: Bool, perRecord: Bool, client: Endpoint? = nil, server: Endpoint? = nil) -> Harness {
        let c = client ?? self.client, s = server ?? self.server
        let h = Harness(Harness.session)
        for (fromClient, records) in DTLSBuild.flights() {
            let datagrams = perRecord ? records : [records.flatMap { $0 }]
            for d in datagrams {
                h.udp((wrap ? [0xD0] : []) + d, fromClient ? c : s, fromClient ? s : c, dt: 20 * CaptureTime.millisecond)
            }
        }
        h.finish()
        return h
    }

    func checkHandshake(_ h: Harness, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))", file: file, line: line)
        let hs = h.events(.dtlsHandshake).map { $0.attrs["message"] ?? "?" }
        XCTAssertEqual(hs, ["ClientHello", "HelloVerifyRequest", "ClientHello", "ServerHello", "ServerKeyExchange",
                            "ServerHelloDone", "ClientKeyExchange", "Finished", "Finished"], file: file, line: line)
        XCTAssertEqual(h.events(.dtlsHandshake).filter { $0.attrs["encrypted"] == "true" }.count, 2, file: file, line: line)
        XCTAssertEqual(h.events(.dtlsChangeCipherSpec).count, 2, file: file, line: line)
        let est = h.events(.dtlsEstablished)
        XCTAssertEqual(est.count, 1, file: file, line: line)
        XCTAssertEqual(est.first?.attrs["how"], "ccs+finished", file: file, line: line)
        // Established after the server's Finished, before any application data.
        let kinds = h.events.map(\.kind)
        if let e = kinds.firstIndex(of: .dtlsEstablished), let d = kinds.firstIndex(of: .dtlsApplicationData),
           let lastFinished = kinds.lastIndex(of: .dtlsHandshake) {
            XCTAssertLessThan(lastFinished, e, file: file, line: line)
            XCTAssertLessThan(e, d, file: file, line: line)
        } else {
            XCTFail("missing events: \(kinds)", file: file, line: line)
        }
        XCTAssertEqual(h.events(.dtlsApplicationData).map { $0.attrs["size"] }, ["48", "80"], file: file, line: line)
        XCTAssertTrue(h.events(.dtlsStalled).isEmpty, file: file, line: line)
        XCTAssertTrue(h.events(.dtlsAlert).isEmpty, file: file, line: line)
        XCTAssertTrue(h.messages.allSatisfy { $0.plugin == "dtls" }, file: file, line: line)
        // The ServerHello's suite is read.
        XCTAssertEqual(h.events(.dtlsHandshake).first { $0.attrs["message"] == "ServerHello" }?.attrs["cipherSuite"], "c019",
                       file: file, line: line)
    }

    func testPlainHandshakeEstablishes() { checkHandshake(run(wrap: false, perRecord: false)) }
    func testPlainHandshakeOneRecordPerDatagram() { checkHandshake(run(wrap: false, perRecord: true)) }
    func testD0WrappedHandshakeEstablishes() {
        let h = run(wrap: true, perRecord: true)
        checkHandshake(h)
        XCTAssertTrue(h.messages.allSatisfy { $0.field("wrapped") == .bool(true) })
    }
    func testD0WrappedSeveralRecordsPerDatagram() { checkHandshake(run(wrap: true, perRecord: false)) }

    func testHandshakeOnEphemeralPortsUsesHeuristic() {
        let h = run(wrap: false, perRecord: false, client: Endpoint(v4(10, 1, 0, 1), 51000), server: Endpoint(v4(10, 1, 0, 2), 52000))
        checkHandshake(h)
    }

    func testAlertsClearAndEncrypted() {
        let h = Harness(Harness.session)
        h.udp(DTLSBuild.flights()[0].1[0], client, server)
        h.udp(DTLSBuild.record(21, seq: 1, [2, 40]), server, client)
        h.udp([0xD0] + DTLSBuild.record(21, epoch: 1, seq: 9, [UInt8](repeating: 0xAB, count: 26)), client, server)
        h.finish()
        let alerts = h.events(.dtlsAlert)
        XCTAssertEqual(alerts.count, 2)
        XCTAssertEqual(alerts[0].attrs["level"], "fatal")
        XCTAssertEqual(alerts[0].attrs["description"], "handshake_failure")
        XCTAssertEqual(alerts[0].attrs["duringHandshake"], "true")
        XCTAssertEqual(alerts[0].flow?.src, server)
        XCTAssertEqual(alerts[1].attrs["level"], "encrypted")
        XCTAssertEqual(alerts[1].attrs["description"], "encrypted alert")
        // A failed handshake is not also reported as stalled, nor as established.
        XCTAssertTrue(h.events(.dtlsStalled).isEmpty)
        XCTAssertTrue(h.events(.dtlsEstablished).isEmpty)
    }

    func testStalledHandshakeAfterRetransmissions() {
        let h = Harness(Harness.session)
        let hello = DTLSBuild.flights()[0].1[0]
        h.udp([0xD0] + hello, client, server)
        h.udp([0xD0] + hello, client, server, dt: CaptureTime.second)
        h.udp([0xD0] + hello, client, server, dt: 2 * CaptureTime.second)
        // Capture time moves on with other traffic; the tick expires the handshake.
        let other = Endpoint(v4(10, 9, 9, 9), 40000)
        for _ in 0 ..< 15 { h.udp([0x55], other, other, dt: CaptureTime.second) }
        let stalled = h.events(.dtlsStalled)
        XCTAssertEqual(stalled.count, 1)
        XCTAssertEqual(stalled.first?.attrs["lastMessage"], "ClientHello")
        XCTAssertNil(stalled.first?.attrs["atEnd"])
        XCTAssertEqual(stalled.first?.evidence, .frame(input: 0, frame: 3))
        XCTAssertEqual(h.events(.dtlsHandshake).filter { $0.attrs["retransmit"] == "true" }.count, 2)
        h.finish()
        XCTAssertEqual(h.events(.dtlsStalled).count, 1, "reported once")
    }

    func testUnfinishedHandshakeAtEndOfCapture() {
        let h = Harness(Harness.session)
        for (fromClient, records) in DTLSBuild.flights().prefix(4) {
            h.udp(records.flatMap { $0 }, fromClient ? client : server, fromClient ? server : client)
        }
        h.finish()
        let stalled = h.events(.dtlsStalled)
        XCTAssertEqual(stalled.count, 1)
        XCTAssertEqual(stalled.first?.attrs["atEnd"], "true")
        XCTAssertEqual(stalled.first?.attrs["lastMessage"], "ServerHelloDone")
    }

    func testFragmentedHandshakeMessage() {
        let h = Harness(Harness.session)
        let cert = [UInt8](repeating: 0x5A, count: 300)
        let f1 = DTLSBuild.handshake(11, msgSeq: 2, Array(cert[0 ..< 200]), fragmentOffset: 0, total: 300)
        let f2 = DTLSBuild.handshake(11, msgSeq: 2, Array(cert[200...]), fragmentOffset: 200, total: 300)
        h.udp(DTLSBuild.record(22, seq: 5, f1), server, client)
        h.udp(DTLSBuild.record(22, seq: 6, f2), server, client)
        let hs = h.events(.dtlsHandshake)
        XCTAssertEqual(hs.count, 1, "one event per message, at its first fragment")
        XCTAssertEqual(hs.first?.attrs["message"], "Certificate")
        XCTAssertEqual(hs.first?.attrs["fragment"], "0+200/300")
        XCTAssertEqual(h.messages.count, 2)
        XCTAssertTrue(h.warnings.isEmpty)
    }

    /// zeek's DTLS 1.3 capture with connection IDs: unified headers are recognised, two handshakes
    /// complete, and the ClientHello-only flows are reported as stalled.
    func testDTLS13ConnectionIDCapture() throws {
        let packets = try Shared.pcapUDP("corpus/zeek-dtls13-cid.pcap")
        XCTAssertFalse(packets.isEmpty)
        let h = Harness(Harness.session)
        for (flow, payload) in packets { h.udp(payload, flow.src, flow.dst, dt: 10 * CaptureTime.millisecond) }
        h.finish()
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))")
        let unified = packets.filter { ($0.1.first ?? 0) & 0xE0 == 0x20 }.count
        XCTAssertEqual(h.messages.filter { $0.type == "dtls13-record" }.count, unified)
        XCTAssertEqual(h.pipeline.unclaimed["udp"] ?? 0, 0)
        // Flows (client ports) that got an answer from port 11111, read off the capture.
        var answered = Set<UInt16>(), all = Set<UInt16>()
        for (f, _) in packets {
            if f.dst.port == 11111 { all.insert(f.src.port) }
            if f.src.port == 11111 { answered.insert(f.dst.port) }
        }
        // Every answered flow exchanges handshake-epoch records both ways, then application-epoch ones.
        let est = h.events(.dtlsEstablished)
        XCTAssertEqual(Set(est.compactMap { $0.flow.map { $0.src.port == 11111 ? $0.dst.port : $0.src.port } }), answered)
        XCTAssertTrue(est.allSatisfy { $0.attrs["how"] == "dtls1.3-application-epoch" })
        let stalled = h.events(.dtlsStalled)
        XCTAssertEqual(Set(stalled.compactMap { $0.flow?.src.port }), all.subtracting(answered))
    }
}

/// zeek's WebRTC capture (STUN checks with MESSAGE-INTEGRITY and FINGERPRINT, then a DTLS 1.2
/// handshake). tshark 4 reads frames 1-14 as: requests 1,3,4,7,10; successes 2,5,6,8,12
/// (frame 2 XOR-MAPPED-ADDRESS 192.150.187.238:31288, frame 5 74.201.205.9:43044); DTLS Client
/// Hello 9, Server Hello..Done 11, client CCS+Finished 13, server CCS+Finished 14.
final class WebRTCCaptureTests: XCTestCase {
    func testSTUNAndDTLSOfAWebRTCCall() throws {
        let packets = try Shared.pcapUDP("corpus/zeek-webrtc-stun-dtls.pcap")
        XCTAssertGreaterThanOrEqual(packets.count, 14)
        let h = Harness(Harness.session)
        for (f, p) in packets { h.udp(p, f.src, f.dst) }
        h.finish()
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))")
        let req = h.events(.iceRequest), ok = h.events(.iceSuccess)
        XCTAssertEqual(req.prefix(5).map(\.evidence), [1, 3, 4, 7, 10].map { .frame(input: 0, frame: $0) })
        XCTAssertEqual(ok.prefix(5).map(\.evidence), [2, 5, 6, 8, 12].map { .frame(input: 0, frame: $0) })
        XCTAssertTrue(ok.allSatisfy { $0.attrs["matched"] == "true" })
        XCTAssertEqual(ok.first?.attrs["mapped"], "192.150.187.238:31288")
        XCTAssertEqual(ok.dropFirst().first?.attrs["mapped"], "74.201.205.9:43044")
        // Every FINGERPRINT verifies.
        let fps = h.messages.flatMap { ($0.field("attributes")?.arrayValue ?? []).filter { $0["type"] == .string("0x8028") } }
        XCTAssertFalse(fps.isEmpty)
        XCTAssertTrue(fps.allSatisfy { $0["valid"] == .bool(true) })
        XCTAssertTrue(h.events(.checksumError).isEmpty)
        let hs = h.events(.dtlsHandshake).map { $0.attrs["message"] ?? "" }
        XCTAssertEqual(Array(hs.prefix(6)), ["ClientHello", "ServerHello", "Certificate", "ServerKeyExchange", "CertificateRequest", "ServerHelloDone"])
        XCTAssertEqual(h.events(.dtlsEstablished).count, 1)
        XCTAssertEqual(h.events(.dtlsEstablished).first?.evidence, .frame(input: 0, frame: 14))
        XCTAssertTrue(h.events(.dtlsStalled).isEmpty)
        XCTAssertTrue(h.events(.iceUnanswered).isEmpty)
    }
}
