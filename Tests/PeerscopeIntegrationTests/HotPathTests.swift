import Foundation
import XCTest
import Peerscope
import PeerscopeCore

/// Issue 13, the per-packet path: the engine prunes the coalescer's finished runs only every
/// `coalescerPruneInterval` of capture time. Pruning frees memory and nothing else, so the events of
/// every sample are the same whether runs are pruned at every tick (the old behaviour), every 16 s
/// (the default) or never.
final class HotPathTests: XCTestCase {
    func events(_ path: String, pruneEvery interval: Nanos) throws -> [PeerEvent] {
        var options = AnalysisSession.engineOptions(AnalysisSession.Configuration())
        options.coalescerPruneInterval = interval
        return try PeerscopeRun.run(paths: [path], engine: Engine(options: options)).events
    }

    func testEventsAreTheSameWhateverThePruneInterval() throws {
        let paths = try FileManager.default.contentsOfDirectory(atPath: Place.samples.path)
            .filter { $0.hasSuffix(".pcapng") || $0.hasSuffix(".pcap") }.sorted().map { Place.samples.appendingPathComponent($0).path }
        XCTAssertGreaterThan(paths.count, 10)
        var folded = 0
        for path in paths {
            let everyTick = try events(path, pruneEvery: 0)
            folded += everyTick.filter { $0.count > 1 }.count
            XCTAssertEqual(try events(path, pruneEvery: EngineOptions().coalescerPruneInterval), everyTick, path)
            XCTAssertEqual(try events(path, pruneEvery: .max), everyTick, path)
        }
        XCTAssertGreaterThan(folded, 0, "the samples have coalesced runs, so pruning had something to forget")
    }

    func testEventsOfTheContextAreInternedInItsOwnTable() throws {
        let path = Place.samples.appendingPathComponent("group-8.pcapng").path
        try XCTSkipUnless(FileManager.default.fileExists(atPath: path), "sample group-8.pcapng missing")
        let a = Engine(), b = Engine()
        let ea = try PeerscopeRun.run(paths: [path], engine: a).events
        let eb = try PeerscopeRun.run(paths: [path], engine: b).events
        XCTAssertEqual(ea, eb, "two analyses with two tables give equal events")
        let (hints, flows) = a.context.interner.counts
        XCTAssertGreaterThan(hints, 0)
        XCTAssertGreaterThan(flows, 0)
        // One box per distinct value: no more boxes than distinct hints and flows among the events.
        var distinctHints = Set<PeerHint>(), distinctFlows = Set<FlowKey>()
        for e in ea {
            if !e.from.isEmpty { distinctHints.insert(e.from) }
            if !e.to.isEmpty { distinctHints.insert(e.to) }
            if let f = e.flow { distinctFlows.insert(f) }
        }
        // Folded events share their run's hints and flow, so every box belongs to a kept event.
        XCTAssertLessThanOrEqual(hints, distinctHints.count)
        XCTAssertLessThanOrEqual(flows, distinctFlows.count)
    }

    /// Kept events repeating another's attributes share its buffer: the events are those of the
    /// unshared path on every sample, and on the group sample most repeats do share.
    func testKeptEventsShareRepeatedAttributesAndAreTheSameEvents() throws {
        let paths = try FileManager.default.contentsOfDirectory(atPath: Place.samples.path)
            .filter { $0.hasSuffix(".pcapng") || $0.hasSuffix(".pcap") }.sorted().map { Place.samples.appendingPathComponent($0).path }
        XCTAssertGreaterThan(paths.count, 10)
        var unshared = AnalysisSession.engineOptions(AnalysisSession.Configuration())
        unshared.shareAttributes = false
        for path in paths {
            let plain = try PeerscopeRun.run(paths: [path], engine: Engine(options: unshared)).events
            let engine = Engine(options: AnalysisSession.engineOptions(AnalysisSession.Configuration()))
            let shared = try PeerscopeRun.run(paths: [path], engine: engine).events
            XCTAssertEqual(shared, plain, path)
            guard path.hasSuffix("group-8.pcapng") else { continue }
            // Among events with equal (non-empty, short) attributes, how many hold a buffer of their own.
            var first: [EventAttrs: EventAttrs] = [:]
            var repeats = 0, sharing = 0, ownInPlain = 0
            for (e, p) in zip(shared, plain) where !e.attrs.isEmpty && e.attrs.map({ $0.key.utf8.count + $0.value.utf8.count + 2 }).reduce(0, +) <= 200 {
                if let f = first[e.attrs] {
                    repeats += 1
                    if EventAttrsSharing.sameBuffer(f, e.attrs) { sharing += 1 }
                    if !EventAttrsSharing.sameBuffer(f, p.attrs) { ownInPlain += 1 }
                } else {
                    first[e.attrs] = e.attrs
                }
            }
            XCTAssertGreaterThan(repeats, 100, "the group sample repeats attributes (heartbeats, Hellos)")
            XCTAssertGreaterThan(sharing, repeats * 3 / 4, "most repeats share a buffer (\(sharing) of \(repeats))")
            XCTAssertEqual(ownInPlain, repeats, "without sharing each repeat has its own buffer")
            XCTAssertGreaterThanOrEqual(engine.sharedAttributes, sharing, "the engine counted them")
        }
    }
}
