import PeerscopeCore
import XCTest
import PeerscopePlugins

/// Drives `MDNSPlugin` through `PluginPipeline` with synthetic packets at explicit capture times.
final class DiscoveryEventsTests: XCTestCase {
    let s = CaptureTime.second
    let t0: Nanos = 1_800_000_000 * CaptureTime.second

    final class Harness {
        let directory = PeerDirectory()
        let context: PluginContext
        let pipeline: PluginPipeline
        var events: [PeerEvent] = []
        /// The identity facts (`identity.*` events), apart from the discovery events.
        var facts: [PeerEvent] = []
        var diagnostics: [Diagnostic] = []
        var messages: [DecodedMessage] = []
        var frame: UInt64 = 0
        var lastTick: Nanos = 0

        init(wantsMessages: Bool = false) {
            context = PluginContext(directory: directory, options: DecodeOptions(wantsMessages: wantsMessages))
            pipeline = PluginPipeline(plugins: [MDNSPlugin.self], context: context)
            context.onEvent = { [unowned self] e in
                if e.kind.isIn("identity") { self.facts.append(e) } else { self.events.append(e) }
            }
            context.onDiagnostic = { [unowned self] in self.diagnostics.append($0) }
            context.onMessage = { [unowned self] in self.messages.append($0) }
        }

        var plugin: MDNSPlugin? { pipeline.plugins.first as? MDNSPlugin }

        /// Ticks once per second of capture time up to `t`, like the real pipeline.
        func advance(to t: Nanos) {
            if lastTick == 0 { lastTick = t }
            while lastTick + CaptureTime.second <= t {
                lastTick += CaptureTime.second
                pipeline.tick(lastTick)
            }
        }

        func send(_ b: DNSBuilder, at t: Nanos, from src: String, port: UInt16 = 5353, to dst: String = "224.0.0.251",
                  dstPort: UInt16 = 5353) {
            advance(to: t)
            frame += 1
            guard let sa = IPAddress(src), let da = IPAddress(dst) else { return }
            let info = FrameInfo(input: 0, number: frame, t: t, capturedLength: b.bytes.count + 42,
                                 originalLength: b.bytes.count + 42, linkType: LinkType.ethernet)
            pipeline.process(.udp(frame: info, flow: FlowKey(.udp, Endpoint(sa, port), Endpoint(da, dstPort)), payload: b.payload))
        }

        func kinds() -> [EventKind] { events.map(\.kind) }
    }

    static let peerA = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]
    static let idA: UInt64 = 0x5A2D_DCB4_2308_149F
    static let idC: UInt64 = 0x0000_1111_2222_3333
    static var peerC: [String] { [PeerIdentity.idString(idC), "_chat", "_tcp", "local"] }

    func announcement(_ inst: [String], host: String, addr: [UInt8], port: UInt16, txt: [String],
                      srvTTL: UInt32 = 120, ptrTTL: UInt32 = 4500) -> DNSBuilder {
        var b = DNSBuilder(an: 1, ar: 3)
        b.ptr("_chat._tcp.local", inst, ttl: ptrTTL)
        b.srv(inst, target: host, port: port, ttl: srvTTL)
        b.txt(inst, txt, ttl: ptrTTL)
        b.a(host, addr, ttl: srvTTL)
        return b
    }

    func testAnnounceRefreshGoodbyeAndSilentExpiry() throws {
        let h = Harness()
        // A browser asks for the service.
        var q = DNSBuilder(flags: 0, qd: 1)
        q.question("_chat._tcp.local", type: 12, qu: true)
        h.send(q, at: t0, from: "192.168.1.30")
        // Peer A announces; peer C announces; A refreshes; A changes its TXT; A says goodbye; C goes silent.
        h.send(announcement(Self.peerA, host: "a-host.local", addr: [192, 168, 1, 10], port: 50001,
                            txt: ["_d=the-air", "__private=1", "room=lobby"]), at: t0 + 1 * s, from: "192.168.1.10")
        h.send(announcement(Self.peerC, host: "c-host.local", addr: [192, 168, 1, 20], port: 50002, txt: ["_d=Phone"]),
               at: t0 + 5 * s, from: "192.168.1.20")
        h.send(announcement(Self.peerA, host: "a-host.local", addr: [192, 168, 1, 10], port: 50001,
                            txt: ["_d=the-air", "__private=1", "room=lobby"]), at: t0 + 60 * s, from: "192.168.1.10")
        h.send(announcement(Self.peerA, host: "a-host.local", addr: [192, 168, 1, 10], port: 50001,
                            txt: ["_d=the-air", "__private=1", "room=garden"]), at: t0 + 61 * s, from: "192.168.1.10")
        // A's goodbye comes after its first SRV (TTL 120 at t=1) would have run out: only the refresh
        // at t=60/61 keeps it alive until then.
        var bye = DNSBuilder(an: 1)
        bye.ptr("_chat._tcp.local", Self.peerA, ttl: 0)
        h.send(bye, at: t0 + 150 * s, from: "192.168.1.10")
        h.advance(to: t0 + 200 * s)
        h.pipeline.finish(t0 + 200 * s)

        XCTAssertEqual(h.diagnostics, [])
        let a = PeerIdentity.idString(Self.idA), c = PeerIdentity.idString(Self.idC)
        let summary = h.events.map { "\($0.kind.rawValue) \($0.attrs["peerID"] ?? "-") \(($0.t - t0) / s)" }
        XCTAssertEqual(summary, [
            "discovery.browse - 0",
            "discovery.announced \(a) 1",
            "discovery.resolved \(a) 1",
            "discovery.announced \(c) 5",
            "discovery.resolved \(c) 5",
            "discovery.updated \(a) 61",
            "discovery.expired \(c) 125",  // SRV TTL 120 from t=5, never refreshed
            "discovery.goodbye \(a) 150",
        ])

        let browse = h.events[0]
        XCTAssertEqual(browse.attrs["service"], "_chat._tcp.local")
        XCTAssertEqual(browse.attrs["qu"], "true")
        XCTAssertEqual(browse.attrs["querier"], "192.168.1.30")

        let announced = h.events[1]
        XCTAssertEqual(announced.from.peerID, Self.idA)
        XCTAssertEqual(announced.from.participantID, 0x2308_149F)
        XCTAssertEqual(announced.from.displayName, "the-air")
        XCTAssertEqual(announced.attrs["participantID"], "2308149F")
        XCTAssertEqual(announced.attrs["displayName"], "the-air")
        XCTAssertEqual(announced.attrs["info._private"], "1")
        XCTAssertEqual(announced.attrs["info.room"], "lobby")
        XCTAssertEqual(announced.attrs["port"], "50001")
        XCTAssertEqual(announced.evidence, .frame(input: 0, frame: 2))

        XCTAssertEqual(h.events[2].attrs["endpoints"], "192.168.1.10:50001")
        XCTAssertEqual(h.events[5].attrs["changedKeys"], "room")
        XCTAssertEqual(h.events[5].attrs["info.room"], "garden")
        XCTAssertEqual(h.events[7].attrs["record"], "PTR")
        let expired = h.events[6]
        XCTAssertEqual(expired.attrs["record"], "SRV")
        XCTAssertEqual(expired.evidence, .frame(input: 0, frame: 3), "expiry points at the last frame that carried C")
        XCTAssertEqual(expired.from.displayName, "Phone")

        // The directory learnt IDs, names, addresses and the SRV endpoint.
        XCTAssertEqual(h.directory.entries[Self.idA]?.displayName, "the-air")
        XCTAssertEqual(h.directory.peerID(for: Endpoint(try XCTUnwrap(IPAddress("192.168.1.10")), 50001)), Self.idA)
        XCTAssertEqual(h.directory.peerID(forParticipant: 0x2308_149F), Self.idA)
        XCTAssertEqual(h.directory.peerIDs(named: "Phone"), [Self.idC])

        // ... and each fact went out as an event once, at the frame that taught it; every announcement
        // and refresh as an advertisement (the engine coalesces them into one event per peer).
        let addrA = try XCTUnwrap(IPAddress("192.168.1.10")), addrC = try XCTUnwrap(IPAddress("192.168.1.20"))
        let learnt = h.facts.filter { $0.kind == .identityLearned }
        XCTAssertEqual(learnt.map(\.from), [
            PeerHint(peerID: Self.idA, displayName: "the-air"), PeerHint(peerID: Self.idA, address: addrA),
            PeerHint(peerID: Self.idA, endpoint: Endpoint(addrA, 50001)),
            PeerHint(peerID: Self.idC, displayName: "Phone"), PeerHint(peerID: Self.idC, address: addrC),
            PeerHint(peerID: Self.idC, endpoint: Endpoint(addrC, 50002)),
        ])
        XCTAssertEqual(learnt.map(\.evidence), [2, 2, 2, 3, 3, 3].map { Evidence.frame(input: 0, frame: $0) })
        XCTAssertTrue(learnt.allSatisfy { $0.flow == nil && $0.source == "mdns" }, "facts never join a flow's runs")
        let ads = h.facts.filter { $0.kind == .identityAdvertised }
        XCTAssertEqual(ads.filter { $0.from.peerID == Self.idA }.map { ($0.t - t0) / s }, [1, 1, 60, 61])
        XCTAssertEqual(ads.filter { $0.from.peerID == Self.idC }.map { ($0.t - t0) / s }, [5, 5])
        XCTAssertEqual(h.directory.entries[Self.idA]?.advertisedLast, ads.filter { $0.from.peerID == Self.idA }.map(\.t).max())

        let sum = try XCTUnwrap(h.plugin).summary()
        XCTAssertEqual(sum.services.first { $0.type == "_chat._tcp.local" }?.instances, 2)
        XCTAssertEqual(sum.services.first { $0.type == "_chat._tcp.local" }?.mpcInstances, 2)
        XCTAssertEqual(Set(sum.instances.map(\.state)), [.goodbye, .expired])
        XCTAssertEqual(sum.browsers.map(\.address.description), ["192.168.1.30"])
    }

    func testReannouncementAfterGoodbyeIsAnnouncedAgain() {
        let h = Harness()
        let ann = announcement(Self.peerA, host: "a-host.local", addr: [10, 0, 0, 1], port: 1000, txt: ["_d=X"])
        h.send(ann, at: t0, from: "10.0.0.1")
        var bye = DNSBuilder(an: 1)
        bye.srv(Self.peerA, target: "a-host.local", port: 1000, ttl: 0)
        h.send(bye, at: t0 + 2 * s, from: "10.0.0.1")
        h.send(bye, at: t0 + 3 * s, from: "10.0.0.1")  // repeated goodbye: one event
        h.send(ann, at: t0 + 10 * s, from: "10.0.0.1")
        XCTAssertEqual(h.kinds(), [.announced, .resolved, .goodbye, .announced, .resolved])
    }

    func testTXTArrivingAfterAnAnnouncementWithoutItIsAnUpdate() {
        let h = Harness()
        var ptr = DNSBuilder(an: 1)
        ptr.ptr("_chat._tcp.local", Self.peerA, ttl: 4500)
        h.send(ptr, at: t0, from: "10.0.0.1")
        var txt = DNSBuilder(an: 1)
        txt.txt(Self.peerA, ["_d=Late Name"], ttl: 4500)
        h.send(txt, at: t0 + 1 * s, from: "10.0.0.1")
        XCTAssertEqual(h.kinds(), [.announced, .updated])
        XCTAssertNil(h.events[0].attrs["displayName"])
        XCTAssertEqual(h.events[1].attrs["displayName"], "Late Name")
        XCTAssertEqual(h.events[1].attrs["changedKeys"], "_d")
        XCTAssertEqual(h.directory.entries[Self.idA]?.displayName, "Late Name")
    }

    func testBrowseQueriesAreThrottledPerQuerierAndService() {
        let h = Harness()
        var q = DNSBuilder(flags: 0, qd: 1)
        q.question("_chat._tcp.local", type: 12)
        for i in 0 ..< 5 { h.send(q, at: t0 + Nanos(i) * s, from: "10.0.0.5") }
        h.send(q, at: t0 + 2 * s, from: "10.0.0.6")
        h.send(q, at: t0 + 30 * s, from: "10.0.0.5")
        XCTAssertEqual(h.events.map { $0.attrs["querier"] ?? "" }, ["10.0.0.5", "10.0.0.6", "10.0.0.5"])
    }

    func testSameDisplayNameBehindTwoPeerIDsIsANameConflict() {
        let h = Harness()
        h.send(announcement(Self.peerA, host: "a.local", addr: [10, 0, 0, 1], port: 1000, txt: ["_d=iPhone"]),
               at: t0, from: "10.0.0.1")
        h.send(announcement(Self.peerC, host: "c.local", addr: [10, 0, 0, 2], port: 2000, txt: ["_d=iPhone"]),
               at: t0 + 1 * s, from: "10.0.0.2")
        let conflicts = h.events.filter { $0.kind == .nameConflict }
        XCTAssertEqual(conflicts.count, 1)
        XCTAssertEqual(conflicts.first?.attrs["displayName"], "iPhone")
        XCTAssertEqual(conflicts.first?.from.peerID, Self.idC)
        XCTAssertEqual(conflicts.first?.to.peerID, Self.idA)
        // After A's goodbye, a third ID with the same name is no conflict with A.
        var bye = DNSBuilder(an: 1)
        bye.ptr("_chat._tcp.local", Self.peerA, ttl: 0)
        h.send(bye, at: t0 + 2 * s, from: "10.0.0.1")
        var byeC = DNSBuilder(an: 1)
        byeC.ptr("_chat._tcp.local", Self.peerC, ttl: 0)
        h.send(byeC, at: t0 + 2 * s, from: "10.0.0.2")
        let d = [PeerIdentity.idString(0x42), "_chat", "_tcp", "local"]
        h.send(announcement(d, host: "d.local", addr: [10, 0, 0, 3], port: 3000, txt: ["_d=iPhone"]), at: t0 + 3 * s, from: "10.0.0.3")
        XCTAssertEqual(h.events.filter { $0.kind == .nameConflict }.count, 1)
    }

    func testNameConflictsComeInTheOrderThePeersWereSeenNotHashOrder() {
        // Eight devices named alike, announced one after another; the ninth conflicts with each of them,
        // in the order they appeared (hash order would differ from run to run: 1 in 8! to match).
        let h = Harness()
        let ids: [UInt64] = (1 ... 9).map { 0x0100_0000_0000_0000 &+ UInt64($0) &* 0x0000_1357_9BDF_0123 }
        for (i, id) in ids.enumerated() {
            let inst = [PeerIdentity.idString(id), "_chat", "_tcp", "local"]
            let octet = UInt8(i + 1)
            h.send(announcement(inst, host: "h\(i).local", addr: [10, 0, 1, octet], port: UInt16(1000 + i), txt: ["_d=iPad"]),
                   at: t0 + Int64(i) * s, from: "10.0.1.\(octet)")
        }
        let last = h.events.filter { $0.kind == .nameConflict && $0.from.peerID == ids[8] }
        XCTAssertEqual(last.compactMap(\.to.peerID), Array(ids.prefix(8)))
    }

    func testSameInstanceAnsweredFromTwoHostsIsAnInstanceConflict() {
        let h = Harness()
        h.send(announcement(Self.peerA, host: "a.local", addr: [10, 0, 0, 1], port: 1000, txt: ["_d=A"]), at: t0, from: "10.0.0.1")
        // The same host again (other address family of the same machine would use the same target): fine.
        h.send(announcement(Self.peerA, host: "a.local", addr: [10, 0, 0, 1], port: 1000, txt: ["_d=A"]), at: t0 + 1 * s, from: "10.0.0.1")
        XCTAssertFalse(h.kinds().contains(.instanceConflict))
        h.send(announcement(Self.peerA, host: "b.local", addr: [10, 0, 0, 9], port: 1000, txt: ["_d=A"]), at: t0 + 2 * s, from: "10.0.0.9")
        let c = h.events.filter { $0.kind == .instanceConflict }
        XCTAssertEqual(c.count, 1)
        XCTAssertEqual(c.first?.attrs["hosts"], "a.local,b.local")
        XCTAssertEqual(c.first?.attrs["otherSource"], "10.0.0.9")
    }

    func testDecodeMessagesAndDiagnosticsThroughThePipeline() throws {
        let h = Harness(wantsMessages: true)
        var b = DNSBuilder(flags: 0x8400, an: 1, ar: 1)
        b.ptr("_chat._tcp.local", Self.peerA, ttl: 4500)
        b.txt(Self.peerA, ["_d=x", "k=v"], ttl: 4500)
        h.send(b, at: t0, from: "fe80::1", port: 5353, to: "ff02::fb")
        let m = try XCTUnwrap(h.messages.first)
        XCTAssertEqual(m.plugin, "mdns")
        XCTAssertEqual(m.type, "response")
        let json = m.json(includeInput: false)
        XCTAssertEqual(json["response"], .bool(true))
        let answers = try XCTUnwrap(json["answers"]?.arrayValue)
        XCTAssertEqual(answers.first?["name"], "_chat._tcp.local")
        XCTAssertEqual(answers.first?["type"], "PTR")
        XCTAssertEqual(answers.first?["ttl"], .uint(4500))
        XCTAssertEqual(answers.first?["target"], "1ddatjp8m3xy7._chat._tcp.local")
        let txt = try XCTUnwrap(json["additionals"]?.arrayValue?.first)
        XCTAssertEqual(txt["txt"], .array(["_d=x", "k=v"]))
        XCTAssertEqual(txt["cacheFlush"], .bool(true))

        // A unicast reply (RFC 6762 §6.7 legacy unicast: from 5353 to the querier's own port) decodes too.
        var uni = DNSBuilder(id: 0x1234, flags: 0x8400, an: 1)
        uni.a("a-host.local", [10, 0, 0, 1], ttl: 10, flush: false)
        h.send(uni, at: t0, from: "10.0.0.1", port: 5353, to: "10.0.0.9", dstPort: 50000)
        XCTAssertEqual(h.messages.count, 2)
        XCTAssertEqual(h.messages[1].json(includeInput: false)["id"], .uint(0x1234))
        XCTAssertEqual(h.messages[1].json(includeInput: false)["answers"]?.arrayValue?.first?["address"], "10.0.0.1")

        // A hostile packet gives a prefixed diagnostic with frame and offset, and no crash.
        h.send(DNSBuilderRaw([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 12, 0, 1]), at: t0 + s, from: "10.0.0.1")
        let d = try XCTUnwrap(h.diagnostics.first)
        XCTAssertEqual(d.id, "mdns.name.loop")
        XCTAssertEqual(d.evidence, .frame(input: 0, frame: 3))
        XCTAssertEqual(d.offset, 12)
    }

    func DNSBuilderRaw(_ bytes: [UInt8]) -> DNSBuilder {
        var b = DNSBuilder()
        b.bytes = bytes
        return b
    }
}
