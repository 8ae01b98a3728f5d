import PeerscopeCore
import PeerscopePlugins
import XCTest

/// Non-MPC captures from the corpus: the heuristics must not invent MPC traffic, and what they do
/// take must agree with tshark.
final class OtherCaptureTests: XCTestCase {
    /// tshark 4 (`-Y stun -T fields -e stun.type`): 32 Binding requests (0x0001), 4 Binding
    /// successes (0x0101), 32 Allocate requests (0x0003) and 32 Allocate successes (0x0103).
    /// The capture also has Dropbox LAN-sync JSON broadcasts (udp/17500), which are not app messages.
    func testWhatsAppCallSTUN() throws {
        let packets = try Shared.pcapUDP("corpus/ndpi-whatsapp-login-call.pcap")
        let h = Harness()
        for (f, p) in packets { h.udp(p, f.src, f.dst) }
        h.finish()
        XCTAssertEqual(h.events(.iceRequest).count, 32)
        XCTAssertEqual(h.events(.iceSuccess).count, 4)
        XCTAssertEqual(h.events(.iceUnanswered).count, 28)
        // WhatsApp's Allocate requests declare 106 attribute bytes (not a multiple of 4, against RFC 8489):
        // the strict framing check leaves them alone; the 32 Allocate successes are decoded generically.
        XCTAssertEqual(h.messages.filter { $0.plugin == "stun" && $0.type == "stun" }.count, 32)
        XCTAssertTrue(h.events.filter { $0.kind.family == "app" || $0.kind.family == "gck" || $0.kind.family == "dtls" }.isEmpty)
        XCTAssertTrue(h.diagnostics.isEmpty, "\(h.diagnostics.map(\.line))")
    }

    /// Captures without MPC session traffic: nothing is claimed, nothing diagnosed.
    func testNoFalsePositives() throws {
        for f in ["ndpi-capwap-dtls-80211.pcap", "nfstream-anyconnect-vpn-dtls.pcap", "ndpi-gnutella-hostunreach.pcap",
                  "ndpi-wechat-googlecast.pcap", "ndpi-iphone.pcap"] {
            let packets = try Shared.pcapUDP("corpus/" + f)
            let h = Harness()
            for (fl, p) in packets { h.udp(p, fl.src, fl.dst) }
            h.finish()
            XCTAssertTrue(h.events.isEmpty, "\(f): \(Set(h.events.map(\.kind)))")
            XCTAssertTrue(h.diagnostics.isEmpty, "\(f): \(h.diagnostics.prefix(3).map(\.line))")
            XCTAssertEqual(h.pipeline.unclaimed["udp"] ?? 0, UInt64(packets.count), f)
        }
    }
}
