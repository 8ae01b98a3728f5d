import Foundation
import PeerscopeCore

/// Turns matches into events: coalesces per-channel bursts and repeated state-change prints.
struct EventBuilder {
    let options: LogOptions
    var events: [PeerEvent] = []
    private var bursts: [String: Int] = [:]
    private var lastState: [String: Int] = [:]

    init(options: LogOptions) { self.options = options }

    static func peerKey(_ h: PeerHint) -> String {
        if let p = h.participantID { return "p:\(p)" }
        if let id = h.peerID { return "p:\(PeerIdentity.participantID(id))" }
        if let n = h.displayName { return "n:\(n)" }
        return ""
    }

    // Context from the lines around (see `LogContext`), per input.
    private var lastNamed: [Int: (t: Nanos, hint: PeerHint)] = [:]
    private var waiting: [(index: Int, input: Int, asTo: Bool)] = []
    private var invitation: [Int: (remote: PeerHint, local: PeerHint)] = [:]

    /// Lines whose peer is the device that wrote the log: never context for another line.
    static let ownLineKinds: Set<EventKind> = [.logAdvertising, .logPeerCreated, .logSessionInit]

    /// Takes what a line says about its surroundings: the participant it names (for peerless error
    /// lines before and after it) and the peers of the current invitation.
    mutating func observe(_ m: LogMatch, entry e: LogEntry) {
        for h in [m.from, m.to] where h.displayName != nil && (h.peerID != nil || h.participantID != nil) {
            if let n = h.displayName { identified[e.input, default: [:]][n] = (e.t, h) }
        }
        switch m.context {
        case .invitationRemoteIsFrom, .invitationRemoteIsTo:
            let (remote, local) = m.context == .invitationRemoteIsFrom ? (m.from, m.to) : (m.to, m.from)
            guard !remote.isEmpty else { break }
            // An app print naming only a display name does not replace MPC's line with the IDs.
            if let cur = invitation[e.input], remote.peerID == nil, remote.participantID == nil,
               cur.remote.displayName == remote.displayName {
                break
            }
            // A line naming only the remote keeps the local side an earlier line of the input named.
            let keep = local.isEmpty ? (invitation[e.input]?.local ?? .unknown) : local
            invitation[e.input] = (remote, keep)
        default: break
        }
        if m.context == .nearbyParticipantAsTo || m.context == .nearbyParticipantAsFrom { return }
        if let k = m.kind, EventBuilder.ownLineKinds.contains(k) { return }
        // A line naming both sides (`Got invite from peer[X] for peer[Y]`) may name the log's own
        // device on either: only lines naming one side (GCK's `participant [P]`) are context.
        guard m.from.isEmpty != m.to.isEmpty else { return }
        let named = m.to.isEmpty ? m.from : m.to
        guard named.participantID != nil else { return }
        lastNamed[e.input] = (e.t, named)
        var still: [(index: Int, input: Int, asTo: Bool)] = []
        for w in waiting {
            guard w.input == e.input else { still.append(w); continue }
            guard w.index < events.count, e.t &- events[w.index].t <= options.coalesceWindow else { continue }
            if w.asTo { events[w.index].to = named } else { events[w.index].from = named }
            events[w.index][.peerFrom] = "context"
        }
        waiting = still
    }

    /// Fills the hints a line left empty from its context; true when a nearby participant is still wanted.
    private func fill(_ m: LogMatch, _ e: LogEntry, from: inout PeerHint, to: inout PeerHint, attrs: inout [String: String]) -> Bool {
        switch m.context {
        case .none, .invitationRemoteIsFrom, .invitationRemoteIsTo:
            return false
        case .nearbyParticipantAsTo, .nearbyParticipantAsFrom:
            guard from.isEmpty, to.isEmpty else { return false }
            if let (t, h) = lastNamed[e.input], e.t >= t, e.t &- t <= options.coalesceWindow {
                if m.context == .nearbyParticipantAsTo { to = h } else { from = h }
                attrs[.peerFrom] = "context"
                return false
            }
            return true
        case .answersInvitation:
            guard let inv = invitation[e.input] else { return false }
            if to.isEmpty { to = inv.remote; attrs[.peerFrom] = "context" }
            if from.isEmpty, !inv.local.isEmpty { from = inv.local; attrs[.peerFrom] = "context" }
            return false
        case .invitationRemoteAsFrom:
            guard from.isEmpty, let inv = invitation[e.input] else { return false }
            from = inv.remote
            attrs[.peerFrom] = "context"
            return false
        }
    }

    /// Per input, the last hint with an ID seen for each display name, and when.
    private var identified: [Int: [String: (Nanos, PeerHint)]] = [:]

    /// An app's discovery print names only a display name; MPC's `Peer found: idString […]` line just
    /// before it (within a second, same input) says which peer ID it is, so that two devices sharing
    /// a name stay apart.
    private func identify(_ h: PeerHint, _ e: LogEntry) -> PeerHint {
        guard h.peerID == nil, h.participantID == nil, h.endpoint == nil, h.address == nil, let n = h.displayName,
              let (t, known) = identified[e.input]?[n], e.t >= t, e.t &- t <= CaptureTime.second else { return h }
        return known
    }

    mutating func add(kind: EventKind, match m0: LogMatch, entry e: LogEntry, source: String) {
        var m = m0
        if kind == .found || kind == .lost { m.from = identify(m.from, e) }
        if kind == .logInviting { m.to = identify(m.to, e) }
        let wantsNearby = fill(m0, e, from: &m.from, to: &m.to, attrs: &m.attrs)
        if wantsNearby {
            var attrs = m.attrs
            if !e.timeKnown { attrs[.time] = "inferred" }
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            waiting.append((events.count - 1, e.input, m0.context == .nearbyParticipantAsTo))
            return
        }
        var attrs = m.attrs
        if !e.timeKnown { attrs[.time] = "inferred" }
        let peer = EventBuilder.peerKey(m.from) + "|" + EventBuilder.peerKey(m.to)
        if let ch = m.channel {
            let rest = attrs.filter { $0.key != "state" && $0.key != "time" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            let key = "\(e.input)|\(source)|\(kind.rawValue)|\(peer)|\(rest)"
            if let i = bursts[key], e.t &- events[i].t <= options.coalesceWindow, e.t >= events[i].t {
                // One event for the burst: `channel` lists the channels ("0,1,2", a key the timeline
                // detail shows), the evidence is the first line and the last (`count`, `lastEvidence`).
                var chans = (events[i][.channel] ?? "").split(separator: ",").map(String.init)
                if !chans.contains(String(ch)) { chans.append(String(ch)) }
                events[i][.channel] = chans.joined(separator: ",")
                events[i][.lines] = String((Int(events[i][.lines] ?? "1") ?? 1) + 1)
                events[i].count &+= 1
                events[i].lastT = max(events[i].lastT, e.t)
                events[i].lastEvidence = e.evidence
                return
            }
            attrs[.channel] = String(ch)
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            bursts[key] = events.count - 1
            return
        }
        if kind == .stateChange, let to = attrs[.to] {
            let key = "\(e.input)|\(peer)|\(attrs[.session] ?? "mc")"
            if let i = lastState[key], events[i][.to] == to, e.t &- events[i].t <= options.duplicateStateWindow, e.t >= events[i].t {
                // The same change printed again (MCSession prints two lines; apps print their own).
                if events[i][.from] == nil, let f = attrs[.from] { events[i][.from] = f }
                EventBuilder.mergeHint(&events[i].from, m.from)
                events[i][.lines] = String((Int(events[i][.lines] ?? "1") ?? 1) + 1)
                return
            }
            events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
            lastState[key] = events.count - 1
            return
        }
        events.append(PeerEvent(kind: kind, t: e.t, evidence: e.evidence, from: m.from, to: m.to, source: source, attrs: attrs))
    }

    static func mergeHint(_ a: inout PeerHint, _ b: PeerHint) {
        if a.peerID == nil { a.peerID = b.peerID }
        if a.participantID == nil { a.participantID = b.participantID }
        if a.displayName == nil { a.displayName = b.displayName }
    }
}
