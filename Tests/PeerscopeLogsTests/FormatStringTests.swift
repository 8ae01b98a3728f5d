import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// Every framework format string the log plugins map (spec §2.2), written here as data, filled with
/// generated values, wrapped in an Xcode console line and read through the whole analyzer.
final class FormatStringTests: XCTestCase {
    /// Deterministic generator for participant IDs, peer IDs and numbers.
    struct Gen {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state ^ (state >> 29)
        }
        mutating func participant() -> UInt32 { UInt32(truncatingIfNeeded: next()) & 0x7FFF_FFFF }
    }

    static func hex8(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - s.count) + s
    }

    /// Replaces each conversion in `format` with the next value.
    static func fill(_ format: String, _ values: [String]) -> String {
        var out = ""
        var vi = 0
        var i = format.startIndex
        while i < format.endIndex {
            let c = format[i]
            guard c == "%" else { out.append(c); i = format.index(after: i); continue }
            var j = format.index(after: i)
            if j < format.endIndex, format[j] == "%" { out.append("%"); i = format.index(after: j); continue }
            while j < format.endIndex, "0123456789.-+# hlqjzt".contains(format[j]) { j = format.index(after: j) }
            // j is at the conversion character
            out += vi < values.count ? values[vi] : "?"
            vi += 1
            i = format.index(after: j)
        }
        return out
    }

    static func conversions(_ format: String) -> [Character] {
        var convs: [Character] = []
        var i = format.startIndex
        while i < format.endIndex {
            if format[i] == "%" {
                var j = format.index(after: i)
                if j < format.endIndex, format[j] == "%" { i = format.index(after: j); continue }
                while j < format.endIndex, "0123456789.-+# hlqjzt".contains(format[j]) { j = format.index(after: j) }
                if j < format.endIndex { convs.append(format[j]) }
                i = j
            }
            i = format.index(after: i)
        }
        return convs
    }

    struct Case {
        var format: String
        var kind: EventKind?
        /// Values for some conversions by index; the rest are generated from the conversion type.
        var given: [Int: String] = [:]
        /// Which argument is the participant ID, and whether it names `from` or `to`.
        var participantArg: Int? = nil
        var participantIsTo = false
        /// Which argument is the channel.
        var channelArg: Int? = nil
        /// Attributes the event must carry (values may be `$n` = argument n).
        var attrs: [String: String] = [:]
        /// The display name the event's from (or to) hint must carry.
        var displayName: String? = nil
        var displayNameIsTo = false
    }

    static let peerDesc = "<MCPeerID: 0x283c0c2a0 DisplayName = Alice [iPad] 2>"
    static let peerName = "Alice [iPad] 2"

    static var cases: [Case] {
        [
            // GCKSession: handshake / keep-alive / channel
            Case(format: "Not in connected state, so giving up for participant [%08X] on channel [%d].", kind: .gckGivingUp, participantArg: 0, channelArg: 1),
            Case(format: "ICE timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .iceTimeout, given: [2: "ICE"], participantArg: 0, channelArg: 1, attrs: ["state": "ICE"]),
            Case(format: "DTLS Handshake timeout expired for participant [%08X] on channel [%d] DTLS state [%s].", kind: .dtlsTimeout, given: [2: "DTLSNotConnected"], participantArg: 0, channelArg: 1, attrs: ["state": "DTLSNotConnected"]),
            Case(format: "Hello timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .gckTimeout, participantArg: 0, channelArg: 1, attrs: ["wait": "Hello"]),
            Case(format: "DD timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .gckTimeout, participantArg: 0, channelArg: 1, attrs: ["wait": "DD"]),
            Case(format: "LSAACK timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .gckTimeout, participantArg: 0, channelArg: 1, attrs: ["wait": "LSAACK"]),
            Case(format: "Heartbeat timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .gckTimeout, given: [2: "Connected"], participantArg: 0, channelArg: 1, attrs: ["wait": "Heartbeat", "state": "Connected"]),
            Case(format: "Unknown timeout expired for participant [%08X] on channel [%d] state [%s].", kind: .gckTimeout, participantArg: 0, channelArg: 1, attrs: ["wait": "Unknown"]),
            Case(format: "Participant [%08X] on channel [%d] already connected, ignore this timeout.", kind: .logTimeoutIgnored, participantArg: 0, channelArg: 1),
            Case(format: "Perform DTLS Handshake for participant [%08X] on channel [%d] failed with hResult [%ld].", kind: .logDTLSFailed, given: [2: "-2146697208"], participantArg: 0, channelArg: 1, attrs: ["hResult": "-2146697208"]),
            Case(format: "Retransmitting Hello with SN [%d] to participant [%08X] over channel [%d].", kind: .gckHello, participantArg: 1, participantIsTo: true, channelArg: 2, attrs: ["retransmit": "true", "sn": "$0"]),
            Case(format: "Retransmitting DD with SN [%d] to participant [%08X] over channel [%d].", kind: .gckDD, participantArg: 1, participantIsTo: true, channelArg: 2, attrs: ["sn": "$0"]),
            Case(format: "Retransmitting LSA with SN [%d] to participant [%08X] over channel [%d].", kind: .gckLSA, participantArg: 1, participantIsTo: true, channelArg: 2),
            Case(format: "Retransmitting Heartbeat with SN [%d] to participant [%08X] over channel [%d].", kind: .gckHeartbeat, participantArg: 1, participantIsTo: true, channelArg: 2, attrs: ["retransmit": "true"]),
            Case(format: "Sent %s packet to participant %08X on channel %d with error %d.", kind: .sendError, given: [0: "Heartbeat"], participantArg: 1, participantIsTo: true, channelArg: 2, attrs: ["packet": "Heartbeat", "code": "$3"]),
            Case(format: "Failed to send %s packet to participant %08X. Will mark channel %d as invalid.", kind: .sendError, given: [0: "Hello"], participantArg: 1, participantIsTo: true, channelArg: 2, attrs: ["channelInvalid": "true"]),
            Case(format: "Send UDP packet failed with error (%X).", kind: .sendError, attrs: ["layer": "udp", "code": "$0"]),
            Case(format: "SendUDPPacketCList failed with error (%X).", kind: .sendError, attrs: ["layer": "udp"]),
            Case(format: "Failed to send a DTLS packet with %d bytes; sendmsg error: %s (%d).", kind: .sendError, given: [1: "No route to host", 2: "65"], attrs: ["layer": "dtls", "error": "No route to host", "errno": "65", "bytes": "$0"]),
            Case(format: "SSLWrite failed, packet was not sent for participant [%08X] channelID [%d] DTLS context [%p] pCList [%p]; SSLError = %s (%ld): errno = %s (%d).",
                 kind: .sendError, given: [4: "errSSLClosedAbort", 5: "-9806", 6: "Broken pipe", 7: "32"], participantArg: 0, participantIsTo: true, channelArg: 1,
                 attrs: ["layer": "ssl", "sslError": "errSSLClosedAbort", "errno": "32"]),
            Case(format: "Failed to copy peer trust for participant [%08X].", kind: .logCertificateRejected, participantArg: 0),
            Case(format: "Trust for participant [%08X] is expected but SSLCopyPeerTrust returned NULL.", kind: .logCertificateRejected, participantArg: 0),
            Case(format: "SendHello failed with error (%X).", kind: .sendError, attrs: ["packet": "Hello"]),
            Case(format: "WaitForHello failed with error (%X).", kind: .gckTimeout, attrs: ["wait": "Hello"]),
            Case(format: "Failed to send Hello with error %X.", kind: .sendError, attrs: ["packet": "Hello"]),
            Case(format: "Scheduling ICE connection timeout for participant [%08X] on channel [%d].", kind: .logICEScheduled, participantArg: 0, channelArg: 1),
            Case(format: "Closing connection to participant [%08X] on channel [%d].", kind: .logChannelClosed, participantArg: 0, channelArg: 1),
            Case(format: "Closing clist for participant [%08X] channel [%d].", kind: .logChannelClosed, participantArg: 0, channelArg: 1),
            Case(format: "Scheduling to close CList corresponding to participant (%08X), channel %d.", kind: .logChannelClosed, participantArg: 0, channelArg: 1),
            Case(format: "Timed out, enforcing clean up.", kind: .logCleanupTimeout),
            Case(format: "Disconnecting participant [%08X].", kind: .disconnected, participantArg: 0),
            Case(format: "No route to participant %s[%08X] -- disconnected.", kind: .disconnected, given: [0: "Alice"], participantArg: 1, attrs: ["reason": "no route"]),
            Case(format: "Socket %d is no longer connected.", kind: .sendError, attrs: ["layer": "socket", "socket": "$0"]),
            // MCSession
            Case(format: "PeerID [%@] change state from [%@] to [%@].", kind: .stateChange, given: [0: peerName, 1: "Not Connected", 2: "Connecting"],
                 attrs: ["from": "Not Connected", "to": "Connecting"], displayName: peerName),
            Case(format: "Peer [%@] changed state from [%@] to [%@]; pd(%@) d(%@) prop(%d).", kind: .stateChange,
                 given: [0: peerDesc, 1: "Connecting", 2: "Not Connected", 3: "(null)", 4: "<App.Manager: 0x1>"],
                 attrs: ["from": "Connecting", "to": "Not Connected"], displayName: peerName),
            Case(format: "Peer [%@] has incompatible encryption preference [%@].", kind: .encryptionIncompatible, given: [0: peerDesc, 1: "None"],
                 attrs: ["preference": "None"], displayName: peerName),
            Case(format: "Mesh establishment failed (%08lX).", kind: .logMeshFailed, attrs: ["code": "$0"]),
            Case(format: "Certificate from peer [%@] is %s.", kind: .dtlsEstablished, given: [0: peerDesc, 1: "accepted"], displayName: peerName),
            Case(format: "Certificate from peer [%@] is %s.", kind: .logCertificateRejected, given: [0: peerDesc, 1: "NOT accepted"], displayName: peerName),
            Case(format: "AGPSendTo failed with status=%08X.", kind: .sendError, attrs: ["layer": "agp"]),
            Case(format: "Failed to send data because recipients %@ are not connected.", kind: .sendError, given: [0: "(\n    \"\(peerDesc)\"\n)"],
                 attrs: ["layer": "session"], displayName: peerName, displayNameIsTo: true),
            Case(format: "MCSession init done! [MCS: %s - %s, sessionID=%@ peerID=%@ securityIdentity=%s encryptionPreference=%@].", kind: .logSessionInit,
                 given: [0: "Mar 3 2024", 1: "12:00:00", 2: "1234", 3: peerDesc, 4: "NO", 5: "Required"], attrs: ["encryption": "Required"], displayName: peerName),
            Case(format: "Peer already in state [%@]", kind: .connectionDecision, given: [0: "Connected"], attrs: ["alreadyInState": "Connected"]),
            // Browser / advertiser
            Case(format: "Peer lost: idString [%@] moreComing [%d].", kind: .lost, given: [0: "1ddatjp8m3xy7", 1: "0"], attrs: ["moreComing": "0"]),
            Case(format: "NSNetServiceBrowser did not search with error dict [%@].", kind: .permissionError,
                 given: [0: "{\n    NSNetServicesErrorCode = \"-72008\";\n    NSNetServicesErrorDomain = 10;\n}"], attrs: ["code": "-72008", "permission": "local-network", "role": "browser"]),
            Case(format: "Got invite response [%@] from peer [%@].", kind: .inviteResponse,
                 given: [0: "{ MCNearbyServiceAcceptInviteKey = 1; MCNearbyServiceInviteIDKey = 0; }", 1: peerDesc], attrs: ["accepted": "true"], displayName: peerName),
            Case(format: "Invite timeout for peer [%@] fired.", kind: .inviteTimeout, given: [0: peerDesc], displayName: peerName, displayNameIsTo: true),
            Case(format: "Handle declined invitation from peer with peerID [%@].", kind: .inviteResponse, given: [0: peerDesc], attrs: ["accepted": "false"], displayName: peerName),
            Case(format: "Unexpected (possibly stale) identifier [%@] advertised (expected peer [%@]).Closing connection.", kind: .logStaleIdentifier,
                 given: [0: "0abcdefghij12", 1: peerName], displayName: peerName, displayNameIsTo: true),
            Case(format: "Peer [%@] (advertiser side) already in dictionary [state = %d], decision = %d.", kind: .connectionDecision,
                 given: [0: peerDesc, 1: "2", 2: "0"], attrs: ["duplicate": "true", "decision": "decline", "state": "2"], displayName: peerName),
            Case(format: "Peer [%@] (advertiser side) not in dictionary, creating one, decision = YES.", kind: .connectionDecision, given: [0: peerDesc],
                 attrs: ["decision": "accept"], displayName: peerName),
            Case(format: "Peer [%@] (browser side) decision == NO.", kind: .connectionDecision, given: [0: peerDesc], attrs: ["decision": "decline", "side": "browser"], displayName: peerName),
            Case(format: "Start advertising peer [%@] type [%@].", kind: .logAdvertising, given: [0: peerDesc, 1: "chat-app"],
                 attrs: ["action": "start", "serviceType": "chat-app"], displayName: peerName),
            Case(format: "Stop advertising peer [%@] type [%@].", kind: .logAdvertising, given: [0: peerDesc, 1: "chat-app"],
                 attrs: ["action": "stop"], displayName: peerName),
            Case(format: "Server did publish.", kind: nil),
            Case(format: "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].", kind: .tcpReset,
                 given: [0: "Error Domain=NSPOSIXErrorDomain Code=54 \"Connection reset by peer\"", 4: peerDesc],
                 attrs: ["invitation": "log"], displayName: peerName),
            Case(format: "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].", kind: .tcpRefused,
                 given: [0: "Error Domain=NSPOSIXErrorDomain Code=61 \"Connection refused\"", 4: peerDesc], displayName: peerName),
            Case(format: "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].", kind: .tcpClosed,
                 given: [0: "(null)", 4: peerDesc], displayName: peerName),
            Case(format: "Got invite from peer[%@] for peer[%@].", kind: .invite, given: [0: peerDesc, 1: "<MCPeerID: 0x1 DisplayName = Bob>"], displayName: peerName),
            Case(format: "Got invite connect [%@] from peer [%@].", kind: .inviteConnect, given: [0: "{ MCNearbyServiceConnectionDataKey = <00>; }", 1: peerDesc], displayName: peerName),
            Case(format: "Invitation accepted.", kind: .inviteResponse, attrs: ["accepted": "true"]),
            Case(format: "Invitation declined (accept=%d, session=%@).", kind: .inviteResponse, given: [0: "0", 1: "(null)"], attrs: ["accepted": "false"]),
            Case(format: "Peer %s. Will %s - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].", kind: .connectionDecision,
                 given: [0: "declines", 1: "close connection", 5: peerName], attrs: ["decision": "decline", "action": "close connection"], displayName: peerName),
            // Understood without an event
            Case(format: "Invitation handler called.", kind: nil),
            Case(format: "Heartbeat state for [%08X]: Now [%.3lf] NextFire [%.3lf] WaitUntil [%.3lf].", kind: nil),
            Case(format: "Removing a peer [%@] from peers dictionary.", kind: nil, given: [0: peerDesc]),
        ]
    }

    func value(for conv: Character, _ gen: inout Gen, participant: UInt32) -> String {
        switch conv {
        case "X", "x": FormatStringTests.hex8(participant)
        case "d", "i", "u": String(gen.next() % 7)
        case "f": "12.345"
        case "p": "0x" + String(gen.next() & 0xFFFF_FFFF_FF, radix: 16)
        case "s": "Connecting"
        default: "value with [brackets] and spaces"
        }
    }

    func testEveryMappedFormatStringInAConsoleLine() throws {
        var gen = Gen()
        for c in Self.cases {
            let convs = Self.conversions(c.format)
            let participant = gen.participant()
            var values: [String] = []
            for (i, conv) in convs.enumerated() {
                values.append(c.given[i] ?? value(for: conv, &gen, participant: participant))
            }
            let message = Self.fill(c.format, values)
            let text = "2026-11-22 09:00:00.250000+0100 App[812:33211] [GCKSession] \(message)\n"
            let r = try LogAnalyzer.read(text: text, options: LogOptions(format: .xcode), directory: PeerDirectory())
            XCTAssertEqual(r.unknownCounts.values.reduce(0, +), 0, "not understood: \(message)")
            guard let kind = c.kind else {
                XCTAssertTrue(r.events.isEmpty, "expected no event for \(c.format)")
                continue
            }
            guard r.events.count == 1, let e = r.events.first else {
                XCTFail("expected one event for \(message), got \(r.events.map(\.kind))")
                continue
            }
            XCTAssertEqual(e.kind, kind, c.format)
            XCTAssertEqual(e.t, CaptureTime.days(year: 2026, month: 11, day: 22) * 86400 * CaptureTime.second + 8 * 3600 * CaptureTime.second + 250 * CaptureTime.millisecond)
            XCTAssertEqual(e.evidence, .logLine(input: 0, line: 1))
            XCTAssertTrue(e.source.hasPrefix("log-"), e.source)
            if let pa = c.participantArg {
                let hint = c.participantIsTo ? e.to : e.from
                XCTAssertEqual(hint.participantID, UInt32(values[pa], radix: 16), c.format)
            }
            if let ca = c.channelArg {
                XCTAssertEqual(e.attrs["channel"], values[ca], c.format)
            }
            for (k, v) in c.attrs {
                let want = v.hasPrefix("$") ? values[Int(v.dropFirst()) ?? 0] : v
                XCTAssertEqual(e.attrs[k], want, "\(c.format): attr \(k)")
            }
            if let n = c.displayName {
                XCTAssertEqual((c.displayNameIsTo ? e.to : e.from).displayName, n, c.format)
            }
        }
    }

    func testPeerFoundTeachesTheDirectory() throws {
        var gen = Gen()
        let id = gen.next()
        let p = PeerIdentity.participantID(id)
        let line = Self.fill("Peer found: idString [%@], displayNameAndPID [%@], discoveryInfo [%@].",
                             [PeerIdentity.idString(id), "Alice [iPad] 2,\(Self.hex8(p))", "(null)"])
        let dir = PeerDirectory()
        let r = try LogAnalyzer.read(text: "2026-11-22 09:00:00.000000+0000 App[1:2] [MCNearbyServiceBrowser] \(line)", directory: dir)
        XCTAssertEqual(r.events.map(\.kind), [.found])
        XCTAssertEqual(r.events.first?.from.peerID, id)
        XCTAssertEqual(r.events.first?.from.participantID, p)
        XCTAssertEqual(r.events.first?.from.displayName, "Alice [iPad] 2")
        XCTAssertEqual(dir.peerID(forParticipant: p), id)
        XCTAssertEqual(dir.peerIDs(named: "Alice [iPad] 2"), [id])
        // What the line taught is an identity fact too, at the line (the stages after decoding read that).
        XCTAssertEqual(r.identityFacts.map(\.kind), [.identityLearned])
        XCTAssertEqual(r.identityFacts.map(\.from), [PeerHint(peerID: id, displayName: "Alice [iPad] 2")])
        XCTAssertEqual(r.identityFacts.first?.evidence, .logLine(input: 0, line: 1))
        XCTAssertEqual(r.allEvents.count, 2)
        // A later GCK line names only the participant: the directory maps it back.
        let r2 = try LogAnalyzer.read(text: "2026-11-22 09:00:11.000000+0000 App[1:2] [GCKSession] Not in connected state, so giving up for participant [\(Self.hex8(p))] on channel [0].", directory: dir)
        XCTAssertEqual(r2.events.first.flatMap { $0.from.participantID.flatMap(dir.peerID(forParticipant:)) }, id)
    }

    func testCreatedPeerIDAndTheLowThirtyOneBits() throws {
        let id: UInt64 = 0x5A2D_DCB4_2308_149F   // spec §1.1: 1ddatjp8m3xy7 <-> 2308149F
        XCTAssertEqual(PeerIdentity.idString(id), "1ddatjp8m3xy7")
        let dir = PeerDirectory()
        let r = try LogAnalyzer.read(text: "Created new peerID with idString [1ddatjp8m3xy7], displayNameAndPID [the-air,2308149F].", directory: dir)
        XCTAssertEqual(r.events.first?.kind, .logPeerCreated)
        XCTAssertEqual(r.events.first?.from.peerID, id)
        XCTAssertEqual(r.events.first?.from.participantID, 0x2308_149F)
        XCTAssertEqual(dir.peerID(forParticipant: 0x2308_149F), id)
    }

    func testFormatPatternMatcher() {
        let f = FormatPattern("Peer [%@] changed state from [%@] to [%@]; pd(%@) d(%@) prop(%d).")
        XCTAssertEqual(f.match("Peer [A [x]] changed state from [Connecting] to [Connected]; pd((null)) d(<X: 0x1>) prop(1)."),
                       ["A [x]", "Connecting", "Connected", "(null)", "<X: 0x1>", "1"])
        // The final dot may be missing; trailing spaces are fine.
        XCTAssertEqual(FormatPattern("Disconnecting participant [%08X].").match("Disconnecting participant [0000ABCD]  "), ["0000ABCD"])
        XCTAssertEqual(FormatPattern("Disconnecting participant [%08X].").match("Disconnecting participant [0000ABCD]"), ["0000ABCD"])
        // Wrong shapes do not match.
        XCTAssertNil(FormatPattern("Disconnecting participant [%08X].").match("Disconnecting participant [xyz]."))
        XCTAssertNil(FormatPattern("Socket %d is no longer connected.").match("Socket abc is no longer connected."))
        XCTAssertNil(FormatPattern("Timed out, enforcing clean up.").match("Timed out, enforcing clean up. And more"))
        // A prefix before a format that starts with text is tolerated.
        XCTAssertEqual(FormatPattern("Keep-alive timeout for peer: %@").match("[MyApp] Keep-alive timeout for peer: Bob"), ["Bob"])
        XCTAssertEqual(FormatPattern("100%% of %d").match("100% of 7"), ["7"])
    }

    func testPeerTextReadings() {
        XCTAssertEqual(PeerText.hint("<MCPeerID: 0x2808a8f40 DisplayName = iPhone (2)>").displayName, "iPhone (2)")
        let h = PeerText.hint("the-air,2308149F")
        XCTAssertEqual(h.displayName, "the-air")
        XCTAssertEqual(h.participantID, 0x2308_149F)
        XCTAssertEqual(PeerText.hint("1ddatjp8m3xy7").peerID, 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(PeerText.hint("2308149F").participantID, 0x2308_149F)
        // Thirteen letters that are a name, not an idString.
        XCTAssertNil(PeerText.hint("iphoneofalice").peerID)
        XCTAssertEqual(PeerText.hint("iphoneofalice").displayName, "iphoneofalice")
        let full = PeerText.hint("<MCPeerID: 0x1> idString[1ddatjp8m3xy7] pid64[5A2DDCB42308149F] displayName[the-air]")
        XCTAssertEqual(full.peerID, 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(full.displayName, "the-air")
    }
}
