import PeerscopeCore
import PeerscopeTimeline

/// `duplicate-connection`: more than one invitation or session at once between the same two peers,
/// or one display name behind two peer IDs at once.
///
/// * crossing invitations: both peers invited each other while the first invitation was still
///   waiting (no response within `duplicate-connection.invite-window`, 30 s);
/// * two invitation channels (TCP connections to an advertised SRV port or carrying invitation
///   frames; other TCP traffic between the two is not counted) open at the same time between the same pair;
/// * a new instance (invitation, ICE + GCK Hello, DTLS handshake) for a pair whose older instance
///   still carried traffic after the new one began (`case` `overlap-traffic`; an older instance
///   that went quiet was superseded: a reconnect, counted by `reconnect-storm`, not a duplicate);
/// * two peer IDs with the same display name seen during overlapping periods, or
///   `discovery.conflict.*` events; logs saying a peer was "already in dictionary"/"already
///   connected", and the app ignoring a duplicate.
/// Observations about the same two peers within `duplicate-connection.invite-window` of the first
/// are one incident and give one finding (the first observation's time and peer; the others' evidence
/// and messages folded in). All are warnings. The peer named is the one that made the second attempt (for a name shared by
/// two IDs, the newer ID).
public struct DuplicateConnectionDetector: Detector {
    public static let kind = "duplicate-connection"
    public static let descriptor = DetectorDescriptor(
        kind: kind,
        summary: "two invitations, channels or sessions at once between the same peers, or one name behind two peer IDs",
        thresholds: [
            ThresholdDescriptor("duplicate-connection.invite-window", 30,
                                "an invitation without a response counts as pending for this long"),
        ],
        make: { DuplicateConnectionDetector(config: $0) })

    let window: Nanos

    public init(config: DetectorConfig) {
        window = config.nanos("duplicate-connection.invite-window")
    }

    /// A log decision about a peer already known (MPC's "already in dictionary", "Peer already in state").
    static func saysAlreadyConnected(_ a: some AttributeLookup) -> Bool {
        if a[.duplicate] == true || a[.alreadyInDictionary] == true { return true }
        if squash(a[.alreadyInState]) == "connected" { return true }
        return (squash(a[.reason]) + squash(a[.message])).contains("already")
    }

    /// A TCP flow written client > server (the side that connected first): the event's own flow
    /// is the direction of the segment or frame that caused it.
    static func clientToServer(_ flow: FlowKey, _ e: ResolvedEvent) -> FlowKey {
        if let server = e[.server], let client = e[.client] {
            if flow.src.description == server && flow.dst.description == client { return flow.reversed }
            if flow.src.description == client && flow.dst.description == server { return flow }
        }
        // Accept and the response come from the advertiser (the server); Hello and Invite first
        // from the browser.
        return e.kind == .invitationAccept || e.kind == .inviteResponse ? flow.reversed : flow
    }

    /// One finding per incident: observations about the same two peers (two channels, crossing
    /// invitations, a second session) within `window` of the incident's first one join it. The first
    /// observation gives the time and peer; the others add their evidence and are appended to the
    /// message ("; also: ...") and listed in `details["alsoSeen"]`.
    static func incidents(_ observations: [(pair: PeerPair, finding: Finding)], window: Nanos) -> [Finding] {
        var merged = DetectorSuite.merge(observations.map(\.finding))  // same key: same observation
        var pairOf: [String: PeerPair] = [:]
        for o in observations where pairOf[o.finding.key] == nil { pairOf[o.finding.key] = o.pair }
        merged.sort { $0.t != $1.t ? $0.t < $1.t : $0.key < $1.key }
        var out: [Finding] = []
        // The incidents of each pair, by index in `out` (ascending): a later observation joins the
        // first of its pair's that is within the window (a scan of every incident was quadratic).
        var outOfPair: [PeerPair: [Int]] = [:]
        for f in merged {
            let pair = pairOf[f.key]
            if let pair, let i = outOfPair[pair]?.first(where: { f.t >= out[$0].t && f.t &- out[$0].t <= window }) {
                var inc = out[i]
                let all = Set(inc.evidence).union(f.evidence).sorted()
                if all.count > Finding.maxEvidence { inc.detailAttrs["evidenceCount"] = String(all.count) }
                inc.evidence = Array(all.prefix(Finding.maxEvidence))
                if f.severity > inc.severity { inc.severity = f.severity }
                let also = inc.detailAttrs["alsoSeen"].map { $0 + "; " } ?? ""
                inc.detailAttrs["alsoSeen"] = also + "\(f.message) (\(CaptureTime.iso8601(f.t)))"
                inc.message += "; also: \(f.message)"
                var cases = (inc.detailAttrs["cases"] ?? inc.detailAttrs["case"] ?? "").split(separator: ",").map(String.init)
                if let c = f.detailAttrs["case"], !cases.contains(c) { cases.append(c) }
                inc.detailAttrs["cases"] = cases.joined(separator: ",")
                inc.detailAttrs["observations"] = String((Int(inc.detailAttrs["observations"] ?? "1") ?? 1) &+ 1)
                out[i] = inc
            } else {
                if let pair { outOfPair[pair, default: []].append(out.count) }
                out.append(f)
            }
        }
        return out
    }

    private struct Directed: Hashable {
        var from: PeerRef
        var to: PeerRef
    }

    public func run(_ input: DetectorInput) -> [Finding] {
        let kind = DuplicateConnectionDetector.kind
        var out: [Finding] = []
        var pendingInvites: [Directed: (Nanos, Evidence)] = [:]
        // Keyed by the canonical flow; the value keeps the flow as client > server for messages.
        var openChannels: [PeerPair: [FlowKey: (Nanos, Evidence, FlowKey)]] = [:]
        // Observations about two peers (channels, crossing invitations, a second session): folded
        // into one finding per incident below.
        var observations: [(pair: PeerPair, finding: Finding)] = []

        for e in input.timelines.events {
            // Read once: each read goes to the event store (see `ResolvedEvent`).
            let eventKind = e.kind
            switch eventKind {
            case .nameConflict, .instanceConflict:
                let peer = e.from ?? e.to
                out.append(input.finding(kind, .warning, peer: peer, t: e.t,
                                         "discovery reports a \(e.kind == .nameConflict ? "name" : "service instance") conflict for \(input.label(peer))",
                                         evidence: [e.evidence],
                                         key: "\(kind)|name|\(input.label(peer))|\(peer.map { "\($0)" } ?? "?")",
                                         details: ["case": "name"]))
            case .connectionDecision:
                if DuplicateConnectionDetector.saysAlreadyConnected(e.attrs) {
                    let peer = e.from
                    out.append(input.finding(kind, .warning, peer: peer, t: e.t,
                                             "log: a new connection from \(input.label(peer)) was refused because the peer was already connected",
                                             evidence: [e.evidence], key: "\(kind)|already|\(input.scope(e))",
                                             details: ["case": "log", "outcome": "log"]))
                }
            case .appDuplicateIgnored:
                let peer = e.from
                out.append(input.finding(kind, .warning, peer: peer, t: e.t,
                                         "log: the app ignored a duplicate connection from \(input.label(peer))",
                                         evidence: [e.evidence], key: "\(kind)|app-ignored|\(input.scope(e))",
                                         details: ["case": "log", "outcome": "log"]))
            default: break
            }

            // Only these kinds count below (channels and invitations): the sides are read for them only.
            switch eventKind {
            case .invitationHello, .invitationAccept, .invite, .tcpOpened, .tcpClosed, .tcpReset, .tcpRefused, .inviteResponse: break
            default: continue
            }
            guard let from = e.from, let to = e.to, let pair = e.pair else { continue }

            // Invitation channels (TCP) open at once.
            if let flow = e.flow, flow.proto == .tcp {
                let c = flow.canonical
                switch eventKind {
                case .invitationHello, .invitationAccept, .invite, .tcpOpened:
                    // A TCP connection counts once it is known to be an invitation channel: to an
                    // advertised SRV port, or carrying invitation frames (seen on a later event).
                    if eventKind == .tcpOpened, e[.invitation] == nil { break }
                    var chans = openChannels[pair] ?? [:]
                    if chans[c] == nil {
                        let directed = DuplicateConnectionDetector.clientToServer(flow, e)
                        if let other = chans.first(where: { $0.key != c }) {
                            observations.append((pair, input.finding(
                                kind, .warning, peer: from, t: e.t,
                                "two invitation channels open at once between \(input.label(from)) and \(input.label(to)) (\(other.value.2) and \(directed))",
                                evidence: [other.value.1, e.evidence], key: "\(kind)|channels|\(pair)|\(c)",
                                details: ["case": "channels"])))
                        }
                        chans[c] = (e.t, e.evidence, directed)
                    }
                    openChannels[pair] = chans
                case .tcpClosed, .tcpReset, .tcpRefused:
                    openChannels[pair]?[c] = nil
                default: break
                }
            }

            switch eventKind {
            case .invite:
                let mine = Directed(from: from, to: to)
                let theirs = Directed(from: to, to: from)
                if let (t0, ev0) = pendingInvites[theirs], e.t &- t0 <= window {
                    observations.append((pair, input.finding(
                        kind, .warning, peer: from, t: e.t,
                        "\(input.label(to)) and \(input.label(from)) invited each other at the same time (\(input.at(t0)) and \(input.at(e.t)))",
                        evidence: [ev0, e.evidence], key: "\(kind)|crossing|\(pair)|\(t0)", details: ["case": "crossing-invitations"])))
                }
                if pendingInvites[mine] == nil { pendingInvites[mine] = (e.t, e.evidence) }
            case .inviteResponse:
                pendingInvites[Directed(from: to, to: from)] = nil
            case .tcpReset, .tcpRefused, .tcpClosed:
                pendingInvites[Directed(from: from, to: to)] = nil
                pendingInvites[Directed(from: to, to: from)] = nil
            default: break
            }
        }

        // A new instance began while the older one went on carrying traffic: two sessions alive at once.
        // (One that went quiet when the new one began was superseded: a reconnect, not a duplicate.)
        for inst in input.timelines.sessions {
            guard let n = inst.supersededBy, let (ot, oev) = inst.overlap,
                  let next = input.timelines.session(SessionKey(pair: inst.pair, number: n)) else { continue }
            let peer = next.originator ?? inst.pair.b
            observations.append((inst.pair, input.finding(
                kind, .warning, peer: peer, t: next.start,
                "\(input.label(peer)) started session #\(n) with \(input.label(inst.pair.other(peer))) while session #\(inst.number) "
                    + "was still carrying traffic (\(input.at(ot)), \(CaptureTime.duration(ot &- next.start)) after #\(n) began)",
                evidence: [inst.startEvidence, next.startEvidence, oev], key: "\(kind)|overlap|\(inst.key)",
                details: ["case": "overlap-traffic", "sessions": "\(inst.number),\(n)"])))
        }
        out.append(contentsOf: DuplicateConnectionDetector.incidents(observations, window: window))

        // One display name behind two peer IDs at once.
        var byName: [String: [PeerInfo]] = [:]
        for p in input.timelines.peers where p.peer.peerID != nil {
            if let n = p.peer.displayName, !n.isEmpty { byName[n, default: []].append(p.peer) }
        }
        for (name, infos) in byName.sorted(by: { $0.key < $1.key }) where infos.count > 1 {
            let sorted = infos.sorted { ($0.firstSeen ?? 0) < ($1.firstSeen ?? 0) }
            // The first older peer still seen when the newer one appeared, found by a binary search on
            // the running maximum of the last times: a name every copy of a group reuses has thousands
            // of peers, and a scan from the oldest made this quadratic in the capture's length.
            let reach = DuplicateConnectionDetector.runningMax(sorted.map(\.lastSeen))
            for i in 1 ..< sorted.count {
                let newer = sorted[i]
                guard let nFirst = newer.firstSeen else { continue }
                if let j = DuplicateConnectionDetector.firstReaching(nFirst, reach, before: i) {
                    let older = sorted[j]
                    var ev: [Evidence] = []
                    if let e = input.timelines.timeline(older.ref)?.entries.first?.evidence.first { ev.append(e) }
                    if let e = input.timelines.timeline(newer.ref)?.entries.first?.evidence.first { ev.append(e) }
                    out.append(input.finding(
                        kind, .warning, peer: newer.ref, t: nFirst,
                        "display name \"\(name)\" is used by two peer IDs at once (\(older.idString ?? "?") and \(newer.idString ?? "?"))",
                        evidence: ev, key: "\(kind)|name|\(name)|\(newer.ref)",
                        details: ["case": "name", "peerIDs": "\(older.idString ?? "?"),\(newer.idString ?? "?")"]))
                }
            }
        }
        return out
    }

    /// `m[k]`: the largest of `values[0 ... k]` (nil values count as none; nil while all were nil).
    static func runningMax(_ values: [Nanos?]) -> [Nanos?] {
        var out: [Nanos?] = []
        out.reserveCapacity(values.count)
        var m: Nanos?
        for v in values {
            if let v { m = max(m ?? v, v) }
            out.append(m)
        }
        return out
    }

    /// The first index below `end` whose own value is at least `t`, given the running maximum `m` of
    /// the values (`runningMax`): the first index where the running maximum reaches `t`, since it
    /// first does so at a value that reaches it. Nil when none does.
    static func firstReaching(_ t: Nanos, _ m: [Nanos?], before end: Int) -> Int? {
        var lo = 0, hi = min(end, m.count)
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if let v = m[mid], v >= t { hi = mid } else { lo = mid + 1 }
        }
        return lo < min(end, m.count) ? lo : nil
    }
}
