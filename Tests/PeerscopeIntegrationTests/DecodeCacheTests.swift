import Foundation
import XCTest
import Peerscope
import PeerscopeCore
import PeerscopeSimulator

/// Issue 13, `peerscope decode`: members copied from `MessageBodyCache` (repeated mDNS refreshes) are
/// byte for byte the members written afresh, on every sample, the corpus's mDNS captures and a large
/// generated crowded capture, also when hashes collide; and the command's own writer thread writes
/// those bytes.
final class DecodeCacheTests: XCTestCase {
    struct Written {
        var plain: [UInt8] = []
        var cached: [UInt8] = []
        var colliding: [UInt8] = []
        var hits = 0
    }

    /// Every message of `path` written three ways: afresh, through a cache, through a cache whose hash
    /// puts every key in one of four buckets.
    func write(_ path: String, multi: Bool = false) throws -> Written {
        var options = EngineOptions(decode: DecodeOptions(wantsMessages: true))
        options.collectEvents = false
        var w = Written()
        var cache = MessageBodyCache()
        var colliding = MessageBodyCache(hash: { MessageBodyCache.hash($0) & 3 })
        let engine = Engine(options: options) { m in
            m.writeJSONLine(to: &w.plain, includeInput: multi)
            m.writeJSONLine(to: &w.cached, includeInput: multi, cache: &cache)
            m.writeJSONLine(to: &w.colliding, includeInput: multi, cache: &colliding)
        }
        _ = try PeerscopeRun.run(paths: [path], engine: engine)
        w.hits = cache.hits
        XCTAssertEqual(colliding.hits, cache.hits, "\(path): collisions cost comparisons, never a hit")
        return w
    }

    func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String {
        firstDifferingLine(String(decoding: a, as: UTF8.self), String(decoding: b, as: UTF8.self), ("this", "plain"))
    }

    func testCachedDecodeOutputIsByteIdenticalOnEverySampleAndCorpusCapture() throws {
        var hits = 0, bytes = 0
        for p in try FastPathTests.samplesAndCorpus() {
            let w = try write(p)
            bytes += w.plain.count
            XCTAssertTrue(w.cached == w.plain, "\(p) cached: \(firstDifference(w.cached, w.plain))")
            XCTAssertTrue(w.colliding == w.plain, "\(p) colliding: \(firstDifference(w.colliding, w.plain))")
            hits += w.hits
        }
        XCTAssertGreaterThan(bytes, 100_000, "the inputs decode to messages")
        XCTAssertGreaterThan(hits, 0, "some refresh in these captures repeats byte for byte")
    }

    func testCachedDecodeOutputIsByteIdenticalOnALargeCrowdedCaptureAndTheCommandWritesIt() throws {
        let dir = try CLI.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("crowd.pcap").path
        // 600 hosts: refreshes, TXT changes, new addresses, goodbyes, silent expiries.
        let written = try CrowdedMDNS.write(path: path, packets: 24_000, hostCount: 600)
        let w = try write(path)
        XCTAssertTrue(w.cached == w.plain, "cached: \(firstDifference(w.cached, w.plain))")
        XCTAssertTrue(w.colliding == w.plain, "colliding: \(firstDifference(w.colliding, w.plain))")
        XCTAssertGreaterThan(w.hits, written.mdns / 3, "most refreshes are written once and copied")
        // The command: its writer thread (with the cache) prints the same bytes.
        let r = try CLI.run(["decode", path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(Array(r.stdout.utf8) == w.plain, "peerscope decode: \(firstDifference(Array(r.stdout.utf8), w.plain))")
    }
}
