import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// The issue's requirement: every MultipeerConnectivity format string of the reference (spec §2.2) is
/// understood by a log plugin. The complete list is held here as data (the spec may be absent in a
/// run), each string is filled with values, wrapped in an Xcode console line, read through the whole
/// analyzer, and must give the expected plugin, event kind, participant or peer and attributes.
final class SpecFormatStringTests: XCTestCase {
    struct Expect {
        var plugin: String
        var kind: EventKind?
        /// Values for some conversions by index; the rest are generated from the conversion type.
        var given: [Int: String] = [:]
        /// The argument that is the participant ID, and whether it names `to` (else `from`).
        var participant: Int? = nil
        var participantIsTo = false
        /// The argument that is the channel (the event lists it in `channels`).
        var channel: Int? = nil
        /// Attributes the event must carry (`$n` = argument n).
        var attrs: [String: String] = [:]
        /// The display name the event's `from` (or `to`) hint must carry.
        var name: String? = nil
        var nameIsTo = false
        /// The hint also carries the peer ID of `1ddatjp8m3xy7`.
        var peerID = false

        init(_ plugin: String, _ kind: EventKind?, given: [Int: String] = [:], participant: Int? = nil, participantIsTo: Bool = false,
             channel: Int? = nil, attrs: [String: String] = [:], name: String? = nil, nameIsTo: Bool = false, peerID: Bool = false) {
            self.plugin = plugin
            self.kind = kind
            self.given = given
            self.participant = participant
            self.participantIsTo = participantIsTo
            self.channel = channel
            self.attrs = attrs
            self.name = name
            self.nameIsTo = nameIsTo
            self.peerID = peerID
        }
    }

    static let peerDesc = "<MCPeerID: 0x283c0c2a0 DisplayName = Alice [iPad] 2>"
    static let peerName = "Alice [iPad] 2"

    /// Spec §2.2, every framework format string, verbatim ("a / b" lines split, "… for the advertiser"
    /// written out, `\t` a tab). The test fails when a string here has no expectation below.
    static let spec: [String] = [
        "Not in connected state, so giving up for participant [%08X] on channel [%d].",
        "ICE timeout expired for participant [%08X] on channel [%d] state [%s].",
        "DTLS Handshake timeout expired for participant [%08X] on channel [%d] DTLS state [%s].",
        "Hello timeout expired for participant [%08X] on channel [%d] state [%s].",
        "DD timeout expired for participant [%08X] on channel [%d] state [%s].",
        "LSAACK timeout expired for participant [%08X] on channel [%d] state [%s].",
        "Heartbeat timeout expired for participant [%08X] on channel [%d] state [%s].",
        "Unknown timeout expired for participant [%08X] on channel [%d] state [%s].",
        "Participant [%08X] on channel [%d] already connected, ignore this timeout.",
        "Perform DTLS Handshake for participant [%08X] on channel [%d] failed with hResult [%ld].",
        "Retransmitting Hello with SN [%d] to participant [%08X] over channel [%d].",
        "Retransmitting DD with SN [%d] to participant [%08X] over channel [%d].",
        "Retransmitting LSA with SN [%d] to participant [%08X] over channel [%d].",
        "Retransmitting Heartbeat with SN [%d] to participant [%08X] over channel [%d].",
        "Heartbeat state for [%08X]: Now [%.3lf] NextFire [%.3lf] WaitUntil [%.3lf].",
        "Removing duplicate heartbeat.",
        "Expected heartbeat in the retry list not found for participant [%08X] channel [%d].",
        "Sent %s packet to participant %08X on channel %d with error %d.",
        "Failed to send %s packet to participant %08X. Will mark channel %d as invalid.",
        "Send UDP packet failed with error (%X).",
        "SendUDPPacketCList failed with error (%X).",
        "Failed to send a DTLS packet with %d bytes; sendmsg error: %s (%d).",
        "SSLWrite failed, packet was not sent for participant [%08X] channelID [%d] DTLS context [%p] pCList [%p]; SSLError = %s (%ld): errno = %s (%d).",
        "Failed to copy peer trust for participant [%08X].",
        "Trust for participant [%08X] is expected but SSLCopyPeerTrust returned NULL.",
        "SendHello failed with error (%X).",
        "WaitForHello failed with error (%X).",
        "Failed to send Hello with error %X.",
        "Scheduling ICE connection timeout for participant [%08X] on channel [%d].",
        "Insert signal block for participant [%08X] at slot %d.",
        "Another PrepareConnection is already waiting for participant [%08X], bailing.",
        "ICE StopConnectivityCheck took (%0.6f seconds) for participant [%08X].",
        "%d interfaces found for participant [%08X].",
        "%d valid interfaces found for participant [%08X].",
        "For remoteID[%08X]: Start listening on %s (%s) sock %d.",
        "AWDL is disabled. Will not create socket for %s.",
        "Bind failed (%X) for all ports in range.",
        "Added interface for participant [%08X]: proto %d.",
        "Update destination IPPort for participant %08X, channel %d from %s to %s.",
        "Closing connection to participant [%08X] on channel [%d].",
        "Closing clist for participant [%08X] channel [%d].",
        "Scheduling to close CList corresponding to participant (%08X), channel %d.",
        "Timed out, enforcing clean up.",
        "Disconnecting participant [%08X].",
        "No route to participant %s[%08X] -- disconnected.",
        "Deleting neighbor representing participant %08X.",
        "Deleting node for participant %08X.",
        "Don't read from socket %d channel %d for disconnected participant %08X.",
        "Socket %d is no longer connected.",
        "Disposing connection to participant %08X. Stop ICE check.",
        "My routing table: %d nodes.",
        "Participant %08X routing table: %d nodes.",
        "Node %d [%08X]: NextHop[%08X], SN[%u], LSASN [%u], New flag[%d], From[%08X], # of neighbors [%d]",
        "\tneighbor %d: %08X - RTT[%u]",
        "Updated routing table.",
        "Sending DD%s with %d bytes to participant %08X.",
        "Sending LSA with SN [%d] to participant [%08X].",
        "Sending LSAACK with SN [%d] to participant [%08X].",
        "I am participant %08X. Just sent LSAs to %d participants.",
        "Requesting LSA update for node with ID [%08X] serial number [%d].",
        "Participant %08X: sentDD [%d], receivedDD [%d] address [%s].",
        "WaitFor [%s] timerAdd [%.1lf] nextFire [%.1lf] waitUntil [%.1lf].",
        "GCKSessionCreate: [GKS: %s - %s].",
        "GCKSessionRelease: Disposing all connections [GKS: %s - %s].",
        "Stop ICE connectionchecks [GKS: %s - %s].",
        "RecvProc thread end (%X).",
        "SendProc thread end (%X).",
        "Invalid type [%s] or bsd name [%s] for participant [%08X] channelID [%d].",
        "Unrecognized interface priority type [%d].",
        "OSPFParse failed with error %d.",
        "Unknown OSPF type %d.",
        "%s compressed body %u => %u+2, total size: %d => %d.",
        "%s uncompressed body (real %u =? %u) failed (%d).",
        "Could not process a packet for participant [%08X], event-buffer [%p], event->size [%d].",
        "Incoming packet for participant (%08X) failed checksum check -> given (%04x) calculated (04x).",
        "Fragment @index %d has incorrect serial number: is %08X should be %08X.",
        "Failed to remove index (%02d) packet serial number (%08X) from (%08X).",
        "ServiceWaitEventCallbacks: post delayed event of type %d to participant %08X.",
        "MCSession init done! [MCS: %s - %s, sessionID=%@ peerID=%@ securityIdentity=%s encryptionPreference=%@].",
        "PeerID [%@] change state from [%@] to [%@].",
        "Peer [%@] changed state from [%@] to [%@]; pd(%@) d(%@) prop(%d).",
        "Peer already in state [%@]",
        "No peerState for peerID [%@], newState [%@]. Will not callback.",
        "Peer needs to be in Connecting state to connect.",
        "ConnectPeer already called.",
        "Peer [%@] has incompatible encryption preference [%@].",
        "Mesh establishment failed (%08lX).",
        "Certificate from peer [%@] is %s.",
        "Got GCK event [%s] size=%d status=%d from %08X (peer[%@]).",
        "Saved GCK event [%s] ([%p]) from pid[%08X] (%lu total saved).",
        "No peerID, no event queue for participant [%08X], peer is already disconnected.Ignoring this disconnect event.",
        "Indirectly connected - dipatching callback (current state = %d).",
        "Sending %ld bytes of data to participant %u, mode=%d.",
        "AGPSendTo failed with status=%08X.",
        "Failed to send data because recipients %@ are not connected.",
        "XData: pushing own peerID to non-neighbor peer[%08X].",
        "XData: pushing connection data to non-neighbor peer[%08X].",
        "Streaming: sending XDataStreamOpenResponse to peer[%08X] requestID[%08X] streamID[%08X].",
        "Start discovering services of type [%@].",
        "Stop discovering services of type [%@].",
        "NetService found [%@] moreComing [%d].",
        "NetService adding [%@] to net services dictionary.",
        "Peer found: idString [%@], displayNameAndPID [%@], discoveryInfo [%@].",
        "Peer lost: idString [%@] moreComing [%d].",
        "Removing a peer [%@] from peers dictionary.",
        "Peer already in the dictionary, but has a different NSNetService object. will replace it with the newly found peer.",
        "Ignoring self for now.",
        "NSNetServiceBrowser did not search with error dict [%@].",
        "Sending dictionary %@ to peer %@.",
        "Received dictionary [%@] from peer [%@].",
        "Received dict [%@] from peer [%@].",
        "Got invite response [%@] from peer [%@].",
        "Invite timeout for peer [%@] fired.",
        "Handle declined invitation from peer with peerID [%@].",
        "No session for peer [%@]. invites=[%@].",
        "Peer [%@] not in peers dictionary anymore.",
        "Unknown or invalid nearby message type for the browser: %d.",
        "Unknown or invalid nearby message type for the advertiser: %d.",
        "PeerConnection connectedHandler (browser side), remote identifier [%@].",
        "ConnectionHandler [%@] (browser side) shouldForceConnect [%s]; peer.connection [%p] state [%@].",
        "Peer [%@] (browser side) connected successfully.",
        "Peer [%@] (browser side) decision == NO.",
        "Unexpected (possibly stale) identifier [%@] advertised (expected peer [%@]).Closing connection.",
        "Setting peer [%@] state to Not Connected.",
        "Peer [%@] connection closed.",
        "Peer [%@] data received with error %@.",
        "Start advertising peer [%@] type [%@].",
        "Stop advertising peer [%@] type [%@].",
        "Server did publish.",
        "Server stopped.",
        "Accepted connection with inputStream [%p] outputStream [%p].",
        "PeerConnection (advertiser side) created (%p).",
        "PeerConnection [%p] connectedHandler (advertiser side), remote identifier [%@].",
        "PeerConnection connectedHandler (advertiser side) - error [%@].",
        "PeerConnection connectedHandler remoteServiceName is nil.",
        "Peer [%@] (advertiser side) already in dictionary [state = %d], decision = %d.",
        "Peer [%@] (advertiser side) not in dictionary, creating one, decision = YES.",
        "Peer [%@] connected (advertiser side) successfully.",
        "Got invite from peer[%@] for peer[%@].",
        "Got invite connect [%@] from peer [%@].",
        "Invitation handler called.",
        "Invitation accepted.",
        "Invitation declined (accept=%d, session=%@).",
        "Failed to initalize peer [%@].",
        "Requesting connection with netService with name [%@] ptr [%p] remote [%@].",
        "Responding connection sequence - remoteServiceName [%@] inputStream [%p] outputStream =[%p]).",
        "Made message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Sending type [%s] data [%u] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Got receipt #%u for message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Got Hello (flags = %08x) shouldDecide (%d) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Got Accept - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Got Data - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Peer %s. Will %s - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Still connecting - queueing data (%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Too many enqueued messages before connect. Closing connection.ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Unrecognized message %s (body size=%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].",
        "Created new peerID with idString [%@], displayNameAndPID [%@].",
        "Created peerID from data[%@], idString[%@], leftover[%lu].",
    ]

    /// What each line means: the plugin that understands it and the event it gives (nil: understood,
    /// no event), with the arguments that name the participant and the attributes it must carry.
    static let expected: [String: Expect] = [
        "Not in connected state, so giving up for participant [%08X] on channel [%d].":
            Expect("log-mpc-giving-up", .gckGivingUp, participant: 0, channel: 1),
        "ICE timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-ice-timeout", .iceTimeout, given: [2: "ICE"], participant: 0, channel: 1, attrs: ["state": "ICE"]),
        "DTLS Handshake timeout expired for participant [%08X] on channel [%d] DTLS state [%s].":
            Expect("log-mpc-dtls-timeout", .dtlsTimeout, given: [2: "DTLSNotConnected"], participant: 0, channel: 1, attrs: ["state": "DTLSNotConnected"]),
        "Hello timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-gck-timeout", .gckTimeout, participant: 0, channel: 1, attrs: ["wait": "Hello"]),
        "DD timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-gck-timeout", .gckTimeout, participant: 0, channel: 1, attrs: ["wait": "DD"]),
        "LSAACK timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-gck-timeout", .gckTimeout, participant: 0, channel: 1, attrs: ["wait": "LSAACK"]),
        "Heartbeat timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-gck-timeout", .gckTimeout, participant: 0, channel: 1, attrs: ["wait": "Heartbeat"]),
        "Unknown timeout expired for participant [%08X] on channel [%d] state [%s].":
            Expect("log-mpc-gck-timeout", .gckTimeout, participant: 0, channel: 1, attrs: ["wait": "Unknown"]),
        "Participant [%08X] on channel [%d] already connected, ignore this timeout.":
            Expect("log-mpc-timeout-ignored", .logTimeoutIgnored, participant: 0, channel: 1),
        "Perform DTLS Handshake for participant [%08X] on channel [%d] failed with hResult [%ld].":
            Expect("log-mpc-dtls-failed", .logDTLSFailed, given: [2: "-2146697208"], participant: 0, channel: 1, attrs: ["hResult": "-2146697208"]),
        "Retransmitting Hello with SN [%d] to participant [%08X] over channel [%d].":
            Expect("log-mpc-retransmit", .gckHello, participant: 1, participantIsTo: true, channel: 2, attrs: ["retransmit": "true", "sn": "$0"]),
        "Retransmitting DD with SN [%d] to participant [%08X] over channel [%d].":
            Expect("log-mpc-retransmit", .gckDD, participant: 1, participantIsTo: true, channel: 2, attrs: ["retransmit": "true", "sn": "$0"]),
        "Retransmitting LSA with SN [%d] to participant [%08X] over channel [%d].":
            Expect("log-mpc-retransmit", .gckLSA, participant: 1, participantIsTo: true, channel: 2, attrs: ["retransmit": "true", "sn": "$0"]),
        "Retransmitting Heartbeat with SN [%d] to participant [%08X] over channel [%d].":
            Expect("log-mpc-retransmit", .gckHeartbeat, participant: 1, participantIsTo: true, channel: 2, attrs: ["retransmit": "true", "sn": "$0"]),
        "Heartbeat state for [%08X]: Now [%.3lf] NextFire [%.3lf] WaitUntil [%.3lf].":
            Expect("log-mpc-retransmit", nil),
        "Removing duplicate heartbeat.":
            Expect("log-mpc-retransmit", nil),
        "Expected heartbeat in the retry list not found for participant [%08X] channel [%d].":
            Expect("log-mpc-retransmit", nil),
        "Sent %s packet to participant %08X on channel %d with error %d.":
            Expect("log-mpc-udp-send-error", .sendError, given: [0: "Heartbeat"], participant: 1, participantIsTo: true, channel: 2, attrs: ["packet": "Heartbeat", "code": "$3"]),
        "Failed to send %s packet to participant %08X. Will mark channel %d as invalid.":
            Expect("log-mpc-udp-send-error", .sendError, given: [0: "Data"], participant: 1, participantIsTo: true, channel: 2, attrs: ["channelInvalid": "true", "packet": "Data"]),
        "Send UDP packet failed with error (%X).":
            Expect("log-mpc-udp-send-error", .sendError, attrs: ["layer": "udp", "code": "$0"]),
        "SendUDPPacketCList failed with error (%X).":
            Expect("log-mpc-udp-send-error", .sendError, attrs: ["layer": "udp"]),
        "Failed to send a DTLS packet with %d bytes; sendmsg error: %s (%d).":
            Expect("log-mpc-dtls-send-error", .sendError, given: [1: "No route to host", 2: "65"], attrs: ["layer": "dtls", "error": "No route to host", "errno": "65", "bytes": "$0"]),
        "SSLWrite failed, packet was not sent for participant [%08X] channelID [%d] DTLS context [%p] pCList [%p]; SSLError = %s (%ld): errno = %s (%d).":
            Expect("log-mpc-dtls-send-error", .sendError, given: [4: "errSSLClosedAbort", 5: "-9806", 6: "Broken pipe", 7: "32"], participant: 0, participantIsTo: true, channel: 1, attrs: ["layer": "ssl", "sslError": "errSSLClosedAbort", "errno": "32"]),
        "Failed to copy peer trust for participant [%08X].":
            Expect("log-mpc-dtls-failed", .logCertificateRejected, participant: 0),
        "Trust for participant [%08X] is expected but SSLCopyPeerTrust returned NULL.":
            Expect("log-mpc-dtls-failed", .logCertificateRejected, participant: 0),
        "SendHello failed with error (%X).":
            Expect("log-mpc-udp-send-error", .sendError, attrs: ["packet": "Hello"]),
        "WaitForHello failed with error (%X).":
            Expect("log-mpc-udp-send-error", .gckTimeout, attrs: ["wait": "Hello"]),
        "Failed to send Hello with error %X.":
            Expect("log-mpc-udp-send-error", .sendError, attrs: ["packet": "Hello"]),
        "Scheduling ICE connection timeout for participant [%08X] on channel [%d].":
            Expect("log-mpc-ice-scheduled", .logICEScheduled, participant: 0, channel: 1),
        "Insert signal block for participant [%08X] at slot %d.":
            Expect("log-mpc-connection-setup", nil),
        "Another PrepareConnection is already waiting for participant [%08X], bailing.":
            Expect("log-mpc-prepare-connection", .connectionDecision, participant: 0, attrs: ["duplicate": "true", "decision": "decline"]),
        "ICE StopConnectivityCheck took (%0.6f seconds) for participant [%08X].":
            Expect("log-mpc-connection-setup", nil),
        "%d interfaces found for participant [%08X].":
            Expect("log-mpc-connection-setup", nil),
        "%d valid interfaces found for participant [%08X].":
            Expect("log-mpc-connection-setup", nil),
        "For remoteID[%08X]: Start listening on %s (%s) sock %d.":
            Expect("log-mpc-connection-setup", nil),
        "AWDL is disabled. Will not create socket for %s.":
            Expect("log-mpc-socket-setup", .logSocketSetup, given: [0: "awdl0"], attrs: ["awdl": "disabled", "interface": "awdl0"]),
        "Bind failed (%X) for all ports in range.":
            Expect("log-mpc-socket-setup", .logSocketError, attrs: ["layer": "bind", "code": "$0"]),
        "Added interface for participant [%08X]: proto %d.":
            Expect("log-mpc-connection-setup", nil),
        "Update destination IPPort for participant %08X, channel %d from %s to %s.":
            Expect("log-mpc-connection-setup", nil),
        "Closing connection to participant [%08X] on channel [%d].":
            Expect("log-mpc-channel-closed", .logChannelClosed, participant: 0, channel: 1),
        "Closing clist for participant [%08X] channel [%d].":
            Expect("log-mpc-channel-closed", .logChannelClosed, participant: 0, channel: 1),
        "Scheduling to close CList corresponding to participant (%08X), channel %d.":
            Expect("log-mpc-channel-closed", .logChannelClosed, participant: 0, channel: 1),
        "Timed out, enforcing clean up.":
            Expect("log-mpc-channel-closed", .logCleanupTimeout),
        "Disconnecting participant [%08X].":
            Expect("log-mpc-disconnect", .disconnected, participant: 0),
        "No route to participant %s[%08X] -- disconnected.":
            Expect("log-mpc-disconnect", .disconnected, given: [0: "Alice"], participant: 1, attrs: ["reason": "no route"]),
        "Deleting neighbor representing participant %08X.":
            Expect("log-mpc-routing", nil),
        "Deleting node for participant %08X.":
            Expect("log-mpc-routing", nil),
        "Don't read from socket %d channel %d for disconnected participant %08X.":
            Expect("log-mpc-connection-setup", nil),
        "Socket %d is no longer connected.":
            Expect("log-mpc-udp-send-error", .sendError, attrs: ["layer": "socket", "socket": "$0"]),
        "Disposing connection to participant %08X. Stop ICE check.":
            Expect("log-mpc-channel-closed", nil),
        "My routing table: %d nodes.":
            Expect("log-mpc-routing", nil),
        "Participant %08X routing table: %d nodes.":
            Expect("log-mpc-routing", nil),
        "Node %d [%08X]: NextHop[%08X], SN[%u], LSASN [%u], New flag[%d], From[%08X], # of neighbors [%d]":
            Expect("log-mpc-routing", nil),
        "\tneighbor %d: %08X - RTT[%u]":
            Expect("log-mpc-routing", nil),
        "Updated routing table.":
            Expect("log-mpc-routing", nil),
        "Sending DD%s with %d bytes to participant %08X.":
            Expect("log-mpc-gck-send", .gckDD, given: [0: ""], participant: 2, participantIsTo: true, attrs: ["direction": "sent", "bytes": "$1"]),
        "Sending LSA with SN [%d] to participant [%08X].":
            Expect("log-mpc-gck-send", .gckLSA, participant: 1, participantIsTo: true, attrs: ["direction": "sent", "sn": "$0"]),
        "Sending LSAACK with SN [%d] to participant [%08X].":
            Expect("log-mpc-gck-send", .gckLSAACK, participant: 1, participantIsTo: true, attrs: ["direction": "sent", "sn": "$0"]),
        "I am participant %08X. Just sent LSAs to %d participants.":
            Expect("log-mpc-routing", nil),
        "Requesting LSA update for node with ID [%08X] serial number [%d].":
            Expect("log-mpc-routing", nil),
        "Participant %08X: sentDD [%d], receivedDD [%d] address [%s].":
            Expect("log-mpc-routing", nil),
        "WaitFor [%s] timerAdd [%.1lf] nextFire [%.1lf] waitUntil [%.1lf].":
            Expect("log-mpc-routing", nil),
        "GCKSessionCreate: [GKS: %s - %s].":
            Expect("log-mpc-connection-setup", nil),
        "GCKSessionRelease: Disposing all connections [GKS: %s - %s].":
            Expect("log-mpc-connection-setup", nil),
        "Stop ICE connectionchecks [GKS: %s - %s].":
            Expect("log-mpc-connection-setup", nil),
        "RecvProc thread end (%X).":
            Expect("log-mpc-connection-setup", nil),
        "SendProc thread end (%X).":
            Expect("log-mpc-connection-setup", nil),
        "Invalid type [%s] or bsd name [%s] for participant [%08X] channelID [%d].":
            Expect("log-mpc-socket-setup", .logSocketError, given: [0: "AWDL", 1: "awdl0"], participant: 2, participantIsTo: true, channel: 3, attrs: ["layer": "interface", "interface": "awdl0"]),
        "Unrecognized interface priority type [%d].":
            Expect("log-mpc-connection-setup", nil),
        "OSPFParse failed with error %d.":
            Expect("log-mpc-packet-error", .checksumError, attrs: ["layer": "ospf", "error": "$0"]),
        "Unknown OSPF type %d.":
            Expect("log-mpc-packet-error", .logPacketDropped, attrs: ["reason": "unknown type"]),
        "%s compressed body %u => %u+2, total size: %d => %d.":
            Expect("log-mpc-packet-error", nil, given: [0: "LSA"]),
        "%s uncompressed body (real %u =? %u) failed (%d).":
            Expect("log-mpc-packet-error", .logPacketDropped, given: [0: "LSA"], attrs: ["reason": "decompression failed", "packet": "LSA"]),
        "Could not process a packet for participant [%08X], event-buffer [%p], event->size [%d].":
            Expect("log-mpc-packet-error", .logPacketDropped, participant: 0),
        "Incoming packet for participant (%08X) failed checksum check -> given (%04x) calculated (04x).":
            Expect("log-mpc-packet-error", .checksumError, given: [1: "1a2b"], participant: 0, attrs: ["given": "1a2b", "layer": "gck"]),
        "Fragment @index %d has incorrect serial number: is %08X should be %08X.":
            Expect("log-mpc-packet-error", .logPacketDropped),
        "Failed to remove index (%02d) packet serial number (%08X) from (%08X).":
            Expect("log-mpc-packet-error", nil),
        "ServiceWaitEventCallbacks: post delayed event of type %d to participant %08X.":
            Expect("log-mpc-packet-error", nil),
        "MCSession init done! [MCS: %s - %s, sessionID=%@ peerID=%@ securityIdentity=%s encryptionPreference=%@].":
            Expect("log-mpc-session-init", .logSessionInit, given: [0: "Mar 3 2024", 1: "12:00:00", 2: "1234", 3: peerDesc, 4: "NO", 5: "Required"], attrs: ["encryption": "Required"], name: peerName),
        "PeerID [%@] change state from [%@] to [%@].":
            Expect("log-mpc-state", .stateChange, given: [0: peerName, 1: "Not Connected", 2: "Connecting"], attrs: ["from": "Not Connected", "to": "Connecting"], name: peerName),
        "Peer [%@] changed state from [%@] to [%@]; pd(%@) d(%@) prop(%d).":
            Expect("log-mpc-state", .stateChange, given: [0: peerDesc, 1: "Connecting", 2: "Not Connected", 3: "(null)", 4: "<App.Manager: 0x1>"], attrs: ["from": "Connecting", "to": "Not Connected"], name: peerName),
        "Peer already in state [%@]":
            Expect("log-mpc-decision", .connectionDecision, given: [0: "Connected"], attrs: ["alreadyInState": "Connected"]),
        "No peerState for peerID [%@], newState [%@]. Will not callback.":
            Expect("log-mpc-state", nil),
        "Peer needs to be in Connecting state to connect.":
            Expect("log-mpc-connect-peer", .logSessionError),
        "ConnectPeer already called.":
            Expect("log-mpc-connect-peer", .connectionDecision, attrs: ["duplicate": "true", "reason": "ConnectPeer already called"]),
        "Peer [%@] has incompatible encryption preference [%@].":
            Expect("log-mpc-encryption", .encryptionIncompatible, given: [1: "None"], attrs: ["preference": "None"], name: peerName),
        "Mesh establishment failed (%08lX).":
            Expect("log-mpc-mesh-failed", .logMeshFailed, attrs: ["code": "$0"]),
        "Certificate from peer [%@] is %s.":
            Expect("log-mpc-dtls-failed", .dtlsEstablished, given: [1: "accepted"], name: peerName),
        "Got GCK event [%s] size=%d status=%d from %08X (peer[%@]).":
            Expect("log-mpc-session-events", nil),
        "Saved GCK event [%s] ([%p]) from pid[%08X] (%lu total saved).":
            Expect("log-mpc-session-events", nil),
        "No peerID, no event queue for participant [%08X], peer is already disconnected.Ignoring this disconnect event.":
            Expect("log-mpc-disconnect", nil),
        "Indirectly connected - dipatching callback (current state = %d).":
            Expect("log-mpc-session-events", nil),
        "Sending %ld bytes of data to participant %u, mode=%d.":
            Expect("log-mpc-session-events", nil),
        "AGPSendTo failed with status=%08X.":
            Expect("log-mpc-session-send-error", .sendError, attrs: ["layer": "agp"]),
        "Failed to send data because recipients %@ are not connected.":
            Expect("log-mpc-session-send-error", .sendError, given: [0: "(\n    \"\(peerDesc)\"\n)"], attrs: ["layer": "session"], name: peerName, nameIsTo: true),
        "XData: pushing own peerID to non-neighbor peer[%08X].":
            Expect("log-mpc-session-events", nil),
        "XData: pushing connection data to non-neighbor peer[%08X].":
            Expect("log-mpc-session-events", nil),
        "Streaming: sending XDataStreamOpenResponse to peer[%08X] requestID[%08X] streamID[%08X].":
            Expect("log-mpc-session-events", nil),
        "Start discovering services of type [%@].":
            Expect("log-mpc-browsing", nil),
        "Stop discovering services of type [%@].":
            Expect("log-mpc-browsing", nil),
        "NetService found [%@] moreComing [%d].":
            Expect("log-mpc-browsing", nil),
        "NetService adding [%@] to net services dictionary.":
            Expect("log-mpc-browsing", nil),
        "Peer found: idString [%@], displayNameAndPID [%@], discoveryInfo [%@].":
            Expect("log-mpc-peer-found", .found, given: [0: "1ddatjp8m3xy7", 1: "the-air,2308149F", 2: "(null)"], attrs: ["discoveryInfo": "none"], name: "the-air"),
        "Peer lost: idString [%@] moreComing [%d].":
            Expect("log-mpc-peer-lost", .lost, given: [0: "1ddatjp8m3xy7"], attrs: ["moreComing": "$1"], peerID: true),
        "Removing a peer [%@] from peers dictionary.":
            Expect("log-mpc-peer-lost", nil),
        "Peer already in the dictionary, but has a different NSNetService object. will replace it with the newly found peer.":
            Expect("log-mpc-browsing", nil),
        "Ignoring self for now.":
            Expect("log-mpc-browsing", nil),
        "NSNetServiceBrowser did not search with error dict [%@].":
            Expect("log-mpc-permission", .permissionError, given: [0: "{\n    NSNetServicesErrorCode = \"-72008\";\n    NSNetServicesErrorDomain = 10;\n}"], attrs: ["code": "-72008", "permission": "local-network", "role": "browser"]),
        "Sending dictionary %@ to peer %@.":
            Expect("log-mpc-browsing", nil),
        "Received dictionary [%@] from peer [%@].":
            Expect("log-mpc-browsing", nil),
        "Received dict [%@] from peer [%@].":
            Expect("log-mpc-browsing", nil),
        "Got invite response [%@] from peer [%@].":
            Expect("log-mpc-invite-response", .inviteResponse, given: [0: "{ MCNearbyServiceAcceptInviteKey = 1; MCNearbyServiceInviteIDKey = 0; }"], attrs: ["accepted": "true"], name: peerName),
        "Invite timeout for peer [%@] fired.":
            Expect("log-mpc-invite-timeout", .inviteTimeout, name: peerName, nameIsTo: true),
        "Handle declined invitation from peer with peerID [%@].":
            Expect("log-mpc-invite-response", .inviteResponse, attrs: ["accepted": "false"], name: peerName),
        "No session for peer [%@]. invites=[%@].":
            Expect("log-mpc-browsing", nil),
        "Peer [%@] not in peers dictionary anymore.":
            Expect("log-mpc-browsing", nil),
        "Unknown or invalid nearby message type for the browser: %d.":
            Expect("log-mpc-invitation-connection", .logInvitationError, attrs: ["side": "browser", "type": "$0"]),
        "Unknown or invalid nearby message type for the advertiser: %d.":
            Expect("log-mpc-invitation-connection", .logInvitationError, attrs: ["side": "advertiser", "type": "$0"]),
        "PeerConnection connectedHandler (browser side), remote identifier [%@].":
            Expect("log-mpc-browsing", nil),
        "ConnectionHandler [%@] (browser side) shouldForceConnect [%s]; peer.connection [%p] state [%@].":
            Expect("log-mpc-browsing", nil),
        "Peer [%@] (browser side) connected successfully.":
            Expect("log-mpc-browsing", nil),
        "Peer [%@] (browser side) decision == NO.":
            Expect("log-mpc-decision", .connectionDecision, attrs: ["decision": "decline", "side": "browser"], name: peerName),
        "Unexpected (possibly stale) identifier [%@] advertised (expected peer [%@]).Closing connection.":
            Expect("log-mpc-stale-identifier", .logStaleIdentifier, given: [0: "0abcdefghij12", 1: peerName], name: peerName, nameIsTo: true),
        "Setting peer [%@] state to Not Connected.":
            Expect("log-mpc-browsing", nil),
        "Peer [%@] connection closed.":
            Expect("log-mpc-invitation-connection", .tcpClosed, attrs: ["invitation": "log"], name: peerName),
        "Peer [%@] data received with error %@.":
            Expect("log-mpc-invitation-connection", .logInvitationError, given: [1: "Error Domain=NSPOSIXErrorDomain Code=57 \"Socket is not connected\""], name: peerName),
        "Start advertising peer [%@] type [%@].":
            Expect("log-mpc-advertising", .logAdvertising, given: [1: "chat-app"], attrs: ["action": "start", "serviceType": "chat-app"], name: peerName),
        "Stop advertising peer [%@] type [%@].":
            Expect("log-mpc-advertising", .logAdvertising, given: [1: "chat-app"], attrs: ["action": "stop"], name: peerName),
        "Server did publish.":
            Expect("log-mpc-advertising", nil),
        "Server stopped.":
            Expect("log-mpc-advertising", nil),
        "Accepted connection with inputStream [%p] outputStream [%p].":
            Expect("log-mpc-browsing", nil),
        "PeerConnection (advertiser side) created (%p).":
            Expect("log-mpc-browsing", nil),
        "PeerConnection [%p] connectedHandler (advertiser side), remote identifier [%@].":
            Expect("log-mpc-browsing", nil),
        "PeerConnection connectedHandler (advertiser side) - error [%@].":
            Expect("log-mpc-invitation-connection", .logInvitationError, given: [0: "Error Domain=NSPOSIXErrorDomain Code=54 \"Connection reset by peer\""], attrs: ["connection": "reset", "side": "advertiser"]),
        "PeerConnection connectedHandler remoteServiceName is nil.":
            Expect("log-mpc-invitation-connection", .logInvitationError, attrs: ["reason": "remoteServiceName is nil"]),
        "Peer [%@] (advertiser side) already in dictionary [state = %d], decision = %d.":
            Expect("log-mpc-decision", .connectionDecision, given: [1: "2", 2: "0"], attrs: ["duplicate": "true", "decision": "decline", "state": "2"], name: peerName),
        "Peer [%@] (advertiser side) not in dictionary, creating one, decision = YES.":
            Expect("log-mpc-decision", .connectionDecision, attrs: ["decision": "accept"], name: peerName),
        "Peer [%@] connected (advertiser side) successfully.":
            Expect("log-mpc-browsing", nil),
        "Got invite from peer[%@] for peer[%@].":
            Expect("log-mpc-invite", .invite, given: [1: "<MCPeerID: 0x1 DisplayName = Bob>"], name: peerName),
        "Got invite connect [%@] from peer [%@].":
            Expect("log-mpc-invite", .inviteConnect, given: [0: "{ MCNearbyServiceMessageIDKey = 3; }"], name: peerName),
        "Invitation handler called.":
            Expect("log-mpc-invite-response", nil),
        "Invitation accepted.":
            Expect("log-mpc-invite-response", .inviteResponse, attrs: ["accepted": "true"]),
        "Invitation declined (accept=%d, session=%@).":
            Expect("log-mpc-invite-response", .inviteResponse, given: [0: "0", 1: "(null)"], attrs: ["accepted": "false"]),
        "Failed to initalize peer [%@].":
            Expect("log-mpc-invitation-connection", .logInvitationError, name: peerName),
        "Requesting connection with netService with name [%@] ptr [%p] remote [%@].":
            Expect("log-mpc-browsing", nil),
        "Responding connection sequence - remoteServiceName [%@] inputStream [%p] outputStream =[%p]).":
            Expect("log-mpc-browsing", nil),
        "Made message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", nil),
        "Sending type [%s] data [%u] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", nil, given: [0: "Hello"]),
        "Got receipt #%u for message #%u with length [len=%u] and crc [=%08X] - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", nil),
        "Got Hello (flags = %08x) shouldDecide (%d) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", .invitationHello, given: [0: "00000006", 1: "1", 5: "1ddatjp8m3xy7+the-air"], attrs: ["shouldDecide": "1"], name: "the-air", peerID: true),
        "Got Accept - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", .invitationAccept, given: [3: "1ddatjp8m3xy7+the-air"], name: "the-air", peerID: true),
        "Got Data - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", .logInvitationData, given: [3: "1ddatjp8m3xy7+the-air"], name: "the-air", peerID: true),
        "Peer %s. Will %s - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-decision", .connectionDecision, given: [0: "declines", 1: "close connection", 5: peerName], attrs: ["decision": "decline", "action": "close connection"], name: peerName),
        "Still connecting - queueing data (%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", nil),
        "Too many enqueued messages before connect. Closing connection.ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-connection", .tcpClosed, given: [3: "1ddatjp8m3xy7+the-air"], attrs: ["reason": "too many enqueued messages before connect"], name: "the-air", nameIsTo: true, peerID: true),
        "End of stream, error: %@ - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-stream-end", .tcpReset, given: [0: "Error Domain=NSPOSIXErrorDomain Code=54 \"Connection reset by peer\""], attrs: ["invitation": "log"], name: peerName),
        "Unrecognized message %s (body size=%u) - ptr [%p] inputStream [%p] outputStream [%p] remote [%@].":
            Expect("log-mpc-invitation-frames", .logInvitationError, given: [0: "Bogus", 5: "1ddatjp8m3xy7+the-air"], attrs: ["reason": "unrecognized message", "type": "Bogus"], name: "the-air"),
        "Created new peerID with idString [%@], displayNameAndPID [%@].":
            Expect("log-mpc-peer-created", .logPeerCreated, given: [0: "1ddatjp8m3xy7", 1: "the-air,2308149F"], name: "the-air", peerID: true),
        "Created peerID from data[%@], idString[%@], leftover[%lu].":
            Expect("log-mpc-peer-created", nil, given: [1: "1ddatjp8m3xy7"]),
    ]

    func value(for conv: Character, _ gen: inout FormatStringTests.Gen, participant: UInt32) -> String {
        switch conv {
        case "X", "x": FormatStringTests.hex8(participant)
        case "d", "i", "u": String(gen.next() % 7)
        case "f": "12.345"
        case "p": "0x" + String(gen.next() & 0xFFFF_FFFF_FF, radix: 16)
        case "s": "Connecting"
        default: Self.peerDesc
        }
    }

    static func consoleLine(_ message: String) -> String {
        "2026-11-22 09:00:00.250000+0100 App[812:33211] [GCKSession] \(message)\n"
    }

    func testTheListIsTheSpecsAndEveryStringHasAnExpectation() {
        XCTAssertEqual(Self.spec.count, 159, "§2.2 has 158 format strings plus the advertiser's \"Unknown or invalid nearby message type\"")
        XCTAssertEqual(Set(Self.spec).count, Self.spec.count, "a format string is listed twice")
        for f in Self.spec where Self.expected[f] == nil { XCTFail("no expectation for \(f)") }
        for f in Self.expected.keys where !Self.spec.contains(f) { XCTFail("expectation for a string not in the list: \(f)") }
        // Every plugin named exists.
        let ids = Set(LogPluginRegistry.plugins.map(\.id))
        for (f, x) in Self.expected where !ids.contains(x.plugin) { XCTFail("\(f): no plugin \(x.plugin)") }
    }

    func testEveryReferenceFormatStringIsUnderstoodAndMapped() throws {
        var gen = FormatStringTests.Gen()
        var understood = 0
        for f in Self.spec {
            guard let x = Self.expected[f] else { continue }
            let convs = FormatStringTests.conversions(f)
            let participant = gen.participant()
            var values: [String] = []
            for (i, conv) in convs.enumerated() {
                values.append(x.given[i] ?? value(for: conv, &gen, participant: participant))
            }
            let message = FormatStringTests.fill(f, values)
            let r = try LogAnalyzer.read(text: Self.consoleLine(message), options: LogOptions(format: .xcode), directory: PeerDirectory())
            guard r.unknownCounts.values.reduce(0, +) == 0 else {
                XCTFail("not understood: \(message)")
                continue
            }
            understood += 1
            XCTAssertEqual(r.recognized, [x.plugin: 1], "plugin for \(f)")
            guard let kind = x.kind else {
                XCTAssertEqual(r.events.map(\.kind), [], "expected no event for \(f)")
                continue
            }
            guard r.events.count == 1, let e = r.events.first else {
                XCTFail("expected one event for \(message), got \(r.events.map(\.kind))")
                continue
            }
            XCTAssertEqual(e.kind, kind, f)
            XCTAssertEqual(e.source, x.plugin, f)
            XCTAssertEqual(e.evidence, .logLine(input: 0, line: 1), f)
            XCTAssertEqual(e.t, CaptureTime.days(year: 2026, month: 11, day: 22) * 86400 * CaptureTime.second
                           + 8 * 3600 * CaptureTime.second + 250 * CaptureTime.millisecond, f)
            if let pa = x.participant {
                XCTAssertEqual((x.participantIsTo ? e.to : e.from).participantID, UInt32(values[pa], radix: 16), "participant of \(f)")
                XCTAssertTrue((x.participantIsTo ? e.from : e.to).isEmpty, "the other side of \(f) is the log's device")
            }
            if let ca = x.channel { XCTAssertEqual(e.attrs["channel"], values[ca], "channel of \(f)") }
            for (k, v) in x.attrs {
                let want = v.hasPrefix("$") ? values[Int(v.dropFirst()) ?? 0] : v
                XCTAssertEqual(e.attrs[k], want, "\(f): attr \(k)")
            }
            if let n = x.name { XCTAssertEqual((x.nameIsTo ? e.to : e.from).displayName, n, "peer of \(f)") }
            if x.peerID { XCTAssertEqual((x.nameIsTo ? e.to : e.from).peerID, 0x5A2D_DCB4_2308_149F, "peer ID of \(f)") }
            if x.participant == nil, x.name == nil, !x.peerID { XCTAssertTrue(e.from.isEmpty && e.to.isEmpty, "\(f) names no peer") }
        }
        XCTAssertEqual(understood, Self.spec.count)
    }

    /// The same strings filled the way a tool that knows nothing about them would (every `%@` an
    /// MCPeerID description, every `%s` an interface name): still understood, none left unknown.
    func testEveryReferenceFormatStringIsUnderstoodWithAnyValues() throws {
        var text = ""
        for (i, f) in Self.spec.enumerated() {
            let values = FormatStringTests.conversions(f).map { c -> String in
                switch c {
                case "X", "x": "1A5C288D"
                case "d", "i", "u": "0"
                case "f": "0.003903"
                case "p": "0x284c2c030"
                case "s": "en0"
                default: "<MCPeerID: 0x283c0c2a0 DisplayName = Bob's iPad>"
                }
            }
            text += "2026-01-15 10:00:\(String(format: "%02d", i / 10)).\(i % 10)00000+0000 App[812:33211] [GCKSession] \(FormatStringTests.fill(f, values))\n"
        }
        var o = LogOptions(format: .xcode)
        o.collectUnknown = true
        let r = try LogAnalyzer.read(text: text, options: o, directory: PeerDirectory())
        XCTAssertEqual(r.entries, Self.spec.count)
        XCTAssertEqual(r.unknownLines.map(\.text), [])
        XCTAssertEqual(r.recognized.values.reduce(0, +), Self.spec.count)
    }

    // MARK: lines that matter (spec §2.3)

    func read(_ lines: [String]) throws -> LogReadResult {
        let text = lines.enumerated().map { i, l in
            "2026-01-15 10:00:00.\(String(format: "%06d", 1000 * i))+0000 App[1:2] \(l)"
        }.joined(separator: "\n")
        return try LogAnalyzer.read(text: text, options: LogOptions(format: .xcode), directory: PeerDirectory())
    }

    func testAppPrintsOfTheReferenceInvitingAndBrowserFound() throws {
        let r = try read(["[MCNearbyServiceBrowser] Peer found: idString [1ddatjp8m3xy7], displayNameAndPID [the-air,2308149F], discoveryInfo [(null)].",
                          "Browser found peer: the-air", "Inviting the-air", "Browser lost peer: Somebody"])
        XCTAssertEqual(r.unknownCounts, [:])
        XCTAssertEqual(r.events.map(\.kind), [.found, .found, .logInviting, .lost])
        // The print names only a display name: MPC's line before it says which peer ID it is.
        XCTAssertEqual(r.events[1].from.peerID, 0x5A2D_DCB4_2308_149F)
        XCTAssertEqual(r.events[2].to.peerID, 0x5A2D_DCB4_2308_149F)
        XCTAssertTrue(r.events[2].from.isEmpty, "the log's device invites")
        XCTAssertEqual(r.events[3].from, PeerHint(displayName: "Somebody"))
    }

    func testPeerlessSendErrorsTakeTheParticipantNamedBesideThem() throws {
        let r = try read(["[GCKSession] Send UDP packet failed with error (8000003D).",
                          "[GCKSession] Failed to send Data packet to participant 0C268B31. Will mark channel 0 as invalid.",
                          "Failed to send keep-alive: Error Domain=MCErrorDomain Code=1 \"Peers (Bob's iPhone) not connected\"",
                          "[GCKSession] Socket 12 is no longer connected."])
        XCTAssertEqual(r.events.map(\.kind), [.sendError, .sendError, .sendError, .sendError])
        XCTAssertEqual(r.events.map(\.to.participantID), [0x0C26_8B31, 0x0C26_8B31, nil, 0x0C26_8B31])
        XCTAssertEqual(r.events[2].to.displayName, "Bob's iPhone")
        XCTAssertEqual(r.events.map { $0.from.isEmpty }, [true, true, true, true], "the log's device sent")
        XCTAssertEqual(r.events[0].attrs["peerFrom"], "context")
        // Too far apart (more than the coalescing window): no peer is made up.
        let far = try LogAnalyzer.read(text: """
            2026-01-15 10:00:00.000000+0000 App[1:2] [GCKSession] Send UDP packet failed with error (8000003D).
            2026-01-15 10:00:05.000000+0000 App[1:2] [GCKSession] Closing connection to participant [0C268B31] on channel [0].
            """, directory: PeerDirectory())
        XCTAssertEqual(far.events.first?.kind, .sendError)
        XCTAssertEqual(far.events.first?.to, .unknown)
        // A line naming both sides may name the log's own device: not context.
        let both = try read(["[MCNearbyServiceAdvertiser] Got invite from peer[Alice's iPhone,03D50A9B] for peer[Bob's iPad,4DF5C15B].",
                             "[GCKSession] Send UDP packet failed with error (8000003D)."])
        XCTAssertEqual(both.events.map(\.kind), [.invite, .sendError])
        XCTAssertEqual(both.events[1].to, .unknown)
    }

    func testTheAdvertisersAnswerNamesTheInviter() throws {
        let r = try read(["[MCNearbyServiceAdvertiser] Got invite from peer[Alice's iPhone,03D50A9B] for peer[Bob's iPad,4DF5C15B].",
                          "Received invitation from Alice's iPhone",
                          "[MCNearbyServiceAdvertiser] Invitation handler called.",
                          "[MCNearbyServiceAdvertiser] Invitation declined (accept=0, session=(null))."])
        XCTAssertEqual(r.events.map(\.kind), [.invite, .inviteResponse])
        let answer = r.events[1]
        XCTAssertEqual(answer.attrs["accepted"], "false")
        XCTAssertEqual(answer.to, PeerHint(participantID: 0x03D5_0A9B, displayName: "Alice's iPhone"))
        XCTAssertEqual(answer.from, PeerHint(participantID: 0x4DF5_C15B, displayName: "Bob's iPad"))
    }

    func testDuplicateConnectionEvidence() throws {
        let r = try read(["[MCNearbyServiceAdvertiser] Got invite connect [{ MCNearbyServiceMessageIDKey = 3; }] from peer [Alice's iPhone,03D50A9B].",
                          "[MCSession] ConnectPeer already called.",
                          "[GCKSession] Another PrepareConnection is already waiting for participant [03D50A9B], bailing."])
        XCTAssertEqual(r.events.map(\.kind), [.inviteConnect, .connectionDecision, .connectionDecision])
        for e in r.events.dropFirst() {
            XCTAssertEqual(e.from.participantID, 0x03D5_0A9B)
            XCTAssertEqual(e.attrs["duplicate"], "true", "the duplicate-connection detector reads this")
            XCTAssertEqual(e.attrs["decision"], "decline")
        }
    }

    func testLegacyViceroyLinesNameTheParticipant() throws {
        let r = try read(["[ViceroyTrace] [ICE][ERROR] Send BINDING_REQUEST failed(C01A0041).",
                          "[ViceroyTrace] [ICE][ERROR] ICEStopConnectivityCheck() found no ICE check with call id (2308149F)",
                          "[ICE][ERROR] ICEStopConnectivityCheck:2688 ICEStopConnectivityCheck() found no ICE check with call id (383054229)"])
        XCTAssertEqual(r.events.map(\.kind), [.iceError, .iceTimeout, .iceTimeout])
        XCTAssertEqual(r.events[0].to.participantID, 0x2308_149F, "the binding request was for the participant of the line after it")
        XCTAssertEqual(r.events[0].attrs["code"], "C01A0041")
        XCTAssertEqual(r.events[1].from.participantID, 0x2308_149F)
        XCTAssertEqual(r.events[2].from.participantID, 383_054_229, "AVConference prints the call id in decimal")
        XCTAssertNil(ViceroyICELogPlugin.participant(callID: "4294967295"), "not a 31-bit participant")
    }

    func testChecksumAndParseErrorsAreChannelErrorsFromTheParticipant() throws {
        let r = try read(["[GCKSession] Incoming packet for participant (2308149F) failed checksum check -> given (1234) calculated (04x).",
                          "[OSPF] OSPFParse failed with error 5."])
        XCTAssertEqual(r.events.map(\.kind), [.checksumError, .checksumError])
        XCTAssertEqual(r.events.map(\.from.participantID), [0x2308_149F, 0x2308_149F])
    }
}
