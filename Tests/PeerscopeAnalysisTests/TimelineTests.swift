import PeerscopeCore
@testable import PeerscopeTimeline
import XCTest

final class TimelineTests: XCTestCase {
    let A = Script.alice, B = Script.bob, C = Script.carol

    func fullSession() -> Script { Script.fullSession() }

    func testPerPeerEntriesFoldKeepAlivesAndKeepOrder() throws {
        let tl = fullSession().timelines()
        let alice = try XCTUnwrap(tl.timeline(.id(0x0123_4567_89AB_CDEF)))
        XCTAssertEqual(alice.peer.label, "Alice")
        let states = alice.entries.map(\.state)
        XCTAssertEqual(Array(states.prefix(4)), [.discovered, .invited, .invitationAccepted, .connectionData])
        XCTAssertTrue(states.contains(.secureChannelUp))
        XCTAssertTrue(states.contains(.gckConnected))
        XCTAssertEqual(states.last, .disconnected)
        let kas = alice.entries.filter { $0.state == .keepAlive }
        XCTAssertEqual(kas.count, 2, "one run each way, not one entry per keep-alive")
        let sent = try XCTUnwrap(kas.first { $0.sent })
        XCTAssertEqual(sent.count, 12)
        XCTAssertEqual(sent.t, Script.at(4.0))
        XCTAssertEqual(sent.lastT, Script.at(26.0))
        XCTAssertEqual(sent.evidence.count, 2, "first and last evidence of the run")
        XCTAssertEqual(alice.entries.first { $0.state == .invitationAccepted }?.sent, false)
        // Bob's timeline sees the same exchange from the other side.
        let bob = try XCTUnwrap(tl.timeline(.id(0x0FED_CBA9_8765_4321)))
        XCTAssertEqual(bob.entries.first { $0.state == .invited }?.sent, false)
        XCTAssertEqual(bob.entries.first { $0.state == .invitationAccepted }?.sent, true)
    }

    func testHistoryLetters() throws {
        let tl = fullSession().timelines()
        let alice = try XCTUnwrap(tl.timeline(.id(0x0123_4567_89AB_CDEF)))
        // V announce, I invite, a accept (Bob), C connect, Q ICE, j answer, E e DTLS, u secure up (Bob's CCS
        // completed it), O hello, g connected (Bob's hello), W app handshake, h response, K k ... K k (10th), x.
        XCTAssertEqual(alice.history, "VIaCQjEeuOgWhKkKkx")
        let bob = try XCTUnwrap(tl.timeline(.id(0x0FED_CBA9_8765_4321)))
        XCTAssertEqual(bob.history, "ViAcqJeEUoGwHkKkKX")
        let session = try XCTUnwrap(tl.sessions.first)
        XCTAssertEqual(session.history, "IaCQjEeuOgWhKkKkx", "upper case is the originator (Alice)")
    }

    func testOneFrameAnnouncingAndResolvingIsOneEntry() throws {
        let s = Script()
        s.events.append(PeerEvent(kind: .announced, t: Script.at(0), evidence: .frame(input: 0, frame: 1), from: A,
                                  to: .unknown, source: "mdns", attrs: ["service": "_x._tcp.local"]))
        s.events.append(PeerEvent(kind: .resolved, t: Script.at(0), evidence: .frame(input: 0, frame: 1), from: A,
                                  to: .unknown, source: "mdns", attrs: ["service": "_x._tcp.local", "port": "5000"]))
        s.events.append(PeerEvent(kind: .resolved, t: Script.at(1), evidence: .frame(input: 0, frame: 2), from: A,
                                  to: .unknown, source: "mdns", attrs: ["service": "_x._tcp.local", "port": "5000"]))
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let discovered = alice.entries.filter { $0.state == .discovered }
        XCTAssertEqual(discovered.first?.evidence, [.frame(input: 0, frame: 1)])
        XCTAssertEqual(discovered.first?.detail, "service=_x._tcp.local port=5000", "the fuller detail stays")
        XCTAssertEqual(discovered.map(\.evidence.first), [.frame(input: 0, frame: 1), .frame(input: 0, frame: 2)],
                       "frame 2 is a new entry; frame 1's two events are one")
    }

    func testLogAndCaptureRunsStaySeparateAndNeverEndEarlier() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.appKeepAlive, from: 1, to: 20, every: 2, A, B)
        // A log line about an earlier keep-alive arrives (sorted by time) inside the run.
        s.log(.appKeepAlive, 3.5, A, B)
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let runs = alice.entries.filter { $0.state == .keepAlive && $0.sent }
        XCTAssertEqual(runs.count, 2, "frames and log lines fold into runs of their own")
        let frames = try XCTUnwrap(runs.first { if case .frame = $0.evidence[0] { true } else { false } })
        XCTAssertEqual(frames.count, 10)
        XCTAssertEqual(frames.lastT, Script.at(19))
        let log = try XCTUnwrap(runs.first { if case .logLine = $0.evidence[0] { true } else { false } })
        XCTAssertEqual(log.count, 1)
    }

    func testFatalOrEncryptedDTLSAlertEndsTheSessionAWarningDoesNot() throws {
        func session(_ attrs: [String: String]) -> SessionInstance? {
            let s = Script()
            s.connect(A, B, at: 0)
            s.packet(.dtlsAlert, 5, B, A, attrs: attrs)
            return s.timelines().sessions.first
        }
        XCTAssertEqual(session(["level": "fatal", "description": "bad_record_mac"])?.endReason, "DTLS alert (bad_record_mac)")
        XCTAssertEqual(session(["level": "encrypted", "description": "encrypted alert"])?.end, Script.at(5))
        XCTAssertEqual(session(["level": "warning", "description": "close_notify"])?.endReason, "closed (DTLS close_notify)")
        XCTAssertNil(session(["level": "warning", "description": "no_renegotiation"])?.end)
    }

    func testALogLineBesideTheFrameIsOneEntryWithBothEvidences() throws {
        let s = Script()
        let frame = s.packet(.invite, 1.0, A, B, attrs: ["inviteID": "1"])
        let line = s.log(.invite, 1.2, A, B)
        // MPC's state line and the app's print of the same transition, 1 ms apart.
        let mpc = s.log(.stateChange, 2.0, B, A, attrs: ["to": "Connecting"], source: "log-mpc-state")
        let app = s.log(.stateChange, 2.001, B, A, attrs: ["to": "Connecting"], source: "log-app-state")
        // The same step again much later is a new entry.
        s.log(.invite, 9.0, A, B)
        // Frames are each their own step, however close.
        s.packet(.invite, 9.1, A, B)
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let invites = alice.entries.filter { $0.state == .invited }
        XCTAssertEqual(invites.count, 2, "\(invites)")
        XCTAssertEqual(invites.first?.evidence, [frame])
        XCTAssertEqual(invites.first?.corroboration.map(\.evidence), [line])
        XCTAssertEqual(invites.first?.detail, "inviteID=1", "the frame's detail stays")
        let connecting = alice.entries.filter { $0.state == .connecting }
        XCTAssertEqual(connecting.count, 1)
        XCTAssertEqual(connecting.first?.evidence, [mpc])
        XCTAssertEqual(connecting.first?.corroboration.map(\.evidence), [app])
        // Repeated-traffic states corroborate only the same message: the DD line joins the DD frame,
        // not the LSA frame beside it.
        let g = Script()
        let dd = g.packet(.gckDD, 1.0, A, B)
        let lsa = g.packet(.gckLSA, 1.01, A, B)
        let ddLine = g.log(.gckDD, 1.02, A, B)
        let ag = try XCTUnwrap(g.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let gck = ag.entries.filter { $0.state == .gckHandshake }
        XCTAssertEqual(gck.map(\.evidence), [[dd], [lsa]])
        XCTAssertEqual(gck.first?.corroboration.map(\.evidence), [ddLine])
        // A line that comes before the frame hands the entry to the frame.
        let t = Script()
        let early = t.log(.inviteResponse, 3.0, B, A, attrs: ["accepted": "false"])
        let wire = t.packet(.inviteResponse, 3.4, B, A, attrs: ["accepted": "false", "inviteID": "7"])
        let a2 = try XCTUnwrap(t.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let declined = try XCTUnwrap(a2.entries.first { $0.state == .invitationDeclined })
        XCTAssertEqual(declined.evidence, [wire])
        XCTAssertEqual(declined.corroboration.map(\.evidence), [early])
        XCTAssertEqual(declined.t, Script.at(3.4))
        XCTAssertEqual(a2.entries.filter { $0.state == .invitationDeclined }.count, 1)
    }

    func testStoppingToAdvertiseInSessionIsNotLost() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.gckHeartbeat, from: 1, to: 30, every: 5, A, B)
        s.packet(.expired, 20, A, .unknown, attrs: ["service": "_x._tcp.local"])
        s.log(.disconnected, 31, A, B)
        s.packet(.goodbye, 40, A, .unknown, attrs: ["service": "_x._tcp.local"])
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let expired = try XCTUnwrap(alice.entries.first { $0.kind == .expired })
        XCTAssertEqual(expired.state, .updated)
        XCTAssertTrue(expired.detail.contains("still in session"), expired.detail)
        XCTAssertEqual(alice.entries.first { $0.kind == .goodbye }?.state, .lost, "after the session it is lost")
    }

    func testStateChangesFromBothDevicesLogsAreOneEntry() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        // Alice's log: Bob went Not Connected; Bob's log, 6 ms later: Alice went Not Connected.
        let a = s.log(.stateChange, 10, B, A, attrs: ["to": "Not Connected"], source: "log-mpc-state")
        s.events[s.events.count - 1].evidence = .logLine(input: 1, line: 40)
        let b = Evidence.logLine(input: 2, line: 41)
        s.events.append(PeerEvent(kind: .stateChange, t: Script.at(10.006), evidence: b, from: A, to: B,
                                  source: "log-mpc-state", attrs: ["to": "Not Connected"]))
        _ = a
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let gone = alice.entries.filter { $0.state == .disconnected }
        XCTAssertEqual(gone.count, 1, "\(gone)")
        XCTAssertEqual(gone.first?.corroboration.map(\.evidence), [b])
    }

    func testChatContentsShowOnlyWhenTheDecoderWasAskedForThem() throws {
        func chats(_ withContent: Bool) throws -> [TimelineEntry] {
            let s = Script()
            s.connect(A, B, at: 0)
            for (i, text) in ["hello", "lunch?"].enumerated() {
                s.packet(.appChat, 1 + Double(i), A, B, attrs: withContent ? ["size": "5", "content": text] : ["size": "5"])
            }
            return try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF))).entries.filter { $0.kind == .appChat }
        }
        let hidden = try chats(false)
        XCTAssertEqual(hidden.map(\.count), [2], "folded into one run")
        XCTAssertFalse(hidden.contains { $0.detail.contains("hello") })
        let shown = try chats(true)
        XCTAssertEqual(shown.map(\.detail), ["content=hello", "content=lunch?"], "each message its own entry")
    }

    func testReceiptEntriesSayWhatTheyAcknowledge() throws {
        let s = Script()
        s.packet(.invitationHello, 0, A, B)
        s.packet(.invitationReceipt, 0.1, B, A, attrs: ["type": "hello", "matched": "true", "seq": "0"])
        let alice = try XCTUnwrap(s.timelines().timeline(.id(0x0123_4567_89AB_CDEF)))
        let receipt = try XCTUnwrap(alice.entries.first { $0.kind == .invitationReceipt })
        XCTAssertEqual(receipt.state, .invitationChannel)
        XCTAssertEqual(receipt.detail, "for hello")
        XCTAssertFalse(receipt.sent)
    }

    func testHistoryBuilderCompression() {
        var h = HistoryBuilder()
        for _ in 0 ..< 105 { h.add("K", sent: true) }
        XCTAssertEqual(h.text, "KKK", "1st, 10th and 100th")
        h.add("I", sent: true); h.add("I", sent: true); h.add("i", sent: false)
        XCTAssertEqual(h.text, "KKKIi")
        h.add("K", sent: true)
        XCTAssertEqual(h.text, "KKKIiK", "a control letter restarts the traffic counts")
    }

    /// The traffic counters are allocated only at the first traffic letter (most peers of an mDNS-heavy
    /// capture never have one), dropped at a control letter, and still count across adds: nine `K` then
    /// one more write a second `K` (the 10th), which counting from zero at each add would not.
    func testHistoryCountsAreAllocatedAtTheFirstTrafficLetterAndKeptUntilAControlLetter() {
        XCTAssertLessThanOrEqual(MemoryLayout<HistoryBuilder>.size, 48, "no counters inline")
        var h = HistoryBuilder()
        h.add("V", sent: true); h.add("L", sent: false); h.add("V", sent: true)
        XCTAssertEqual(h.text, "VlV")
        XCTAssertFalse(h.hasTrafficCounts, "no traffic letter: no counters")
        for _ in 0 ..< 9 { h.add("K", sent: true) }
        XCTAssertTrue(h.hasTrafficCounts)
        XCTAssertEqual(h.text, "VlVK")
        h.add("K", sent: true)
        XCTAssertEqual(h.text, "VlVKK", "the 10th K: the count was kept")
        h.add("d", sent: false, times: 99)
        XCTAssertEqual(h.text, "VlVKKdd", "a run of 99: the 1st and the 10th")
        h.add("X", sent: true)
        XCTAssertFalse(h.hasTrafficCounts, "a control letter drops the counters")
        h.add("K", sent: true)
        XCTAssertEqual(h.text, "VlVKKddXK", "counting restarts after a control letter")
    }

    /// The first two distinct traffic letters since a control letter are counted inline, each on its
    /// own (a second letter's count neither dropped nor added to the first's), and a third moves every
    /// count into a block that keeps them: the letters written are those of a counter per letter.
    func testHistoryCountsTwoLettersInlineApartAndMovesToABlockAtTheThird() {
        XCTAssertLessThanOrEqual(MemoryLayout<HistoryBuilder>.size, 40, "two counters inline, no copy of the last letter")
        var h = HistoryBuilder()
        for _ in 0 ..< 9 { h.add("K", sent: true) }
        for _ in 0 ..< 9 { h.add("K", sent: false) }
        XCTAssertEqual(h.text, "Kk")
        XCTAssertTrue(h.hasTrafficCounts)
        XCTAssertFalse(h.hasCounterBlock, "two letters: inline")
        XCTAssertEqual(h.count(HistoryBuilder.slot("K") ?? -1), 9)
        XCTAssertEqual(h.count(HistoryBuilder.slot("k") ?? -1), 9)
        h.add("K", sent: true)
        XCTAssertEqual(h.text, "KkK", "the 10th K (not the 19th of K and k together)")
        h.add("K", sent: false)
        XCTAssertEqual(h.text, "KkKk", "the 10th k: its own 9 were kept")
        h.add("D", sent: true, times: 5)
        XCTAssertTrue(h.hasCounterBlock, "a third letter: a block")
        XCTAssertEqual(h.text, "KkKkD")
        h.add("K", sent: true, times: 90)
        h.add("K", sent: false, times: 89)
        h.add("D", sent: true, times: 5)
        XCTAssertEqual(h.text, "KkKkDKD", "100 K (moved into the block with their count), 99 k, 10 D")
        h.add("K", sent: false)
        XCTAssertEqual(h.text, "KkKkDKDk")
        h.add("G", sent: true)
        XCTAssertFalse(h.hasTrafficCounts, "a control letter empties them")
        h.add("G", sent: true)
        h.add("k", sent: false, times: 10)
        XCTAssertEqual(h.text, "KkKkDKDkGkk")
        // A count beyond the inline field moves to the block and saturates as before.
        var big = HistoryBuilder()
        big.add("B", sent: true, times: Int.max)
        XCTAssertTrue(big.hasCounterBlock)
        big.add("B", sent: true)
        XCTAssertEqual(big.text, String(repeating: "B", count: 19), "1 ... 10^18, then nothing more")
        // A control letter is written once per run, whatever character it is.
        var other = HistoryBuilder()
        for c: Character in ["é", "é", "I", "I", "é", "😀", "😀", "i"] { other.add(c, sent: true) }
        XCTAssertEqual(other.text, "éIé😀I")
    }

    /// The history's inline counters: one slot per traffic letter and case, none for any other
    /// character, and the letters written on random input are those of counting in a table per letter
    /// (what the builder kept before).
    func testHistoryCountersAreOnePerTrafficLetterAndCaseAndWriteWhatATableDid() {
        var slots: [Int: Character] = [:]
        for v in UInt8(0) ... 127 {
            let c = Character(Unicode.Scalar(v))
            let slot = HistoryBuilder.slot(c)
            XCTAssertEqual(slot != nil, HistoryBuilder.isTraffic(c), "\(c)")
            guard let slot else { continue }
            XCTAssertTrue((0 ..< 16).contains(slot))
            XCTAssertNil(slots[slot], "\(c) and \(slots[slot].map(String.init) ?? "") share a slot")
            slots[slot] = c
        }
        XCTAssertEqual(slots.count, 14)
        for c: Character in ["é", "Ö", "😀", "K\u{301}"] { XCTAssertNil(HistoryBuilder.slot(c)) }
        let letters: [Character] = ["Q", "J", "E", "O", "K", "B", "D", "I", "A", "G", "X", "!", "S"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        for _ in 0 ..< 200 {
            var h = HistoryBuilder()
            var text = "", counts: [Character: Int] = [:], last: Character?
            for _ in 0 ..< 300 {
                let letter = letters[next(letters.count)], sent = next(2) == 0
                let times = next(10) == 0 ? [0, 9, 10, 99, 1000, Int.max][next(6)] : 1
                h.add(letter, sent: sent, times: times)
                let c = sent ? Character(letter.uppercased()) : Character(letter.lowercased())
                if HistoryBuilder.isTraffic(c) {
                    let before = counts[c] ?? 0
                    let (n, o) = before.addingReportingOverflow(max(1, times))
                    let after = o ? Int.max : n
                    counts[c] = after
                    var p = 1
                    while p <= after {
                        if p > before { text.append(c); last = c }
                        let (q, o2) = p.multipliedReportingOverflow(by: 10)
                        if o2 { break }
                        p = q
                    }
                } else {
                    counts = [:]
                    if last != c { text.append(c); last = c }
                }
            }
            XCTAssertEqual(h.text, text)
        }
    }

    func testLegendCoversEveryLetterTheMappingProduces() {
        // Every catalogued kind, with the attribute values that change its step.
        let legend = Set(HistoryBuilder.legend.map(\.letter))
        let variants: [[String: String]] = [[:], ["accepted": "false"], ["decision": "declines"], ["invitation": "srv"],
                                            ["to": "Connected"], ["to": "Connecting"], ["to": "Not Connected"]]
        var letters: Set<Character> = []
        for spec in EventCatalogue.entries {
            for attrs in variants {
                let e = PeerEvent(kind: spec.kind, t: 0, evidence: .frame(input: 0, frame: 1), source: "t", attrs: attrs)
                if let l = TimelineMapping.classify(e).1 {
                    XCTAssertTrue(legend.contains(l), "\(spec.kind) -> \(l)")
                    letters.insert(l)
                }
            }
        }
        XCTAssertEqual(letters, legend, "every legend letter is some kind's")
        XCTAssertTrue(HistoryBuilder.trafficLetters.isSubset(of: legend))
    }

    func testSessionsAreNumberedOnReconnect() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.repeating(.gckHeartbeat, from: 1, to: 10, every: 5.5, A, B)
        s.log(.disconnected, 11, B, A)
        s.connect(A, B, at: 20)
        s.connect(A, B, at: 40)
        let tl = s.timelines()
        // The third connect comes while #2 is established, with no disconnect seen: a fresh ICE check and
        // GCK Hello start #3, and #2 (no traffic after it) ends superseded where #3 began (issue #11).
        let sessions = tl.sessions
        XCTAssertEqual(sessions.map(\.number), [1, 2, 3])
        XCTAssertEqual(sessions[0].endReason, "disconnected")
        XCTAssertEqual(sessions[0].end, Script.at(11))
        XCTAssertEqual(sessions[1].endReason, "superseded")
        XCTAssertEqual(sessions[1].end, Script.at(40.02))
        XCTAssertEqual(sessions[1].supersededBy, 3)
        XCTAssertNil(sessions[1].overlap)
        XCTAssertNil(sessions[2].end)
        XCTAssertNotNil(sessions[0].established)
        XCTAssertNotNil(sessions[1].established)
        let alice = try XCTUnwrap(tl.timeline(.id(0x0123_4567_89AB_CDEF)))
        XCTAssertEqual(Set(alice.entries.compactMap { $0.session?.number }), [1, 2, 3])
        XCTAssertEqual(alice.sessions.count, 3)
    }

    func testNewDTLSHandshakeOnEstablishedSessionStartsNewInstance() {
        let s = Script()
        s.packet(.dtlsHandshake, 0, A, B, attrs: ["message": "ClientHello"])
        s.packet(.dtlsEstablished, 0.2, A, B)
        s.packet(.dtlsApplicationData, 1, A, B)
        s.packet(.dtlsHandshake, 5, B, A, attrs: ["message": "ClientHello"])
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.count, 2)
        XCTAssertEqual(tl.sessions[0].endReason, "superseded")
        XCTAssertEqual(tl.sessions[1].originator, .id(0x0FED_CBA9_8765_4321))
    }

    func testMeshOfThreeGivesThreePairSessions() {
        let s = Script()
        s.connect(A, B, at: 0)
        s.connect(A, C, at: 1)
        s.connect(B, C, at: 2)
        let tl = s.timelines()
        XCTAssertEqual(tl.sessions.count, 3)
        XCTAssertEqual(Set(tl.sessions.map(\.pair)).count, 3)
        XCTAssertTrue(tl.sessions.allSatisfy { $0.number == 1 && $0.established != nil })
        XCTAssertEqual(tl.peers.count, 3)
        XCTAssertEqual(tl.peers.map(\.peer.label), ["Alice", "Bob", "Carol"])
    }

    func testResolutionOfPartialHints() throws {
        let s = Script()
        // A GCK log line names only the participant ID; a name-only app line; an unknown local address.
        s.log(.gckTimeout, 1, PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321)),
              attrs: ["wait": "Heartbeat"])
        s.log(.appKeepAlive, 2, PeerHint(displayName: "Carol"))
        let local = IPAddress("192.0.2.7")
        let unknown = PeerHint(endpoint: Endpoint(try XCTUnwrap(local), 16402))
        s.packet(.gckHeartbeat, 3, unknown, A)
        s.log(.stateChange, 4, PeerHint(displayName: "Dave"), attrs: ["to": "Connecting"])
        let tl = s.timelines()
        let labels = Set(tl.peers.map(\.peer.label))
        XCTAssertTrue(labels.contains("Bob"), "participant ID resolved through the directory")
        XCTAssertTrue(labels.contains("Carol"))
        XCTAssertTrue(labels.contains("unknown peer at 192.0.2.7"))
        XCTAssertTrue(labels.contains("Dave"), "a name seen only in logs becomes a peer")
        XCTAssertTrue(labels.contains("log owner (input 2)"), "a log line's implicit side is the log's device")
        XCTAssertEqual(tl.peer(.name("Dave"))?.peerID, nil)
        let resolver = tl.resolver
        XCTAssertEqual(resolver.resolve(PeerHint(participantID: PeerIdentity.participantID(0x0AAA_BBBB_CCCC_DDDD))),
                       .id(0x0AAA_BBBB_CCCC_DDDD))
        XCTAssertNil(resolver.resolve(.unknown, evidence: .frame(input: 0, frame: 1)))
    }

    func testLogOwnerIsInferredFromThePackets() throws {
        let s = Script()
        s.connect(A, B, at: 0)
        s.connect(B, C, at: 0.5)
        // Alice's log: names Bob often and Alice once (its own peer); the implicit side is Alice.
        s.log(.stateChange, 1, B, attrs: ["to": "Connected"])
        s.log(.appKeepAlive, 2, B)
        s.log(.appKeepAlive, 4, B)
        s.log(EventKind("log.peer_created"), 0.1, A)
        let tl = s.timelines()
        XCTAssertEqual(tl.resolver.logOwners[1], .id(0x0123_4567_89AB_CDEF))
        XCTAssertNil(tl.peers.first { if case .logOwner = $0.peer.ref { return true } else { return false } })
        let ab = tl.sessions.first { $0.pair == PeerPair(.id(0x0123_4567_89AB_CDEF), .id(0x0FED_CBA9_8765_4321)) }
        XCTAssertEqual(ab?.eventCount, 7, "4 packets and 3 log lines in one session")
    }

    func testIdStringPlusNameHints() {
        let s = Script()
        let id: UInt64 = 0x0000_0000_00AB_CDEF
        s.log(.found, 1, PeerHint(displayName: PeerIdentity.idString(id) + "+Zoe"))
        let tl = s.timelines()
        XCTAssertEqual(tl.peer(.id(id))?.displayName, "Zoe")
    }

    func testPeerIDsLearntFromEventsResolveEarlierLogLines() {
        let s = Script()
        let zed: UInt64 = 0x0000_1234_5678_9ABC
        // The log line (participant only) comes before the packet that reveals the peer ID.
        s.log(.iceTimeout, 1, PeerHint(participantID: PeerIdentity.participantID(zed)))
        s.packet(.announced, 2, PeerHint(peerID: zed, displayName: "Zed"), .unknown)
        let tl = s.timelines()
        XCTAssertNotNil(tl.timeline(.id(zed)))
        XCTAssertEqual(tl.timeline(.id(zed))?.entries.count, 2)
        XCTAssertNil(tl.peers.first { if case .participant = $0.peer.ref { return true } else { return false } })
    }

    /// A log event from log input `input` (the Script's own `log` writes input 1).
    func logLine(_ s: Script, _ kind: EventKind, _ t: Double, input: Int, line: Int, _ from: PeerHint,
                 _ to: PeerHint = .unknown, attrs: [String: String] = [:]) {
        s.events.append(PeerEvent(kind: kind, t: Script.at(t), evidence: .logLine(input: input, line: line), from: from,
                                  to: to, source: "log-test", attrs: attrs))
    }

    func testLogOwnersComeFromTheirAdvertisingLinesWithoutPackets() throws {
        let s = Script()
        let aID = try XCTUnwrap(A.peerID), bID = try XCTUnwrap(B.peerID)
        // Each log names its own device once (name and participant, as MPC prints it) and the other often.
        logLine(s, "log.advertising", 0.1, input: 1, line: 1, PeerHint(participantID: PeerIdentity.participantID(aID), displayName: "Alice"))
        logLine(s, "log.advertising", 0.2, input: 2, line: 1, PeerHint(participantID: PeerIdentity.participantID(bID), displayName: "Bob"))
        logLine(s, .stateChange, 1.0, input: 1, line: 2, B, attrs: ["to": "Connecting"])
        logLine(s, .stateChange, 1.1, input: 2, line: 2, A, attrs: ["to": "Connecting"])
        logLine(s, .stateChange, 1.5, input: 1, line: 3, B, attrs: ["to": "Connected"])
        logLine(s, .appHandshake, 2.0, input: 2, line: 3, A)
        let tl = s.timelines()
        XCTAssertEqual(tl.resolver.logOwners[1], .id(aID))
        XCTAssertEqual(tl.resolver.logOwners[2], .id(bID))
        XCTAssertNil(tl.peers.first { if case .logOwner = $0.peer.ref { return true } else { return false } })
        XCTAssertEqual(tl.sessions.count, 1, "both logs tell one session")
        XCTAssertEqual(tl.sessions.first?.pair, PeerPair(.id(aID), .id(bID)))
        // A log whose lines name two different local peers is not guessed.
        let t = Script()
        logLine(t, "log.advertising", 0.1, input: 1, line: 1, A)
        logLine(t, "log.peer_created", 0.2, input: 1, line: 2, B)
        var r = PeerResolver(identities: t.facts.identities, events: t.events)
        r.identifyLogOwners(t.events)
        XCTAssertNil(r.logOwners[1])
    }

    /// `inferLogOwners` returns at once without log lines (only log inputs get owners): with one line,
    /// the same packets make its owner; without it, nothing (what the whole pass gives), and a capture's
    /// events are not each resolved twice for that.
    func testLogOwnersAreInferredFromThePacketsOnlyWhenThereAreLogLines() throws {
        let s = Script()
        s.connect(A, B, at: 1)
        s.connect(C, A, at: 2)
        s.log(.appKeepAlive, 3, B)
        let aID = try XCTUnwrap(A.peerID)
        var r = PeerResolver(identities: s.facts.identities, events: s.events)
        r.inferLogOwners(s.events)
        XCTAssertEqual(r.logOwners, [1: .id(aID)], "the one counterpart of every peer the log names")
        let frames = s.events.filter { if case .frame = $0.evidence { true } else { false } }
        var q = PeerResolver(identities: s.facts.identities, events: frames)
        q.inferLogOwners(frames)
        XCTAssertEqual(q.logOwners, [:])
        XCTAssertEqual(frames.map { q.resolve($0.from, evidence: $0.evidence, at: $0.t) },
                       frames.map { r.resolve($0.from, evidence: $0.evidence, at: $0.t) })
    }

    func testADisplayNameTwoPeersShareNamesTheOneInSession() throws {
        let s = Script()
        let first = PeerHint(peerID: 0x0111_2222_3333_4444, displayName: "Alice")
        let second = PeerHint(peerID: 0x0555_6666_7777_8888, displayName: "Alice")
        s.packet(.announced, 0.0, first, .unknown)
        s.packet(.announced, 0.1, second, .unknown)
        s.connect(first, B, at: 1)
        // Bob's app prints only the name.
        s.log(.appKeepAlive, 3, PeerHint(displayName: "Alice"), B)
        s.log(.appKeepAlive, 5, PeerHint(displayName: "Alice"), B)
        let tl = s.timelines()
        XCTAssertNil(tl.peers.first { if case .name = $0.peer.ref { return true } else { return false } })
        let firstEntries = tl.timeline(.id(0x0111_2222_3333_4444))?.entries ?? []
        XCTAssertEqual(firstEntries.filter { $0.kind == .appKeepAlive }.map(\.count).reduce(0, +), 2)
        XCTAssertTrue((tl.timeline(.id(0x0555_6666_7777_8888))?.entries ?? []).allSatisfy { $0.kind != .appKeepAlive })
    }

    /// An app relaunched on the same device gets a new peer ID at the same address: packets from
    /// that address after the new ID appeared are the new peer's, earlier ones the old peer's.
    func testEndpointsFollowTheLatestPeerIDSeenThere() throws {
        let s = Script()
        let addr = try XCTUnwrap(IPAddress("192.0.2.16"))
        let mdns = Endpoint(addr, 5353)
        let old: UInt64 = 0x0100_0000_0000_0001, new: UInt64 = 0x0200_0000_0000_0002
        s.packet(.announced, 0, PeerHint(peerID: old, displayName: "Erin", endpoint: mdns), .unknown)
        s.packet(.browse, 50, PeerHint(endpoint: mdns), .unknown)
        s.packet(.announced, 100, PeerHint(peerID: new, displayName: "Erin", address: addr), .unknown)
        s.packet(.browse, 120, PeerHint(endpoint: mdns), .unknown)
        let tl = s.timelines()
        let oldLast = try XCTUnwrap(tl.peer(.id(old))?.lastSeen)
        let newLast = try XCTUnwrap(tl.peer(.id(new))?.lastSeen)
        XCTAssertEqual(oldLast, Script.at(50))
        XCTAssertEqual(newLast, Script.at(120))
    }
}
