import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import PeerscopeTimeline
import XCTest

/// Synthetic peer events with explicit capture times (seconds from a fixed origin).
final class Script {
    static let origin: Nanos = 1_795_000_000 * CaptureTime.second

    static let alice = PeerHint(peerID: 0x0123_4567_89AB_CDEF, displayName: "Alice")
    static let bob = PeerHint(peerID: 0x0FED_CBA9_8765_4321, displayName: "Bob")
    static let carol = PeerHint(peerID: 0x0AAA_BBBB_CCCC_DDDD, displayName: "Carol")

    var events: [PeerEvent] = []
    var frame: UInt64 = 0
    var line = 0
    /// Identity facts, as decoding emits them (`identity.*` events).
    let facts = ScriptFacts()

    init() {
        for h in [Script.alice, Script.bob, Script.carol] {
            if let id = h.peerID { facts.learn(peerID: id, displayName: h.displayName) }
        }
    }

    static func at(_ s: Double) -> Nanos { origin + CaptureTime.nanos(seconds: s) }

    /// A full encrypted setup, app handshake and keep-alives, then a disconnect.
    static func fullSession() -> Script {
        let A = Script.alice, B = Script.bob
        let s = Script()
        s.packet(.announced, 0.0, A, .unknown)
        s.packet(.announced, 0.1, B, .unknown)
        s.packet(.invite, 1.0, A, B)
        s.packet(.inviteResponse, 1.1, B, A, attrs: ["accepted": "true"])
        s.packet(.inviteConnect, 1.2, A, B)
        s.packet(.iceRequest, 1.5, A, B)
        s.packet(.iceSuccess, 1.6, B, A)
        s.packet(.dtlsHandshake, 1.7, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsHandshake, 1.8, B, A, attrs: ["message": "ServerHello"])
        s.packet(.dtlsChangeCipherSpec, 1.9, A, B)
        s.packet(.dtlsChangeCipherSpec, 2.0, B, A)
        s.packet(.gckHello, 2.1, A, B)
        s.packet(.gckHello, 2.2, B, A)
        s.packet(.appHandshake, 3.0, A, B)
        s.packet(.appHandshakeResponse, 3.1, B, A)
        for i in 0 ..< 12 {
            s.packet(.appKeepAlive, 4.0 + Double(i) * 2, A, B)
            s.packet(.appKeepAlive, 4.5 + Double(i) * 2, B, A)
        }
        s.log(.disconnected, 30.0, B, A)
        return s
    }

    /// A packet event (frame evidence).
    @discardableResult
    func packet(_ kind: EventKind, _ s: Double, _ from: PeerHint, _ to: PeerHint, attrs: [String: String] = [:],
                flow: FlowKey? = nil, source: String = "test") -> Evidence {
        frame += 1
        let ev = Evidence.frame(input: 0, frame: frame)
        events.append(PeerEvent(kind: kind, t: Script.at(s), evidence: ev, from: from, to: to, flow: flow,
                                source: source, attrs: attrs))
        return ev
    }

    /// A log event (line evidence, input 1).
    @discardableResult
    func log(_ kind: EventKind, _ s: Double, _ from: PeerHint, _ to: PeerHint = .unknown, attrs: [String: String] = [:],
             source: String = "log-test") -> Evidence {
        line += 1
        let ev = Evidence.logLine(input: 1, line: line)
        events.append(PeerEvent(kind: kind, t: Script.at(s), evidence: ev, from: from, to: to, source: source, attrs: attrs))
        return ev
    }

    /// Packets of one kind every `every` seconds in [from, to).
    func repeating(_ kind: EventKind, from s0: Double, to s1: Double, every: Double, _ a: PeerHint, _ b: PeerHint) {
        var s = s0
        while s < s1 - 1e-9 {
            packet(kind, s, a, b)
            s += every
        }
    }

    /// ICE, DTLS-less GCK hello both ways: a plaintext session set up at `s` between a and b.
    func connect(_ a: PeerHint, _ b: PeerHint, at s: Double) {
        packet(.iceRequest, s, a, b)
        packet(.iceSuccess, s + 0.01, b, a)
        packet(.gckHello, s + 0.02, a, b)
        packet(.gckHello, s + 0.03, b, a)
    }

    func timelines(end: Double? = nil) -> Timelines {
        let b = TimelineBuilder()
        b.add(contentsOf: facts.events + events)
        return b.finish(at: end.map(Script.at))
    }

    func findings(end: Double? = nil, config: DetectorConfig = .defaults) -> [Finding] {
        let tl = timelines(end: end)
        return DetectorSuite.run(timelines: tl, config: config, end: end.map(Script.at))
    }

    func report(end: Double? = nil, config: DetectorConfig = .defaults) -> Report {
        var stats = CaptureStats()
        stats.frames = frame
        stats.bytes = frame * 100
        stats.firstT = events.map(\.t).min()
        stats.lastT = end.map(Script.at) ?? events.map(\.t).max()
        stats.linkTypes = ["EN10MB": frame]
        stats.plugins = ["test": frame]
        stats.logLines = UInt64(line)
        // The report model from timelines and findings (what an analysis session does).
        let endT = end.map(Script.at) ?? stats.lastT
        let b = TimelineBuilder()
        b.add(contentsOf: facts.events + events)
        let tl = b.finish(at: endT)
        return Report(inputs: ["capture.pcapng", "device.log"], stats: stats,
                      diagnostics: [Diagnostic(id: "gck.header.short", message: "short header",
                                               evidence: .frame(input: 0, frame: 1), offset: 3)],
                      timelines: tl, findings: DetectorSuite.run(timelines: tl, config: config, end: endT), config: config)
    }
}

/// Identity facts for a script, made the way decoding makes them: `identity.*` events.
final class ScriptFacts {
    private(set) var events: [PeerEvent] = []
    private var frame: UInt64 = 0

    private func fact(_ kind: EventKind, _ h: PeerHint, at t: Nanos = Script.origin) {
        frame += 1
        events.append(PeerEvent(kind: kind, t: t, evidence: .frame(input: 0, frame: frame), from: h, source: "test"))
    }

    func learn(peerID: UInt64, displayName: String? = nil) { fact(.identityLearned, PeerHint(peerID: peerID, displayName: displayName)) }
    func learn(peerID: UInt64, endpoint: Endpoint) { fact(.identityLearned, PeerHint(peerID: peerID, endpoint: endpoint)) }
    func advertised(peerID: UInt64, at t: Nanos) { fact(.identityAdvertised, PeerHint(peerID: peerID), at: t) }

    /// The facts folded, as the timeline folds them.
    var identities: PeerIdentities { PeerIdentities(events: events) }
}

extension Array where Element == Finding {
    func of(_ kind: String) -> [Finding] { filter { $0.kind == kind } }
}
