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
    /// The new box of each box the resolved events and milestones keep, and of each peer and instance
    /// box (old box's identity -> old, new). The old box is held beside its key until the relocation is
    /// dropped, so no identity is reused. A peer's link boxes are its own (one per counterpart and
    /// session of its timeline): they are made again with its entries (`links(of:)`), one peer at a
    /// time, not all at once beside the old ones (4 MB more at the 1 GB mDNS file's peak, issue 13).
    struct Relocation {
        var sides: [ObjectIdentifier: (old: Shared<ResolvedEvent.Sides>, new: Shared<ResolvedEvent.Sides>)] = [:]
        var peers: [ObjectIdentifier: (old: Shared<PeerRef>, new: Shared<PeerRef>)] = [:]
        var sessions: [ObjectIdentifier: (old: Shared<SessionKey>, new: Shared<SessionKey>)] = [:]

        /// The new box of `b` (`b` itself when it was made outside the builder's tables).
        func sides(_ b: Shared<ResolvedEvent.Sides>) -> Shared<ResolvedEvent.Sides> { sides[ObjectIdentifier(b)]?.new ?? b }
        func peer(_ b: Shared<PeerRef>?) -> Shared<PeerRef>? { b.map { peers[ObjectIdentifier($0)]?.new ?? $0 } }
        func session(_ b: Shared<SessionKey>?) -> Shared<SessionKey>? { b.map { sessions[ObjectIdentifier($0)]?.new ?? $0 } }

        /// New boxes for the links of `w` (`PeerWork.links`), by the old box's identity, naming the new
        /// peer and instance boxes; `w`'s table is emptied.
        func links(of w: PeerWork) -> [ObjectIdentifier: Shared<TimelineEntry.Link>] {
            var out: [ObjectIdentifier: Shared<TimelineEntry.Link>] = [:]
            out.reserveCapacity(w.links.count)
            for box in w.links.values {
                out[ObjectIdentifier(box)] = Shared(TimelineEntry.Link(counterpart: peer(box.value.counterpart),
                                                                       session: session(box.value.session)))
            }
            w.links = [:]
            return out
        }
    }

    /// New boxes for the builder's peers and instances (kept in the relocation for the links, the
    /// milestones and the sides) and sides (`sidesBoxes`), made one after another; the sides table is
    /// emptied. The links are made again peer by peer (`Relocation.links(of:)`).
    func relocateBoxes() -> Relocation {
        var r = Relocation()
        r.peers.reserveCapacity(peers.count)
        r.sessions.reserveCapacity(sessions.count)
        r.sides.reserveCapacity(sidesBoxes.count)
        for w in peers.objects { r.peers[ObjectIdentifier(w.box)] = (w.box, Shared(w.box.value)) }
        for w in sessions { r.sessions[ObjectIdentifier(w.keyBox)] = (w.keyBox, Shared(w.keyBox.value)) }
        for box in sidesBoxes.objects {
            let sides = ResolvedEvent.Sides(from: r.peer(box.value.from), to: r.peer(box.value.to), session: r.session(box.value.session),
                                            store: box.value.store)
            r.sides[ObjectIdentifier(box)] = (box, Shared(sides))
        }
        sidesBoxes.removeAll()
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
