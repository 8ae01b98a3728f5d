import PeerscopeCore
@testable import PeerscopePlugins
import XCTest

/// Millions of distinct mDNS names must not grow the discovery tables without bound: past the limit
/// the least recently seen are forgotten, and each one forgotten is counted as a diagnostic.
final class DiscoveryBoundsTests: XCTestCase {
    func testDistinctInstancesAndHostsStayBoundedAndEvictionsAreCounted() throws {
        let h = DiscoveryEventsTests.Harness()
        let t0: Nanos = 1_800_000_000 * CaptureTime.second
        // More distinct names than the bounds (a flood), so eviction must happen.
        let n = max(DiscoveryTracker.maxInstances, DiscoveryTracker.maxHosts) + 4_000
        let start = Date()
        for i in 0 ..< n {
            // A new instance on a new host in every message (a flood of made-up names).
            let inst = ["peer-\(i)", "_chat", "_tcp", "local"]
            var b = DNSBuilder(an: 1, ar: 2)
            b.ptr("_chat._tcp.local", inst, ttl: 4500)
            b.srv(inst, target: "host-\(i).local", port: 50000, ttl: 120)
            b.a("host-\(i).local", [10, 0, UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)], ttl: 120)
            h.send(b, at: t0 + Nanos(i) * CaptureTime.millisecond, from: "10.0.0.1")
        }
        let tracker = try XCTUnwrap(h.plugin?.tracker)
        XCTAssertLessThanOrEqual(tracker.instances.count, DiscoveryTracker.maxInstances)
        XCTAssertLessThanOrEqual(tracker.hosts.count, DiscoveryTracker.maxHosts)
        let evictedInstances = h.diagnostics.filter { $0.id == "mdns.instances_evicted" }.count
        let evictedHosts = h.diagnostics.filter { $0.id == "mdns.hosts_evicted" }.count
        XCTAssertGreaterThan(evictedInstances, 0)
        XCTAssertGreaterThan(evictedHosts, 0)
        XCTAssertEqual(evictedInstances, tracker.evictedInstances)
        XCTAssertEqual(evictedInstances + tracker.instances.count, n, "every instance is either tracked or counted as evicted")
        XCTAssertEqual(evictedHosts + tracker.hosts.count, n)
        // Eviction is amortised (a batch at a time), not a scan of the full table per new name.
        XCTAssertLessThan(Date().timeIntervalSince(start), 120)
    }
}
