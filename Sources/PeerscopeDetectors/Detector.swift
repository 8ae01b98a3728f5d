import PeerscopeCore
import PeerscopeTimeline

/// What a detector is: its kind, what it looks for, its thresholds (with defaults) and how to make one.
public struct DetectorDescriptor: Sendable {
    public var kind: String
    public var summary: String
    public var thresholds: [ThresholdDescriptor]
    public var make: @Sendable (DetectorConfig) -> any Detector

    public init(kind: String, summary: String, thresholds: [ThresholdDescriptor],
                make: @escaping @Sendable (DetectorConfig) -> any Detector) {
        self.kind = kind
        self.summary = summary
        self.thresholds = thresholds
        self.make = make
    }
}

/// A detector: one kind of finding. Timers run on capture time; `input.end` is the end of input,
/// which flushes them (a timer still open then is reported as open at end of input).
///
/// Timeouts are strict: a gap or wait counts as a timeout only when it is **greater than** the
/// threshold (an answer exactly at the threshold is in time), as the seed app's
/// `timeSinceLastKeepAlive > keepAliveTimeout` check does.
public protocol Detector: Sendable {
    static var descriptor: DetectorDescriptor { get }
    init(config: DetectorConfig)
    func run(_ input: DetectorInput) -> [Finding]
}

/// What detectors read: the timelines (resolved events, peers, session instances) and the end of input.
public struct DetectorInput: Sendable {
    public let timelines: Timelines
    public let end: Nanos

    public init(timelines: Timelines, end: Nanos) {
        self.timelines = timelines
        self.end = end
    }

    /// A finding about `peer`, with its label and idString filled in.
    public func finding(_ kind: String, _ severity: Severity, peer: PeerRef?, t: Nanos, _ message: String,
                        evidence: [Evidence], key: String, details: [String: String] = [:],
                        openAtEnd: Bool = false) -> Finding {
        Finding(kind: kind, severity: severity, peer: timelines.label(peer), peerID: timelines.idString(peer),
                peerRef: peer, t: t, message: message, evidence: evidence, key: key, details: details,
                openAtEnd: openAtEnd)
    }

    public func label(_ r: PeerRef?) -> String { timelines.label(r) }

    /// `+12.345s` from the start of input.
    public func at(_ t: Nanos) -> String { CaptureTime.relative(t, to: timelines.start ?? t) }

    public func session(_ k: SessionKey?) -> SessionInstance? { k.flatMap { timelines.session($0) } }

    /// The peer an event names: for a log line, the side its hint named (not the device that wrote
    /// the log, which an empty hint stands for); otherwise `from`, else `to`.
    public func subject(_ e: ResolvedEvent) -> PeerRef? {
        if !e.fromHint.isEmpty, let f = e.from { return f }
        if !e.toHint.isEmpty, let t = e.to { return t }
        return e.from ?? e.to
    }

    /// True when the event's hints name a peer (not only the log's own device).
    public func namesPeer(_ e: ResolvedEvent) -> Bool { !e.fromHint.isEmpty || !e.toHint.isEmpty }

    /// A key naming the session instance, or the pair/peer when there is none.
    public func scope(_ e: ResolvedEvent) -> String {
        if let s = e.session { return s.description }
        if let p = e.pair { return p.description }
        return (e.from ?? e.to).map { "\($0)" } ?? "?"
    }
}

/// The detectors, and running them.
public enum DetectorSuite {
    /// Every detector, in report order.
    public static let all: [DetectorDescriptor] = [
        HandshakeTimeoutDetector.descriptor,
        KeepaliveTimeoutDetector.descriptor,
        DuplicateConnectionDetector.descriptor,
        ChannelErrorDetector.descriptor,
        ReconnectStormDetector.descriptor,
        DeclinedInvitationDetector.descriptor,
        InvitationStormDetector.descriptor,
        FlappingDetector.descriptor,
    ]

    public static var kinds: [String] { all.map(\.kind) }

    public static var thresholds: [ThresholdDescriptor] { all.flatMap(\.thresholds) }

    public static func threshold(named name: String) -> ThresholdDescriptor? {
        for d in all { if let t = d.thresholds.first(where: { $0.name == name }) { return t } }
        return nil
    }

    /// Effective thresholds (defaults with overrides applied), by name.
    public static func effectiveThresholds(_ config: DetectorConfig) -> [(String, Double)] {
        thresholds.map { ($0.name, config.value($0.name)) }
    }

    /// Runs the enabled detectors on timelines already built. `end` defaults to the timelines' end.
    public static func run(timelines: Timelines, config: DetectorConfig = .defaults, end: Nanos? = nil) -> [Finding] {
        let input = DetectorInput(timelines: timelines, end: max(end ?? timelines.end, timelines.end))
        var all: [Finding] = []
        for d in DetectorSuite.all where config.isEnabled(d.kind) {
            all.append(contentsOf: d.make(config).run(input))
        }
        return notMPC(ChannelErrorDetector.foldIntoEncryptionMismatch(FlappingDetector.foldIntoStorms(foldLogFindings(merge(all))), timelines), timelines)
    }

    /// True when the event itself shows MPC: a log line (MPC's or the app's), a GCK packet, the
    /// invitation channel, app messages (carried in GCK data), DTLS with MPC's 0xD0 prefix, or a
    /// flow with MPC's UDP ports on both ends (or an ICMP error quoting one).
    public static func isMPCEvidence(_ e: ResolvedEvent) -> Bool {
        if case .logLine = e.evidence { return true }
        let kind = e.kind
        if kind.isIn("gck") || kind.isIn("invitation") || kind.isIn("app") { return true }
        if kind.isIn("dtls"), e[.mpcPrefix] != nil { return true }
        if let f = e.flow, f.proto == .udp, MPCPorts.bothGCK(f) { return true }
        // An ICMP error quoting such a flow.
        if let q = e.quotedFlow { return MPCPorts.bothGCK(q) }
        return false
    }

    /// Peers known only by address that never took part in anything with MPC evidence (an MPC
    /// identity on either side, or an event that `isMPCEvidence`): other apps' STUN/DTLS (WebRTC).
    public static func nonMPCPeers(_ t: Timelines) -> Set<PeerRef> {
        var addressOnly: Set<PeerRef> = [], mpc: Set<PeerRef> = []
        for e in t.events {
            // Each side read once, without a list per event.
            let from = e.from, to = e.to
            var identified = false
            func look(_ r: PeerRef?) {
                guard let r else { return }
                if case .address = r { addressOnly.insert(r) } else { identified = true }
            }
            look(from)
            look(to)
            if identified || isMPCEvidence(e) {
                if let from { mpc.insert(from) }
                if let to { mpc.insert(to) }
            }
        }
        return addressOnly.subtracting(mpc)
    }

    /// Findings about peers without MPC evidence are not judged: info at most, saying why.
    static func notMPC(_ findings: [Finding], _ t: Timelines) -> [Finding] {
        let others = nonMPCPeers(t)
        guard !others.isEmpty else { return findings }
        return findings.map { f in
            guard let p = f.peerRef, others.contains(p), f.severity > .info else { return f }
            var g = f
            g.severity = .info
            g.detailAttrs["mpcEvidence"] = "none"
            g.message += "; not judged: no MPC evidence for this peer (other app's STUN/DTLS?)"
            return g
        }
    }

    /// How long after a packet-derived finding a log line about the same problem may come.
    public static let logFoldWindow: Nanos = 60 * CaptureTime.second

    /// A finding that only a log line shows (`details["outcome"] == "log"`) joins the finding of the
    /// same kind about the same peer that it confirms (same phase, or a "gave up" line after any
    /// phase; from 2 s before to 60 s after), so a capture plus its logs give one finding with both
    /// kinds of evidence.
    public static func foldLogFindings(_ findings: [Finding]) -> [Finding] {
        let folding: Set<String> = ["log", "follow-up"]
        var kept: [Finding] = findings.filter { !folding.contains($0.detailAttrs["outcome"] ?? "") }
        let logs = findings.filter { folding.contains($0.detailAttrs["outcome"] ?? "") }.sorted { $0.t < $1.t }
        for l in logs {
            let target = kept.indices.first { i in
                let f = kept[i]
                // Duplicates name either peer: any duplicate finding close in time is the same problem.
                let samePeer = f.peerRef == l.peerRef && f.peerRef != nil
                let anyPeer = f.kind == DuplicateConnectionDetector.kind || l.detailAttrs["peerNamed"] == "false"
                guard f.kind == l.kind, samePeer || anyPeer else { return false }
                guard l.t >= f.t &- 2 * CaptureTime.second, l.t <= f.t &+ logFoldWindow else { return false }
                let p1 = f.detailAttrs["phase"], p2 = l.detailAttrs["phase"]
                return p1 == nil || p2 == nil || p1 == p2 || p1 == "gave-up" || p2 == "gave-up"
            }
            if let i = target {
                if l.detailAttrs["outcome"] == "follow-up", l.detailAttrs["case"] != kept[i].detailAttrs["case"] {
                    // A follow-up of another kind (connections refused after an ICMP error) is noted,
                    // but its frames are not evidence of this finding (they prove the follow-up).
                    kept[i].detailAttrs["followUps"] = "true"
                    kept[i].detailAttrs["followUpCase"] = l.detailAttrs["case"]
                    kept[i].detailAttrs["followUpCount"] = l.detailAttrs["count"] ?? String(l.evidence.count)
                    continue
                }
                kept[i].evidence = Array(Set(kept[i].evidence).union(l.evidence).sorted().prefix(Finding.maxEvidence))
                if l.severity > kept[i].severity { kept[i].severity = l.severity }
                if kept[i].detailAttrs["phase"] == "gave-up", let p = l.detailAttrs["phase"] { kept[i].detailAttrs["phase"] = p }
                kept[i].detailAttrs[l.detailAttrs["outcome"] == "log" ? "confirmedByLog" : "followUps"] = "true"
            } else {
                kept.append(l)
            }
        }
        // Nothing folded into a list already in report order (what `merge` gives): sorting (stable)
        // would give it back as it is, at the cost of comparing tens of thousands of findings.
        if logs.isEmpty, kept.indices.dropFirst().allSatisfy({ !Finding.reportOrder(kept[$0], kept[$0 - 1]) }) { return kept }
        return kept.sorted(by: Finding.reportOrder)
    }

    /// Runs the detectors on events. When `timelines` has no events (built elsewhere or empty), the
    /// events are put through a `TimelineBuilder` first: the identity facts are among the events, so
    /// the findings are those of the full analysis.
    public static func run(_ events: [PeerEvent], timelines: Timelines, config: DetectorConfig = .defaults,
                           end: Nanos) -> [Finding] {
        if timelines.events.isEmpty && !events.isEmpty {
            let b = TimelineBuilder(detectors: config)
            b.add(contentsOf: events)
            return run(timelines: b.finish(at: end), config: config, end: end)
        }
        return run(timelines: timelines, config: config, end: end)
    }

    /// Merges findings with the same key (earliest time, worst severity, evidence united) and sorts
    /// them by time, kind and peer.
    public static func merge(_ findings: [Finding]) -> [Finding] {
        // In place, in first-seen order; evidence sets only for keys found more than once (a large
        // capture has tens of thousands of findings, nearly all with a key of their own).
        var out: [Finding] = []
        out.reserveCapacity(findings.count)
        var at: [String: Int] = [:]
        at.reserveCapacity(findings.count)
        var evidenceSets: [Int: Set<Evidence>] = [:]
        for f in findings {
            if let i = at[f.key] {
                if f.severity > out[i].severity { out[i].severity = f.severity }
                if f.t < out[i].t { out[i].t = f.t; out[i].message = f.message }
                for (k, v) in f.detailAttrs where out[i].detailAttrs[k] == nil { out[i].detailAttrs[k] = v }
                out[i].openAtEnd = out[i].openAtEnd || f.openAtEnd
                evidenceSets[i, default: Set(out[i].evidence)].formUnion(f.evidence)
            } else {
                at[f.key] = out.count
                out.append(f)
            }
        }
        for i in out.indices {
            let ev: [Evidence]
            if let set = evidenceSets[i] {
                ev = set.sorted()
            } else if zip(out[i].evidence, out[i].evidence.dropFirst()).allSatisfy({ $0 < $1 }) {
                ev = out[i].evidence   // already sorted without repeats: what the set would give
            } else {
                ev = Set(out[i].evidence).sorted()
            }
            if ev.count > Finding.maxEvidence {
                out[i].detailAttrs["evidenceCount"] = String(ev.count)
                out[i].evidence = Array(ev.prefix(Finding.maxEvidence))
            } else {
                out[i].evidence = ev
            }
        }
        return out.sorted(by: Finding.reportOrder)
    }
}

/// Bursts in time-ordered `items`: each run of more than `moreThan` items within `window` of the run's
/// first (a run is reported once; counting resumes after it), as the storm and flapping detectors count.
func bursts<T>(_ items: [T], moreThan: Int, within window: Nanos, start: (T) -> Nanos, end: (T) -> Nanos) -> [ArraySlice<T>] {
    var out: [ArraySlice<T>] = []
    var i = 0
    while i < items.count {
        var j = i
        while j + 1 < items.count, end(items[j + 1]) &- start(items[i]) <= window { j += 1 }
        if j - i + 1 > moreThan {
            out.append(items[i ... j])
            i = j + 1
        } else {
            i += 1
        }
    }
    return out
}

/// Reads a few spellings of a flag attribute.
func attrIsTrue(_ v: String?) -> Bool? {
    guard let v else { return nil }
    switch v.lowercased() {
    case "true", "yes", "1": return true
    case "false", "no", "0": return false
    default: return nil
    }
}

/// Lower-cased letters only (`DTLS Handshake` -> `dtlshandshake`).
func squash(_ s: String?) -> String { (s ?? "").lowercased().filter { $0.isLetter || $0.isNumber } }

/// True when a log timeout line says the channel was in fact connected ("ignore this timeout").
func saysConnected(_ attrs: some AttributeLookup) -> Bool {
    let st = squash(attrs[.state])
    return st == "connected" || st == "dtlsconnected" || attrIsTrue(attrs[.ignored]) == true
}

extension TimelineBuilder {
    /// A builder for detectors configured by `detectors`: browse queries are folded only across
    /// pauses no longer than `keepalive-timeout.capture-gap` (0: no holes are looked for, any pause),
    /// so a capture hole the detectors look for is never hidden inside a fold.
    public convenience init(detectors: DetectorConfig) {
        self.init()
        let gap = detectors.nanos("keepalive-timeout.capture-gap")
        browseFoldGap = gap > 0 ? gap : Nanos.max
    }
}

/// Lookups in a capture's holes (stretches with no input at all, longer than
/// `keepalive-timeout.capture-gap`) as the timeout detectors collect them: each from the latest time
/// seen so far to the next event's time, so they come sorted by start, and each starts no earlier than
/// the one before ends. A binary search finds what a scan from the first would (a scan per check was
/// quadratic on a capture with many holes).
package enum CaptureHoles {
    /// True when `t` falls strictly inside one of `holes` (sorted and disjoint, as above).
    package static func contains(_ t: Nanos, _ holes: [(Nanos, Nanos)]) -> Bool {
        // The last hole starting before `t` is the only one that can hold it.
        let i = firstIndex(holes) { $0.0 >= t }
        guard i > 0 else { return false }
        return t < holes[i - 1].1
    }

    /// The first of `holes` (sorted by start) starting in `start ..< end`.
    package static func first(startingIn start: Nanos, _ end: Nanos, _ holes: [(Nanos, Nanos)]) -> (Nanos, Nanos)? {
        let i = firstIndex(holes) { $0.0 >= start }
        guard i < holes.count, holes[i].0 < end else { return nil }
        return holes[i]
    }

    /// The first index whose hole satisfies `atOrAfter` (false for a prefix, true for the rest), or `holes.count`.
    static func firstIndex(_ holes: [(Nanos, Nanos)], _ atOrAfter: ((Nanos, Nanos)) -> Bool) -> Int {
        var lo = 0, hi = holes.count
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if atOrAfter(holes[mid]) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }
}
