import PeerscopeCore
import XCTest
@testable import PeerscopePlugins

/// Issue 13: the mDNS tracker's side tables hold what is active, not what a long capture of churning
/// hosts said since it began. Each test runs a generated crowd twice, forgetting on and off, and the
/// events and directory must be the same; the table stays under a bound with forgetting on and
/// passes it with forgetting off (so the test fails if the forgetting stops working).
final class TrackerTablesTests: XCTestCase {
    typealias Harness = RefreshFastPathTests.Harness
    let s = CaptureTime.second
    let t0: Nanos = 1_800_000_000 * CaptureTime.second

    /// 300 printers, each announcing and saying goodbye 10 s later, every 40 s for 20 cycles (6,000
    /// goodbyes, each an instance that ended): the tracker's heap of ended instances drops its stale
    /// entries once it holds twice the table (at least `endedSlack`), instead of at 4 x `maxInstances`.
    func testEndedInstancesHeapStaysBoundedByTheTableAndEventsAreTheSame() throws {
        var packets: [(Nanos, [UInt8], String)] = []
        for i in 0 ..< 300 {
            let inst = ["printer-\(i)", "_ipp", "_tcp", "local"]
            let addr: [UInt8] = [10, 2, UInt8(i / 250), UInt8(i % 250 + 1)]
            func response(ttl: UInt32) -> [UInt8] {
                var b = DNSBuilder(an: 1, ar: 3)
                b.ptr("_ipp._tcp.local", inst, ttl: ttl == 0 ? 0 : 4500)
                b.srv(inst, target: "p\(i).local", port: 631, ttl: ttl)
                b.txt(inst, ["rp=printers/\(i)"], ttl: ttl == 0 ? 0 : 4500)
                b.a("p\(i).local", addr, ttl: ttl)
                return b.bytes
            }
            let src = addr.map(String.init).joined(separator: ".")
            for cycle in 0 ..< 20 {
                let start = t0 + Nanos(cycle) * 40 * s + Nanos(i) * s / 10
                packets.append((start, response(ttl: 120), src))
                packets.append((start + 10 * s, response(ttl: 0), src))
            }
        }
        packets.sort { $0.0 < $1.0 }
        let bounded = Harness(fast: true), unbounded = Harness(fast: true)
        try XCTUnwrap(unbounded.plugin).tracker.compactsEnded = false
        var most = 0, mostUnbounded = 0
        for (t, b, src) in packets {
            for h in [bounded, unbounded] { h.send(b, at: t, from: src) }
            most = max(most, try XCTUnwrap(bounded.plugin).tracker.ended.count)
            mostUnbounded = max(mostUnbounded, try XCTUnwrap(unbounded.plugin).tracker.ended.count)
        }
        for h in [bounded, unbounded] { h.finish(t0 + 900 * s) }
        XCTAssertLessThanOrEqual(most, DiscoveryTracker.endedSlack + 1, "stale entries are dropped")
        XCTAssertGreaterThan(mostUnbounded, DiscoveryTracker.endedSlack + 1, "without compaction the heap grows with the churn")
        XCTAssertEqual(bounded.events.filter { $0.kind == .goodbye }.count, 6000, "every goodbye is an event")
        XCTAssertEqual(bounded.lines, unbounded.lines)
        XCTAssertEqual(bounded.directory.entries, unbounded.directory.entries)
    }

    /// 600 queriers, one starting every 2 s for 20 minutes, each asking for one of seven service types
    /// and asking again 60 s later (past the browse window: another event with the same attributes):
    /// the cached browse attributes are those used within `refreshIdle` (plus a sweep interval and those
    /// 60 s), not all 600; every repeat still reuses its entry, and the events are the same.
    func testBrowseAttributesNotUsedLatelyAreForgottenAndEventsAreTheSame() throws {
        let bounded = Harness(fast: true), unbounded = Harness(fast: true)
        try XCTUnwrap(unbounded.plugin).tracker.forgetsBrowseAttrs = false
        var packets: [(Nanos, [UInt8], String)] = []
        for i in 0 ..< 600 {
            var q = DNSBuilder(flags: 0, qd: 1)
            q.question("_svc\(i % 7)._tcp.local", type: DNSType.ptr)
            let src = "10.3.\(i / 250).\(i % 250 + 1)"
            for dt: Int64 in [0, 60] { packets.append((t0 + (Int64(i) * 2 + dt) * s, q.bytes, src)) }
        }
        packets.sort { $0.0 < $1.0 }
        var most = 0, mostUnbounded = 0
        for (t, b, src) in packets {
            for h in [bounded, unbounded] { h.send(b, at: t, from: src) }
            most = max(most, try XCTUnwrap(bounded.plugin).tracker.browseAttrs.count)
            mostUnbounded = max(mostUnbounded, try XCTUnwrap(unbounded.plugin).tracker.browseAttrs.count)
        }
        for h in [bounded, unbounded] { h.finish(t0 + 1600 * s) }
        let idle = Int(DiscoveryTracker.refreshIdle / s), sweep = Int(DiscoveryTracker.memoSweepEvery / s)
        XCTAssertLessThanOrEqual(most, (idle + sweep + 60) / 2 + 2, "the table holds the queriers heard lately")
        XCTAssertGreaterThan(most, 100, "and those still asking keep their entries")
        XCTAssertEqual(mostUnbounded, 600, "without forgetting every querier stays")
        XCTAssertEqual(bounded.events.filter { $0.kind == .browse }.count, 1200, "both queries of each querier are events")
        XCTAssertEqual(bounded.lines, unbounded.lines)
    }

    /// An instance keeps its TXT record as bytes and its display name, not the record parsed as well:
    /// the record read back is the parse of the latest bytes, the name follows each change, and the
    /// `updated` events carry the changed keys and the new name.
    func testAnInstanceKeepsItsTXTAsBytesAndItsNameFollowsChanges() throws {
        let h = Harness(fast: true)
        let key = "1ddatjp8m3xy7._chat._tcp.local"
        let txts = [["_d=the-air", "room=lobby"], ["_d=the-air", "room=hall"], ["_d=renamed", "room=hall"]]
        for (i, txt) in txts.enumerated() {
            h.send(RefreshFastPathTests.announcement(txt: txt), at: t0 + Nanos(i) * 30 * s, from: "192.168.1.10")
            let tracker = try XCTUnwrap(h.plugin?.tracker)
            let x = try XCTUnwrap(tracker.instances.index(forKey: key))
            let inst = tracker.instances.values[x]
            XCTAssertEqual(inst.txt?.strings, txt)
            XCTAssertEqual(inst.txt, DNSSD.TXTRecord(try XCTUnwrap(inst.txtRaw)))
            // The strings are slices of one buffer of their own (one heap block per record, not one per
            // string, and not the packet's).
            let raw = try XCTUnwrap(inst.txtRaw)
            XCTAssertEqual(raw.count, txt.count)
            XCTAssertEqual(Set(raw.map { $0.storage.count }), [txt.reduce(0) { $0 + $1.utf8.count }])
            XCTAssertEqual(raw.map(\.lower), [0, txt[0].utf8.count])
            XCTAssertTrue(raw.allSatisfy { $0.storage.withUnsafeBufferPointer { p in raw[0].storage.withUnsafeBufferPointer { p.baseAddress == $0.baseAddress } } })
            XCTAssertEqual(inst.displayName, String(txt[0].dropFirst(3)))
            XCTAssertEqual(tracker.byDisplayName[String(txt[0].dropFirst(3))], [key])
        }
        XCTAssertEqual(h.plugin?.tracker.byDisplayName["the-air"] ?? [], [], "the old name no longer lists it")
        let updated = h.events.filter { $0.kind == .updated }
        XCTAssertEqual(updated.map { $0.attrs["changedKeys"] }, ["room", "_d"])
        XCTAssertEqual(updated.map { $0.attrs["displayName"] }, ["the-air", "renamed"])
    }
}
