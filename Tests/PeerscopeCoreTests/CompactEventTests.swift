@testable import PeerscopeCore
import XCTest

/// The compact storage of peer events (packed attributes, interned hints and flows) reads and
/// writes exactly like the plain values it replaced.
final class CompactEventTests: XCTestCase {
    func testPackedAttributesRoundTripAnyText() {
        let long = String(repeating: "é✓", count: 200)   // 1000 UTF-8 bytes: a two-byte length
        let d: [String: String] = ["txid": "0123456789abcdef01234567", "b": "", "a": "x\u{0}y\u{1}z", "long": long,
                                   "ünï": "çødé", "size": "120"]
        let a = EventAttrs(d)
        XCTAssertEqual(a.dictionary, d)
        XCTAssertEqual(a.count, d.count)
        XCTAssertEqual(a.keys, ["a", "b", "long", "size", "txid", "ünï"], "iteration is in key order")
        for (k, v) in d { XCTAssertEqual(a[k], v, k) }
        XCTAssertNil(a["absent"])
        XCTAssertNil(a["lon"], "a prefix of a key is not the key")
        XCTAssertEqual(a["absent", default: "d"], "d")
    }

    func testPackedAttributesEditLikeADictionary() {
        var a: EventAttrs = ["state": "Connected", "from": "Connecting"]
        a["note"] = "stopped advertising; still in session"
        a["from"] = nil
        a["state"] = "Not Connected"
        a["channel", default: ""] += "0,1"
        XCTAssertEqual(a.dictionary, ["state": "Not Connected", "note": "stopped advertising; still in session", "channel": "0,1"])
        // Equal sets are equal whatever the order they were written in.
        var b = EventAttrs()
        b["channel"] = "0,1"
        b["note"] = "stopped advertising; still in session"
        b["state"] = "Not Connected"
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertNotEqual(a, EventAttrs(["state": "Not Connected"]))
        a[.accepted] = false
        XCTAssertEqual(a[.accepted], false)
        XCTAssertEqual(a["accepted"], "false")
        a[.accepted] = nil
        XCTAssertNil(a["accepted"])
        XCTAssertTrue(EventAttrs().isEmpty)
        XCTAssertTrue(EventAttrs([:]).isEmpty)
    }

    func testEventsShareInternedHintsAndFlowsAndReadThemBack() {
        let ep = Endpoint(IPAddress("fe80::1%awdl0") ?? .v4(1), 16402)
        let hint = PeerHint(peerID: 0x1234_5678, displayName: "Alice's iPhone", endpoint: ep)
        let flow = FlowKey(.udp, ep, Endpoint(.v4(0x0A00_0002), 16403))
        var a = PeerEvent(kind: .gckHeartbeat, t: 1, evidence: .frame(input: 0, frame: 1), from: hint, flow: flow,
                          source: "gck-heartbeat", attrs: ["seq": "1"])
        let b = PeerEvent(kind: .gckHeartbeat, t: 2, evidence: .frame(input: 0, frame: 2), from: hint, flow: flow,
                          source: "gck-heartbeat")
        XCTAssertEqual(a.from, hint)
        XCTAssertEqual(a.to, .unknown)
        XCTAssertEqual(a.flow, flow)
        XCTAssertTrue(a.fromBox === b.fromBox, "equal hints are one box")
        XCTAssertTrue(a.flowBox === b.flowBox, "equal flows are one box")
        XCTAssertNil(a.toBox, "an unknown hint takes no box")
        a.from.displayName = "Bob"
        XCTAssertEqual(a.from.displayName, "Bob")
        XCTAssertEqual(a.from.peerID, 0x1234_5678)
        XCTAssertEqual(b.from, hint, "changing one event's hint leaves the other's")
        a.flow = nil
        XCTAssertNil(a.flow)
        XCTAssertEqual(a[EventAttribute<Int>("seq")], 1)
    }

    func testCoalescingStillFoldsOnInternedSignatures() {
        let ep1 = Endpoint(.v4(0x0A00_0001), 16402), ep2 = Endpoint(.v4(0x0A00_0002), 16403)
        var c = EventCoalescer(gap: 10 * CaptureTime.second)
        var events: [PeerEvent] = []
        for i in 0 ..< 5 {
            // A fresh (equal) hint and flow value each time, as plugins make them per packet.
            c.add(PeerEvent(kind: .gckHeartbeat, t: Int64(i) * CaptureTime.second, evidence: .frame(input: 0, frame: UInt64(i + 1)),
                            from: PeerHint(peerID: 7), to: PeerHint(peerID: 8), flow: FlowKey(.udp, ep1, ep2),
                            source: "gck-heartbeat"), to: &events)
        }
        c.add(PeerEvent(kind: .gckHeartbeat, t: 6 * CaptureTime.second, evidence: .frame(input: 0, frame: 7),
                        from: PeerHint(peerID: 9), to: PeerHint(peerID: 8), flow: FlowKey(.udp, ep1, ep2),
                        source: "gck-heartbeat"), to: &events)
        XCTAssertEqual(events.count, 2, "another sender is another run")
        XCTAssertEqual(events[0].count, 5)
        XCTAssertEqual(events[0].lastEvidence, .frame(input: 0, frame: 5))
        XCTAssertEqual(c.folded, 4)
    }
}
