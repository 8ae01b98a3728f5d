import PeerscopeCore
import PeerscopeDetectors
import PeerscopePlugins
import PeerscopeTimeline
import XCTest

/// Issue #11: every session's plane from its packets alone, on the real MPC bytes in
/// ../shared/corpus/mpc-vectors (skipped without ../shared) and on packets built beside them.
final class SessionPlaneTests: XCTestCase {
    let p16401 = Endpoint(v4(192, 168, 1, 218), 16401)
    let p16402 = Endpoint(v4(192, 168, 1, 218), 16402)

    func timelines(_ h: Harness) -> Timelines {
        h.finish()
        let b = TimelineBuilder()
        b.add(contentsOf: h.facts + h.events)
        return b.finish()
    }

    /// The real plaintext session (`encryptionPreference: .none`): ICE checks then GCK `0xC1…` both ways.
    func testTheRealPlaintextSessionIsPlaintext() throws {
        let lines = try Shared.gckSession()
        let h = Harness()
        let stun = [(p16402, p16401), (p16401, p16402), (p16402, p16401), (p16401, p16402), (p16402, p16401), (p16401, p16402)]
        for (i, (s, d)) in stun.enumerated() { h.udp(lines[i], s, d) }
        for p in lines.dropFirst(6) {
            let src = UInt32(p[8]) << 24 | UInt32(p[9]) << 16 | UInt32(p[10]) << 8 | UInt32(p[11])
            h.udp(p, src == 0x294C_B86B ? p16402 : p16401, src == 0x294C_B86B ? p16401 : p16402)
        }
        let tl = timelines(h)
        XCTAssertEqual(tl.sessions.count, 1)
        let s = try XCTUnwrap(tl.sessions.first)
        XCTAssertEqual(s.plane, .plaintext)
        XCTAssertEqual(Set(s.planeBySide.values), [.plaintext])
        XCTAssertEqual(s.planeBySide.count, 2, "both sides sent GCK in the clear")
        XCTAssertFalse(s.encrypted)
    }

    /// The real GCK Hello of each side, and `0xD0` + a DTLS 1.0 handshake record (the wrapping the spec
    /// checked on a real encrypted session) from the other: one side plaintext, one DTLS, never up.
    func testOneSidePlaintextOtherDTLSIsAMismatchNamingEachPlane() throws {
        let lines = try Shared.gckSession()
        let hello = try XCTUnwrap(lines.dropFirst(6).first { $0[1] == 0x01 })
        let src = UInt32(hello[8]) << 24 | UInt32(hello[9]) << 16 | UInt32(hello[10]) << 8 | UInt32(hello[11])
        let clearSide = src == 0x294C_B86B ? p16402 : p16401
        let dtlsSide = clearSide == p16402 ? p16401 : p16402
        // 0xD0, then a DTLS 1.0 record header: handshake (22), version FEFF, epoch 0, sequence, length; a ClientHello body.
        var clientHello: [UInt8] = [0xD0, 22, 0xFE, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12]
        clientHello += [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let h = Harness()
        for k in 0 ..< 4 {
            h.udp(hello, clearSide, dtlsSide, dt: 500 * CaptureTime.millisecond)
            var ch = clientHello
            ch[12] = UInt8(k)  // record sequence
            h.udp(ch, dtlsSide, clearSide, dt: 500 * CaptureTime.millisecond)
        }
        let tl = timelines(h)
        let s = try XCTUnwrap(tl.sessions.first)
        XCTAssertEqual(Set(s.planeBySide.values), [.plaintext, .dtls], "\(s.planeBySide)")
        XCTAssertEqual(s.plane, .mismatch)
        XCTAssertNil(s.established)
        let f = DetectorSuite.run(timelines: tl).filter { $0.details["case"] == "encryption" }
        XCTAssertEqual(f.count, 1, "\(f.map(\.message))")
        XCTAssertTrue(f.first?.message.contains("sends plaintext GCK (0xC1") ?? false)
        XCTAssertTrue(f.first?.message.contains("sends DTLS (0xD0") ?? false)
        XCTAssertEqual(f.first?.details["planes"]?.contains("=plaintext"), true)
    }
}
