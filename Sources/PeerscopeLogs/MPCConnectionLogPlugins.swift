import Foundation
import PeerscopeCore

// The rest of the framework's format strings (spec §2.2): GCK connection set-up, routing, the
// invitation channel's framing, browser/advertiser bookkeeping. Lines that matter map to events
// (§2.3); chatter is understood without an event so that it never counts as unknown.

/// `remote [%@]` of the invitation channel lines: `idString+displayName`.
func remoteHint(_ s: String) -> PeerHint {
    let t = s.trimmingSpaces
    if let plus = t.firstIndex(of: "+") {
        let head = t[..<plus]
        if PeerText.looksLikeIDString(head), let id = PeerIdentity.parse(idString: head) {
            let name = String(t[t.index(after: plus)...])
            return PeerHint(peerID: id, displayName: name.isEmpty ? nil : name)
        }
    }
    return PeerText.hint(t)
}

/// A short error text (an NSError description) without anything after 200 characters.
func errorText(_ s: String) -> String { String(s.trimmingSpaces.prefix(200)) }

/// Whether an error text says the connection was reset or refused.
func connectionErrorKind(_ s: String) -> String? {
    let l = s.lowercased()
    if l.contains("code=54") || l.contains("reset by peer") { return "reset" }
    if l.contains("code=61") || l.contains("refused") { return "refused" }
    return nil
}

// MARK: - GCK connection set-up

public struct MPCConnectionSetupLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-connection-setup"
    static let summary = "GCK prepares a participant's connection: interfaces, sockets, ICE check bookkeeping (no event)"
    static let example = "For remoteID[2308149F]: Start listening on 192.0.2.11:16402 (en0) sock 12."
    static let ruleList: [LogRule] = [
        "Insert signal block for participant [%08X] at slot %d.",
        "ICE StopConnectivityCheck took (%0.6f seconds) for participant [%08X].",
        "%d interfaces found for participant [%08X].",
        "%d valid interfaces found for participant [%08X].",
        "For remoteID[%08X]: Start listening on %s (%s) sock %d.",
        "Added interface for participant [%08X]: proto %d.",
        "Update destination IPPort for participant %08X, channel %d from %s to %s.",
        "Unrecognized interface priority type [%d].",
        "Don't read from socket %d channel %d for disconnected participant %08X.",
        "GCKSessionCreate: [GKS: %s - %s].",
        "GCKSessionRelease: Disposing all connections [GKS: %s - %s].",
        "Stop ICE connectionchecks [GKS: %s - %s].",
        "RecvProc thread end (%X).",
        "SendProc thread end (%X).",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

public struct MPCPrepareConnectionLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-prepare-connection"
    static let summary = "A second PrepareConnection for a participant while one is waiting: duplicate-connection evidence"
    static let example = "Another PrepareConnection is already waiting for participant [2308149F], bailing."
    static let ruleList: [LogRule] = [
        LogRule(format: "Another PrepareConnection is already waiting for participant [%08X], bailing.") { c, _ in
            LogMatch(kind: .connectionDecision, from: PeerText.participantHint(c[0]),
                     attrs: ["decision": "decline", "duplicate": "true", "reason": "another PrepareConnection already waiting"])
        },
    ]
}

public struct MPCSocketSetupLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-socket-setup"
    static let summary = "GCK could not set up a socket: AWDL disabled, bind failed on every port, a bad interface"
    static let example = "Bind failed (8000000A) for all ports in range."
    static let ruleList: [LogRule] = [
        LogRule(format: "AWDL is disabled. Will not create socket for %s.") { c, _ in
            LogMatch(kind: .logSocketSetup, attrs: ["awdl": "disabled", "interface": c[0].trimmingSpaces])
        },
        LogRule(format: "Bind failed (%X) for all ports in range.") { c, _ in
            LogMatch(kind: .logSocketError, attrs: ["layer": "bind", "code": c[0]])
        },
        LogRule(format: "Invalid type [%s] or bsd name [%s] for participant [%08X] channelID [%d].") { c, _ in
            LogMatch(kind: .logSocketError, to: PeerText.participantHint(c[2]),
                     attrs: ["layer": "interface", "type": c[0].trimmingSpaces, "interface": c[1].trimmingSpaces], channel: int(c[3]))
        },
    ]
}

// MARK: - OSPF routing and GCK handshake packets

public struct MPCRoutingLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-routing"
    static let summary = "GCK's OSPF routing table and neighbour bookkeeping (no event)"
    static let example = "My routing table: 2 nodes."
    static let ruleList: [LogRule] = [
        "Deleting neighbor representing participant %08X.",
        "Deleting node for participant %08X.",
        "My routing table: %d nodes.",
        "Participant %08X routing table: %d nodes.",
        "Node %d [%08X]: NextHop[%08X], SN[%u], LSASN [%u], New flag[%d], From[%08X], # of neighbors [%d]",
        // printed with a leading tab (`\tneighbor %d: …`); the matcher tolerates text before a format
        "neighbor %d: %08X - RTT[%u]",
        "Updated routing table.",
        "I am participant %08X. Just sent LSAs to %d participants.",
        "Requesting LSA update for node with ID [%08X] serial number [%d].",
        "Participant %08X: sentDD [%d], receivedDD [%d] address [%s].",
        "WaitFor [%s] timerAdd [%.1lf] nextFire [%.1lf] waitUntil [%.1lf].",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

public struct MPCGCKSendLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-gck-send"
    static let summary = "GCK sent a DD, LSA or LSAACK to a participant (session set-up after ICE/DTLS)"
    static let example = "Sending LSA with SN [0] to participant [2308149F]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Sending DD%s with %d bytes to participant %08X.") { c, _ in
            LogMatch(kind: .gckDD, to: PeerText.participantHint(c[2]), attrs: ["direction": "sent", "bytes": c[1]])
        },
        LogRule(format: "Sending LSA with SN [%d] to participant [%08X].") { c, _ in
            LogMatch(kind: .gckLSA, to: PeerText.participantHint(c[1]), attrs: ["direction": "sent", "sn": c[0]])
        },
        LogRule(format: "Sending LSAACK with SN [%d] to participant [%08X].") { c, _ in
            LogMatch(kind: .gckLSAACK, to: PeerText.participantHint(c[1]), attrs: ["direction": "sent", "sn": c[0]])
        },
    ]
}

public struct MPCPacketErrorLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-packet-error"
    static let summary = "GCK received a packet it could not use: failed checksum, OSPFParse failed, bad fragments, compression"
    static let example = "Incoming packet for participant (2308149F) failed checksum check -> given (1234) calculated (04x)."
    static let ruleList: [LogRule] = [
        // The framework's format has a literal "(04x)" (a missing %); a fixed build would print the value.
        LogRule(format: "Incoming packet for participant (%08X) failed checksum check -> given (%04x) calculated (04x).") { c, _ in
            LogMatch(kind: .checksumError, from: PeerText.participantHint(c[0]), attrs: ["layer": "gck", "given": c[1]])
        },
        LogRule(format: "Incoming packet for participant (%08X) failed checksum check -> given (%04x) calculated (%04x).") { c, _ in
            LogMatch(kind: .checksumError, from: PeerText.participantHint(c[0]), attrs: ["layer": "gck", "given": c[1], "calculated": c[2]])
        },
        LogRule(format: "OSPFParse failed with error %d.") { c, _ in
            LogMatch(kind: .checksumError, attrs: ["layer": "ospf", "type": "OSPFParse error \(c[0])", "error": c[0]], context: .nearbyParticipantAsFrom)
        },
        LogRule(format: "Unknown OSPF type %d.") { c, _ in
            LogMatch(kind: .logPacketDropped, attrs: ["layer": "ospf", "reason": "unknown type", "type": c[0]], context: .nearbyParticipantAsFrom)
        },
        LogRule(format: "Could not process a packet for participant [%08X], event-buffer [%p], event->size [%d].") { c, _ in
            LogMatch(kind: .logPacketDropped, from: PeerText.participantHint(c[0]), attrs: ["layer": "gck", "size": c[2]])
        },
        LogRule(format: "Fragment @index %d has incorrect serial number: is %08X should be %08X.") { _, _ in
            LogMatch(kind: .logPacketDropped, attrs: ["layer": "agp", "reason": "fragment serial number"], context: .nearbyParticipantAsFrom)
        },
        LogRule(format: "Failed to remove index (%02d) packet serial number (%08X) from (%08X).") { _, _ in .consumed },
        LogRule(format: "%s compressed body %u => %u+2, total size: %d => %d.") { _, _ in .consumed },
        LogRule(format: "%s uncompressed body (real %u =? %u) failed (%d).") { c, _ in
            LogMatch(kind: .logPacketDropped, attrs: ["layer": "ospf", "reason": "decompression failed", "packet": c[0].trimmingSpaces],
                     context: .nearbyParticipantAsFrom)
        },
        LogRule(format: "ServiceWaitEventCallbacks: post delayed event of type %d to participant %08X.") { _, _ in .consumed },
    ]
}

// MARK: - MCSession

public struct MPCConnectPeerLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-connect-peer"
    static let summary = "MCSession connectPeer called twice (duplicate-connection evidence) or in the wrong state"
    static let example = "ConnectPeer already called."
    static let ruleList: [LogRule] = [
        // Names no peer: the one of the invitation the log is in the middle of.
        LogRule(format: "ConnectPeer already called.") { _, _ in
            LogMatch(kind: .connectionDecision, attrs: ["decision": "decline", "duplicate": "true", "reason": "ConnectPeer already called"],
                     context: .invitationRemoteAsFrom)
        },
        LogRule(format: "Peer needs to be in Connecting state to connect.") { _, _ in
            LogMatch(kind: .logSessionError, attrs: ["reason": "not in Connecting state"], context: .invitationRemoteAsFrom)
        },
    ]
}

public struct MPCSessionEventsLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-session-events"
    static let summary = "MCSession's bookkeeping of GCK events, sends and stream pushes (no event)"
    static let example = "Sending 79 bytes of data to participant 203852593, mode=0."
    static let ruleList: [LogRule] = [
        "Got GCK event [%s] size=%d status=%d from %08X (peer[%@]).",
        "Saved GCK event [%s] ([%p]) from pid[%08X] (%lu total saved).",
        "Indirectly connected - dipatching callback (current state = %d).",
        "Sending %ld bytes of data to participant %u, mode=%d.",
        "XData: pushing own peerID to non-neighbor peer[%08X].",
        "XData: pushing connection data to non-neighbor peer[%08X].",
        "Streaming: sending XDataStreamOpenResponse to peer[%08X] requestID[%08X] streamID[%08X].",
        // not in §2.2's list, but printed by every encrypted session (spec §1.3)
        "DTLS Settings: authentication [%d] encryption [%d] certificate length [%d].",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

// MARK: - Browser and advertiser bookkeeping

public struct MPCBrowsingLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-browsing"
    static let summary = "Browser and advertiser bookkeeping: services found, dictionaries, connections accepted (no event)"
    static let example = "NetService found [1ddatjp8m3xy7] moreComing [0]."
    static let ruleList: [LogRule] = [
        "Start discovering services of type [%@].",
        "Stop discovering services of type [%@].",
        "NetService found [%@] moreComing [%d].",
        "NetService adding [%@] to net services dictionary.",
        "Peer already in the dictionary, but has a different NSNetService object. will replace it with the newly found peer.",
        "Ignoring self for now.",
        "Peer [%@] not in peers dictionary anymore.",
        "No session for peer [%@]. invites=[%@].",
        "Requesting connection with netService with name [%@] ptr [%p] remote [%@].",
        "Responding connection sequence - remoteServiceName [%@] inputStream [%p] outputStream =[%p]).",
        "Accepted connection with inputStream [%p] outputStream [%p].",
        "PeerConnection (advertiser side) created (%p).",
        "PeerConnection [%p] connectedHandler (advertiser side), remote identifier [%@].",
        "PeerConnection connectedHandler (browser side), remote identifier [%@].",
        "ConnectionHandler [%@] (browser side) shouldForceConnect [%s]; peer.connection [%p] state [%@].",
        "Peer [%@] (browser side) connected successfully.",
        "Peer [%@] connected (advertiser side) successfully.",
        "Setting peer [%@] state to Not Connected.",
        // The dictionaries are invitation plists: never printed, the invitation lines say what happened.
        "Sending dictionary %@ to peer %@.",
        "Received dictionary [%@] from peer [%@].",
        "Received dict [%@] from peer [%@].",
    ].map { f in LogRule(format: f) { _, _ in .consumed } }
}

public struct MPCInvitationConnectionLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-invitation-connection"
    static let summary = "The invitation channel (TCP) to a peer closed, failed, or was closed for queueing too much before connect"
    static let example = "Peer [Bob's iPad,4DF5C15B] connection closed."
    static let ruleList: [LogRule] = [
        LogRule(format: "Peer [%@] connection closed.") { c, _ in
            LogMatch(kind: .tcpClosed, from: PeerText.hint(c[0]), attrs: ["invitation": "log"])
        },
        LogRule(format: "Too many enqueued messages before connect. Closing connection.ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            // The local side closes: the peer never completed the connection.
            LogMatch(kind: .tcpClosed, to: remoteHint(c[3]), attrs: ["invitation": "log", "reason": "too many enqueued messages before connect"])
        },
        LogRule(format: "PeerConnection connectedHandler (advertiser side) - error [%@].") { c, _ in
            var a = ["side": "advertiser", "error": errorText(c[0])]
            if let k = connectionErrorKind(c[0]) { a["connection"] = k }
            return LogMatch(kind: .logInvitationError, attrs: a)
        },
        LogRule(format: "PeerConnection connectedHandler remoteServiceName is nil.") { _, _ in
            LogMatch(kind: .logInvitationError, attrs: ["side": "advertiser", "reason": "remoteServiceName is nil"])
        },
        LogRule(format: "Peer [%@] data received with error %@.") { c, _ in
            LogMatch(kind: .logInvitationError, from: PeerText.hint(c[0]), attrs: ["error": errorText(c[1])])
        },
        LogRule(format: "Failed to initalize peer [%@].") { c, _ in
            LogMatch(kind: .logInvitationError, from: PeerText.hint(c[0]), attrs: ["reason": "failed to initialize peer"])
        },
        LogRule(format: "Unknown or invalid nearby message type for the browser: %d.") { c, _ in
            LogMatch(kind: .logInvitationError, attrs: ["side": "browser", "reason": "unknown message type", "type": c[0]],
                     context: .invitationRemoteAsFrom)
        },
        LogRule(format: "Unknown or invalid nearby message type for the advertiser: %d.") { c, _ in
            LogMatch(kind: .logInvitationError, attrs: ["side": "advertiser", "reason": "unknown message type", "type": c[0]],
                     context: .invitationRemoteAsFrom)
        },
    ]
}

public struct MPCInvitationFramesLogPlugin: RuleListPlugin {
    public init() {}
    static let id = "log-mpc-invitation-frames"
    static let summary = "Invitation-channel frames from the peer: Hello (2000), Accept (2200), Data (2100); sends, receipts, junk"
    static let example = "Got Hello (flags = 00000006) shouldDecide (1) - ptr [0x1] inputStream [0x2] outputStream [0x3] remote [1ddatjp8m3xy7+Alice]."
    static let ruleList: [LogRule] = [
        LogRule(format: "Got Hello (flags = %08x) shouldDecide (%d) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            LogMatch(kind: .invitationHello, from: remoteHint(c[5]), attrs: ["flags": c[0], "shouldDecide": c[1], "invitation": "log"])
        },
        LogRule(format: "Got Accept - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            LogMatch(kind: .invitationAccept, from: remoteHint(c[3]), attrs: ["invitation": "log"])
        },
        LogRule(format: "Got Data - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            LogMatch(kind: .logInvitationData, from: remoteHint(c[3]), attrs: ["invitation": "log"])
        },
        LogRule(format: "Unrecognized message %s (body size=%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { c, _ in
            LogMatch(kind: .logInvitationError, from: remoteHint(c[5]), attrs: ["reason": "unrecognized message", "type": c[0].trimmingSpaces, "bytes": c[1]])
        },
        LogRule(format: "Made message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { _, _ in .consumed },
        LogRule(format: "Sending type [%s] data [%u] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { _, _ in .consumed },
        LogRule(format: "Got receipt #%u for message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { _, _ in .consumed },
        LogRule(format: "Still connecting - queueing data (%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].") { _, _ in .consumed },
    ]
}
