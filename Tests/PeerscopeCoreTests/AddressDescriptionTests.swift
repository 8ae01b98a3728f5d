import XCTest
@testable import PeerscopeCore

/// `IPAddress.description` and `Endpoint.description` write IPv4 text as bytes; these compare them with
/// the string interpolation they replaced (the reference, kept here) on edge values and random ones.
final class AddressDescriptionTests: XCTestCase {
    static func reference(_ a: IPAddress) -> String {
        guard case .v4(let v) = a else { return a.description }
        return "\(v >> 24).\((v >> 16) & 0xFF).\((v >> 8) & 0xFF).\(v & 0xFF)"
    }

    static func reference(_ e: Endpoint) -> String {
        e.address.isV4 ? "\(reference(e.address)):\(e.port)" : "[\(e.address)]:\(e.port)"
    }

    func testIPv4EdgesMatchTheInterpolation() {
        let octets: [UInt32] = [0, 1, 9, 10, 11, 99, 100, 101, 199, 200, 249, 250, 254, 255]
        for a in octets { for b in octets { for c in [0, 9, 10, 100, 255] as [UInt32] { for d in octets {
            let addr = IPAddress.v4(a << 24 | b << 16 | c << 8 | d)
            XCTAssertEqual(addr.description, Self.reference(addr))
        } } } }
        XCTAssertEqual(IPAddress.v4(0).description, "0.0.0.0")
        XCTAssertEqual(IPAddress.v4(.max).description, "255.255.255.255")
        XCTAssertEqual(IPAddress.v4(0xC0A8_0A01).description, "192.168.10.1")
    }

    func testEndpointsMatchTheInterpolation() {
        let ports: [UInt16] = [0, 1, 9, 10, 99, 100, 999, 1000, 5353, 9999, 10000, 49152, 65535]
        let addrs: [IPAddress] = [.v4(0), .v4(.max), .v4(0x0A00_0001), .v4(0xE000_00FB), .v4(0xA9FE_0102),
                                  .v6(hi: 0xFE80 << 48, lo: 1, scope: "en0"), .v6(hi: 0, lo: 1, scope: nil)]
        for a in addrs { for p in ports {
            let e = Endpoint(a, p)
            XCTAssertEqual(e.description, Self.reference(e))
        } }
        XCTAssertEqual(Endpoint(.v4(0x0A00_0001), 65535).description, "10.0.0.1:65535")
        XCTAssertEqual(Endpoint(.v4(.max), 65535).description, "255.255.255.255:65535")
    }

    func testRandomAddressesAndPortsMatchTheInterpolation() {
        var g = SystemRandomNumberGenerator()
        for _ in 0 ..< 50_000 {
            let a = IPAddress.v4(UInt32.random(in: .min ... .max, using: &g))
            XCTAssertEqual(a.description, Self.reference(a))
            let e = Endpoint(a, UInt16.random(in: .min ... .max, using: &g))
            XCTAssertEqual(e.description, Self.reference(e))
        }
    }
}
