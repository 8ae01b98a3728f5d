import PeerscopeCore
import PeerscopeDetectors
@testable import PeerscopeTimeline
import XCTest

/// Timeline entries and the resolver's bindings in their compact, scalable forms.
final class CompactTimelineTests: XCTestCase {
    func testEntryEvidenceDetailAndLetterReadBackAsGiven() {
        var e = TimelineEntry(t: 5, state: .heartbeat, kind: .gckHeartbeat, sent: true, counterpart: .id(7),
                              session: SessionKey(pair: PeerPair(.id(7), .id(9)), number: 2),
                              evidence: [.frame(input: 0, frame: 3)], source: "gck-heartbeat", detail: "", letter: "B")
        XCTAssertEqual(e.evidence, [.frame(input: 0, frame: 3)])
        XCTAssertEqual(e.letter, "B")
        XCTAssertEqual(e.detail, "")
        XCTAssertEqual(e.counterpart, .id(7))
        XCTAssertEqual(e.session?.number, 2)
        e.evidence.append(.frame(input: 0, frame: 9))
        XCTAssertEqual(e.evidence, [.frame(input: 0, frame: 3), .frame(input: 0, frame: 9)])
        e.evidence = [.logLine(input: 1, line: 4)]
        XCTAssertEqual(e.evidence, [.logLine(input: 1, line: 4)])
        e.detail = "state=Connected"
        e.letter = nil
        e.counterpart = nil
        XCTAssertEqual(e.detail, "state=Connected")
        XCTAssertNil(e.letter)
        XCTAssertNil(e.counterpart)
        XCTAssertLessThanOrEqual(MemoryLayout<TimelineEntry>.stride, 72,
                                 "evidence packed; kind and source, counterpart and session shared; corroboration beside the detail; count in 32 bits")
        XCTAssertLessThanOrEqual(MemoryLayout<ResolvedEvent>.stride, 16, "sides and store shared, flags in a byte")
        XCTAssertLessThanOrEqual(MemoryLayout<TimelineBuilder.RunKey>.stride, 40, "a run key's one-byte fields together")
        // The shared parts read and write as plain values: setting one gives this entry a box of its own.
        let f = e
        e.kind = .gckData
        e.source = "gck-data"
        e.session = nil
        XCTAssertEqual(e.kind, .gckData)
        XCTAssertEqual(e.source, "gck-data")
        XCTAssertNil(e.session)
        XCTAssertEqual(f.kind, .gckHeartbeat, "the copy keeps its own")
        XCTAssertEqual(f.source, "gck-heartbeat")
        XCTAssertEqual(f.session?.number, 2)
        XCTAssertNil(f.counterpart)
        e.counterpart = .id(9)
        XCTAssertNotEqual(e, f)
        XCTAssertEqual(f.session?.number, 2, "the copy's session is not the new box's")
        e.counterpart = nil
        e.session = SessionKey(pair: PeerPair(.id(7), .id(9)), number: 2)
        e.kind = .gckHeartbeat
        e.source = "gck-heartbeat"
        e.evidence = f.evidence
        e.detail = f.detail
        e.letter = f.letter
        XCTAssertEqual(e, f, "equal by value, whatever boxes hold the values")
    }

    /// A resolved event keeps its kind as a small code (issue 13: detectors read it without the record):
    /// every built-in kind, a user kind, a kind no catalogue knows and a kind registered by a plugin read
    /// back as the stored event's own kind, in order, and only built-in kinds have a code.
    func testResolvedEventsReadTheirStoredKind() {
        XCTAssertEqual(EventCatalogue.kindsByCode.count, EventCatalogue.entries.count + 1)
        for (i, spec) in EventCatalogue.entries.enumerated() {
            XCTAssertEqual(EventCatalogue.code(of: spec.kind), UInt16(i + 1))
            XCTAssertEqual(EventCatalogue.kindsByCode[i + 1], spec.kind)
        }
        let registered = EventKind("test.kind-code-registered")
        EventCatalogue.register([EventKindSpec(registered, "a plugin's kind")])
        for k: EventKind in ["user.custom", "nobody.knows", registered] { XCTAssertEqual(EventCatalogue.code(of: k), 0, "\(k)") }

        let s = Script()
        s.connect(Script.alice, Script.bob, at: 0)
        var kinds: [EventKind] = []
        var t = 1.0
        for spec in EventCatalogue.entries where !spec.kind.isIn("identity") {
            s.packet(spec.kind, t, Script.alice, Script.bob)
            t += 0.5
        }
        for k: EventKind in ["user.custom", "nobody.knows", registered] {
            s.log(k, t, Script.bob, Script.alice)
            t += 0.5
        }
        let tl = s.timelines()
        for e in tl.events {
            kinds.append(e.kind)
            XCTAssertEqual(e.kind, e.event.kind)
            XCTAssertEqual(e.kindCode, EventCatalogue.code(of: e.event.kind))
        }
        XCTAssertEqual(kinds, tl.events.map { $0.event.kind }, "same kinds, same order")
        for k: EventKind in ["user.custom", "nobody.knows", registered, .gckHello, .dtlsAlert] {
            XCTAssertTrue(kinds.contains(k), "\(k) resolved")
        }
        XCTAssertGreaterThan(Set(kinds).count, 20)
    }

    /// A milestone's peer is a shared box and an instance's per-side planes two fields: both read and
    /// write as the plain values they were, and compare and hash by value.
    func testMilestonesAndSidePlanesReadBackAsGiven() {
        XCTAssertLessThanOrEqual(MemoryLayout<SessionMilestone>.stride, 40, "the peer boxed")
        let box = Shared(PeerRef.id(7))
        var m = SessionMilestone(state: .connected, t: 9, evidence: .frame(input: 1, frame: 2), byBox: box)
        let plain = SessionMilestone(state: .connected, t: 9, evidence: .frame(input: 1, frame: 2), by: .id(7))
        XCTAssertEqual(m.by, .id(7))
        XCTAssertEqual(m, plain, "equal by value, whatever box holds the peer")
        XCTAssertEqual(m.hashValue, plain.hashValue)
        m.by = .name("Bob")
        XCTAssertEqual(m.by, .name("Bob"))
        XCTAssertEqual(box.value, .id(7), "the shared box is not written through")
        XCTAssertNotEqual(m, plain)
        m.by = nil
        XCTAssertNil(m.by)
        XCTAssertNil(m.byBox)

        let pair = PeerPair(.id(9), .id(4))
        var s = SessionInstance(key: SessionKey(pair: pair, number: 1), originator: .id(4), start: 0, evidence: .frame(input: 0, frame: 1))
        XCTAssertEqual(s.planeBySide, [:])
        s.setPlane(.dtls, of: .id(9))
        s.setPlane(.plaintext, of: .id(4))
        XCTAssertEqual(s.planeBySide, [.id(9): .dtls, .id(4): .plaintext])
        XCTAssertEqual(s.otherPlanes.capacity, 0, "the pair's sides take no table")
        XCTAssertEqual(s.plane(of: .id(4)), .plaintext)
        XCTAssertNil(s.plane(of: .id(5)))
        var t = SessionInstance(key: s.key, originator: .id(4), start: 0, evidence: .frame(input: 0, frame: 1))
        t.planeBySide = [.id(4): .plaintext, .id(9): .dtls]
        XCTAssertEqual(t, s)
        XCTAssertEqual(t.hashValue, s.hashValue)
        XCTAssertEqual(t.otherPlanes.capacity, 0, "set as a table, the pair's sides still take none")
        t.planeBySide[.id(5)] = .mismatch
        XCTAssertEqual(t.planeBySide, [.id(4): .plaintext, .id(9): .dtls, .id(5): .mismatch], "another peer is kept too")
        XCTAssertNotEqual(t, s)
        t.planeBySide[.id(5)] = nil
        t.planeBySide[.id(9)] = nil
        XCTAssertEqual(t.planeBySide, [.id(4): .plaintext])
        XCTAssertNil(t.planeB)
    }

    /// The detail and the corroboration share one word: each reads back what was last set, whatever the
    /// order they were set in, and an entry whose corroboration is emptied is plain again.
    func testDetailAndCorroborationReadBackAsGivenInAnyOrder() {
        let base = TimelineEntry(t: 5, state: .connected, kind: .stateChange, sent: true, counterpart: .id(7), session: nil,
                                 evidence: [.frame(input: 0, frame: 3)], source: "mpc-log", detail: "", letter: "G")
        let one = TimelineEntry.Corroboration(source: "app-log", evidence: .logLine(input: 1, line: 4))
        let two = TimelineEntry.Corroboration(source: "mpc-log", evidence: .logLine(input: 2, line: 9))
        let attrs: EventAttrs = ["state": "Connected", "from": "Alice"]
        var e = base
        XCTAssertEqual(e.corroboration, [])
        e.corroboration.append(one)
        XCTAssertEqual(e.corroboration, [one])
        XCTAssertEqual(e.detail, "", "the detail stays when corroboration comes")
        e.detailSource = .attrs(attrs)
        XCTAssertEqual(e.detail, TimelineMapping.detail(attrs))
        XCTAssertEqual(e.corroboration, [one], "the corroboration stays when the detail changes")
        e.corroboration.append(two)
        e.corroboration[0] = two
        XCTAssertEqual(e.corroboration, [two, two])
        XCTAssertEqual(e.detail, TimelineMapping.detail(attrs))
        let copy = e
        e.detail = "given"
        XCTAssertEqual(e.detail, "given")
        XCTAssertEqual(copy.detail, TimelineMapping.detail(attrs), "a copy keeps its own")
        XCTAssertEqual(copy.corroboration, [two, two])
        e.corroboration = []
        XCTAssertEqual(e.corroboration, [])
        XCTAssertEqual(e.detail, "given")
        guard case .plain = e.notes else { return XCTFail("no corroboration: no box") }
        // Counts: 32 bits beside the flags, any other Int in the box, whatever else the box holds.
        for n in [0, 1, 2, 1000, Int(UInt32.max) - 1, Int(UInt32.max), Int(UInt32.max) + 1, Int.max, -1, Int.min] {
            var c = e
            c.count = n
            XCTAssertEqual(c.count, n)
            XCTAssertEqual(c.detail, "given")
            XCTAssertEqual(c.corroboration, [])
            c.corroboration = [one]
            XCTAssertEqual(c.count, n, "\(n) stays when corroboration comes")
            c.detail = "other"
            XCTAssertEqual(c.count, n, "\(n) stays when the detail changes")
            c.count &+= 1
            XCTAssertEqual(c.count, n &+ 1, "wrapping add of \(n)")
            XCTAssertEqual(c.corroboration, [one])
            XCTAssertEqual(c.detail, "other")
            c.count = 3
            c.corroboration = []
            guard case .plain = c.notes else { return XCTFail("\(n): a count that fits and no corroboration: no box") }
            XCTAssertEqual(c.count, 3)
            var d = e
            d.count = n
            d.count = 7
            XCTAssertEqual(d.count, 7)
            guard case .plain = d.notes else { return XCTFail("\(n): back to a count that fits: no box") }
        }
        e.detail = ""
        XCTAssertEqual(e, base, "equal by value again")
        XCTAssertNotEqual(copy, base)
    }

    /// Entries and resolved events share their boxes (kind and plugin per build, counterpart and
    /// session per peer, sides per build), and every entry and event still reads exactly what its
    /// event and peer say: the values the unshared fields held.
    func testEntriesAndResolvedEventsShareTheirBoxesAndReadTheirOwnValues() throws {
        let s = Script.fullSession()
        s.connect(Script.alice, Script.carol, at: 40)
        s.repeating(.gckHeartbeat, from: 41, to: 50, every: 4, Script.alice, Script.carol)
        s.log(.lost, 51, Script.carol)
        s.packet(.gckData, 52, Script.alice, Script.carol, source: "gck-data")
        s.packet(.gckData, 52.5, Script.carol, Script.alice, source: "gck-data-other")
        let tl = s.timelines()
        let all = tl.peers.flatMap { p in p.entries.map { (p, $0) } }
        XCTAssertGreaterThan(all.count, 20)
        // Each entry's kind and source are those of an event it stands for, and its counterpart and
        // session those of the resolved events of its kind on that peer.
        for (p, x) in all {
            let evs = tl.events.filter { r in
                r.kind == x.kind && r.source == x.source && (r.from == p.peer.ref || r.to == p.peer.ref)
                    && r.t <= x.t + CaptureTime.second && x.t <= r.lastT + CaptureTime.second
            }
            XCTAssertFalse(evs.isEmpty, "\(p.peer.label) \(x.kind) \(x.source)")
            XCTAssertTrue(evs.contains { r in
                r.session == x.session && (r.from == p.peer.ref ? r.to : r.from) == x.counterpart
            }, "\(p.peer.label) \(x.kind): counterpart \(String(describing: x.counterpart)) session \(String(describing: x.session))")
        }
        // Sharing: one origin box per kind and source, one link box per peer, counterpart and session,
        // one sides box per from, to and session.
        var origins: [TimelineEntry.Origin: ObjectIdentifier] = [:]
        for (_, x) in all {
            let id = ObjectIdentifier(x.origin)
            XCTAssertEqual(origins[x.origin.value, default: id], id, "\(x.kind) \(x.source): one box")
            origins[x.origin.value] = id
        }
        XCTAssertTrue(origins.keys.contains(TimelineEntry.Origin(kind: .gckData, source: "gck-data")))
        XCTAssertTrue(origins.keys.contains(TimelineEntry.Origin(kind: .gckData, source: "gck-data-other")), "sources kept apart")
        for p in tl.peers {
            var links: [String: ObjectIdentifier] = [:]
            for x in p.entries {
                let k = "\(String(describing: x.counterpart))|\(String(describing: x.session))"
                let id = ObjectIdentifier(x.link)
                XCTAssertEqual(links[k, default: id], id, "\(p.peer.label) \(k): one box")
                links[k] = id
            }
        }
        let unlinked = all.filter { $0.1.counterpart == nil && $0.1.session == nil }
        XCTAssertGreaterThan(Set(unlinked.map { $0.0.peer.ref }).count, 1, "entries without counterpart on several peers")
        XCTAssertEqual(Set(unlinked.map { ObjectIdentifier($0.1.link) }).count, 1,
                       "one link box for every entry without counterpart and session, across peers")
        var sides: [String: ObjectIdentifier] = [:]
        for r in tl.events {
            let k = "\(String(describing: r.from))|\(String(describing: r.to))|\(String(describing: r.session))"
            let id = ObjectIdentifier(r.sides)
            XCTAssertEqual(sides[k, default: id], id, "\(k): one box")
            sides[k] = id
        }
        XCTAssertLessThan(sides.count, tl.events.count / 2, "far fewer boxes than events")
        let alice = try XCTUnwrap(tl.timeline(.id(try XCTUnwrap(Script.alice.peerID))))
        XCTAssertEqual(alice.sessions.count, 2)
        XCTAssertTrue(tl.events.contains { $0.establishedBefore && $0.secureBefore && $0.dtlsStartedBefore }, "flags read back")
        XCTAssertTrue(tl.events.contains { $0.establishedBefore && !$0.secureBefore })
        for si in tl.sessions {
            XCTAssertLessThanOrEqual(si.milestones.capacity - si.milestones.count, si.milestones.count / 16, "milestones without slack")
        }
    }

    /// A resolved event reads its event from the store its sides box holds (16 bytes an event, no
    /// store pointer of its own): all the events of a build share the build's one store, and two builds
    /// made one after the other each read their own events (times and kinds apart).
    func testResolvedEventsReadTheirOwnBuildsStoreThroughTheirSides() {
        let a = Script()
        a.packet(.gckData, 10, Script.alice, Script.carol, source: "gck-data")
        a.packet(.gckHeartbeat, 11, Script.carol, Script.alice)
        let b = Script()
        b.packet(.gckData, 1000, Script.carol, Script.alice, source: "gck-data-b")
        b.packet(.gckHeartbeat, 1001, Script.alice, Script.carol)
        b.packet(.gckHeartbeat, 1002, Script.alice, Script.carol)
        let ta = a.timelines(), tb = b.timelines()
        XCTAssertEqual(ta.events.count, 2)
        XCTAssertEqual(tb.events.count, 3)
        for tl in [ta, tb] {
            XCTAssertTrue(tl.events.allSatisfy { $0.store === tl.events[0].store }, "one store per build")
            XCTAssertEqual(tl.events.map(\.t), tl.events.map { $0.event.t })
        }
        XCTAssertFalse(ta.events[0].store === tb.events[0].store)
        XCTAssertEqual(ta.events.map(\.t), [10, 11].map { Script.at($0) })
        XCTAssertEqual(tb.events.map(\.t), [1000, 1001, 1002].map { Script.at($0) })
        XCTAssertEqual(ta.events.map(\.source), ["gck-data", ta.events[1].event.source])
        XCTAssertEqual(tb.events[0].source, "gck-data-b")
        let alice = Script.alice.peerID.map(PeerRef.id), carol = Script.carol.peerID.map(PeerRef.id)
        XCTAssertEqual(ta.events.map(\.from), [alice, carol])
        XCTAssertEqual(tb.events.map(\.from), [carol, alice, alice])
    }

    /// Sorting in place along the permutation's cycles gives what `sorted` gives, equal keys in their
    /// order (stable), for lists of every small length and random ones with many repeats.
    func testSortingInPlaceGivesWhatSortedGivesAndKeepsEqualKeysInOrder() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        for n in Array(0 ..< 12) + [100, 1000, 4097] {
            for _ in 0 ..< 20 {
                let items = (0 ..< n).map { i in (key: next(max(1, n / 3)), at: i, name: "item \(i)") }
                let expected = items.sorted { $0.key < $1.key }
                var a = items
                sortInPlace(&a) { $0.key < $1.key }
                XCTAssertEqual(a.map(\.at), expected.map(\.at), "n = \(n)")
                XCTAssertEqual(a.map(\.name), expected.map(\.name))
            }
        }
    }

    /// An instance's flags of which peers did something answer as the sets they replace: membership,
    /// count and overlap, for the pair's two peers and for any other peer (kept in a set).
    func testPairSidesAnswerAsSetsOfPeers() {
        let pair = PeerPair(.id(9), .id(4))
        let refs: [PeerRef] = [.id(4), .id(9), .id(5), .name("x")]
        for mask in 0 ..< 16 {
            for otherMask in 0 ..< 16 {
                var sides = TimelineBuilder.PairSides(), other = TimelineBuilder.PairSides()
                var set: Set<PeerRef> = [], otherSet: Set<PeerRef> = []
                for (i, r) in refs.enumerated() {
                    if mask & (1 << i) != 0 { sides.insert(r, of: pair); sides.insert(r, of: pair); set.insert(r) }
                    if otherMask & (1 << i) != 0 { other.insert(r, of: pair); otherSet.insert(r) }
                }
                XCTAssertEqual(sides.count, set.count)
                for r in refs { XCTAssertEqual(sides.contains(r, of: pair), set.contains(r), "\(mask) \(r)") }
                XCTAssertEqual(sides.isDisjoint(with: other), set.isDisjoint(with: otherSet), "\(mask) \(otherMask)")
            }
        }
    }

    /// A finding's details are stored packed: read and written like the dictionary they were, the
    /// same details giving equal findings whatever order they were set in.
    func testFindingDetailsReadAndWriteLikeADictionary() {
        let details = ["level": "session", "direction": "Alice (1.2.3.4) -> Bob", "since": "2024-01-01T00:00:00.000000000Z",
                       "outcome": "recovered", "empty": "", "é": "ü ’"]
        var f = Finding(kind: "keepalive-timeout", severity: .warning, peer: "Alice", peerID: nil, t: 1, message: "m",
                        evidence: [.frame(input: 0, frame: 1)], key: "k", details: details)
        XCTAssertEqual(f.details, details)
        XCTAssertEqual(f.detailAttrs["direction"], "Alice (1.2.3.4) -> Bob")
        XCTAssertEqual(f.detailAttrs["empty"], "")
        XCTAssertNil(f.detailAttrs["absent"])
        f.details["outcome"] = "open"
        f.detailAttrs["evidenceCount"] = "51"
        f.details["level"] = nil
        var expected = details
        expected["outcome"] = "open"
        expected["evidenceCount"] = "51"
        expected["level"] = nil
        XCTAssertEqual(f.details, expected)
        var g = Finding(kind: "keepalive-timeout", severity: .warning, peer: "Alice", peerID: nil, t: 1, message: "m",
                        evidence: [.frame(input: 0, frame: 1)], key: "k", details: ["evidenceCount": "51"])
        for (k, v) in expected.sorted(by: { $0.key > $1.key }) { g.detailAttrs[k] = v }
        XCTAssertEqual(f, g, "equal details, equal findings, whatever the order they were set in")
        XCTAssertEqual(f.hashValue, g.hashValue)
        XCTAssertEqual(f.detailAttrs.map(\.key), expected.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    /// An address many peer IDs used one after another (apps relaunched all day): each lookup takes
    /// the peer ID seen there last at that time, the first one before any.
    func testAddressReusedByManyPeerIDsResolvesByTime() {
        var r = PeerResolver(identities: PeerIdentities())
        let a = IPAddress.v4(0xC000_0201)
        for i in 0 ..< 1000 {
            r.learn(PeerHint(peerID: UInt64(1000 + i), address: a), at: Int64(i) * 10)
        }
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 255), .id(1025))
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 250), .id(1025), "a binding made at exactly t counts")
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: -5), .id(1000))
        XCTAssertEqual(r.resolve(PeerHint(address: a), at: 99_999), .id(1999))
        let ep = Endpoint(a, 16402)
        XCTAssertEqual(r.resolve(PeerHint(endpoint: ep), at: 5_005), .id(1500))
    }

    /// A run keeps folding while its peer's timeline grows by hundreds of entries (the array is
    /// reallocated many times under it), and a finished peer's entries are kept without slack.
    func testRunsKeepFoldingWhileATimelineGrowsAndEndExactlySized() throws {
        let s = Script()
        s.connect(Script.alice, Script.bob, at: 0)
        for i in 0 ..< 500 {
            let t = 1 + Double(i) * 0.2
            s.packet(.gckHeartbeat, t, Script.alice, Script.bob)
            // Each its own entry: a browser losing Alice (a control step), then her announcement.
            s.log(.lost, t + 0.05, Script.alice)
            s.packet(.announced, t + 0.1, Script.alice, .unknown)
        }
        let tl = s.timelines()
        let alice = try XCTUnwrap(tl.timeline(.id(try XCTUnwrap(Script.alice.peerID))))
        let beats = alice.entries.filter { $0.kind == .gckHeartbeat }
        XCTAssertEqual(beats.count, 1, "one run")
        XCTAssertEqual(beats.first?.count, 500)
        XCTAssertEqual(beats.first?.lastT, Script.at(1 + 499 * 0.2))
        XCTAssertEqual(alice.entries.filter { $0.kind == .lost }.count, 500)
        XCTAssertEqual(alice.entries.filter { $0.kind == .announced }.count, 500)
        for p in tl.peers {
            XCTAssertLessThanOrEqual(p.entries.capacity - p.entries.count, p.entries.count / 16, "\(p.peer.label): no slack kept")
        }
    }

    /// The spilled timeline stage's list of kept events: in chunks while it grows, then one array of its
    /// own count, in order.
    func testAChunkedListGivesItsElementsInOrderInAnExactlySizedArray() {
        for n in [0, 1, 6, 7, 8, 20, 1025] {
            var l = ChunkedList<Int>(chunkSize: 7)
            for i in 0 ..< n { l.append(i * 3) }
            XCTAssertEqual(l.count, n)
            let a = l.consumeArray()
            XCTAssertEqual(a, (0 ..< n).map { $0 * 3 })
            // Exactly sized up to the allocator's rounding, which depends on the heap's state (a reused
            // free block can be a few elements larger): a few elements over n, never the 2,048 of an
            // array doubled past 1,024 (n = 1,025).
            XCTAssertLessThanOrEqual(a.capacity, n + n / 16 + 16, "exactly sized (up to the allocator's rounding)")
            XCTAssertTrue(l.isEmpty)
            XCTAssertEqual(l.consumeArray(), [])
        }
    }

    /// A peer's first entry does not reserve room for eight (most peers of a crowd have a few entries,
    /// and that slack was 12 MB over the 1 GB mDNS file's peers while the timelines grow).
    func testANewTimelineStartsWithRoomForAboutOneEntry() {
        let hint = PeerHint(address: IPAddress("10.0.0.1")!)
        let e = PeerEvent(kind: .announced, t: 1, evidence: .frame(input: 0, frame: 1), from: hint, source: "mdns",
                          attrs: ["service": "_airplay._tcp.local"])
        let b = TimelineBuilder()
        let store = EventStore([e])
        let resolver = PeerResolver(identities: PeerIdentities(), events: [e])
        _ = b.process(0, store, resolver)
        XCTAssertEqual(b.peers.count, 1)
        for w in b.peers.objects {
            XCTAssertEqual(w.entries.count, 1)
            XCTAssertLessThanOrEqual(w.entries.capacity, 2)
        }
    }

    /// The per-peer run, link, address and endpoint tables: an array while small, a dictionary or set
    /// past `smallTableLimit`; every lookup, removal and membership is the dictionary's or set's,
    /// through growth past the limit and back (a seeded random walk over a few dozen keys).
    func testSmallTablesAnswerAsADictionaryAndASet() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        for keys in [3, smallTableLimit, smallTableLimit + 1, 40] {
            var small = SmallMap<Int, Int>()
            var dict: [Int: Int] = [:]
            var smallSet = SmallSet<Int>()
            var set: Set<Int> = []
            for step in 0 ..< 2000 {
                let k = next(keys)
                switch next(4) {
                case 0: small[k] = step; dict[k] = step
                case 1: XCTAssertEqual(small.removeValue(forKey: k), dict.removeValue(forKey: k))
                case 2: smallSet.insert(k); set.insert(k)
                default: XCTAssertEqual(small[k], dict[k])
                }
                XCTAssertEqual(small.count, dict.count)
                XCTAssertEqual(smallSet.count, set.count)
                XCTAssertEqual(smallSet.contains(k), set.contains(k))
            }
            XCTAssertEqual(Set(small.keys), Set(dict.keys))
            XCTAssertEqual(small.keys.count, dict.count)
            XCTAssertEqual(small.values.sorted(), dict.values.sorted())
            XCTAssertEqual(Set(smallSet), set)
            XCTAssertEqual(Array(smallSet).count, set.count)
            smallSet.formUnion([100, 101, 100])
            set.formUnion([100, 101, 100])
            XCTAssertEqual(Set(smallSet), set)
            small = [:]
            XCTAssertTrue(small.isEmpty)
            XCTAssertNil(small[0])
        }
    }

    /// A key whose hashes collide in threes, so that lookups walk past other keys' slots.
    private struct Colliding: Hashable {
        var v: Int
        func hash(into h: inout Hasher) { h.combine(v / 3) }
    }

    /// `PositionTable` finds what a dictionary filled in list order finds (the last of equal keys; nil
    /// for a key not in the list or a position past the list's end), through colliding hashes, in four
    /// bytes a slot with at most twice the list's count of slots (rounded up to a power of two).
    func testAPositionTableFindsWhatADictionaryFilledInOrderFinds() {
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        for n in [0, 1, 2, 3, 7, 64, 65, 1000] {
            let list = (0 ..< n).map { _ in Colliding(v: next(max(1, n * 3 / 4))) }
            var dict: [Colliding: Int] = [:]
            for (i, k) in list.enumerated() { dict[k] = i }
            let table = PositionTable(count: list.count) { list[$0] }
            for v in -3 ..< n + 6 {
                let k = Colliding(v: v)
                XCTAssertEqual(table.position(of: k) { list.indices.contains($0) ? list[$0] : nil }, dict[k], "n \(n) key \(v)")
            }
            // Read through a shorter list (an edited one): never a position past its end.
            let cut = Array(list.prefix(n / 2))
            for k in dict.keys {
                if let i = table.position(of: k, key: { cut.indices.contains($0) ? cut[$0] : nil }) {
                    XCTAssertTrue(cut.indices.contains(i))
                    XCTAssertEqual(cut[i], k)
                }
            }
            var slots = 1
            while slots < 2 * n { slots <<= 1 }
            // Never tighter than the allocator's rounding: a 48-byte dictionary bucket per slot would be 12 times this.
            XCTAssertLessThanOrEqual(table.slotBytes, n == 0 ? 0 : 4 * slots + 64, "n \(n)")
        }
    }

    /// The timelines find every peer and instance where they are, and nothing for a ref or key they do not
    /// hold; a list edited after they were made never gives another peer's timeline.
    func testTimelinesFindEachPeerAndInstanceInPlace() {
        let s = Script.fullSession()
        s.connect(Script.alice, Script.carol, at: 40)
        s.packet(.gckData, 52, Script.alice, Script.carol, source: "gck-data")
        var tl = s.timelines()
        XCTAssertGreaterThan(tl.peers.count, 1)
        XCTAssertGreaterThan(tl.sessions.count, 1)
        for (i, p) in tl.peers.enumerated() {
            XCTAssertEqual(tl.timeline(p.peer.ref)?.peer, p.peer)
            XCTAssertEqual(tl.peer(p.peer.ref), p.peer)
            XCTAssertEqual(tl.peerPosition(p.peer.ref), i)
        }
        for s in tl.sessions { XCTAssertEqual(tl.session(s.key)?.key, s.key) }
        XCTAssertNil(tl.timeline(.id(0xDEAD_BEEF)))
        XCTAssertNil(tl.peer(.name("nobody here")))
        XCTAssertNil(tl.session(SessionKey(pair: PeerPair(.id(1), .id(2)), number: 99)))
        let refs = tl.peers.map(\.peer.ref)
        tl.peers.removeFirst()
        for r in refs {
            if let p = tl.timeline(r) { XCTAssertEqual(p.peer.ref, r) }
        }
        XCTAssertEqual(Timelines.empty.timeline(.id(7))?.peer, nil)
    }

    private final class Keyed {
        let key: Colliding
        let tag: Int
        init(_ key: Colliding, _ tag: Int) { self.key = key; self.tag = tag }
    }

    /// `KeyedObjects` answers as a dictionary of the objects by their keys through inserts and
    /// replacements with colliding hashes and every growth of its table, lists its objects in the order
    /// their keys were first added (a replacement taking its predecessor's place), and empties.
    func testKeyedObjectsAnswerAsADictionaryAndKeepFirstAddedOrder() {
        var seed: UInt64 = 0x5851_F42D_4C95_7F2D
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        for keys in [1, 5, 17, 300] {
            var table = KeyedObjects<Colliding, Keyed> { $0.key }
            var dict: [Colliding: Keyed] = [:]
            var order: [Colliding] = []
            XCTAssertNil(table[Colliding(v: 0)])
            for step in 0 ..< 3000 {
                let k = Colliding(v: next(keys))
                if next(3) == 0 {
                    let o = Keyed(k, step)
                    if dict[k] == nil { order.append(k) }
                    dict[k] = o
                    table.insert(o)
                }
                XCTAssertTrue(table[k] === dict[k], "keys \(keys) step \(step)")
                XCTAssertNil(table[Colliding(v: keys + next(5))])
                XCTAssertEqual(table.count, dict.count)
            }
            XCTAssertEqual(table.objects.map(\.key), order)
            XCTAssertTrue(zip(table.objects, order).allSatisfy { $0.0 === dict[$0.1] })
            var slots = 16
            while slots < 2 * table.count { slots <<= 1 }
            XCTAssertLessThanOrEqual(table.slotBytes, 4 * slots + 64, "keys \(keys)")
            table.removeAll()
            XCTAssertTrue(table.isEmpty)
            XCTAssertNil(table[order[0]])
            table.insert(Keyed(order[0], -1))
            XCTAssertEqual(table[order[0]]?.tag, -1)
        }
    }

    /// A relocation's `BoxMap` gives each old box's new box, by identity: a box equal by value that is
    /// not one of the old ones (made outside the builder's tables) gets nil, as does any box of an empty map.
    func testABoxMapGivesEachOldBoxsNewBoxByIdentity() {
        for n in [0, 1, 2, 3, 100, 1000] {
            let old = (0 ..< n).map { Shared(PeerRef.id(UInt64($0))) }
            let new = old.map { Shared($0.value) }
            let map = BoxMap(zip(old, new).reversed(), count: n)
            XCTAssertEqual(map.isEmpty, n == 0)
            for (o, m) in zip(old, new) {
                XCTAssertTrue(map.new(o) === m)
                XCTAssertNil(map.new(Shared(o.value)), "equal by value, another box")
                XCTAssertNil(map.new(m), "a new box is not an old one")
            }
            XCTAssertNil(map.new(Shared(PeerRef.name("x"))))
        }
        var r = TimelineBuilder.Relocation()
        let b = Shared(PeerRef.id(1))
        XCTAssertTrue(r.peer(b) === b, "a box the relocation does not know stays itself")
        r.peers = BoxMap([(b, Shared(b.value))], count: 1)
        XCTAssertFalse(r.peer(b) === b)
        XCTAssertEqual(r.peer(b)?.value, b.value)
        XCTAssertNil(r.peer(nil))
    }
}
