import PeerscopeCore

// Compaction: what the timelines keep of the build moves, once the working state is gone, into the
// room that state left (see `finish`).
//
// While the timelines grow, what stays (the boxes entries and resolved events share, entry lists,
// milestones, histories) is allocated among what goes (run tables, per-session sets, the old buffers
// of growing lists). When the working state is freed, every page that still holds one piece that
// stays stays resident: on the group bench file that was about a third of the timeline stage's
// memory. So the pieces that stay are made again, one after another in the room just freed, and the
// old ones let go: their pages then hold nothing and go back to the system (`malloc_trim`). Only
// where a piece sits changes: every value, and which entries share a box, stay the same.
extension TimelineBuilder {
    /// The new box of each box the entries and resolved events keep (old box's identity -> old, new).
    /// The old box is held beside its key until the relocation is dropped, so no identity is reused.
    struct Relocation {
        var links: [ObjectIdentifier: (old: Shared<TimelineEntry.Link>, new: Shared<TimelineEntry.Link>)] = [:]
        var sides: [ObjectIdentifier: (old: Shared<ResolvedEvent.Sides>, new: Shared<ResolvedEvent.Sides>)] = [:]
        var peers: [ObjectIdentifier: (old: Shared<PeerRef>, new: Shared<PeerRef>)] = [:]

        /// The new box of `b` (`b` itself when it was made outside the builder's tables).
        func link(_ b: Shared<TimelineEntry.Link>) -> Shared<TimelineEntry.Link> { links[ObjectIdentifier(b)]?.new ?? b }
        func sides(_ b: Shared<ResolvedEvent.Sides>) -> Shared<ResolvedEvent.Sides> { sides[ObjectIdentifier(b)]?.new ?? b }
        func peer(_ b: Shared<PeerRef>?) -> Shared<PeerRef>? { b.map { peers[ObjectIdentifier($0)]?.new ?? $0 } }
    }

    /// New boxes for the builder's peers (kept in the relocation for the milestones), instances, links
    /// (`PeerWork.links`) and sides (`sidesBoxes`), made one after another; the tables that held the old
    /// ones are emptied.
    func relocateBoxes() -> Relocation {
        var peerBoxes: [ObjectIdentifier: (old: Shared<PeerRef>, new: Shared<PeerRef>)] = [:]
        peerBoxes.reserveCapacity(peers.count)
        var sessionBoxes: [ObjectIdentifier: (old: Shared<SessionKey>, new: Shared<SessionKey>)] = [:]
        sessionBoxes.reserveCapacity(sessions.count)
        var r = Relocation()
        r.links.reserveCapacity(peers.values.reduce(0) { $0 + $1.links.count })
        r.sides.reserveCapacity(sidesBoxes.count)
        for w in peers.values { peerBoxes[ObjectIdentifier(w.box)] = (w.box, Shared(w.box.value)) }
        for w in sessions { sessionBoxes[ObjectIdentifier(w.keyBox)] = (w.keyBox, Shared(w.keyBox.value)) }
        func peer(_ b: Shared<PeerRef>?) -> Shared<PeerRef>? { b.map { peerBoxes[ObjectIdentifier($0)]?.new ?? $0 } }
        func session(_ b: Shared<SessionKey>?) -> Shared<SessionKey>? { b.map { sessionBoxes[ObjectIdentifier($0)]?.new ?? $0 } }
        for w in peers.values {
            for box in w.links.values {
                let link = TimelineEntry.Link(counterpart: peer(box.value.counterpart), session: session(box.value.session))
                r.links[ObjectIdentifier(box)] = (box, Shared(link))
            }
            w.links = [:]
        }
        for box in sidesBoxes.values {
            let sides = ResolvedEvent.Sides(from: peer(box.value.from), to: peer(box.value.to), session: session(box.value.session))
            r.sides[ObjectIdentifier(box)] = (box, Shared(sides))
        }
        sidesBoxes = [:]
        r.peers = peerBoxes
        return r
    }
}

/// `a` in a new buffer of its own size (none when empty): a list grown while other working state grew
/// around it moves into the room that state left once it is gone (see the compaction above).
func relocated<T>(_ a: [T]) -> [T] {
    guard !a.isEmpty else { return [] }
    var exact: [T] = []
    exact.reserveCapacity(a.count)
    exact.append(contentsOf: a)
    return exact
}

/// `s` in new storage when it has storage of its own (longer than a small string): see `relocated`.
func relocated(_ s: String) -> String {
    let n = s.utf8.count
    guard n > 15 else { return s }
    return String(unsafeUninitializedCapacity: n) { buffer in buffer.initialize(from: s.utf8).1 }
}
