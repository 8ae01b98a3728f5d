import Foundation
import XCTest
@testable import PeerscopeSimulator

/// Every scenario capture as tshark sees it. Skips when tshark is not installed.
final class TsharkTests: XCTestCase {
    private func tshark() throws -> String {
        guard let t = TestSupport.which("tshark") else { throw XCTSkip("tshark not installed") }
        return t
    }

    private func write(_ r: SimulationResult, _ dir: URL) throws -> String {
        let path = dir.appendingPathComponent("\(r.scenario).\(r.options.format.rawValue)").path
        try Data(r.capture).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Warnings that real MPC traffic draws too (checked against the real STUN bytes below) or that a
    /// scenario is about. Anything else at warning or error level, any malformed packet and any bad
    /// checksum in an mDNS, TCP or STUN frame fails.
    private func allowed(_ message: String, protocols: String, scenario: String) -> Bool {
        // RFC 6762 §8.3 (announce at least twice) and §5.2 (continuous querying) repeat identical messages with ID 0.
        if protocols.hasSuffix(":mdns") && (message.hasPrefix("DNS response retransmission") || message.hasPrefix("DNS query retransmission")) { return true }
        if protocols.hasSuffix(":stun") && (message == "Trailing stray characters" || message.hasPrefix("Unknown attribute 0x80")) { return true }
        if protocols.hasSuffix(":tcp") && message == "Connection reset (RST)" && ["channel-error-reset", "reconnect-storm"].contains(scenario) { return true }
        return false
    }

    func testCapturesHaveNoMalformedPacketsOrChecksumErrors() throws {
        let t = try tshark()
        let dir = try TestSupport.tempDirectory("tshark")
        defer { try? FileManager.default.removeItem(at: dir) }
        var formats: [CaptureFileFormat] = [.pcapng]
        formats.append(.pcap)
        for format in formats {
            for s in Simulator.scenarios {
                let r = try Simulator.run(s.name, options: SimulationOptions(format: format))
                let path = try write(r, dir)
                let (status, out) = try TestSupport.run(t, [
                    "-r", path, "-n",
                    "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                    "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|",
                    "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.expert.severity", "-e", "_ws.expert.message",
                    "-e", "_ws.malformed",
                ])
                XCTAssertEqual(status, 0, "\(s.name): \(out)")
                var frames = 0, mdns = 0, tcp = 0, stun = 0
                for line in out.split(separator: "\n") {
                    let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                    guard cols.count >= 2 else { continue }
                    frames += 1
                    let protocols = cols[1]
                    if protocols.contains(":mdns") { mdns += 1 }
                    if protocols.contains(":tcp") { tcp += 1 }
                    if protocols.contains(":stun") { stun += 1 }
                    let checked = protocols.contains(":mdns") || protocols.contains(":tcp") || protocols.contains(":stun")
                    XCTAssertTrue(cols.count < 5 || cols[4].isEmpty, "\(s.name) frame \(cols[0]): malformed (\(protocols))")
                    guard checked, cols.count >= 4 else { continue }
                    let severities = cols[2].split(separator: "|").compactMap { Int($0) }
                    let messages = cols[3].split(separator: "|").map(String.init)
                    for (i, message) in messages.enumerated() {
                        XCTAssertFalse(message.lowercased().contains("checksum"), "\(s.name) frame \(cols[0]): \(message)")
                        let severity = i < severities.count ? severities[i] : 0
                        if severity >= 0x600000 {
                            XCTAssertTrue(allowed(message, protocols: protocols, scenario: s.name),
                                          "\(s.name) [\(format)] frame \(cols[0]) (\(protocols)): \(message)")
                        }
                    }
                }
                XCTAssertEqual(frames, r.frameCount, s.name)
                XCTAssertGreaterThan(mdns, 0, s.name)
                XCTAssertGreaterThan(tcp, 0, s.name)
                if !["channel-error-reset", "declined-invitation"].contains(s.name) { XCTAssertGreaterThan(stun, 0, s.name) }
            }
        }
    }

    func testSimulatedSTUNDrawsTheSameWarningsAsRealMPCBytes() throws {
        let t = try tshark()
        // The first real ICE check, wrapped the simulator's way; tshark must say exactly what it says for ours.
        let url = try TestSupport.sharedDirectory().appendingPathComponent("corpus/mpc-vectors/gck-plaintext-session.hex")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw XCTSkip("vector not readable") }
        let real = TestSupport.hexBytes(String(try XCTUnwrap(text.split(separator: "\n").first)))
        let src: [UInt8] = [192, 0, 2, 1], dst: [UInt8] = [192, 0, 2, 2]
        let udp = IPLayer.udp(src: src, dst: dst, sport: 16401, dport: 16402, payload: real)
        let ip = IPLayer.ipv4(src: src, dst: dst, proto: .udp, ttl: 64, id: 1, dontFragment: true, payload: udp)
        let frame = SimFrame(time: simulationEpochNanos, order: 0, interface: 0, ipPacket: ip, family: .v4,
                             sourceMAC: [2, 0, 0, 0, 0, 1], destinationMAC: [2, 0, 0, 0, 0, 2], sllPacketType: 0)
        let file = CaptureFileWriter.pcapng(interfaces: [SimInterface(name: "en0", linkType: .ethernet, description: "")], frames: [frame], comment: "real")
        let dir = try TestSupport.tempDirectory("stun")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("real.pcapng").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        let (_, realOut) = try TestSupport.run(t, ["-r", path, "-d", "udp.port==16402,stun", "-T", "fields", "-e", "_ws.expert.message"])
        XCTAssertTrue(realOut.contains("Trailing stray characters"), realOut)
        let sim = try Simulator.run("healthy-pair")
        let simPath = try write(sim, dir)
        let (_, simOut) = try TestSupport.run(t, ["-r", simPath, "-Y", "stun.type == 0x0001 && !stun.att.type == 0x0025",
                                                  "-T", "fields", "-e", "_ws.expert.message"])
        let simFirst = simOut.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertEqual(simFirst, realOut.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func testMDNSNamesPortsAndTXTAreWhatTheScenarioSays() throws {
        let t = try tshark()
        let dir = try TestSupport.tempDirectory("mdns")
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["healthy-pair", "group-8", "identity-collision", "reconnect-storm"] {
            let r = try Simulator.run(name)
            let path = try write(r, dir)
            let (status, out) = try TestSupport.run(t, ["-r", path, "-Y", "mdns && dns.flags.response == 1 && dns.resp.ttl > 0",
                                                        "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                                                        "-e", "dns.ptr.domain_name", "-e", "dns.srv.port", "-e", "dns.txt"])
            XCTAssertEqual(status, 0, out)
            var instances: Set<String> = [], ports: [String: Set<Int>] = [:], names: [String: Set<String>] = [:]
            for line in out.split(separator: "\n") {
                let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard cols.count >= 3, let ptr = cols[0].split(separator: "|").first else { continue }
                let instance = String(ptr.split(separator: ".").first ?? "")
                XCTAssertTrue(ptr.hasSuffix("._chat-app._tcp.local"), String(ptr))
                XCTAssertEqual(instance.count, 13)
                XCTAssertTrue(instance.allSatisfy { $0.isNumber || ("a" ... "z").contains($0) })
                instances.insert(instance)
                for p in cols[1].split(separator: "|") { if let n = Int(p) { ports[instance, default: []].insert(n) } }
                for txt in cols[2].split(separator: "|") where txt.hasPrefix("_d=") { names[instance, default: []].insert(String(txt.dropFirst(3))) }
                XCTAssertTrue(cols[2].contains("platform="), "app discovery info in TXT: \(cols[2])")
            }
            XCTAssertEqual(instances, Set(r.advertised.map(\.instance)), name)
            for a in r.advertised {
                XCTAssertEqual(names[a.instance], [a.displayName], "\(name): TXT _d of \(a.instance)")
                XCTAssertEqual(ports[a.instance], Set(a.srvPorts), "\(name): SRV port of \(a.instance)")
            }
            // Goodbyes carry TTL 0 where a device stops advertising.
            if name == "healthy-pair" {
                let (_, bye) = try TestSupport.run(t, ["-r", path, "-Y", "mdns && dns.resp.ttl == 0 && dns.resp.type == 12", "-T", "fields", "-e", "frame.number"])
                XCTAssertFalse(bye.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "goodbye (TTL 0) expected")
            }
        }
    }

    func testReconnectStormBackOffAndKeepAliveSilenceAreVisibleInTheCapture() throws {
        let t = try tshark()
        let dir = try TestSupport.tempDirectory("timing")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Reconnect storm: SYNs to the stale port at back-off 0, 1, 2, 3, 4, 5, 5 s (±0.2 s).
        let storm = try Simulator.run("reconnect-storm")
        let stale = try XCTUnwrap(storm.advertised.first { $0.srvPorts.count == 2 }?.srvPorts.first)
        let (_, syns) = try TestSupport.run(t, ["-r", try write(storm, dir), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == \(stale)",
                                                "-T", "fields", "-e", "frame.time_epoch"])
        let times = syns.split(separator: "\n").compactMap { Double($0) }
        XCTAssertEqual(times.count, 8, "the first dial plus 7 failed retries")
        let retries = Array(times.dropFirst())
        let gaps = zip(retries.dropFirst(), retries).map { $0 - $1 }
        for (gap, want) in zip(gaps, [1.0, 2, 3, 4, 5, 5]) { XCTAssertEqual(gap, want, accuracy: 0.2) }
        let f = try XCTUnwrap(storm.findings.first { $0.kind == "reconnect-storm" })
        XCTAssertEqual(f.attempts, 7)
        XCTAssertEqual(retries.first ?? 0, Double(f.time) / 1e9, accuracy: f.toleranceSeconds)

        // Keep-alive timeout: the peer's keep_alive JSON stops > 6 s before the finding while the other side's continues.
        let keep = try Simulator.run("keepalive-timeout")
        let fk = try XCTUnwrap(keep.findings.first)
        let peerAddress = try XCTUnwrap(keep.devices.first { $0.name == fk.peer }?.addresses.first)
        let (_, ka) = try TestSupport.run(t, ["-r", try write(keep, dir), "-Y", "udp contains \"keep_alive\"",
                                              "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src"])
        var last: [String: Double] = [:]
        for line in ka.split(separator: "\n") {
            let c = line.split(separator: "\t").map(String.init)
            if c.count == 2, let tm = Double(c[0]) { last[c[1]] = max(last[c[1]] ?? 0, tm) }
        }
        let peerLast = try XCTUnwrap(last[peerAddress])
        let otherLast = try XCTUnwrap(last.first { $0.key != peerAddress }?.value)
        XCTAssertGreaterThan(otherLast - peerLast, 4.0)
        XCTAssertEqual(Double(fk.time) / 1e9 - peerLast, 6.5, accuracy: 1.0)
    }
}
