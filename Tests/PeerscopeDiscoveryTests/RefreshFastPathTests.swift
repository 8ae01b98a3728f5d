import PeerscopeCore
import XCTest
@testable import PeerscopePlugins

/// The fast path for byte-identical mDNS refreshes: a repeat only moves times, and a refresh that
/// changes anything (a new address, a new TXT, TTL 0) goes through the full path and gives its events.
/// Every sequence runs twice, fast path on and off, and must give the same events and directory.
final class RefreshFastPathTests: XCTestCase {
    let s = CaptureTime.second
    let t0: Nanos = 1_800_000_000 * CaptureTime.second
    static let inst = ["1ddatjp8m3xy7", "_chat", "_tcp", "local"]

    final class Harness {
        let directory = PeerDirectory()
        let context: PluginContext
        let pipeline: PluginPipeline
        var events: [PeerEvent] = []
        var frame: UInt64 = 0
        var lastTick: Nanos = 0

        /// `peerscope decode`'s lines of the messages, when made with `wantsMessages`.
        var messageLines: [UInt8] = []

        init(fast: Bool, wantsEvents: Bool = true, wantsMessages: Bool = false) {
            context = PluginContext(directory: directory, options: DecodeOptions(wantsMessages: wantsMessages, fastPaths: fast))
            context.wantsEvents = wantsEvents
            pipeline = PluginPipeline(plugins: [MDNSPlugin.self], context: context)
            context.onEvent = { [unowned self] in self.events.append($0) }
            context.onMessage = { [unowned self] in $0.writeJSONLine(to: &self.messageLines, includeInput: false) }
        }

        var plugin: MDNSPlugin? { pipeline.plugins.first as? MDNSPlugin }

        func send(_ b: [UInt8], at t: Nanos, from src: String) {
            if lastTick == 0 { lastTick = t }
            while lastTick + CaptureTime.second <= t {
                lastTick += CaptureTime.second
                pipeline.tick(lastTick)
            }
            frame += 1
            guard let sa = IPAddress(src), let da = IPAddress("224.0.0.251") else { return }
            let info = FrameInfo(input: 0, number: frame, t: t, capturedLength: b.count + 42, originalLength: b.count + 42,
                                 linkType: LinkType.ethernet)
            pipeline.process(.udp(frame: info, flow: FlowKey(.udp, Endpoint(sa, 5353), Endpoint(da, 5353)), payload: Bytes(b)))
        }

        func finish(_ t: Nanos) { pipeline.finish(t) }

        /// Events as comparable lines (kind, time, frame, attributes sorted).
        var lines: [String] {
            events.map { e in
                "\(e.kind) t=\(e.t) \(e.evidence) " + e.attrs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            }
        }
    }

    static func announcement(addr: [UInt8] = [192, 168, 1, 10], txt: [String] = ["_d=the-air", "room=lobby"], ttl: UInt32 = 120,
                      port: UInt16 = 50001) -> [UInt8] {
        var b = DNSBuilder(an: 1, ar: 3)
        b.ptr("_chat._tcp.local", Self.inst, ttl: ttl == 0 ? 0 : 4500)
        b.srv(Self.inst, target: "a-host.local", port: port, ttl: ttl)
        b.txt(Self.inst, txt, ttl: ttl == 0 ? 0 : 4500)
        b.a("a-host.local", addr, ttl: ttl)
        return b.bytes
    }

    /// Runs `packets` (time offset in seconds, bytes) with the fast path on and off.
    func both(_ packets: [(Int64, [UInt8])], end: Int64) -> (fast: Harness, slow: Harness) {
        let fast = Harness(fast: true), slow = Harness(fast: false)
        for h in [fast, slow] {
            for (dt, b) in packets { h.send(b, at: t0 + dt * s, from: "192.168.1.10") }
            h.finish(t0 + end * s)
        }
        XCTAssertEqual(fast.directory.entries, slow.directory.entries, "the directory learns the same either way")
        return (fast, slow)
    }

    func testIdenticalRefreshesTakeTheFastPathAndChangeNothing() throws {
        let a = Self.announcement()
        let (fast, slow) = both([(0, a), (30, a), (60, a), (90, a)], end: 400)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 3, "the three repeats take the fast path")
        XCTAssertEqual(slow.plugin?.fastRefreshes, 0)
        XCTAssertEqual(fast.lines, slow.lines)
        // The refreshes moved the expiry: SRV/A TTL 120 s after the last copy at +90 s.
        let expired = try XCTUnwrap(fast.events.first { $0.kind == .expired })
        XCTAssertEqual(expired.t, t0 + 210 * s)
        XCTAssertEqual(expired.attrs["lastSeen"], CaptureTime.iso8601(t0 + 90 * s))
        let id = try XCTUnwrap(DNSSD.mpcPeerID("1ddatjp8m3xy7"))
        XCTAssertEqual(fast.directory.entries[id]?.advertisedLast, t0 + 90 * s)
        XCTAssertEqual(fast.directory.entries[id]?.advertisedLast, slow.directory.entries[id]?.advertisedLast)
        // Every copy, fast path or not, is an advertisement; the engine's coalescer (the catalogue
        // declares `identity.advertised` steady) keeps them as one event updated in place, whatever
        // other mDNS traffic comes between.
        for h in [fast, slow] {
            // The first copy teaches twice (announced, then resolved): 5 advertisements.
            XCTAssertEqual(h.events.filter { $0.kind == .identityAdvertised }.map(\.t), [0, 0, 30, 60, 90].map { t0 + $0 * s })
            var coalescer = EventCoalescer()
            var kept: [PeerEvent] = []
            for e in h.events { coalescer.add(e, to: &kept) }
            let ads = kept.filter { $0.kind == .identityAdvertised }
            XCTAssertEqual(ads.count, 1)
            XCTAssertEqual(ads.first?.count, 5)
            XCTAssertEqual(ads.first?.t, t0)
            XCTAssertEqual(ads.first?.lastT, t0 + 90 * s)
            XCTAssertEqual(ads.first?.lastEvidence, .frame(input: 0, frame: 4))
            XCTAssertEqual(kept.filter { $0.kind == .identityLearned }.count, 3, "the peer, its address and its endpoint, once")
        }
    }

    func testANewAddressIsNeverSkipped() {
        let (fast, slow) = both([(0, Self.announcement()), (30, Self.announcement()), (60, Self.announcement(addr: [192, 168, 1, 77])),
                                 (90, Self.announcement(addr: [192, 168, 1, 77]))], end: 100)
        XCTAssertEqual(fast.lines, slow.lines)
        let resolved = fast.events.filter { $0.kind == .resolved }
        XCTAssertEqual(resolved.map { $0.attrs["endpoints"] }, ["192.168.1.10:50001", "192.168.1.77:50001"])
        XCTAssertEqual(resolved.last?.evidence, .frame(input: 0, frame: 3))
        XCTAssertEqual(fast.plugin?.fastRefreshes, 2, "the copies at +30 s and +90 s repeat; +60 s changed")
    }

    func testANewTXTIsNeverSkipped() {
        let (fast, slow) = both([(0, Self.announcement()), (30, Self.announcement()), (60, Self.announcement(txt: ["_d=the-air", "room=hall"])),
                                 (90, Self.announcement(txt: ["_d=the-air", "room=hall"]))], end: 100)
        XCTAssertEqual(fast.lines, slow.lines)
        let updated = fast.events.filter { $0.kind == .updated }
        XCTAssertEqual(updated.count, 1)
        XCTAssertEqual(updated.first?.attrs["changedKeys"], "room")
        XCTAssertEqual(updated.first?.evidence, .frame(input: 0, frame: 3))
    }

    func testAGoodbyeIsNeverSkippedNorARepeatedOne() {
        let bye = Self.announcement(ttl: 0)
        let (fast, slow) = both([(0, Self.announcement()), (30, Self.announcement()), (60, bye), (61, bye), (70, Self.announcement()),
                                 (80, Self.announcement())], end: 100)
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.events.filter { $0.kind == .goodbye }.map(\.evidence), [.frame(input: 0, frame: 3)])
        // After the goodbye the same announcement as before is news again: announced, not a repeat.
        XCTAssertEqual(fast.events.filter { $0.kind == .announced }.map(\.evidence),
                       [.frame(input: 0, frame: 1), .frame(input: 0, frame: 5)])
    }

    func testARepeatAfterAnotherSourceChangedTheInstanceGoesTheFullPath() {
        // Another host answers for the same instance with another target (a conflict): the first host's
        // next copy is not a mere refresh any more.
        var other = DNSBuilder(an: 1, ar: 1)
        other.srv(Self.inst, target: "b-host.local", port: 50001, ttl: 120)
        other.a("b-host.local", [192, 168, 1, 99], ttl: 120)
        let fast = Harness(fast: true), slow = Harness(fast: false)
        for h in [fast, slow] {
            h.send(Self.announcement(), at: t0, from: "192.168.1.10")
            h.send(Self.announcement(), at: t0 + 10 * s, from: "192.168.1.10")
            h.send(other.bytes, at: t0 + 20 * s, from: "192.168.1.99")
            h.send(Self.announcement(), at: t0 + 30 * s, from: "192.168.1.10")
            h.finish(t0 + 40 * s)
        }
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 1, "only the copy at +10 s")
        XCTAssertFalse(fast.events.filter { $0.kind == .instanceConflict }.isEmpty)
    }

    func testHostAddressesExpireOnTimeWithOneQueuedEntryPerHost() throws {
        // The A record names another address than the packets' source, so the summary shows whether the
        // host still holds it. Copies every 30 s up to +600 s; TTL 120 s: the address lasts until +720 s.
        let a = Self.announcement(addr: [192, 168, 1, 77])
        let packets = (0 ... 20).map { (Int64($0) * 30, a) }
        for (end, kept) in [(Int64(700), true), (Int64(730), false)] {
            let fast = Harness(fast: true), slow = Harness(fast: false)
            for h in [fast, slow] {
                for (dt, b) in packets { h.send(b, at: t0 + dt * s, from: "192.168.1.10") }
                // One waiting entry per host, not one per refresh (the heap does not grow with the capture).
                XCTAssertLessThanOrEqual(try XCTUnwrap(h.plugin).tracker.hostDue.count, 2)
                h.finish(t0 + end * s)
                let inst = try XCTUnwrap(h.plugin?.summary().instances.first)
                XCTAssertEqual(inst.addresses.contains(IPAddress("192.168.1.77")!), kept, "at +\(end) s")
                XCTAssertTrue(inst.addresses.contains(IPAddress("192.168.1.10")!), "the source stays")
            }
            XCTAssertEqual(fast.plugin?.fastRefreshes, 20)
            XCTAssertEqual(fast.lines, slow.lines)
        }
    }

    func testNameKeysAreTheStandardLowercasing() {
        let names = ["a-host.local", "A-Host.LOCAL", "Luca’s iMac._smb._tcp.local", "Chloé’s iPad._airplay._tcp.local",
                     "ÉCOLE-3B._ipp._tcp.local", "ΣΟΦΙΑ._chat._tcp.local", "İstanbul.local", "Straße.local", "ǅemal.local",
                     "", "\\032x.local", "MiXeD ÅÄÖ åäö.local", "ﬁle.local", "Ⅻ.local"]
        for n in names {
            XCTAssertEqual(DNSName.lowercased(n), n.lowercased(), n)
            XCTAssertEqual(DNSName.lowercased(n).utf8.elementsEqual(n.lowercased().utf8), true, n)
        }
        // Random names mixing ASCII of both cases with scalars that lowercase to themselves, to another
        // scalar, to several (İ), or that only change in context elsewhere (Σ), and combining marks:
        // the scalar-by-scalar path (`lowercasedScalars`) gives the standard library's bytes.
        let alphabet = Array("aZ.-_ 9Q’éÉÅΣσςİẞßǅﬁⅫ😀\u{301}\u{0130}ДжЖ")
        var seed: UInt64 = 0x10_CA5E
        for _ in 0 ..< 4000 {
            var n = ""
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            for i in 0 ..< Int(seed >> 59) { n.append(alphabet[Int((seed >> UInt64(i * 2 % 50)) % UInt64(alphabet.count))]) }
            XCTAssertTrue(DNSName.lowercased(n).utf8.elementsEqual(n.lowercased().utf8), n)
            XCTAssertTrue(DNSName.lowercasedScalars(n).utf8.elementsEqual(n.lowercased().utf8), n)
        }
    }

    func testRepeatedBrowseQueriesAreSkippedOnlyWithinTheirWindow() throws {
        var q = DNSBuilder(flags: 0, qd: 2)
        q.question("_chat._tcp.local", type: DNSType.ptr)
        q.question("_airplay._tcp.local", type: DNSType.ptr, qu: true)
        // A copy every 2 s for 30 s; the browse window is 10 s: events at +0, +10, +20 and +30 s only.
        let (fast, slow) = both((0 ... 15).map { (Int64($0) * 2, q.bytes) }, end: 40)
        XCTAssertEqual(fast.lines, slow.lines)
        let browses = fast.events.filter { $0.kind == .browse }
        XCTAssertEqual(browses.map { ($0.t - t0) / s }, [0, 0, 10, 10, 20, 20, 30, 30])
        XCTAssertEqual(fast.plugin?.fastQueries, 12, "the copies inside the window are skipped unparsed")
        XCTAssertEqual(slow.plugin?.fastQueries, 0)
        XCTAssertEqual(fast.plugin?.summary().services.map(\.browseQueries), slow.plugin?.summary().services.map(\.browseQueries))
    }

    /// `peerscope decode` without `--events`: a query does nothing but its line, so every repeat of a
    /// remembered query is skipped unparsed, also past the browse window, and the lines are those of
    /// the full path (fast paths off) and of a decode that keeps events. A probe is still read every time.
    func testWithoutEventsEveryRepeatedQueryIsSkippedAndTheLinesAreTheSame() throws {
        var q = DNSBuilder(flags: 0, qd: 2)
        q.question("_chat._tcp.local", type: DNSType.ptr)
        q.question("_airplay._tcp.local", type: DNSType.ptr, qu: true)
        var other = DNSBuilder(flags: 0, qd: 1)
        other.question("_services._dns-sd._udp.local", type: DNSType.ptr)
        var probe = DNSBuilder(flags: 0, qd: 1, ns: 1)
        probe.question("1ddatjp8m3xy7._chat._tcp.local", type: DNSType.any)
        probe.srv(Self.inst, target: "b-host.local", port: 50001, ttl: 120)
        var packets: [(Int64, [UInt8], String)] = [(0, Self.announcement(), "192.168.1.10")]
        // Copies every 7 s for 140 s (past the 10 s window many times), from two queriers, and probes.
        for i in 0 ... 20 {
            packets.append((Int64(i) * 7 + 1, q.bytes, "192.168.1.20"))
            packets.append((Int64(i) * 7 + 2, i % 2 == 0 ? q.bytes : other.bytes, "192.168.1.21"))
            if i % 5 == 0 { packets.append((Int64(i) * 7 + 3, probe.bytes, "192.168.1.33")) }
        }
        let decode = Harness(fast: true, wantsEvents: false, wantsMessages: true)
        let slow = Harness(fast: false, wantsEvents: false, wantsMessages: true)
        let kept = Harness(fast: true, wantsEvents: true, wantsMessages: true)
        for h in [decode, slow, kept] {
            for (dt, b, src) in packets { h.send(b, at: t0 + dt * s, from: src) }
            h.finish(t0 + 400 * s)
        }
        XCTAssertGreaterThan(slow.messageLines.count, 10_000)
        XCTAssertTrue(decode.messageLines == slow.messageLines, "the lines are the full path's")
        XCTAssertTrue(decode.messageLines == kept.messageLines, "the lines are those of a decode that keeps events")
        XCTAssertEqual(decode.directory.entries, kept.directory.entries)
        // 21 + 21 queries, of which 3 were first seen (one per querier and question set): the rest are repeats.
        XCTAssertEqual(decode.plugin?.fastQueries, 39, "every repeat is skipped, in the window or not")
        XCTAssertLessThan(kept.plugin?.fastQueries ?? 0, 39, "with events, repeats past their window are read")
        XCTAssertEqual(slow.plugin?.fastQueries, 0)
        XCTAssertTrue(decode.events.isEmpty)
    }

    func testAProbeIsNeverSkipped() throws {
        // A probe for the instance (an SRV in the authority section): every copy is read, never skipped.
        var probe = DNSBuilder(flags: 0, qd: 1, ns: 1)
        probe.question("1ddatjp8m3xy7._chat._tcp.local", type: DNSType.any)
        probe.srv(Self.inst, target: "b-host.local", port: 50001, ttl: 120)
        let (fast, slow) = both([(0, Self.announcement()), (5, probe.bytes), (6, probe.bytes), (7, probe.bytes)], end: 20)
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.plugin?.fastQueries, 0, "a query with an SRV in its authority section is read every time")
    }

    /// `peerscope decode` without `--events`: nobody keeps events, so the tracker builds no attributes
    /// for them, yet its tables and the directory (which `decode`'s TCP lines name peers from) must end
    /// exactly as they do when events are kept, through announcements, repeats, a TXT change, conflicts,
    /// a goodbye, a browse and expiries.
    func testWithoutEventsTheTrackerAndDirectoryEndTheSame() throws {
        var other = DNSBuilder(an: 1, ar: 1)
        other.srv(Self.inst, target: "b-host.local", port: 50001, ttl: 120)
        other.a("b-host.local", [192, 168, 1, 99], ttl: 120)
        // Another peer under the same display name: a name conflict.
        let namesake = ["2eebkuq9n4yz8", "_chat", "_tcp", "local"]
        var twin = DNSBuilder(an: 1, ar: 3)
        twin.ptr("_chat._tcp.local", namesake, ttl: 4500)
        twin.srv(namesake, target: "c-host.local", port: 50002, ttl: 120)
        twin.txt(namesake, ["_d=the-air", "room=lobby"], ttl: 4500)
        twin.a("c-host.local", [192, 168, 1, 33], ttl: 120)
        var q = DNSBuilder(flags: 0, qd: 1)
        q.question("_chat._tcp.local", type: DNSType.ptr)
        let packets: [(Int64, [UInt8], String)] = [
            (0, Self.announcement(), "192.168.1.10"), (5, q.bytes, "192.168.1.20"), (10, Self.announcement(), "192.168.1.10"),
            (15, twin.bytes, "192.168.1.33"), (20, other.bytes, "192.168.1.99"), (30, Self.announcement(), "192.168.1.10"),
            (40, Self.announcement(txt: ["_d=the-air", "room=hall"]), "192.168.1.10"), (50, Self.announcement(ttl: 0), "192.168.1.10"),
            (60, Self.announcement(addr: [192, 168, 1, 77]), "192.168.1.10"),
        ]
        for fast in [true, false] {
            let kept = Harness(fast: fast), dropped = Harness(fast: fast, wantsEvents: false)
            for h in [kept, dropped] {
                for (dt, b, src) in packets { h.send(b, at: t0 + dt * s, from: src) }
                h.finish(t0 + 400 * s)
            }
            let k = try XCTUnwrap(kept.plugin).tracker, d = try XCTUnwrap(dropped.plugin).tracker
            for kind in [EventKind.announced, .updated, .resolved, .goodbye, .expired, .browse, .instanceConflict, .nameConflict] {
                XCTAssertTrue(kept.events.contains { $0.kind == kind }, "the sequence gives \(kind) when events are kept")
            }
            XCTAssertTrue(dropped.events.isEmpty, "no event reaches anyone who keeps none")
            XCTAssertFalse(kept.directory.entries.isEmpty)
            XCTAssertEqual(kept.directory.entries, dropped.directory.entries, "the directory learns the same")
            // The tables end the same, but for browse state: without events a query does nothing (it teaches
            // the directory nothing and reports no diagnostic), so none is kept.
            let ks = k.summary(), ds = d.summary()
            XCTAssertEqual("\(ks.instances)", "\(ds.instances)", "the tracker's instance tables end the same")
            XCTAssertEqual(ks.services.filter { $0.instances > 0 }.map { "\($0.type) \($0.instances) \($0.mpcInstances)" },
                           ds.services.filter { $0.instances > 0 }.map { "\($0.type) \($0.instances) \($0.mpcInstances)" })
            XCTAssertEqual(ks.messages, ds.messages)
            XCTAssertFalse(ks.browsers.isEmpty)
            XCTAssertTrue(ds.browsers.isEmpty && ds.services.allSatisfy { $0.browseQueries == 0 })
            XCTAssertEqual(k.reportedConflicts, d.reportedConflicts)
            XCTAssertEqual(k.due.count, d.due.count)
            XCTAssertEqual(k.hostDue.count, d.hostDue.count)
            XCTAssertEqual(k.fastRefreshes, d.fastRefreshes)
        }
    }

    /// Hosts that come, repeat their announcement twice and go, one every 2 s for 20 minutes of capture
    /// time (each from its own address, with its own instance and host name): the remembered responses
    /// are those repeated in the last `refreshIdle` (plus a sweep interval), not all 600 said since the
    /// start; every repeat still takes the fast path, and the events equal the full path's.
    func testRememberedResponsesAreForgottenWhenTheirHostsStopRepeatingThem() throws {
        var packets: [(Int64, [UInt8], String)] = []
        for i in 0 ..< 600 {
            let inst = ["printer-\(i)", "_ipp", "_tcp", "local"]
            var b = DNSBuilder(an: 1, ar: 3)
            b.ptr("_ipp._tcp.local", inst, ttl: 4500)
            b.srv(inst, target: "h\(i).local", port: 631, ttl: 120)
            b.txt(inst, ["rp=printers/\(i)"], ttl: 4500)
            let addr: [UInt8] = [10, 0, UInt8(i / 250), UInt8(i % 250 + 1)]
            b.a("h\(i).local", addr, ttl: 120)
            let src = addr.map(String.init).joined(separator: ".")
            for dt: Int64 in [0, 30, 60] { packets.append((Int64(i) * 2 + dt, b.bytes, src)) }
        }
        packets.sort { $0.0 < $1.0 }
        let fast = Harness(fast: true), slow = Harness(fast: false)
        var most = 0
        for h in [fast, slow] {
            for (dt, b, src) in packets {
                h.send(b, at: t0 + dt * s, from: src)
                if h === fast { most = max(most, try XCTUnwrap(h.plugin).tracker.refreshes.count) }
            }
            h.finish(t0 + 1600 * s)
        }
        let idle = Int(DiscoveryTracker.refreshIdle / s), sweep = Int(DiscoveryTracker.memoSweepEvery / s)
        // One host starts every 2 s and its entry is last used 60 s later: those started within the idle
        // time, the sweep interval and those 60 s (185; all 600 without forgetting).
        XCTAssertLessThanOrEqual(most, (idle + sweep + 60) / 2 + 2, "the table holds the hosts heard lately")
        XCTAssertGreaterThan(most, 100, "and the hosts still repeating keep their entries")
        XCTAssertEqual(fast.plugin?.fastRefreshes, 1200, "every repeat takes the fast path")
        XCTAssertEqual(fast.plugin?.tracker.refreshes.count, 0, "all forgotten once nobody repeats")
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.directory.entries, slow.directory.entries)
    }

    /// Queriers that ask once and repeat within the browse window, one every 2 s for 20 minutes: the
    /// remembered queries are those of the last `queryRepeatIdle`, every repeat is still skipped, and
    /// the events equal the full path's.
    func testRememberedQueriesAreForgottenAfterTheirWindow() throws {
        let fast = Harness(fast: true), slow = Harness(fast: false)
        var most = 0
        for h in [fast, slow] {
            for i in 0 ..< 600 {
                var q = DNSBuilder(flags: 0, qd: 1)
                q.question("_svc\(i % 7)._tcp.local", type: DNSType.ptr)
                let src = "10.1.\(i / 250).\(i % 250 + 1)"
                for dt: Int64 in [0, 4] {
                    h.send(q.bytes, at: t0 + (Int64(i) * 2 + dt) * s, from: src)
                    if h === fast { most = max(most, try XCTUnwrap(h.plugin).tracker.queryRepeats.count) }
                }
            }
            h.finish(t0 + 1300 * s)
        }
        let idle = Int(DiscoveryTracker.queryRepeatIdle / s), sweep = Int(DiscoveryTracker.memoSweepEvery / s)
        XCTAssertLessThanOrEqual(most, (idle + sweep + 4) / 2 + 2, "the table holds the queriers heard lately")
        XCTAssertEqual(fast.plugin?.fastQueries, 600, "every repeat within the window is skipped")
        XCTAssertEqual(fast.plugin?.tracker.queryRepeats.count, 0)
        XCTAssertEqual(fast.lines, slow.lines)
    }
}
