import PeerscopeCore
import PeerscopePlugins
import XCTest
import PeerscopeSimulator

/// Bad bytes become diagnostics with stable ids and offsets; nothing traps.
final class MalformedInputTests: XCTestCase {
    let s = Endpoint(v4(10, 3, 0, 1), 16402)
    let d = Endpoint(v4(10, 3, 0, 2), 16401)

    // MARK: STUN

    func testSTUNTruncatedAtEveryOffset() throws {
        let lines = try Shared.gckSession()
        for line in lines.prefix(6) {
            for k in 0 ..< line.count {
                let h = Harness(Harness.session)
                h.udp(Array(line.prefix(k)), s, d)
                h.finish()
                let diags = h.diagnostics(prefix: "stun.")
                if k >= 8 {
                    XCTAssertFalse(diags.isEmpty, "cut at \(k)")
                    XCTAssertEqual(diags.first?.id, k < 20 ? "stun.header" : "stun.length", "cut at \(k)")
                    XCTAssertEqual(diags.first?.evidence, .frame(input: 0, frame: 1))
                } else {
                    XCTAssertTrue(h.events.isEmpty, "cut at \(k)")
                }
            }
        }
    }

    func testSTUNWrongLengthsAndOverlongAttribute() throws {
        let lines = try Shared.gckSession()
        var longer = lines[0]
        longer[3] &+= 4   // header claims 4 more bytes than the datagram has
        var shorter = lines[0]
        shorter[3] &-= 4
        var attr = lines[0]
        attr[22] = 0x01   // USERNAME now declares 0x0114 bytes
        let h = Harness(Harness.session)
        h.udp(longer, s, d)
        h.udp(shorter, s, d)
        h.udp(attr, s, d)
        XCTAssertEqual(h.diagnostics.filter { $0.id == "stun.length" }.count, 2)
        // The shorter header cuts the last attribute (frame 2); the overlong USERNAME is at offset 20 (frame 3).
        XCTAssertEqual(h.diagnostics.filter { $0.id == "stun.attribute.truncated" }.map(\.evidence),
                       [.frame(input: 0, frame: 2), .frame(input: 0, frame: 3)])
        XCTAssertEqual(h.diagnostics.last?.offset, 20)
    }

    /// A Binding request with SOFTWARE and FINGERPRINT (RFC 5769 layout), fingerprint computed here.
    func stunWithFingerprint(corrupt: Bool) -> [UInt8] {
        let software = Array("peerscope-test".utf8)   // 14 bytes, padded to 16
        var m: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + (0 ..< 12).map { UInt8($0 * 7) }
        m += [0x80, 0x22, 0x00, UInt8(software.count)] + software + [0, 0]
        let len = m.count - 20 + 8   // the header length already counts the FINGERPRINT attribute
        m[2] = UInt8(len >> 8); m[3] = UInt8(len & 0xFF)
        var fp = TestCRC.crc32(m) ^ 0x5354_554E
        if corrupt { fp ^= 1 }
        m += [0x80, 0x28, 0x00, 0x04]
        m += [UInt8(fp >> 24), UInt8((fp >> 16) & 0xFF), UInt8((fp >> 8) & 0xFF), UInt8(fp & 0xFF)]
        return m
    }

    func testSTUNFingerprint() {
        let h = Harness(Harness.session)
        h.udp(stunWithFingerprint(corrupt: false), Endpoint(v4(10, 3, 0, 1), 40000), Endpoint(v4(10, 3, 0, 2), 3478))
        XCTAssertTrue(h.diagnostics.isEmpty)
        XCTAssertEqual(h.events(.iceRequest).count, 1)
        let fpField = (h.messages.first?.field("attributes")?.arrayValue ?? []).first { $0["type"] == .string("0x8028") }
        XCTAssertEqual(fpField?["valid"], .bool(true))

        h.udp(stunWithFingerprint(corrupt: true), Endpoint(v4(10, 3, 0, 1), 40000), Endpoint(v4(10, 3, 0, 2), 3478))
        XCTAssertEqual(h.diagnostics.map(\.id), ["stun.bad_fingerprint"])
        XCTAssertEqual(h.events(.checksumError).first?.attrs["protocol"], "stun")
    }

    // MARK: GCK

    func testGCKTruncatedAtEveryOffset() throws {
        let lines = try Shared.gckSession()
        for line in lines.dropFirst(6) {
            for k in 0 ..< line.count {
                let h = Harness(Harness.session)
                h.udp(Array(line.prefix(k)), s, d)
                h.finish()
                let ids = Set(h.diagnostics.map(\.id))
                if k >= 16 {
                    XCTAssertTrue(ids.isSuperset(of: ["gck.length", "gck.bad_crc"]), "type \(line[1]) cut at \(k): \(ids)")
                    XCTAssertEqual(h.events(.checksumError).count, 1)
                } else if k >= 4 {
                    XCTAssertEqual(ids, ["gck.truncated"], "cut at \(k)")
                }
                // A cut packet never passes as a good one.
                XCTAssertTrue(h.events.allSatisfy { $0.kind == .checksumError }, "cut at \(k)")
            }
        }
    }

    func testGCKBadCRCGivesDiagnosticAndChannelEvent() throws {
        let lines = try Shared.gckSession()
        for line in lines.dropFirst(6) {
            var bad = line
            bad[bad.count - 1] ^= 0x40
            let h = Harness(Harness.session)
            h.udp(bad, s, d)
            let diag = try XCTUnwrap(h.diagnostics.first)
            XCTAssertEqual(diag.id, "gck.bad_crc")
            XCTAssertEqual(diag.offset, 6)
            XCTAssertEqual(diag.severity, .error)
            let e = try XCTUnwrap(h.events.first)
            XCTAssertEqual(h.events.count, 1, "bad packets are dropped, as GCK drops them")
            XCTAssertEqual(e.kind, .checksumError)
            XCTAssertEqual(e.attrs["given"], Bytes(Array(line[6 ..< 8])).hex)
            XCTAssertEqual(e.from.participantID, UInt32(line[8]) << 24 | UInt32(line[9]) << 16 | UInt32(line[10]) << 8 | UInt32(line[11]))
        }
    }

    func testGCKWrongLengthFieldWithValidCRC() throws {
        let lines = try Shared.gckSession()
        var p = lines[28]           // heartbeat, 20 bytes
        p[3] = 24                    // says 24
        TestCRC.sealGCK(&p)
        let h = Harness(Harness.session)
        h.udp(p, s, d)
        XCTAssertEqual(h.diagnostics.map(\.id), ["gck.length"])
        XCTAssertEqual(h.diagnostics.first?.offset, 2)
        XCTAssertEqual(h.events(.gckHeartbeat).count, 1)
    }

    func testGCKBodiesTooShortAreDiagnosed() throws {
        let lines = try Shared.gckSession()
        let h = Harness(Harness.session)
        // Every type cut to its header, length and CRC made consistent: bodies are missing.
        for line in lines.dropFirst(6) {
            var p = Array(line.prefix(16))
            p[2] = 0; p[3] = 16
            TestCRC.sealGCK(&p)
            h.udp(p, s, d)
        }
        let ids = Set(h.diagnostics.map(\.id))
        XCTAssertTrue(ids.isSuperset(of: ["gck.dd.body", "gck.lsa.body", "gck.lsaack.body", "gck.heartbeat.body", "gck.data.inner"]), "\(ids)")
        XCTAssertFalse(ids.contains("gck.bad_crc"))
    }

    func testGCKUnknownType() throws {
        var p: [UInt8] = [0xC1, 0x0C, 0x00, 0x14, 0, 0, 0, 0, 0x29, 0x4C, 0xB8, 0x6B, 0x41, 0x38, 0x02, 0x45, 1, 2, 3, 4]
        TestCRC.sealGCK(&p)
        var ten = p
        ten[1] = 10
        TestCRC.sealGCK(&ten)
        let h = Harness(Harness.session)
        h.udp(p, s, d)
        h.udp(ten, s, d)
        XCTAssertEqual(h.diagnostics.map(\.id), ["gck.unknown_type"])
        XCTAssertEqual(h.messages.map(\.type), ["unknown", "type-10"])
        XCTAssertTrue(h.messages.allSatisfy { $0.plugin == "gck-other" })
    }

    // MARK: DTLS

    func testDTLSTruncatedAtEveryOffset() {
        let records = DTLSBuild.flights()[4].1   // ClientKeyExchange, CCS, encrypted Finished
        for prefix in [[UInt8](), [0xD0]] {
            let full = prefix + records.flatMap { $0 }
            var boundaries = Set<Int>()
            var o = prefix.count
            for r in records { o += r.count; boundaries.insert(o) }
            for k in 0 ..< full.count {
                let h = Harness(Harness.session)
                h.udp(Array(full.prefix(k)), s, d)
                h.finish()
                let diags = h.diagnostics(prefix: "dtls.").filter { $0.severity >= .warning }
                if k >= prefix.count + 3 && !boundaries.contains(k) {
                    XCTAssertFalse(diags.isEmpty, "prefix \(prefix) cut at \(k)")
                    XCTAssertTrue(diags.allSatisfy { ($0.offset ?? -1) >= prefix.count }, "prefix \(prefix) cut at \(k)")
                } else if boundaries.contains(k) {
                    XCTAssertTrue(diags.isEmpty, "a whole number of records is fine (cut at \(k))")
                }
            }
        }
    }

    func testDTLSWrongRecordLengthAndBadSecondRecord() {
        var rec = DTLSBuild.record(23, epoch: 1, seq: 3, [UInt8](repeating: 1, count: 10))
        rec[12] = 11   // one more than there is
        let h = Harness(Harness.session)
        h.udp(rec, s, d)
        h.udp(DTLSBuild.record(23, epoch: 1, seq: 4, [1, 2]) + [0x99, 0xFE, 0xFF, 0, 0], s, d)
        h.udp([0xD0], s, d)   // a lone prefix is not claimed as DTLS
        XCTAssertEqual(h.diagnostics.map(\.id), ["dtls.record.length", "dtls.record.invalid"])
        XCTAssertEqual(h.pipeline.unclaimed["udp"], 1)
        XCTAssertEqual(h.diagnostics.first?.offset, 11)
        XCTAssertEqual(h.diagnostics[1].offset, 15)
        XCTAssertEqual(h.events(.dtlsApplicationData).count, 1)
    }

    func testDTLSClearAlertOfWrongSize() {
        let h = Harness(Harness.session)
        h.udp(DTLSBuild.record(21, seq: 1, [2]), s, d)
        XCTAssertEqual(h.diagnostics.map(\.id), ["dtls.alert.length"])
        XCTAssertEqual(h.events(.dtlsAlert).first?.attrs["level"], "encrypted")
    }

    func testDTLSCertificateFragmentsCapture() throws {
        let packets = try Shared.pcapUDP("corpus/ndpi-dtls-cert-fragments.pcap")
        let h = Harness(Harness.session)
        for (f, p) in packets { h.udp(p, f.src, f.dst) }
        h.finish()
        XCTAssertTrue(h.warnings.isEmpty, "\(h.warnings.map(\.line))")
        let dtlsPayloads = packets.filter { (20 ... 25).contains($0.1.first ?? 0) }.count
        XCTAssertEqual(Set(h.messages.map(\.frame.number)).count, dtlsPayloads)
        XCTAssertTrue(h.events(.dtlsHandshake).contains { $0.attrs["message"] == "Certificate" && $0.attrs["fragment"] != nil })
    }

    // MARK: App JSON

    func testAppJSONTruncatedInsideGCKData() {
        let full = Array(Seeds.keepAlive.utf8)
        for k in 1 ..< full.count {
            let h = Harness()
            h.udp(gckData(Array(full.prefix(k))), s, d)
            XCTAssertTrue(h.diagnostics.isEmpty, "kept while a continuation may follow (cut at \(k))")
            h.finish()
            XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.incomplete"], "cut at \(k)")
            XCTAssertEqual(h.diagnostics.first?.severity, .info)
            XCTAssertTrue(h.events.filter { $0.kind.family == "app" }.isEmpty)
            XCTAssertEqual(h.events(.gckData).count, 1)
        }
    }

    func testAppJSONBrokenInsideGCKData() {
        let h = Harness()
        h.udp(gckData(Array(#"{"type":"keep_alive",]"#.utf8)), s, d)
        XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.invalid"])
        XCTAssertEqual(h.diagnostics.first?.offset, 21)   // the "]"
    }

    func testAppJSONBadInputs() {
        let h = Harness()
        let a = Endpoint(v4(10, 4, 0, 1), 50000), b = Endpoint(v4(10, 4, 0, 2), 50001)
        // A flow is app JSON once it carried an object (either way); its broken datagrams are then diagnosed.
        h.udp(Array(Seeds.response.utf8), b, a)
        h.udp(Array(#"{"type":"handshake",}"#.utf8), a, b)                                   // syntax
        h.udp(Array(("{\"a\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}").utf8), a, b)  // depth
        h.udp(Array(#"{"type":"handshake" "x":1}"#.utf8), a, b)
        XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.invalid", "app-json.invalid", "app-json.invalid"])
        XCTAssertNotNil(h.diagnostics.first?.offset)

        let conn = TCPConnectionInfo(id: 3, client: a, server: b, sawSYN: true)
        // A stream whose first length prefix is implausible is not taken as app JSON at all.
        h.tcp([0x00, 0x10, 0x00, 0x00] + Array("{}".utf8), conn, .toServer)
        XCTAssertEqual(h.pipeline.unclaimed["tcp"], 1)

        // Garbage between newline-delimited objects.
        let conn2 = TCPConnectionInfo(id: 4, client: a, server: b, sawSYN: true)
        h.tcp(Array((Seeds.handshake + "\nxyz garbage\n" + Seeds.response + "\n").utf8), conn2, .toServer)
        XCTAssertEqual(h.diagnostics.last?.id, "app-json.garbage")
        XCTAssertEqual(h.events.filter { $0.kind.family == "app" }.map(\.kind), [.appHandshakeResponse, .appHandshake, .appHandshakeResponse])
    }

    func testAppJSONLengthPrefixResyncAfterOversize() {
        let h = Harness()
        let conn = TCPConnectionInfo(id: 5, client: Endpoint(v4(10, 4, 0, 1), 1), server: Endpoint(v4(10, 4, 0, 2), 2), sawSYN: false)
        let big = AppJSONPlugin.maxMessage + 10
        // The first frame is the evidence the stream is app JSON (a known type; `{}` alone would not do).
        let first = Array(Seeds.response.utf8)
        var stream: [UInt8] = [0, 0, 0, UInt8(first.count)] + first
        stream += [UInt8(big >> 24), UInt8((big >> 16) & 0xFF), UInt8((big >> 8) & 0xFF), UInt8(big & 0xFF)]
        stream += [UInt8](repeating: 0x7B, count: big)
        let body = Array(Seeds.keepAlive.utf8)
        stream += [0, 0, 0, UInt8(body.count)] + body
        var i = 0
        while i < stream.count {
            let n = min(4000, stream.count - i)
            h.tcp(Array(stream[i ..< i + n]), conn, .toServer)
            i += n
        }
        XCTAssertEqual(h.diagnostics.map(\.id), ["app-json.oversize"])
        XCTAssertEqual(h.events.map(\.kind), [.appHandshakeResponse, .appKeepAlive])
    }

    // MARK: Random input

    func testRandomAndMutatedInputNeverTraps() throws {
        let lines = (try? Shared.gckSession()) ?? []
        var seeds: [[UInt8]] = lines + DTLSBuild.flights().flatMap { $0.1 } + Seeds.all.map { Array($0.utf8) }
        seeds.append(gckData(Array(Seeds.chat.utf8)))
        var rng = SimRandom(seed: 0x5EED)
        let h = Harness()
        let conn = TCPConnectionInfo(id: 9, client: s, server: d, sawSYN: true)
        for round in 0 ..< 4000 {
            var p: [UInt8]
            if round % 3 == 0 {
                p = (0 ..< rng.below(80)).map { _ in rng.byte() }
                if let f = p.first, round % 2 == 0 { p[0] = [0xC1, 0xD0, 0x16, 0x00, 0x7B][Int(f) % 5] }
            } else {
                p = seeds[rng.below(seeds.count)]
                for _ in 0 ... rng.below(4) where !p.isEmpty { p[rng.below(p.count)] = rng.byte() }
                if rng.below(4) == 0 { p = Array(p.prefix(rng.below(p.count + 1))) }
                if rng.below(3) == 0 { TestCRC.sealGCK(&p) }
            }
            let ports: (Endpoint, Endpoint) = rng.below(2) == 0 ? (s, d) : (Endpoint(v4(10, 5, 0, 1), 40001), Endpoint(v4(10, 5, 0, 2), 40002))
            h.udp(p, ports.0, ports.1)
            if round % 7 == 0 { h.tcp(p, conn, rng.below(2) == 0 ? .toServer : .toClient) }
        }
        h.finish(after: 60 * CaptureTime.second)
        XCTAssertGreaterThan(h.diagnostics.count, 100)
        // Every message type is one its plugin declares (peerscope plugins prints them).
        let declared = Dictionary(uniqueKeysWithValues: Harness.all.map { ($0.descriptor.id, Set($0.descriptor.messageTypes)) })
        for m in h.messages { XCTAssertTrue(declared[m.plugin]?.contains(m.type) ?? false, "\(m.plugin) emitted \(m.type)") }
        XCTAssertTrue(h.messages.contains { $0.type == "bad-crc" })
        // Stable dotted ids from these plugins only; those raised while decoding a frame name it.
        let families = ["stun.", "dtls.", "gck.", "app-json.", "app-"]
        XCTAssertTrue(h.diagnostics.allSatisfy { d in families.contains { d.id.hasPrefix($0) } }, "\(Set(h.diagnostics.map(\.id)))")
        XCTAssertTrue(h.diagnostics.filter { $0.id != "app-json.truncated" }.allSatisfy { $0.evidence != nil })
    }
}
