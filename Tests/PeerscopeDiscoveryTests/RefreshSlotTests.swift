import HeapModule
import PeerscopeCore
import XCTest
@testable import PeerscopePlugins

/// The tracker's tables keep entries in reusable slots, and the refresh fast path and the timers reach
/// entries by slot. A slot given to another entry, a payload a byte off, the same payload from another
/// source, and names equal only after case folding must all read exactly as the full path reads them.
final class RefreshSlotTests: XCTestCase {
    typealias H = RefreshFastPathTests.Harness
    let s = CaptureTime.second
    let t0: Nanos = 1_800_000_000 * CaptureTime.second

    /// Sends `packets` (seconds after t0, source, bytes) with the fast path on and off; the events and the
    /// directory must be the same, and so must the summary.
    func both(_ packets: [(Int64, String, [UInt8])], end: Int64) -> (fast: H, slow: H) {
        let fast = H(fast: true), slow = H(fast: false)
        for h in [fast, slow] {
            for (dt, src, b) in packets { h.send(b, at: t0 + dt * s, from: src) }
            h.finish(t0 + end * s)
        }
        XCTAssertEqual(fast.lines, slow.lines)
        XCTAssertEqual(fast.directory.entries, slow.directory.entries)
        XCTAssertEqual(fast.plugin?.summary().instances, slow.plugin?.summary().instances)
        return (fast, slow)
    }

    func testSlotsAreReusedAndAStaleSlotNoLongerHoldsItsName() {
        var t = SlotTable<Int>()
        let a = t.insert("a", 1), b = t.insert("b", 2)
        XCTAssertNotEqual(a, b)
        XCTAssertTrue(t.holds(a, "a"))
        XCTAssertEqual(t.removeValue(forKey: "a"), 1)
        XCTAssertFalse(t.holds(a, "a"), "a removed entry's slot holds nothing")
        XCTAssertNil(t.index(a, forKey: "a"))
        let c = t.insert("c", 3)
        XCTAssertEqual(c, a, "the freed slot is reused")
        XCTAssertFalse(t.holds(c, "a"), "the reused slot holds the new name only")
        XCTAssertEqual(t.index(c, forKey: "c"), c)
        XCTAssertEqual(t.index(b, forKey: "c"), c, "a slot that does not hold the name falls back to the name")
        XCTAssertEqual(t["c"], 3)
        XCTAssertEqual(t.count, 2)
        XCTAssertEqual(Set(t.entries.map(\.key)), ["b", "c"])
        XCTAssertEqual(Set(t.liveKeys), ["b", "c"])
        t["b"] = nil
        XCTAssertEqual(t.count, 1)
        XCTAssertNil(t.index(forKey: "b"))
    }

    func testTheDeadlineQueueHoldsWhatAHeapWouldHold() {
        // Mostly increasing deadlines under a few TTLs, some out of order, drops at ticks: after every
        // step the earliest is the heap's (seeded, so a failure replays).
        var rng = SimRandom(seed: 13)
        var q = DeadlineQueue(), heap = Heap<Nanos>()
        var now: Nanos = 1000
        for step in 0 ..< 20000 {
            now += Nanos(rng.next() % 50)
            switch rng.next() % 10 {
            case 0:
                q.drop(through: now)
                while let m = heap.min, m <= now { _ = heap.removeMin() }
            case 1:
                let before = now + Nanos(rng.next() % 300)
                q.drop(through: before, inclusive: false)
                while let m = heap.min, m < before { _ = heap.removeMin() }
            default:
                let ttls: [Nanos] = [120, 4500, 10, 75]
                let d = rng.next() % 20 == 0 ? now - Nanos(rng.next() % 100) : now + ttls[Int(rng.next() % 4)]
                q.insert(d)
                heap.insert(d)
            }
            XCTAssertEqual(q.min, heap.min, "step \(step)")
            if q.min != heap.min { return }
        }
        XCTAssertLessThanOrEqual(q.count, heap.count, "a time already last in its run is not added again")
        q.removeAll()
        XCTAssertNil(q.min)
    }

    func testFoldedLabelComparisonIsTheStandardLowercasing() {
        let labels = ["_sub", "_SUB", "_Sub", "_su", "_subb", "_tcp", "_TCP", "_udp", "local", "LOCAL", "_services", "_SERVICES",
                      "_dns-sd", "_DNS-SD", "\u{212A}", "k", "K", "İ", "i", "i\u{307}", "ß", "SS", "ss", "é", "É", "e\u{301}",
                      "_sub\u{212A}", "_subk", "", "_", "Chloé’s iPad", "CHLOÉ’S IPAD", "ﬁ", "FI", "fi"]
        for a in labels {
            for b in labels {
                XCTAssertEqual(DNSName.foldedEqual(a, b), a.lowercased() == b.lowercased(), "\(a) / \(b)")
            }
        }
    }

    func testAnInstanceKeepsItsTXTInStorageOfItsOwn() throws {
        // A slice of the packet would keep the capture reader's whole chunk (1 MiB) alive as long as
        // the instance lives: with a few thousand instances, the whole file stayed in memory.
        let h = H(fast: true)
        h.send(RefreshFastPathTests.announcement(txt: ["_d=the-air", "room=lobby"]), at: t0, from: "192.168.1.10")
        let tracker = try XCTUnwrap(h.plugin?.tracker)
        let x = try XCTUnwrap(tracker.instances.index(forKey: "1ddatjp8m3xy7._chat._tcp.local"))
        let raw = try XCTUnwrap(tracker.instances.values[x].txtRaw)
        XCTAssertEqual(raw.map { DNSText.txtValue($0) }, ["_d=the-air", "room=lobby"])
        // One buffer for the record's strings (20 bytes here), not one per string, nor the packet.
        let recordBytes = raw.reduce(0) { $0 + $1.count }
        XCTAssertEqual(recordBytes, 20)
        for b in raw { XCTAssertEqual(b.storage.count, recordBytes, "the record's own bytes, not the packet's") }
        let entries = try XCTUnwrap(tracker.instances.values[x].txt?.entries)
        for e in entries { if let v = e.rawValue { XCTAssertLessThanOrEqual(v.storage.count, recordBytes) } }
    }

    func testARefreshOneTXTByteOffIsReadInFull() {
        let a = RefreshFastPathTests.announcement(txt: ["_d=the-air", "room=lobby"])
        let b = RefreshFastPathTests.announcement(txt: ["_d=the-air", "room=lobbz"])
        XCTAssertEqual(a.count, b.count)
        XCTAssertEqual(zip(a, b).filter { $0 != $1 }.count, 1, "one byte apart")
        let (fast, _) = both([(0, "192.168.1.10", a), (30, "192.168.1.10", a), (60, "192.168.1.10", b),
                              (90, "192.168.1.10", b), (120, "192.168.1.10", a)], end: 130)
        XCTAssertEqual(fast.events.filter { $0.kind == .updated }.map(\.evidence),
                       [.frame(input: 0, frame: 3), .frame(input: 0, frame: 5)])
        XCTAssertEqual(fast.plugin?.fastRefreshes, 2, "the copies at +30 s and +90 s; +120 s changed the TXT back")
    }

    func testTheSamePayloadFromAnotherSourceIsNotTheFirstSourcesRepeat() throws {
        // One source's copy is never the other's repeat: each source's first copy (and the first after
        // the other source wrote the instance) is read in full.
        let a = RefreshFastPathTests.announcement()
        let (fast, _) = both([(0, "192.168.1.10", a), (10, "192.168.1.10", a), (20, "192.168.1.11", a),
                              (30, "192.168.1.11", a), (40, "192.168.1.10", a), (50, "192.168.1.10", a),
                              (60, "fe80::1", a)], end: 70)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 3, "+10 s, +30 s and +50 s")
        let inst = try XCTUnwrap(fast.plugin?.summary().instances.first)
        XCTAssertTrue(inst.addresses.contains(try XCTUnwrap(IPAddress("192.168.1.11"))))
        XCTAssertTrue(inst.addresses.contains(try XCTUnwrap(IPAddress("fe80::1"))))
    }

    func testAHostSlotGivenToAnotherHostIsNotRefreshedAsTheFirst() throws {
        // a-host's address lives 10 s, its instance 120 s. Another instance's SRV (1 s) makes the tracker
        // look at its timers at +31 s, which drops a-host (no address left) while its instance stays;
        // c-host then takes the freed slot, and a-host's old bytes come again.
        var a = DNSBuilder(an: 1, ar: 3)
        a.ptr("_chat._tcp.local", RefreshFastPathTests.inst, ttl: 4500)
        a.srv(RefreshFastPathTests.inst, target: "a-host.local", port: 50001, ttl: 120)
        a.txt(RefreshFastPathTests.inst, ["_d=the-air"], ttl: 4500)
        a.a("a-host.local", [192, 168, 1, 77], ttl: 10)
        let other = ["2ab3cd4ef5gh6", "_chat", "_tcp", "local"]
        var b = DNSBuilder(an: 1, ar: 2)
        b.ptr("_chat._tcp.local", other, ttl: 4500)
        b.srv(other, target: "b-host.local", port: 50002, ttl: 1)
        b.a("b-host.local", [192, 168, 1, 88], ttl: 120)
        var c = DNSBuilder(an: 1)
        c.a("c-host.local", [192, 168, 1, 99], ttl: 120)
        let (fast, _) = both([(0, "192.168.1.10", a.bytes), (5, "192.168.1.10", a.bytes), (30, "192.168.1.20", b.bytes),
                              (35, "192.168.1.30", c.bytes), (40, "192.168.1.10", a.bytes), (45, "192.168.1.10", a.bytes)],
                             end: 60)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 2, "+5 s and +45 s; +40 s found a-host gone and its slot taken")
        let tracker = try XCTUnwrap(fast.plugin?.tracker)
        XCTAssertEqual(tracker.hosts.count, 3)
        XCTAssertNotNil(tracker.hosts.index(forKey: "a-host.local"), "a-host is back, in a slot of its own")
    }

    func testNamesEqualAfterCaseFoldingAreOneInstanceAndOneHost() throws {
        // ASCII and non-ASCII case differences: different bytes (never one another's repeat), one entry.
        func announce(_ label: String, _ host: String) -> [UInt8] {
            var b = DNSBuilder(an: 1, ar: 3)
            let inst = [label, "_airplay", "_tcp", "local"]
            b.ptr("_airplay._tcp.local", inst, ttl: 4500)
            b.srv(inst, target: host, port: 7000, ttl: 120)
            b.txt(inst, ["model=iPad"], ttl: 4500)
            b.a(host, [192, 168, 1, 30], ttl: 120)
            return b.bytes
        }
        let lower = announce("chloé’s ipad", "chloé-host.local"), upper = announce("CHLOÉ’S IPAD", "CHLOÉ-HOST.local")
        let mixed = announce("Chloé’s iPad", "Chloé-Host.local")
        let (fast, _) = both([(0, "192.168.1.30", lower), (10, "192.168.1.30", lower), (20, "192.168.1.30", upper),
                              (30, "192.168.1.30", upper), (40, "192.168.1.30", mixed)], end: 50)
        let summary = try XCTUnwrap(fast.plugin?.summary())
        XCTAssertEqual(summary.instances.count, 1, "one instance whatever the case")
        XCTAssertEqual(fast.plugin?.tracker.hosts.count, 1, "one host whatever the case")
        XCTAssertEqual(fast.events.filter { $0.kind == .announced }.count, 1)
        XCTAssertEqual(fast.plugin?.fastRefreshes, 2, "the second copies of the lower- and upper-case bytes")
    }
}
