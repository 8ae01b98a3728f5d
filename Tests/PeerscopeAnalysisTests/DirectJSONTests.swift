import Foundation
import PeerscopeCore
import PeerscopeDetectors
@testable import PeerscopeReports
import PeerscopeTimeline
import XCTest

/// The JSON report writes the peers' timelines straight into bytes (no value per entry): the bytes
/// must be those the value tree gives, on values a sample never has.
final class DirectJSONTests: XCTestCase {
    /// Times before 1970 and at the ends of the range, labels and sources needing escapes, non-ASCII
    /// names, log lines, corroborated entries, a frame number past Int64, empty and long timelines.
    func edgeReport() -> Report {
        let s = Script()
        let odd = PeerHint(peerID: 0x7FFF_FFFF_FFFF_FFFF, displayName: "Eve \"q\" \\ \n\t\u{01}\u{7F} é’🙂")
        s.facts.learn(peerID: 0x7FFF_FFFF_FFFF_FFFF, displayName: odd.displayName)
        let times: [Nanos] = [Int64.min, Int64.min + 1, -1_000_000_001, -1_000_000_000, -999_999_999, -1, 0, 1,
                              999_999_999, 1_000_000_000, 253_402_300_799_999_999, Int64.max - 1]
        for (i, t) in times.enumerated() {
            let ev: Evidence = i % 3 == 2 ? .logLine(input: 1, line: i * 1000) : .frame(input: i % 2, frame: UInt64.max - UInt64(i))
            s.events.append(PeerEvent(kind: i % 2 == 0 ? .invite : .gckHeartbeat, t: t, evidence: ev, from: Script.alice, to: odd,
                                      source: "src \"\(i)\" \u{08}", attrs: ["message": "m\u{1F}\"\\ \(i)", "state": "é’"]))
        }
        // A frame and a log line about one step: one entry with corroboration.
        s.packet(.stateChange, 10, Script.bob, Script.carol, attrs: ["state": "Connected"])
        s.log(.stateChange, 10.05, Script.bob, Script.carol, attrs: ["state": "Connected"])
        s.repeating(.gckHeartbeat, from: 11, to: 40, every: 0.5, Script.bob, Script.carol)
        return s.report(end: 50)
    }

    func testDirectlyWrittenTimelinesAreTheValueTreesBytes() throws {
        let r = edgeReport()
        XCTAssertTrue(r.timelines.peers.contains { $0.entries.contains { !$0.corroboration.isEmpty } }, "a corroborated entry")
        XCTAssertTrue(r.timelines.peers.contains { $0.entries.contains { $0.t < 0 } }, "an entry before 1970")
        XCTAssertEqual(JSONReportWriter.render(r), JSONReportWriter.json(r).prettyText + "\n")
        var compact: [UInt8] = []
        JSONReportWriter.write(r, pretty: false) { compact += $0 }
        XCTAssertEqual(String(decoding: compact, as: UTF8.self), JSONReportWriter.json(r).jsonText + "\n")
    }

    /// Read back by Foundation's parser: the numbers, times and escaped strings are the values written.
    /// Consecutive entries naming other counterparts, back and forth (the writer remembers the last
    /// peer and session it escaped), and keys written from bytes made once per level: still the
    /// value tree's bytes, pretty and compact.
    func testAlternatingCounterpartsAreTheValueTreesBytes() throws {
        let s = Script()
        for i in 0 ..< 40 {
            let other = i % 3 == 0 ? Script.bob : Script.carol
            s.packet(i % 2 == 0 ? .invite : .stateChange, Double(i) * 0.25, Script.alice, other,
                     attrs: ["state": i % 4 == 0 ? "Connected" : "Connecting", "message": "n\(i)"])
        }
        let r = s.report(end: 20)
        let alice = try XCTUnwrap(r.timelines.peers.first { $0.entries.count >= 30 })
        let parties = alice.entries.compactMap(\.counterpart)
        XCTAssertGreaterThan(zip(parties, parties.dropFirst()).filter { $0 != $1 }.count, 10, "counterparts alternate")
        XCTAssertEqual(JSONReportWriter.render(r), JSONReportWriter.json(r).prettyText + "\n")
        var compact: [UInt8] = []
        JSONReportWriter.write(r, pretty: false) { compact += $0 }
        XCTAssertEqual(String(decoding: compact, as: UTF8.self), JSONReportWriter.json(r).jsonText + "\n")
    }

    func testDirectlyWrittenTimelinesReadBackByJSONSerialization() throws {
        let r = edgeReport()
        for pretty in [true, false] {
            var bytes: [UInt8] = []
            JSONReportWriter.write(r, pretty: pretty) { bytes += $0 }
            let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            let peers = try XCTUnwrap(doc["peers"] as? [[String: Any]])
            XCTAssertEqual(peers.count, r.timelines.peers.count)
            for (p, tl) in zip(peers, r.timelines.peers) {
                let entries = try XCTUnwrap(p["timeline"] as? [[String: Any]])
                XCTAssertEqual(entries.count, tl.entries.count)
                for (j, e) in zip(entries, tl.entries) {
                    XCTAssertEqual((j["t"] as? NSNumber)?.int64Value, e.t)
                    XCTAssertEqual((j["lastT"] as? NSNumber)?.int64Value, e.lastT)
                    XCTAssertEqual(j["time"] as? String, CaptureTime.iso8601(e.t))
                    XCTAssertEqual(j["source"] as? String, e.source)
                    XCTAssertEqual(j["detail"] as? String, e.detail)
                    XCTAssertEqual(j["counterpart"] as? String, e.counterpart.map { r.timelines.label($0) })
                    let ev = try XCTUnwrap(j["evidence"] as? [[String: Any]])
                    XCTAssertEqual(ev.count, e.evidence.count)
                    for (x, y) in zip(ev, e.evidence) {
                        switch y {
                        case .frame(let i, let f):
                            XCTAssertEqual((x["input"] as? NSNumber)?.intValue, i)
                            XCTAssertEqual((x["frame"] as? NSNumber)?.uint64Value, f)
                        case .logLine(let i, let l):
                            XCTAssertEqual((x["input"] as? NSNumber)?.intValue, i)
                            XCTAssertEqual((x["line"] as? NSNumber)?.intValue, l)
                        }
                    }
                }
            }
        }
    }

    func testTimeTextIsISO8601ForEveryKindOfInstant() {
        var rng = SystemRandomNumberGenerator()
        var values: [Nanos] = [Int64.min, Int64.min + 1, Int64.max, Int64.max - 1, -1, 0, 1, -999_999_999, -1_000_000_000,
                               -1_000_000_001, 999_999_999, 1_000_000_000, 951_782_400 * 1_000_000_000]
        for _ in 0 ..< 2000 { values.append(Int64.random(in: Int64.min ... Int64.max, using: &rng)) }
        var text = JSONReportWriter.TimeText()
        for t in values + values.sorted() {
            var out: [UInt8] = []
            text.write(t, into: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), "\"" + CaptureTime.iso8601(t) + "\"", "t = \(t)")
        }
    }

    func testDecimalsAreSwiftsOwn() {
        var values: [Int64] = [0, 1, 9, 10, 99, 100, -1, -9, -10, Int64.min, Int64.max, Int64.min + 1]
        for p in 0 ..< 19 { let v = Int64(pow(10, Double(p))); values += [v - 1, v, v + 1, -v] }
        for v in values {
            var out: [UInt8] = []
            JSONValue.appendInt(v, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(v))
        }
        for v in [UInt64.max, UInt64.max - 1, 0, 10_000_000_000_000_000_000] {
            var out: [UInt8] = []
            JSONValue.appendDecimal(v, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(v))
        }
    }
}
