#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import PeerscopeCapture
import PeerscopeCore
import XCTest

final class LiveCaptureTests: XCTestCase {
    #if os(Linux)
    let loopback = "lo"
    #else
    let loopback = "lo0"
    #endif

    /// Opens a capture, skipping the test when this process may not capture.
    func open(_ options: LiveCaptureOptions) throws -> LiveCapture {
        do {
            return try LiveCapture(options)
        } catch .permissionDenied(_, let message) {
            throw XCTSkip("live capture not permitted here: \(message)")
        }
    }

    /// A UDP socket bound to 127.0.0.1 on a free port (so datagrams to it draw no ICMP errors).
    func boundUDPSocket() throws -> (fd: Int32, port: UInt16) {
        #if os(Linux)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_DGRAM, 0)
        #endif
        XCTAssertGreaterThanOrEqual(fd, 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        #if !os(Linux)
        addr.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(ok, 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    func send(_ payload: [UInt8], from fd: Int32, to port: UInt16) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        #if !os(Linux)
        addr.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        let n = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, payload, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        XCTAssertEqual(n, payload.count)
    }

    /// Minimal Ethernet/IPv4/UDP (or BSD loopback/IPv4/UDP) parse: (source port, destination port, payload).
    func udp(_ f: RawFrame) -> (UInt16, UInt16, [UInt8])? {
        let d = f.data
        var ip: Int
        switch f.info.linkType {
        case LinkType.ethernet:
            guard d.u16be(12) == 0x0800 else { return nil }
            ip = 14
        case LinkType.null, LinkType.loop:
            ip = 4
        default:
            return nil
        }
        guard let vihl = d.byte(ip), vihl >> 4 == 4, d.byte(ip + 9) == 17 else { return nil }
        let udpAt = ip + Int(vihl & 0xF) * 4
        guard let sp = d.u16be(udpAt), let dp = d.u16be(udpAt + 2), let ulen = d.u16be(udpAt + 4),
              let body = d.slice(udpAt + 8, Int(ulen) - 8) else { return nil }
        return (sp, dp, body.array)
    }

    func testCapturesExactlyTheDatagramsSentOnLoopback() throws {
        let receiver = try boundUDPSocket()
        defer { close(receiver.fd) }
        let sender = try boundUDPSocket()
        defer { close(sender.fd) }
        let cap = try open(LiveCaptureOptions(interface: loopback, filter: "udp and dst port \(receiver.port)",
                                              duration: 5 * CaptureTime.second, count: 5, input: 4))
        if loopback == "lo" { XCTAssertEqual(cap.linkType, LinkType.ethernet) }
        let payloads = (0 ..< 5).map { i in Array("peerscope-\(i)-\(receiver.port)".utf8) }
        for p in payloads { send(p, from: sender.fd, to: receiver.port) }

        var frames: [RawFrame] = []
        let before = Int64(Date().timeIntervalSince1970 * 1e9)
        let summary = try cap.run { frames.append($0) }
        XCTAssertEqual(summary.stopReason, .count)
        XCTAssertEqual(summary.frames, 5)
        XCTAssertEqual(frames.count, 5)
        XCTAssertEqual(frames.map(\.info.number), [1, 2, 3, 4, 5])
        // libpcap's own count is at least ours (on Linux `lo` it counts each packet twice).
        XCTAssertGreaterThanOrEqual(summary.received ?? 5, 5)
        var got: [[UInt8]] = []
        for f in frames {
            XCTAssertEqual(f.info.input, 4)
            XCTAssertEqual(f.info.interfaceName, loopback)
            XCTAssertEqual(f.data.count, f.info.capturedLength)
            // Captured just now (the packets were sent before `run`, after `init`).
            XCTAssertLessThan(abs(f.info.t - before), 10 * CaptureTime.second)
            if f.info.linkType == LinkType.ethernet {
                XCTAssertEqual(f.data.prefix(12).array, [UInt8](repeating: 0, count: 12), "lo has zero MACs")
            }
            guard let (sp, dp, body) = udp(f) else { XCTFail("not IPv4/UDP: \(f.data)"); continue }
            XCTAssertEqual(sp, sender.port)
            XCTAssertEqual(dp, receiver.port)
            got.append(body)
        }
        XCTAssertEqual(got, payloads)
        XCTAssertTrue(zip(frames, frames.dropFirst()).allSatisfy { $0.info.t <= $1.info.t })

        // Nothing else matches: a short second run ends on its duration with no frames.
        let cap2 = try open(LiveCaptureOptions(interface: loopback, filter: "udp and dst port \(receiver.port)",
                                               duration: 200 * CaptureTime.millisecond))
        var extra = 0
        let clock = ContinuousClock.now
        let s2 = try cap2.run { _ in extra += 1 }
        XCTAssertEqual(s2.stopReason, .duration)
        XCTAssertEqual(extra, 0)
        XCTAssertLessThan(ContinuousClock.now - clock, .seconds(3))
    }

    func testRequestStopFromAnotherThreadEndsAnIdleCapture() throws {
        let receiver = try boundUDPSocket()
        defer { close(receiver.fd) }
        let cap = try open(LiveCaptureOptions(interface: loopback, filter: "udp and dst port \(receiver.port)",
                                              duration: 30 * CaptureTime.second))
        let handle = cap.stopHandle
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { handle.requestStop() }
        let clock = ContinuousClock.now
        let s = try cap.run { _ in }
        XCTAssertEqual(s.stopReason, .requested)
        XCTAssertLessThan(ContinuousClock.now - clock, .seconds(5))
    }

    func testUnknownInterfaceListsTheRealOnes() throws {
        XCTAssertThrowsError(try LiveCapture(LiveCaptureOptions(interface: "peerscope-nope0"))) { e in
            guard case .noSuchInterface(let name, let available)? = e as? CaptureError else {
                return XCTFail("\(e)")
            }
            XCTAssertEqual(name, "peerscope-nope0")
            XCTAssertTrue(available.contains(loopback), "\(available)")
            XCTAssertTrue("\(e)".contains(loopback), "\(e)")
        }
        XCTAssertTrue(LiveCapture.interfaces().contains(loopback))
    }

    func testPermissionMessageSaysHowToGrantIt() {
        let text = "\(CaptureError.permissionDenied(interface: "en0", message: "You don't have permission"))"
        XCTAssertTrue(text.hasPrefix("en0: permission denied"), text)
        #if os(Linux)
        // The running program's own file, not a shell expression to guess it.
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "?"
        XCTAssertTrue(text.contains("sudo setcap cap_net_raw,cap_net_admin=eip \(exe)"), text)
        XCTAssertFalse(text.contains("$("), text)
        #else
        XCTAssertTrue(text.contains("ChmodBPF") && text.contains("access_bpf"), text)
        #endif
    }

    func testBadFilterQuotesLibpcap() throws {
        do {
            _ = try LiveCapture(LiveCaptureOptions(interface: loopback, filter: "udp port banana"))
            XCTFail("filter accepted")
        } catch .badFilter(let filter, let message) {
            XCTAssertEqual(filter, "udp port banana")
            XCTAssertFalse(message.isEmpty)
            let text = "\(CaptureError.badFilter(filter: filter, message: message))"
            XCTAssertTrue(text.contains("\"udp port banana\"") && text.contains(message), text)
        } catch .permissionDenied {
            throw XCTSkip("live capture not permitted here")
        }
    }
}
