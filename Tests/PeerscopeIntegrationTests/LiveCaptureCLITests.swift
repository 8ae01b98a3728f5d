import Foundation
import XCTest
import PeerscopeCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 2: `peerscope capture` on the loopback interface sees exactly the datagrams the test sends.
final class LiveCaptureCLITests: XCTestCase {
    func testLoopbackCaptureSeesExactlyTheDatagramsSent() throws {
        guard geteuid() == 0 else { throw XCTSkip("live capture needs root (CI runs as root)") }
        let bin = try CLI.requireBinary()
        let lo = CLI.loopback
        let dstPort = UInt16(20000 + Int(getpid() % 20000))
        let d = try CLI.tempDir()
        let saved = d.appendingPathComponent("lo.pcapng")
        let out = d.appendingPathComponent("out.jsonl")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        let p = Process()
        p.executableURL = bin
        p.arguments = ["capture", "-i", lo, "--filter", "udp dst port \(dstPort)", "--count", "5", "--duration", "20",
                       "--decode", "--show-payloads", "--write", saved.path, "--format", "json", "--output",
                       d.appendingPathComponent("report.json").path]
        p.standardOutput = try FileHandle(forWritingTo: out)
        let errURL = d.appendingPathComponent("err.txt")
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        p.standardError = try FileHandle(forWritingTo: errURL)
        try p.run()
        // Wait until the capture says it is listening.
        let ready = Date().addingTimeInterval(10)
        while Date() < ready, !((try? String(contentsOf: errURL, encoding: .utf8)) ?? "").contains("capturing on") {
            usleep(50_000)
        }
        usleep(300_000)

        // Five app keep-alive messages (JSON, one per datagram) from distinct source ports.
        var sent: [(UInt16, String)] = []
        for i in 0 ..< 5 {
            #if os(Linux)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            #else
            let fd = socket(AF_INET, SOCK_DGRAM, 0)
            #endif
            XCTAssertGreaterThanOrEqual(fd, 0)
            defer { close(fd) }
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr("127.0.0.1")
            withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            var bound = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) } }
            let srcPort = UInt16(bigEndian: bound.sin_port)
            let text = #"{"type":"keep_alive","deviceId":"test-\#(i)","timestamp":\#(1000 + i)}"#
            var dst = sockaddr_in()
            dst.sin_family = sa_family_t(AF_INET)
            dst.sin_port = dstPort.bigEndian
            dst.sin_addr.s_addr = inet_addr("127.0.0.1")
            let n = text.withCString { ptr in
                withUnsafePointer(to: &dst) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, ptr, strlen(ptr), 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                } }
            }
            XCTAssertEqual(n, text.utf8.count)
            sent.append((srcPort, text))
            usleep(20_000)
        }
        p.waitUntilExit()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        XCTAssertEqual(p.terminationStatus, 0, stderr)
        XCTAssertTrue(stderr.contains("stopped (count) after 5 packet(s)"), stderr)

        // What peerscope decoded live: exactly those datagrams, ports and payloads.
        let lines = try String(contentsOf: out, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
        let keepAlives = lines.filter { $0["plugin"] == "app-keepalive" }
        XCTAssertEqual(keepAlives.count, 5, "\(lines)")
        for (m, (srcPort, text)) in zip(keepAlives, sent) {
            XCTAssertEqual(m["src"]?.stringValue, "127.0.0.1:\(srcPort)")
            XCTAssertEqual(m["dst"]?.stringValue, "127.0.0.1:\(dstPort)")
            let expected = try JSONParser.parse(text)
            XCTAssertEqual(m["deviceId"], expected["deviceId"])
        }
        // The saved pcapng holds the same five frames, readable by the analyser.
        let replay = try CLI.run(["decode", "--plugin", "app-keepalive", saved.path])
        XCTAssertEqual(replay.status, 0, replay.stderr)
        XCTAssertEqual(replay.stdout.split(separator: "\n").count, 5)
        let report = try JSONParser.parse(String(contentsOf: d.appendingPathComponent("report.json"), encoding: .utf8))
        XCTAssertEqual(report["stats"]?["frames"]?.int64Value, 5)
    }
}
