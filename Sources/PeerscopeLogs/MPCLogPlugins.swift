import Foundation
import PeerscopeCore

/// A plugin made of rules; the built-in plugins are small types over this.
protocol RuleListPlugin: LogPlugin {
    static var id: String { get }
    static var summary: String { get }
    static var example: String { get }
    static var ruleList: [LogRule] { get }
}

extension RuleListPlugin {
    public var descriptor: LogPluginDescriptor {
        LogPluginDescriptor(id: Self.id, summary: Self.summary, matches: Self.ruleList.map(\.shape), example: Self.example)
    }
    public var rules: [LogRule] { Self.ruleList }
}

// Helpers shared by the rules.
func int(_ s: String) -> Int? { Int(s.trimmingSpaces) }
func channelHint(_ s: String) -> Int? { int(s) }

// MARK: - Discovery (MCNearbyServiceBrowser, MCPeerID)

public struct MPCPeerFoundLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-peer-found"
    static let summary = "Browser found a peer: idString + displayNameAndPID (teaches the directory)"
    static let example = "Peer found: idString [1ddatjp8m3xy7], displayNameAndPID [Alice,2308149F], discoveryInfo [(null)]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer found: idString [%@], displayNameAndPID [%@], discoveryInfo [%@].") { c, _ in
            var h = PeerText.hint(c[0])
            var learn: [LogMatch.Learned] = []
            if let (name, p) = PeerText.displayNameAndPID(c[1]) {
                h.displayName = name
                if h.participantID == nil { h.participantID = p }
                if let id = h.peerID {
                    learn.append(.init(peerID: id, displayName: name))
                    if PeerIdentity.participantID(id) != p { h.participantID = PeerIdentity.participantID(id) }
                }
            }
            let info = c[2].trimmingSpaces
            return LogMatch(kind: .found, from: h, attrs: .typed([.discoveryInfo: info.isEmpty || info == "(null)" ? "none" : "present"]), learn: learn)
        },
    ]
}

public struct MPCPeerCreatedLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-peer-created"
    static let summary = "An MCPeerID was created (the local peer): idString + displayNameAndPID"
    static let example = "Created new peerID with idString [0a1b2c3d4e5f6], displayNameAndPID [Bob,1A2B3C4D]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Created new peerID with idString [%@], displayNameAndPID [%@].") { c, _ in
            var h = PeerText.hint(c[0])
            var learn: [LogMatch.Learned] = []
            if let (name, p) = PeerText.displayNameAndPID(c[1]) {
                h.displayName = name
                if h.participantID == nil { h.participantID = p }
                if let id = h.peerID { learn.append(.init(peerID: id, displayName: name)) }
            }
            return LogMatch(kind: .logPeerCreated, from: h, learn: learn)
        },
        LogRule(format: "Created peerID from data[%@], idString[%@], leftover[%lu].") { c, _ in
            LogMatch(kind: nil, from: PeerText.hint(c[1]))
        },
    ]
}

public struct MPCAdvertisingLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-advertising"
    static let summary = "The local peer starts or stops advertising (names the device that wrote the log)"
    static let example = "Start advertising peer [Bob,1A2B3C4D] type [chat-app]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Start advertising peer [%@] type [%@].") { c, _ in
            LogMatch(kind: .logAdvertising, from: PeerText.hint(c[0]), attrs: .typed([.action: "start", .serviceType: c[1].trimmingSpaces]))
        },
        LogRule(format: "Stop advertising peer [%@] type [%@].") { c, _ in
            LogMatch(kind: .logAdvertising, from: PeerText.hint(c[0]), attrs: .typed([.action: "stop", .serviceType: c[1].trimmingSpaces]))
        },
        LogRule(format: "Server did publish.") { _, _ in .consumed },
        LogRule(format: "Server stopped.") { _, _ in .consumed },
    ]
}

public struct MPCPeerLostLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-peer-lost"
    static let summary = "Browser lost a peer (Bonjour service removed)"
    static let example = "Peer lost: idString [1ddatjp8m3xy7] moreComing [0]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer lost: idString [%@] moreComing [%d].") { c, _ in
            LogMatch(kind: .lost, from: PeerText.hint(c[0]), attrs: .typed([.moreComing: c[1]]))
        },
        LogRule(format: "Removing a peer [%@] from peers dictionary.") { _, _ in .consumed },
    ]
}

// MARK: - Invitations

public struct MPCInviteLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-invite"
    static let summary = "Advertiser got an invitation (and the browser's follow-up connect)"
    static let example = "Got invite from peer[<MCPeerID: 0x283c0c2a0 DisplayName = Alice>] for peer[<MCPeerID: 0x283c0c2b0 DisplayName = Bob>]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Got invite from peer[%@] for peer[%@].") { c, _ in
            LogMatch(kind: .invite, from: PeerText.hint(c[0]), to: PeerText.hint(c[1]), context: .invitationRemoteIsFrom)
        },
        LogRule(format: "Got invite connect [%@] from peer [%@].") { c, _ in
            LogMatch(kind: .inviteConnect, from: PeerText.hint(c[1]), context: .invitationRemoteIsFrom)
        },
    ]
}

public struct MPCInviteResponseLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-invite-response"
    static let summary = "Invitation accepted or declined (either side)"
    static let example = "Invitation declined (accept=0, session=(null))."
    static let ruleList: [LogRule] = [
        LogRule(format: "Got invite response [%@] from peer [%@].") { c, _ in
            var attrs: [String: String] = [:]
            let d = c[0].replacingOccurrences(of: " ", with: "")
            if d.contains("MCNearbyServiceAcceptInviteKey=1") || d.contains("MCNearbyServiceAcceptInviteKey=true") { attrs[.accepted] = true }
            if d.contains("MCNearbyServiceAcceptInviteKey=0") || d.contains("MCNearbyServiceAcceptInviteKey=false") { attrs[.accepted] = false }
            return LogMatch(kind: .inviteResponse, from: PeerText.hint(c[1]), attrs: attrs, context: .invitationRemoteIsFrom)
        },
        // The advertiser answers the invitation it got last: `from` = itself, `to` = the inviter.
        LogRule(format: "Invitation accepted.") { _, _ in
            LogMatch(kind: .inviteResponse, attrs: .typed([.accepted: true]), context: .answersInvitation)
        },
        LogRule(format: "Invitation declined (accept=%d, session=%@).") { c, _ in
            LogMatch(kind: .inviteResponse, attrs: .typed([.accepted: c[0] != "0"]), context: .answersInvitation)
        },
        LogRule(format: "Handle declined invitation from peer with peerID [%@].") { c, _ in
            LogMatch(kind: .inviteResponse, from: PeerText.hint(c[0]), attrs: .typed([.accepted: false]))
        },
        LogRule(format: "Invitation handler called.") { _, _ in .consumed },
    ]
}

public struct MPCInviteTimeoutLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-invite-timeout"
    static let summary = "Browser's invitation timer fired (treated as a decline)"
    static let example = "Invite timeout for peer [<MCPeerID: 0x283c0c2a0 DisplayName = Alice>] fired."
    static let ruleList: [LogRule] = [
        LogRule(format: "Invite timeout for peer [%@] fired.") { c, _ in
            LogMatch(kind: .inviteTimeout, to: PeerText.hint(c[0]))
        },
    ]
}

public struct MPCConnectionDecisionLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-decision"
    static let summary = "Invitation-channel decisions: duplicate connections, tie-break approves/declines"
    static let example = "Peer [<MCPeerID: 0x283c0c2a0 DisplayName = Alice>] (advertiser side) already in dictionary [state = 2], decision = 0."
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer [%@] (advertiser side) already in dictionary [state = %d], decision = %d.") { c, _ in
            var a: [String: String] = .typed([.side: "advertiser", .state: c[1], .decision: c[2] == "0" ? "decline" : "accept"])
            a[.alreadyInDictionary] = true
            if c[1] == "2" { a[.duplicate] = true }
            return LogMatch(kind: .connectionDecision, from: PeerText.hint(c[0]), attrs: a)
        },
        LogRule(format: "Peer [%@] (advertiser side) not in dictionary, creating one, decision = YES.") { c, _ in
            LogMatch(kind: .connectionDecision, from: PeerText.hint(c[0]), attrs: .typed([.side: "advertiser", .decision: "accept"]))
        },
        LogRule(format: "Peer [%@] (browser side) decision == NO.") { c, _ in
            LogMatch(kind: .connectionDecision, from: PeerText.hint(c[0]), attrs: .typed([.side: "browser", .decision: "decline"]))
        },
        LogRule(format: "Peer %s. Will %s - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            let d = c[0].hasPrefix("approve") ? "accept" : (c[0].hasPrefix("decline") ? "decline" : c[0])
            return LogMatch(kind: .connectionDecision, from: PeerText.hint(c[5]), attrs: .typed([.decision: d, .action: c[1]]))
        },
        LogRule(format: "Peer already in state [%@]") { c, _ in
            LogMatch(kind: .connectionDecision, attrs: .typed([.alreadyInState: PeerText.sessionState(c[0])]))
        },
    ]
}

public struct MPCInvitationStreamEndLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-stream-end"
    static let summary = "The invitation channel's stream ended: reset by the peer (ECONNRESET), refused, or closed"
    static let example = "End of stream, error: Error Domain=NSPOSIXErrorDomain Code=54 \"Connection reset by peer\" - ptr [0x1] inputStream [0x2] outputStream [0x3] remote [1ddatjp8m3xy7+Alice]."
    static let ruleList: [LogRule] = [
        LogRule(format: "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            let error = String(c[0].trimmingSpaces.prefix(200))
            let squashed = error.lowercased()
            // The remote side is `from`: it reset, refused or closed the channel.
            let kind: EventKind
            if squashed.contains("code=54") || squashed.contains("reset by peer") {
                kind = .tcpReset
            } else if squashed.contains("code=61") || squashed.contains("refused") {
                kind = .tcpRefused
            } else {
                kind = .tcpClosed
            }
            return LogMatch(kind: kind, from: PeerText.hint(c[4]), attrs: .typed([.invitation: "log", .error: error]))
        },
    ]
}

public struct MPCStaleIdentifierLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-stale-identifier"
    static let summary = "Browser dialled a stale Bonjour record (Hello named another peer)"
    static let example = "Unexpected (possibly stale) identifier [0abc] advertised (expected peer [1ddatjp8m3xy7]).Closing connection."
    static let ruleList: [LogRule] = [
        LogRule(format: "Unexpected (possibly stale) identifier [%@] advertised (expected peer [%@]).Closing connection.") { c, _ in
            LogMatch(kind: .logStaleIdentifier, from: PeerText.hint(c[0]), to: PeerText.hint(c[1]))
        },
    ]
}

// MARK: - MCSession

public struct MPCStateChangeLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-state"
    static let summary = "MCSession peer state changes (Not Connected / Connecting / Connected)"
    static let example = "PeerID [Alice] change state from [Not Connected] to [Connecting]."
    static let ruleList: [LogRule] = [
        LogRule(format: "PeerID [%@] change state from [%@] to [%@].") { c, _ in
            LogMatch(kind: .stateChange, from: PeerText.hint(c[0]),
                     attrs: .typed([.from: PeerText.sessionState(c[1]), .to: PeerText.sessionState(c[2])]))
        },
        LogRule(format: "Peer [%@] changed state from [%@] to [%@]; pd(%@) d(%@) prop(%d).") { c, _ in
            LogMatch(kind: .stateChange, from: PeerText.hint(c[0]),
                     attrs: .typed([.from: PeerText.sessionState(c[1]), .to: PeerText.sessionState(c[2])]))
        },
        LogRule(format: "No peerState for peerID [%@], newState [%@]. Will not callback.") { _, _ in .consumed },
    ]
}

public struct MPCEncryptionLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-encryption"
    static let summary = "Peer refused for an incompatible encryption preference (required vs none)"
    static let example = "Peer [<MCPeerID: 0x283c0c2a0 DisplayName = Alice>] has incompatible encryption preference [None]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer [%@] has incompatible encryption preference [%@].") { c, _ in
            LogMatch(kind: .encryptionIncompatible, from: PeerText.hint(c[0]), attrs: .typed([.preference: c[1]]))
        },
    ]
}

public struct MPCSessionInitLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-session-init"
    static let summary = "MCSession created: local peer and encryption preference"
    static let example = "MCSession init done! [MCS: 1.0 - 1, sessionID=1234 peerID=<MCPeerID: 0x1 DisplayName = Bob> securityIdentity=NO encryptionPreference=Required]."
    static let ruleList: [LogRule] = [
        LogRule(format: "MCSession init done! [MCS: %s - %s, sessionID=%@ peerID=%@ securityIdentity=%s encryptionPreference=%@].") { c, _ in
            var a: [String: String] = .typed([.encryption: c[5]])
            a[text: .securityIdentity] = c[4]   // as printed (`YES`, `NO`)
            return LogMatch(kind: .logSessionInit, from: PeerText.hint(c[3]), attrs: a)
        },
    ]
}

public struct MPCMeshFailedLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-mesh-failed"
    static let summary = "MCSession could not build the mesh"
    static let example = "Mesh establishment failed (80000004)."
    static let ruleList: [LogRule] = [
        LogRule(format: "Mesh establishment failed (%08lX).") { c, _ in LogMatch(kind: .logMeshFailed, attrs: .typed([.code: c[0]])) },
    ]
}

public struct MPCSessionSendErrorLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-session-send-error"
    static let summary = "MCSession/AGP could not send (recipients not connected, AGPSendTo failed)"
    static let example = "Failed to send data because recipients (\"<MCPeerID: 0x1 DisplayName = Alice>\") are not connected."
    static let ruleList: [LogRule] = [
        LogRule(format: "Failed to send data because recipients %@ are not connected.") { c, _ in
            var to = PeerHint.unknown
            // One recipient: `( "<MCPeerID: … DisplayName = X>" )`.
            let r = c[0].trimmingSpaces
            if let s = r.range(of: "<MCPeerID:"), let e = r[s.lowerBound...].firstIndex(of: ">"), r.components(separatedBy: "<MCPeerID:").count == 2 {
                to = PeerText.hint(r[s.lowerBound...e])
            }
            return LogMatch(kind: .sendError, to: to, attrs: .typed([.layer: "session", .error: "not connected"]))
        },
        LogRule(format: "AGPSendTo failed with status=%08X.") { c, _ in
            LogMatch(kind: .sendError, attrs: .typed([.layer: "agp", .status: c[0]]), context: .nearbyParticipantAsTo)
        },
    ]
}

// MARK: - GCK session (ICE, DTLS, OSPF)

public struct MPCICEScheduledLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-ice-scheduled"
    static let summary = "GCK armed the 10 s ICE connection timeout for a channel (handshake start)"
    static let example = "Scheduling ICE connection timeout for participant [2308149F] on channel [0]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Scheduling ICE connection timeout for participant [%08X] on channel [%d].") { c, _ in
            LogMatch(kind: .logICEScheduled, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
    ]
}

public struct MPCICETimeoutLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-ice-timeout"
    static let summary = "ICE connection timeout expired on a channel"
    static let example = "ICE timeout expired for participant [2308149F] on channel [0] state [ICE]."
    static let ruleList: [LogRule] = [
        LogRule(format: "ICE timeout expired for participant [%08X] on channel [%d] state [%s].") { c, _ in
            LogMatch(kind: .iceTimeout, from: PeerText.participantHint(c[0]), attrs: .typed([.state: c[2]]), channel: int(c[1]))
        },
    ]
}

public struct MPCDTLSTimeoutLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-dtls-timeout"
    static let summary = "DTLS handshake timeout expired on a channel"
    static let example = "DTLS Handshake timeout expired for participant [2308149F] on channel [1] DTLS state [DTLSNotConnected]."
    static let ruleList: [LogRule] = [
        LogRule(format: "DTLS Handshake timeout expired for participant [%08X] on channel [%d] DTLS state [%s].") { c, _ in
            LogMatch(kind: .dtlsTimeout, from: PeerText.participantHint(c[0]), attrs: .typed([.state: c[2]]), channel: int(c[1]))
        },
    ]
}

public struct MPCDTLSFailedLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-dtls-failed"
    static let summary = "DTLS handshake call failed, or a peer certificate was refused"
    static let example = "Perform DTLS Handshake for participant [2308149F] on channel [0] failed with hResult [-2146697208]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Perform DTLS Handshake for participant [%08X] on channel [%d] failed with hResult [%ld].") { c, _ in
            LogMatch(kind: .logDTLSFailed, from: PeerText.participantHint(c[0]), attrs: .typed([.hResult: c[2]]), channel: int(c[1]))
        },
        LogRule(format: "Certificate from peer [%@] is %s.") { c, _ in
            c[1] == "accepted" ? LogMatch(kind: .dtlsEstablished, from: PeerText.hint(c[0]), attrs: .typed([.certificate: "accepted"]))
                : LogMatch(kind: .logCertificateRejected, from: PeerText.hint(c[0]), attrs: .typed([.certificate: c[1]]))
        },
        LogRule(format: "Failed to copy peer trust for participant [%08X].") { c, _ in
            LogMatch(kind: .logCertificateRejected, from: PeerText.participantHint(c[0]), attrs: .typed([.reason: "no peer trust"]))
        },
        LogRule(format: "Trust for participant [%08X] is expected but SSLCopyPeerTrust returned NULL.") { c, _ in
            LogMatch(kind: .logCertificateRejected, from: PeerText.participantHint(c[0]), attrs: .typed([.reason: "no peer trust"]))
        },
    ]
}

public struct MPCDTLSEstablishedLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-dtls-established"
    static let summary = "DTLS context set up for a participant (wording not verbatim in the reference: loose match)"
    static let example = "DTLSContext has been set up for participant [2308149F] on channel [0]."
    static let ruleList: [LogRule] = [
        LogRule(pattern: #"DTLSContext has been set up(?:.*?\[(?<participant>[0-9A-Fa-f]{1,8})\])?(?:.*?channel\D*(?<channel>\d+))?"#,
                needle: "DTLSContext has been set up") { c, _ in
            LogMatch(kind: .dtlsEstablished, from: c.named["participant"].map(PeerText.participantHint) ?? .unknown,
                     channel: c.named["channel"].flatMap(int))
        },
    ]
}

public struct MPCGCKTimeoutLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-gck-timeout"
    static let summary = "GCK wait timers expired: Hello, DD, LSAACK, Heartbeat (keep-alive), Unknown"
    static let example = "Heartbeat timeout expired for participant [2308149F] on channel [0] state [Connected]."
    static let ruleList: [LogRule] = ["Hello", "DD", "LSAACK", "Heartbeat", "Unknown"].map { wait in
        LogRule(format: "\(wait) timeout expired for participant [%08X] on channel [%d] state [%s].") { c, _ in
            LogMatch(kind: .gckTimeout, from: PeerText.participantHint(c[0]), attrs: .typed([.wait: wait, .state: c[2]]), channel: int(c[1]))
        }
    }
}

public struct MPCGivingUpLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-giving-up"
    static let summary = "Handshake timeout signature: a channel not connected when its ICE/DTLS timer fired is torn down"
    static let example = "Not in connected state, so giving up for participant [2308149F] on channel [0]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Not in connected state, so giving up for participant [%08X] on channel [%d].") { c, _ in
            LogMatch(kind: .gckGivingUp, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
    ]
}

public struct MPCTimeoutIgnoredLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-timeout-ignored"
    static let summary = "A handshake timer fired on a channel that was already connected (harmless)"
    static let example = "Participant [2308149F] on channel [0] already connected, ignore this timeout."
    static let ruleList: [LogRule] = [
        LogRule(format: "Participant [%08X] on channel [%d] already connected, ignore this timeout.") { c, _ in
            LogMatch(kind: .logTimeoutIgnored, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
    ]
}

public struct MPCRetransmitLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-retransmit"
    static let summary = "GCK retransmitted a Hello, DD, LSA or Heartbeat (the peer did not answer)"
    static let example = "Retransmitting Heartbeat with SN [12] to participant [2308149F] over channel [0]."
    static let ruleList: [LogRule] = [("Hello", EventKind.gckHello), ("DD", .gckDD), ("LSA", .gckLSA), ("Heartbeat", .gckHeartbeat)].map { name, kind in
        LogRule(format: "Retransmitting \(name) with SN [%d] to participant [%08X] over channel [%d].") { c, _ in
            var a: [String: String] = .typed([.retransmit: "true"])
            a[text: .sn] = c[0]   // as printed
            return LogMatch(kind: kind, to: PeerText.participantHint(c[1]), attrs: a, channel: int(c[2]))
        }
    } + [
        LogRule(format: "Heartbeat state for [%08X]: Now [%.3lf] NextFire [%.3lf] WaitUntil [%.3lf].") { _, _ in .consumed },
        LogRule(format: "Removing duplicate heartbeat.") { _, _ in .consumed },
        LogRule(format: "Expected heartbeat in the retry list not found for participant [%08X] channel [%d].") { _, _ in .consumed },
    ]
}

public struct MPCDTLSSendErrorLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-dtls-send-error"
    static let summary = "DTLS packet could not be sent (sendmsg error, SSLWrite failed)"
    static let example = "Failed to send a DTLS packet with 120 bytes; sendmsg error: No route to host (65)."
    static let ruleList: [LogRule] = [
        LogRule(format: "Failed to send a DTLS packet with %d bytes; sendmsg error: %s (%d).") { c, _ in
            LogMatch(kind: .sendError, attrs: .typed([.layer: "dtls", .bytes: c[0], .error: c[1], .errno: c[2]]), context: .nearbyParticipantAsTo)
        },
        LogRule(format: "SSLWrite failed, packet was not sent for participant [%08X] channelID [%d] DTLS context [%p] pCList [%p]; SSLError = %s (%ld): errno = %s (%d).") { c, _ in
            LogMatch(kind: .sendError, to: PeerText.participantHint(c[0]),
                     attrs: .typed([.layer: "ssl", .sslError: c[4], .sslCode: c[5], .error: c[6], .errno: c[7]]), channel: int(c[1]))
        },
    ]
}

public struct MPCUDPSendErrorLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-udp-send-error"
    static let summary = "GCK could not send a UDP packet, marked a channel invalid, or lost its socket"
    static let example = "Failed to send Hello packet to participant 2308149F. Will mark channel 1 as invalid."
    static let ruleList: [LogRule] = [
        LogRule(format: "Send UDP packet failed with error (%X).") { c, _ in LogMatch(kind: .sendError, attrs: .typed([.layer: "udp", .code: c[0]]), context: .nearbyParticipantAsTo) },
        LogRule(format: "SendUDPPacketCList failed with error (%X).") { c, _ in LogMatch(kind: .sendError, attrs: .typed([.layer: "udp", .code: c[0]]), context: .nearbyParticipantAsTo) },
        LogRule(format: "Sent %s packet to participant %08X on channel %d with error %d.") { c, _ in
            LogMatch(kind: .sendError, to: PeerText.participantHint(c[1]), attrs: .typed([.layer: "udp", .packet: c[0], .code: c[3]]), channel: int(c[2]))
        },
        LogRule(format: "Failed to send %s packet to participant %08X. Will mark channel %d as invalid.") { c, _ in
            LogMatch(kind: .sendError, to: PeerText.participantHint(c[1]), attrs: .typed([.layer: "udp", .packet: c[0]]).merging(.typed([.channelInvalid: true])) { a, _ in a },
                     channel: int(c[2]))
        },
        LogRule(format: "Socket %d is no longer connected.") { c, _ in LogMatch(kind: .sendError, attrs: .typed([.layer: "socket", .socket: c[0]]), context: .nearbyParticipantAsTo) },
        LogRule(format: "SendHello failed with error (%X).") { c, _ in LogMatch(kind: .sendError, attrs: .typed([.layer: "gck", .packet: "Hello", .code: c[0]]), context: .nearbyParticipantAsTo) },
        LogRule(format: "Failed to send Hello with error %X.") { c, _ in LogMatch(kind: .sendError, attrs: .typed([.layer: "gck", .packet: "Hello", .code: c[0]]), context: .nearbyParticipantAsTo) },
        LogRule(format: "WaitForHello failed with error (%X).") { c, _ in LogMatch(kind: .gckTimeout, attrs: .typed([.wait: "Hello", .code: c[0]]), context: .nearbyParticipantAsTo) },
    ]
}

public struct MPCDisconnectLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-disconnect"
    static let summary = "GCK disconnected a participant (no route, explicit disconnect)"
    static let example = "Disconnecting participant [2308149F]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Disconnecting participant [%08X].") { c, _ in LogMatch(kind: .disconnected, from: PeerText.participantHint(c[0])) },
        LogRule(format: "No route to participant %s[%08X] -- disconnected.") { c, _ in
            LogMatch(kind: .disconnected, from: PeerText.participantHint(c[1]), attrs: .typed([.reason: "no route"]))
        },
        LogRule(format: "No peerID, no event queue for participant [%08X], peer is already disconnected.Ignoring this disconnect event.") { _, _ in .consumed },
    ]
}

public struct MPCChannelClosedLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-channel-closed"
    static let summary = "GCK closed a participant's channel(s), or timed out and cleaned up"
    static let example = "Closing connection to participant [2308149F] on channel [0]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Closing connection to participant [%08X] on channel [%d].") { c, _ in
            LogMatch(kind: .logChannelClosed, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
        LogRule(format: "Closing clist for participant [%08X] channel [%d].") { c, _ in
            LogMatch(kind: .logChannelClosed, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
        LogRule(format: "Scheduling to close CList corresponding to participant (%08X), channel %d.") { c, _ in
            LogMatch(kind: .logChannelClosed, from: PeerText.participantHint(c[0]), channel: int(c[1]))
        },
        LogRule(format: "Disposing connection to participant %08X. Stop ICE check.") { _, _ in .consumed },
        LogRule(format: "Timed out, enforcing clean up.") { _, _ in LogMatch(kind: .logCleanupTimeout) },
    ]
}

public struct MPCPermissionLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-permission"
    static let summary = "Browsing/advertising refused: local-network permission or NSBonjourServices missing (-72008, NoAuth)"
    static let example = "NSNetServiceBrowser did not search with error dict [{ NSNetServicesErrorCode = \"-72008\"; NSNetServicesErrorDomain = 10; }]."
    static func code(_ s: String) -> String? {
        guard let r = s.range(of: "NSNetServicesErrorCode") else { return nil }
        let digits = s[r.upperBound...].drop(while: { !$0.isNumber && $0 != "-" })
        let v = digits.prefix(while: { $0.isNumber || $0 == "-" })
        return v.isEmpty ? nil : String(v)
    }
    static func attrs(_ role: String, _ dict: String) -> [String: String] {
        var a: [String: String] = .typed([.role: role])
        if let c = code(dict) { a[.code] = c }
        if a[.code] == "-72008" || dict.contains("-65555") || dict.contains("NoAuth") { a[.permission] = "local-network" }
        return a
    }
    static let ruleList: [LogRule] = [
        LogRule(format: "NSNetServiceBrowser did not search with error dict [%@].") { c, _ in
            LogMatch(kind: .permissionError, attrs: attrs("browser", c[0]))
        },
        LogRule(pattern: #"(?s)[Dd]id not publish:?\s*(?:with )?error ?[Dd]ict\s*\[?(?<dict>.*)"#, needle: "did not publish") { c, _ in
            LogMatch(kind: .permissionError, attrs: attrs("advertiser", c.named["dict"] ?? ""))
        },
        LogRule(pattern: #"(?<code>-72008|-65555|NoAuth)"#, needle: "-72008") { c, _ in
            LogMatch(kind: .permissionError, attrs: .typed([.code: c.named["code"] ?? "-72008", .permission: "local-network"]))
        },
        LogRule(pattern: #"NoAuth|-65555"#, needle: "-65555") { _, _ in
            LogMatch(kind: .permissionError, attrs: .typed([.code: "-65555", .permission: "local-network"]))
        },
    ]
}

// MARK: - Old iOS: AVConference's ViceroyTrace, GameKit failover

public struct ViceroyICELogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-viceroy-ice"
    static let summary = "iOS <= 13 ICE errors from AVConference ([ViceroyTrace] [ICE][ERROR])"
    static let example = "[ViceroyTrace] [ICE][ERROR] Send BINDING_REQUEST failed(C01A0041)."

    /// The ICE call id is the participant: printed in decimal by AVConference (`(383054229)`), in hex
    /// when it has hex letters or a `0x`. Not a 31-bit value: not a participant.
    static func participant(callID s: String) -> UInt32? {
        let t = s.trimmingSpaces
        let v: UInt64?
        if t.hasPrefix("0x") || t.hasPrefix("0X") {
            v = UInt64(t.dropFirst(2), radix: 16)
        } else if t.allSatisfy(\.isNumber) {
            v = UInt64(t, radix: 10)
        } else {
            v = UInt64(t, radix: 16)
        }
        guard let v, v <= 0x7FFF_FFFF else { return nil }
        return UInt32(v)
    }
    static let ruleList: [LogRule] = [
        // An ICE connectivity check the local side could not send: part of the old handshake-timeout
        // signature (spec §2.3), not a permission or channel problem. The participant is the one the
        // ICEStopConnectivityCheck line beside it names.
        LogRule(pattern: #"\[ICE\]\[ERROR\].*?Send BINDING_REQUEST failed\((?<code>[0-9A-Fa-f]+)\)"#, needle: "BINDING_REQUEST failed") { c, _ in
            LogMatch(kind: .iceError, attrs: .typed([.layer: "ice", .code: c.named["code"] ?? "", .legacy: "viceroy", .detail: "Send BINDING_REQUEST failed"]),
                     context: .nearbyParticipantAsTo)
        },
        LogRule(pattern: #"ICEStopConnectivityCheck\(\) found no ICE check(?:.*?\((?<call>(?:0x)?[0-9A-Fa-f]+)\))?"#, needle: "found no ICE check") { c, _ in
            var a: [String: String] = .typed([.legacy: "viceroy"])
            var from = PeerHint.unknown
            if let call = c.named["call"] {
                a[.call] = call
                if let p = ViceroyICELogPlugin.participant(callID: call) { from = PeerHint(participantID: p) }
            }
            return LogMatch(kind: .iceTimeout, from: from, attrs: a, context: from.isEmpty ? .nearbyParticipantAsFrom : .none)
        },
        LogRule(pattern: #"\[ViceroyTrace\].*\[ICE\]\[ERROR\]\s*(?<detail>.*)"#, needle: "[ICE][ERROR]") { c, _ in
            LogMatch(kind: .iceError, attrs: .typed([.legacy: "viceroy", .detail: String((c.named["detail"] ?? "").prefix(160))]),
                     context: .nearbyParticipantAsTo)
        },
    ]
}

public struct GCKFailoverLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-gck-failover"
    static let summary = "Old GameKit/GCK keep-alive timeout: attempt_failover … Connection timed out for [P]"
    static let example = "attempt_failover: Connection timed out for [2308149F] (in clstate 3)"
    static let ruleList: [LogRule] = [
        LogRule(pattern: #"Connection timed out for \[?(?:0x)?(?<participant>[0-9A-Fa-f]{1,8})\]?(?:.*?clstate (?<clstate>\d+))?"#,
                needle: "Connection timed out for") { c, _ in
            var a: [String: String] = .typed([.wait: "Heartbeat", .legacy: "failover"])
            if let s = c.named["clstate"] { a[.clstate] = s }
            return LogMatch(kind: .gckTimeout, from: c.named["participant"].map(PeerText.participantHint) ?? .unknown, attrs: a)
        },
    ]
}
