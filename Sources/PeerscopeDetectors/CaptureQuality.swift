import PeerscopeCore
import PeerscopeTimeline

/// Capture quality inside the verdicts (issue #11): a finding whose judgement rests on silence
/// (`Finding.silence`) inside a window with known packet loss is `uncertain`, with the reason.
public enum CaptureQuality {
    /// The findings with `confidence` and `caveats` set from `losses`. A loss of one flow (`flow` set:
    /// one-sided flows) touches only the findings whose evidence lies on that flow (`timelines` says
    /// which flow each piece of evidence is on); the other losses touch every finding in their window.
    public static func qualify(_ findings: [Finding], losses: [CaptureLoss], timelines: Timelines? = nil) -> [Finding] {
        let hiding = losses.filter { $0.hidesPackets && $0.flow == nil }
        let flows = losses.filter { $0.hidesPackets && $0.flow != nil }
        guard !hiding.isEmpty || !flows.isEmpty else { return findings }
        var flowOf: [Evidence: FlowKey] = [:]
        if !flows.isEmpty, let timelines {
            for e in timelines.events {
                guard let f = e.flow else { continue }
                flowOf[e.evidence] = f.canonical
                if let l = e.lastEvidence { flowOf[l] = f.canonical }
            }
        }
        return findings.map { f in
            // A log line saying the timer fired does not depend on what the capture saw.
            guard let s = f.silence, f.detailAttrs["confirmedByLog"] != "true" else { return f }
            var touching = hiding.filter { $0.overlaps(s.lowerBound, s.upperBound) }
            if !flows.isEmpty {
                let on = Set(f.evidence.compactMap { flowOf[$0] })
                touching += flows.filter { l in l.flow.map(on.contains) == true && l.overlaps(s.lowerBound, s.upperBound) }
            }
            guard !touching.isEmpty else { return f }
            var g = f
            g.confidence = .uncertain
            g.caveats = touching.map(\.caveat)
            return g
        }
    }

    /// What a side sends only after hearing the other: an ICE check answered (the other side checked),
    /// DTLS ChangeCipherSpec and application data (the handshake needs both sides' flights), GCK DD
    /// and LSA ACK (after the other side's Hello and LSA). A request that is simply unanswered (ICE
    /// checks, DTLS ClientHellos, GCK Hellos, with nothing after them) is not such evidence: its
    /// silence is the failure the detectors flag.
    public static let answerKinds: Set<EventKind> = [.iceSuccess, .dtlsChangeCipherSpec, .dtlsApplicationData, .gckDD, .gckLSAACK]

    /// UDP flows whose events all go one way although that side sent something only an answer to
    /// the other side explains (`answerKinds`): the capture missed the other direction. Each is a
    /// loss `oneSided` of that flow over its first to last event; the source names the direction
    /// seen and the evidence that the other side sent.
    public static func oneSidedFlows(_ timelines: Timelines) -> [CaptureLoss] {
        struct Seen {
            var senders: Set<Endpoint> = []
            var first: Nanos, last: Nanos
            var answer: (kind: EventKind, evidence: Evidence)?
        }
        var flows: [FlowKey: Seen] = [:]
        var order: [FlowKey] = []
        for e in timelines.events {
            guard let f = e.flow, f.proto == .udp else { continue }
            let key = f.canonical
            var s = flows[key] ?? { order.append(key); return Seen(first: e.t, last: e.t) }()
            s.senders.insert(f.src)
            s.first = min(s.first, e.t)
            s.last = max(s.last, e.lastT)
            if s.answer == nil, answerKinds.contains(e.kind) { s.answer = (e.kind, e.evidence) }
            flows[key] = s
        }
        return order.compactMap { key in
            guard let s = flows[key], s.senders.count == 1, let sender = s.senders.first, let answer = s.answer else { return nil }
            let other = sender == key.src ? key.dst : key.src
            let source = "udp \(sender) > \(other) seen, nothing from \(other); \(answer.kind.rawValue) at \(answer.evidence) answers it"
            return CaptureLoss(reason: .oneSided, start: s.first, end: s.last, count: 0, source: source, flow: key)
        }
    }
}
