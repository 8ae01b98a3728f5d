/// Single fields of one event read from a list in place, through a pointer to it.
///
/// A caller that holds the list in a class (the timeline's event store) and calls `t(_:)` on it
/// copies the whole list first, retaining each of its references and releasing them after, because
/// the compiler cannot see that the call does not write to the class: about a dozen atomic operations
/// for one field, several times per event in every detector (issue 13). Here the call is made inside
/// this module, where the compiler sees what the read does (most copy no reference). `package`, not
/// `public`: a public one is copied into the caller's module (cross-module optimization), copy and all.
/// The pointee must not be written during the call.
extension PackedEvents {
    @inline(never) package static func t(in p: UnsafePointer<PackedEvents>, _ i: Int) -> Nanos { p.pointee.t(i) }
    @inline(never) package static func lastT(in p: UnsafePointer<PackedEvents>, _ i: Int) -> Nanos { p.pointee.lastT(i) }
    @inline(never) package static func kind(in p: UnsafePointer<PackedEvents>, _ i: Int) -> EventKind { p.pointee.kind(i) }
    @inline(never) package static func source(in p: UnsafePointer<PackedEvents>, _ i: Int) -> String { p.pointee.source(i) }
    @inline(never) package static func count(in p: UnsafePointer<PackedEvents>, _ i: Int) -> Int { p.pointee.count(i) }
    @inline(never) package static func evidence(in p: UnsafePointer<PackedEvents>, _ i: Int) -> Evidence { p.pointee.evidence(i) }
    @inline(never) package static func lastEvidence(in p: UnsafePointer<PackedEvents>, _ i: Int) -> Evidence? { p.pointee.lastEvidence(i) }
    @inline(never) package static func flow(in p: UnsafePointer<PackedEvents>, _ i: Int) -> FlowKey? { p.pointee.flow(i) }
    @inline(never) package static func from(in p: UnsafePointer<PackedEvents>, _ i: Int) -> PeerHint { p.pointee.from(i) }
    @inline(never) package static func to(in p: UnsafePointer<PackedEvents>, _ i: Int) -> PeerHint { p.pointee.to(i) }
    @inline(never) package static func attrs(in p: UnsafePointer<PackedEvents>, _ i: Int) -> EventAttrs { p.pointee.attrs(i) }
    @inline(never) package static func event(in p: UnsafePointer<PackedEvents>, _ i: Int) -> PeerEvent { p.pointee[i] }
    @inline(never) package static func samePeersAndFlow(in p: UnsafePointer<PackedEvents>, _ i: Int, _ e: PeerEvent) -> Bool {
        p.pointee.samePeersAndFlow(i, e)
    }
}
