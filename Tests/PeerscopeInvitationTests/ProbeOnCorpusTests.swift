import Foundation
import XCTest
import PeerscopeCore
@testable import PeerscopePlugins

/// The framing plugin claims TCP streams heuristically, so it must not claim other protocols: the
/// first payload of every TCP flow direction in real captures (HTTP, SMB, Gnutella, TLS, ...) is probed.
/// A minimal classic-pcap reader lives here so the test needs only Core and Plugins.
final class ProbeOnCorpusTests: XCTestCase {
    static let captures = ["ndpi-gnutella-hostunreach.pcap", "ndpi-iphone.pcap", "ndpi-whatsapp-login-call.pcap",
                           "nfstream-anyconnect-vpn-dtls.pcap", "ppp-http-stream-rst.pcap", "sv-macos-lo0-null-smb.pcap"]

    /// First TCP payload per directed flow: (src ip:port, dst ip:port) -> bytes.
    func firstPayloads(_ data: [UInt8]) -> [String: [UInt8]] {
        let b = Bytes(data)
        guard b.u32le(0) == 0xA1B2_C3D4, let link = b.u32le(20) else { return [:] }
        var out: [String: [UInt8]] = [:]
        var at = 24
        while let incl = b.u32le(at + 8), let pkt = b.slice(at + 16, Int(incl)) {
            at += 16 + Int(incl)
            var ip = 0
            switch link {
            case 1:  // Ethernet, optional VLAN
                var et = pkt.u16be(12)
                ip = 14
                if et == 0x8100 { et = pkt.u16be(16); ip = 18 }
                guard et == 0x0800 else { continue }
            case 0:  // NULL/loopback
                guard pkt.u32le(0) == 2 || pkt.u32be(0) == 2 else { continue }
                ip = 4
            default: continue
            }
            guard let vihl = pkt.byte(ip), vihl >> 4 == 4, pkt.byte(ip + 9) == 6, let total = pkt.u16be(ip + 2) else { continue }
            let ihl = Int(vihl & 0x0F) * 4
            let tcp = ip + ihl
            guard let off = pkt.byte(tcp + 12), let sp = pkt.u16be(tcp), let dp = pkt.u16be(tcp + 2),
                  let src = IPAddress(v4: pkt, at: ip + 12), let dst = IPAddress(v4: pkt, at: ip + 16) else { continue }
            let payloadAt = tcp + Int(off >> 4) * 4
            let payloadLen = min(Int(total) + ip, pkt.count) - payloadAt
            guard payloadLen > 0, let payload = pkt.slice(payloadAt, payloadLen) else { continue }
            let key = "\(Endpoint(src, sp)) > \(Endpoint(dst, dp))"
            if out[key] == nil { out[key] = payload.array }
        }
        return out
    }

    func testProbeClaimsNoOtherProtocol() throws {
        guard let shared = sharedDirectory() else { throw XCTSkip("../shared not found") }
        let plugin = InvitationFramingPlugin()
        let conn = TCPConnectionInfo(id: 1, client: endpoint("10.0.0.1", 1), server: endpoint("10.0.0.2", 2), sawSYN: true)
        var probed = 0
        for name in Self.captures {
            guard let data = FileManager.default.contents(atPath: shared.appendingPathComponent("corpus/\(name)").path) else { continue }
            for (flow, payload) in firstPayloads(Array(data)) {
                let r = plugin.probe(PluginInput(frame: FrameInfo(input: 0, number: 1, t: 0, capturedLength: 0, originalLength: 0, linkType: 1),
                                                 delivery: .stream(conn, .toServer), flow: nil, payload: Bytes(payload)))
                probed += 1
                XCTAssertNotEqual(r, .accept, "\(name) \(flow) starts \(Bytes(Array(payload.prefix(16))).hex)")
            }
        }
        if probed == 0 { throw XCTSkip("no corpus captures readable") }
        XCTAssertGreaterThan(probed, 100, "the reader found TCP payloads")
    }
}
