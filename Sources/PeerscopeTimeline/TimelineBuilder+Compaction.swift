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
    /// box (see `BoxMap`). The old box is held beside the new one until the relocation is dropped, so no
    /// identity is reused. A peer's link boxes are its own (one per counterpart and
    /// session of its timeline): they are made again with its entries (`links(of:)`), one peer at a
    /// time, not all at once beside the old ones (4 MB more at the 1 GB mDNS file's peak, issue 13).
    struct Relocation {
        var sides = BoxMap<ResolvedEvent.Sides>()
        var peers = BoxMap<PeerRef>()
        var sessions = BoxMap<SessionKey>()

        /// The new box of `b` (`b` itself when it was made outside the builder's tables).
        func sides(_ b: Shared<ResolvedEvent.Sides>) -> Shared<ResolvedEvent.Sides> { sides.new(b) ?? b }
        func peer(_ b: Shared<PeerRef>?) -> Shared<PeerRef>? { b.map { peers.new($0) ?? $0 } }
        func session(_ b: Shared<SessionKey>?) -> Shared<SessionKey>? { b.map { sessions.new($0) ?? $0 } }

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
        r.peers = BoxMap(peers.objects.lazy.map { w in (w.box, Shared(w.box.value)) }, count: peers.count)
        r.sessions = BoxMap(sessions.lazy.map { w in (w.keyBox, Shared(w.keyBox.value)) }, count: sessions.count)
        let boxes = r
        r.sides = BoxMap(sidesBoxes.objects.lazy.map { box in
            (box, Shared(ResolvedEvent.Sides(from: boxes.peer(box.value.from), to: boxes.peer(box.value.to),
                                             session: boxes.session(box.value.session), store: box.value.store)))
        }, count: sidesBoxes.count)
        sidesBoxes.removeAll()
        return r
    }
}

/// Old boxes and the new boxes made in their place (`Relocation`), sorted by the old box's identity and
/// found by halving: 16 bytes a box, where a dictionary by identity held 65,536 buckets of 24 bytes for
/// the 1 GB mDNS file's 25,695 peers, and as many for its sides boxes, beside the old and the new boxes
/// at the timeline stage's end (issue 13).
struct BoxMap<T: Hashable & Sendable> {
    private var pairs: [(old: Shared<T>, new: Shared<T>)] = []

    init() {}

    /// The `count` pairs of `pairs` (old box first; each old box once).
    init(_ pairs: some Sequence<(Shared<T>, Shared<T>)>, count: Int) {
        var all: [(old: Shared<T>, new: Shared<T>)] = []
        all.reserveCapacity(count)
        for (old, new) in pairs { all.append((old, new)) }
        all.sort { ObjectIdentifier($0.old) < ObjectIdentifier($1.old) }
        self.pairs = all
    }

    var isEmpty: Bool { pairs.isEmpty }

    /// The new box of the old box `b`; nil when `b` is not an old box here.
    func new(_ b: Shared<T>) -> Shared<T>? {
        let id = ObjectIdentifier(b)
        var lo = 0, hi = pairs.count
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if ObjectIdentifier(pairs[mid].old) < id { lo = mid + 1 } else { hi = mid }
        }
        return lo < pairs.count && pairs[lo].old === b ? pairs[lo].new : nil
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
