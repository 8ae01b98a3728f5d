// The built-in event kinds: a constant and one catalogue entry each (see `EventCatalogue`), grouped
// by family. Adding a kind: its constant here and its entry in the family's list below.

/// The built-in kinds.
extension EventKind {
    // Discovery (mDNS / DNS-SD, or browser logs)
    public static let browse: EventKind = "discovery.browse"          // a browse query for a service type
    public static let announced: EventKind = "discovery.announced"    // PTR/TXT seen for an instance
    public static let resolved: EventKind = "discovery.resolved"      // SRV (+ addresses) known
    public static let updated: EventKind = "discovery.updated"        // TXT changed
    public static let goodbye: EventKind = "discovery.goodbye"        // TTL 0
    public static let expired: EventKind = "discovery.expired"        // TTL ran out, no refresh
    public static let found: EventKind = "discovery.found"            // browser found peer (logs)
    public static let lost: EventKind = "discovery.lost"              // browser lost peer (logs)
    public static let instanceConflict: EventKind = "discovery.conflict.instance"
    public static let nameConflict: EventKind = "discovery.conflict.name"

    // Invitation channel (TCP)
    public static let invitationHello: EventKind = "invitation.hello"
    public static let invitationAccept: EventKind = "invitation.accept"
    public static let invitationReceipt: EventKind = "invitation.receipt"
    public static let invite: EventKind = "invitation.invite"
    public static let inviteResponse: EventKind = "invitation.response"   // attrs["accepted"] = "true"/"false"
    public static let inviteConnect: EventKind = "invitation.connect"
    public static let inviteTimeout: EventKind = "invitation.timeout"     // from logs
    public static let connectionDecision: EventKind = "invitation.decision" // logs: Peer approves/declines, already in dictionary

    // ICE / STUN
    public static let iceRequest: EventKind = "ice.request"
    public static let iceSuccess: EventKind = "ice.success"
    public static let iceError: EventKind = "ice.error"
    public static let iceTimeout: EventKind = "ice.timeout"               // from logs

    // DTLS
    public static let dtlsHandshake: EventKind = "dtls.handshake"         // attrs["message"] = ClientHello, ...
    public static let dtlsChangeCipherSpec: EventKind = "dtls.ccs"
    public static let dtlsEstablished: EventKind = "dtls.established"
    public static let dtlsAlert: EventKind = "dtls.alert"                 // attrs level, description
    public static let dtlsApplicationData: EventKind = "dtls.data"
    public static let dtlsTimeout: EventKind = "dtls.timeout"             // from logs

    // GCK session packets
    public static let gckHello: EventKind = "gck.hello"
    public static let gckDD: EventKind = "gck.dd"
    public static let gckLSA: EventKind = "gck.lsa"
    public static let gckLSAACK: EventKind = "gck.lsaack"
    public static let gckData: EventKind = "gck.data"
    public static let gckHeartbeat: EventKind = "gck.heartbeat"
    public static let gckTimeout: EventKind = "gck.timeout"               // logs: Hello/DD/LSAACK/Heartbeat timeout; attrs["wait"]
    public static let gckGivingUp: EventKind = "gck.givingup"             // logs: Not in connected state, so giving up
    public static let gckOther: EventKind = "gck.other"                   // a GCK packet of an unknown type; attrs["gckType"]

    // App messages (the seeds' JSON)
    public static let appHandshake: EventKind = "app.handshake"
    public static let appHandshakeResponse: EventKind = "app.handshake_response"
    public static let appKeepAlive: EventKind = "app.keep_alive"
    public static let appChat: EventKind = "app.chat"
    public static let appOther: EventKind = "app.other"                   // attrs["type"]
    public static let appTimeout: EventKind = "app.timeout"               // logs: handshake/keep-alive timeout printed by the app
    public static let appDuplicateIgnored: EventKind = "app.duplicate_ignored"

    // Session state (logs mostly)
    public static let stateChange: EventKind = "session.state"            // attrs from, to (Not Connected|Connecting|Connected)
    public static let disconnected: EventKind = "session.disconnected"
    public static let reconnectAttempt: EventKind = "session.reconnect"   // attrs attempt, delay
    public static let encryptionIncompatible: EventKind = "session.encryption_incompatible"
    public static let permissionError: EventKind = "session.permission"   // -72008 and friends

    // Transport
    public static let tcpOpened: EventKind = "tcp.opened"
    public static let tcpRefused: EventKind = "tcp.refused"
    public static let tcpReset: EventKind = "tcp.reset"
    public static let tcpClosed: EventKind = "tcp.closed"
    public static let icmpUnreachable: EventKind = "icmp.unreachable"
    public static let sendError: EventKind = "channel.send_error"         // logs: DTLS send failed, SSLWrite failed...
    public static let checksumError: EventKind = "channel.checksum"       // a packet failing its CRC

    // Seen on the wire only: checks and handshakes that got no answer
    public static let iceUnanswered: EventKind = "ice.unanswered"         // STUN request unanswered (attr atEnd)
    public static let dtlsStalled: EventKind = "dtls.stalled"             // DTLS handshake stopped (attr atEnd)

    // Identity facts decoding learnt (the `from` hint is the fact); never timeline entries
    public static let identityLearned: EventKind = "identity.learned"     // a peer ID with a name, address or endpoint
    public static let identityAdvertised: EventKind = "identity.advertised" // a peer's MPC instance announced or refreshed

    // Logs only (the packet plugins have no evidence for these)
    public static let logPeerCreated: EventKind = "log.peer_created"          // local MCPeerID created
    public static let logAdvertising: EventKind = "log.advertising"           // the local peer starts/stops advertising
    public static let logSessionInit: EventKind = "log.session_init"          // attrs encryption
    public static let logICEScheduled: EventKind = "log.ice_scheduled"        // ICE check started (timeout armed)
    public static let logDTLSFailed: EventKind = "log.dtls_failed"            // DTLS handshake call failed
    public static let logTimeoutIgnored: EventKind = "log.timeout_ignored"    // timer fired on a connected channel
    public static let logChannelClosed: EventKind = "log.channel_closed"
    public static let logCleanupTimeout: EventKind = "log.cleanup_timeout"    // "Timed out, enforcing clean up."
    public static let logStaleIdentifier: EventKind = "log.stale_identifier"
    public static let logMeshFailed: EventKind = "log.mesh_failed"
    public static let logCertificateRejected: EventKind = "log.certificate_rejected"
    public static let logSessionOpened: EventKind = "log.session_opened"
    public static let logReconnectStart: EventKind = "log.reconnect_start"
    public static let logSocketError: EventKind = "log.socket_error"
    public static let logAppError: EventKind = "log.app_error"
    public static let logSocketSetup: EventKind = "log.socket_setup"            // AWDL disabled: no socket for an interface
    public static let logInvitationError: EventKind = "log.invitation_error"    // the invitation channel failed or got junk
    public static let logInvitationData: EventKind = "log.invitation_data"      // an invitation Data frame (2100) arrived
    public static let logSessionError: EventKind = "log.session_error"          // MCSession refused a call (wrong state)
    public static let logPacketDropped: EventKind = "log.packet_dropped"        // GCK could not process a packet
    public static let logInviting: EventKind = "log.inviting"                   // the app asks MPC to invite a peer
}

private let second = CaptureTime.second

private func fixed(_ state: TimelineState, _ letter: Character? = nil) -> KindRule<TimelineStep> {
    .fixed(TimelineStep(state, letter))
}

private let start: KindRule<SessionRole> = .fixed(.start)
private let traffic: KindRule<SessionRole> = .fixed(.traffic)

/// `invitation.response`: accepted unless it says declined.
private let responseStep: KindRule<TimelineStep> = .byAttributes { attrs in
    EventAttributes.isAccepted(attrs) == false ? TimelineStep(.invitationDeclined, "N") : TimelineStep(.invitationAccepted, "A")
}

/// `invitation.decision` (logs): a decline is a declined invitation; other decisions are `other`.
private let decisionStep: KindRule<TimelineStep> = .byAttributes { attrs in
    let d = (attrs[.decision] ?? "").lowercased()
    return d.hasPrefix("decline") || d == "0" || d == "no" ? TimelineStep(.invitationDeclined, "N") : .other
}

/// `tcp.opened`: only a connection to a known MPC endpoint (an advertised SRV port, an
/// invitation-channel end) is an invitation channel; the rest of a device's TCP traffic is not.
private let tcpOpenedStep: KindRule<TimelineStep> = .byAttributes { attrs in
    attrs[.invitation] != nil ? TimelineStep(.invitationChannel, "S") : .other
}

/// `session.state`: by the state it goes to.
private let stateStep: KindRule<TimelineStep> = .byAttributes { attrs in
    switch EventAttributes.targetState(attrs) {
    case "connected": TimelineStep(.connected, "G")
    case "connecting": TimelineStep(.connecting, "P")
    case "notconnected", "disconnected": TimelineStep(.disconnected, "X")
    default: .other
    }
}

private let stateRole: KindRule<SessionRole> = .byAttributes { attrs in
    switch EventAttributes.targetState(attrs) {
    case "connecting": .start
    case "connected": .traffic
    default: .attach
    }
}

private typealias A = AttributeSpec

extension EventCatalogue {
    public static let entries: [EventKindSpec] = discovery + invitation + ice + dtls + gck + app + session + transport + logOnly
        + identity

    /// Identity facts: what decoding learnt about which peer IDs, display names, addresses and
    /// endpoints belong together, and when each MPC instance was advertised. The event's `from` hint
    /// is the fact (`PeerHint.peerID` with its `displayName`, `address` or `endpoint`: typed, so no
    /// attributes). The timeline, the detectors and the reports never see them as steps: the one
    /// resolver (`PeerIdentities` / `PeerResolver` in PeerscopeTimeline) folds them.
    static let identity: [EventKindSpec] = [
        EventKindSpec(.identityLearned, "decoding learnt a peer ID, or its display name, an address or an endpoint "
                      + "(one event per new fact, at the frame or log line that taught it)"),
        // Refreshes repeat for as long as a peer advertises: one event spans first ... last per peer
        // and plugin, however far apart they come (no detector judges their silence).
        EventKindSpec(.identityAdvertised, "a peer's MPC instance was announced or refreshed (coalesced: t ... lastT)",
                      coalescing: .steady(defaultGap: Nanos.max)),
    ]

    static let discovery: [EventKindSpec] = [
        EventKindSpec(.browse, "a browse query for a service type", step: fixed(.browsing),
                      attributes: [A("knownAnswers", .int), A("qu", .bool), A("querier", .address), A("service"),
                          A("subtype")]),
        EventKindSpec(.announced, "PTR/TXT seen for an instance", step: fixed(.discovered, "V"), label: "announced",
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("participantID"), A("peerID"), A("port", .int), A("records"),
                          A("service"), A("sources", .list), A("ttl", .int), A("txt"), A("txtKeys", .list)]),
        EventKindSpec(.resolved, "SRV (and addresses) known for an instance", step: fixed(.discovered, "V"),
                      label: "resolved",
                      attributes: [A("addresses", .list), A("displayName"), A("endpoints", .list), A("host"),
                          A("info.*"), A("instance"), A("instanceName"), A("participantID"), A("peerID"),
                          A("port", .int), A("service"), A("sources", .list), A("txt"), A("txtKeys", .list)]),
        EventKindSpec(.updated, "an instance's TXT changed", step: fixed(.updated, "V"),
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("participantID"), A("peerID"), A("port", .int), A("service"),
                          A("sources", .list), A("txt"), A("txtKeys", .list)]),
        EventKindSpec(.goodbye, "an instance said goodbye (TTL 0)", step: fixed(.lost, "L"), label: "goodbye",
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("known"), A("participantID"), A("peerID"), A("port", .int),
                          A("record"), A("service"), A("sources", .list), A("txtKeys", .list)]),
        EventKindSpec(.expired, "an instance's records ran out without a refresh", step: fixed(.lost, "L"),
                      label: "expired",
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("known"), A("participantID"), A("peerID"), A("port", .int),
                          A("record"), A("service"), A("sources", .list), A("txtKeys", .list)]),
        EventKindSpec(.found, "a browser found a peer (logs)", step: fixed(.discovered, "V"), label: "found",
                      attributes: [A("discoveryInfo")]),
        EventKindSpec(.lost, "a browser lost a peer (logs)", step: fixed(.lost, "L"),
                      attributes: [A("moreComing", .bool)]),
        EventKindSpec(.instanceConflict, "two hosts claim one service instance name", step: fixed(.error, "!"),
                      label: "instance conflict",
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("otherInstance"), A("otherPeerID"), A("participantID"), A("peerID"),
                          A("peerIDs", .list), A("port", .int), A("service"), A("sources", .list),
                          A("txtKeys", .list)]),
        EventKindSpec(.nameConflict, "two peers advertise one display name", step: fixed(.error, "!"),
                      label: "name conflict",
                      attributes: [A("addresses", .list), A("displayName"), A("host"), A("info.*"), A("instance"),
                          A("instanceName"), A("otherInstance"), A("otherPeerID"), A("participantID"), A("peerID"),
                          A("peerIDs", .list), A("port", .int), A("service"), A("sources", .list),
                          A("txtKeys", .list)]),
    ]

    static let invitation: [EventKindSpec] = [
        EventKindSpec(.invitationHello, "invitation channel Hello", step: fixed(.invitationChannel, "S"), role: start,
                      label: "Hello",
                      attributes: [A("flags"), A("helloFlags"), A("idString"), A("invitation"), A("role"),
                          A("seq", .int), A("shouldDecide", .bool)]),
        EventKindSpec(.invitationAccept, "invitation channel Accept", step: fixed(.invitationChannel, "S"), role: start,
                      label: "Accept", attributes: [A("invitation"), A("role"), A("seq", .int)]),
        EventKindSpec(.invitationReceipt, "receipt for an invitation-channel message", step: fixed(.invitationChannel),
                      label: "receipt",
                      attributes: [A("ackedFrame", .int), A("latencyNs", .int), A("matched", .bool), A("role"),
                          A("seq", .int), A("type")]),
        EventKindSpec(.invite, "invitation sent", step: fixed(.invited, "I"), role: start,
                      attributes: [A("contextSize", .int), A("inviteID", .int), A("peerFrom")]),
        EventKindSpec(.inviteResponse, "invitation answered (accepted or declined)", step: responseStep, role: traffic,
                      attributes: [A("accepted", .bool), A("connectionData"), A("connectionDataFlags"),
                          A("encryption"), A("entryParticipant"), A("inviteID", .int), A("peerFrom"),
                          A("securityIdentity"), A("udpEndpoints", .list)]),
        EventKindSpec(.inviteConnect, "connection data sent", step: fixed(.connectionData, "C"), role: start,
                      attributes: [A("connectionDataFlags"), A("encryption"), A("entryParticipant"),
                          A("inviteID", .int), A("securityIdentity"), A("udpEndpoints", .list)]),
        EventKindSpec(.inviteTimeout, "an invitation timed out (logs)", step: fixed(.timeout, "T"), label: "invitation",
                      attributes: []),
        EventKindSpec(.connectionDecision, "a peer approved or declined a connection (logs)", step: decisionStep,
                      label: "connection decision",
                      attributes: [A("action"), A("alreadyInDictionary", .bool), A("alreadyInState", .bool),
                          A("decision"), A("duplicate", .bool), A("reason"), A("side"), A("state")]),
    ]

    static let ice: [EventKindSpec] = [
        EventKindSpec(.iceRequest, "ICE connectivity check (STUN request)", step: fixed(.iceChecks, "Q"), role: start,
                      attributes: [A("retransmit", .bool), A("role"), A("txid"), A("useCandidate", .bool),
                          A("usernameFrom"), A("usernameTo")]),
        EventKindSpec(.iceSuccess, "ICE check answered", step: fixed(.iceConnected, "J"), role: traffic,
                      attributes: [A("duplicate", .bool), A("mapped"), A("matched", .bool), A("rttMs", .int),
                          A("txid")]),
        EventKindSpec(.iceError, "ICE check answered with an error", step: fixed(.error, "!"), label: "ICE error",
                      attributes: [A("detail"), A("legacy", .bool)]),
        EventKindSpec(.iceTimeout, "ICE timed out (logs)", step: fixed(.timeout, "T"), label: "ICE",
                      attributes: [A("channel", .list), A("legacy", .bool), A("state")]),
        EventKindSpec(.iceUnanswered, "ICE checks got no answer (on the wire)", step: fixed(.timeout),
                      label: "ICE checks unanswered",
                      attributes: [A("atEnd", .bool), A("retransmits", .int), A("txid"), A("waitedMs", .int)]),
    ]

    static let dtls: [EventKindSpec] = [
        EventKindSpec(.dtlsHandshake, "DTLS handshake message", step: fixed(.secureHandshake, "E"), role: start,
                      attributes: [A("cipherSuite"), A("encrypted", .bool), A("epoch", .int), A("fragment"),
                          A("message"), A("messageSeq", .int), A("mpcPrefix"), A("retransmit", .bool)]),
        EventKindSpec(.dtlsChangeCipherSpec, "DTLS ChangeCipherSpec", step: fixed(.secureHandshake, "E"), role: traffic,
                      label: "ChangeCipherSpec", attributes: [A("epoch", .int), A("mpcPrefix")]),
        EventKindSpec(.dtlsEstablished, "DTLS secure channel up", step: fixed(.secureChannelUp, "U"), role: traffic,
                      attributes: [A("channel", .list), A("handshakeMs", .int), A("how")]),
        EventKindSpec(.dtlsAlert, "DTLS alert", step: fixed(.error, "!"), label: "DTLS alert",
                      attributes: [A("description"), A("level"), A("mpcPrefix")]),
        EventKindSpec(.dtlsApplicationData, "DTLS application data", step: fixed(.data, "D"), role: traffic,
                      coalescing: .steady(defaultGap: 15 * second), label: "DTLS data",
                      attributes: [A("mpcPrefix"), A("size", .int), A("version")]),
        EventKindSpec(.dtlsTimeout, "DTLS timed out (logs)", step: fixed(.timeout, "T"), label: "DTLS",
                      attributes: [A("channel", .list), A("state")]),
        EventKindSpec(.dtlsStalled, "a DTLS handshake stopped without completing or failing (on the wire)",
                      step: fixed(.timeout), label: "DTLS handshake stalled",
                      attributes: [A("atEnd", .bool), A("lastMessage"), A("waitedMs", .int)]),
    ]

    static let gck: [EventKindSpec] = [
        EventKindSpec(.gckHello, "GCK Hello", step: fixed(.gckHandshake, "O"), role: start, label: "Hello",
                      attributes: [A("flags"), A("length", .int)]),
        EventKindSpec(.gckDD, "GCK database description", step: fixed(.gckHandshake, "O"), role: traffic, label: "DD",
                      attributes: [A("bytes", .int), A("direction"), A("length", .int), A("nodes", .int)]),
        EventKindSpec(.gckLSA, "GCK link-state advertisement", step: fixed(.gckHandshake, "O"), role: traffic,
                      label: "LSA", attributes: [A("direction"), A("length", .int), A("nodes", .int), A("sn", .int)]),
        EventKindSpec(.gckLSAACK, "GCK LSA acknowledgement", step: fixed(.gckHandshake, "O"), role: traffic,
                      label: "LSAACK", attributes: [A("direction"), A("length", .int), A("sn", .int)]),
        EventKindSpec(.gckData, "GCK data", step: fixed(.data, "D"), role: traffic,
                      coalescing: .steady(defaultGap: 15 * second), label: "GCK data",
                      attributes: [A("ack"), A("gckType", .int), A("kind"), A("length", .int), A("payloadSize", .int), A("seq", .int)]),
        EventKindSpec(.gckHeartbeat, "GCK heartbeat", step: fixed(.heartbeat, "B"), role: traffic,
                      coalescing: .steady(defaultGap: 15 * second),
                      attributes: [A("channel", .list), A("length", .int), A("retransmit", .bool), A("sn", .int)]),
        EventKindSpec(.gckTimeout, "a GCK timer fired (logs: Hello/DD/LSAACK/Heartbeat timeout)", step: fixed(.timeout, "T"),
                      label: "GCK", attributes: [A("channel", .list), A("wait")]),
        EventKindSpec(.gckGivingUp, "GCK gave up on a participant (logs)", step: fixed(.timeout, "T"), label: "giving up",
                      attributes: [A("channel", .list)]),
        EventKindSpec(.gckOther, "a GCK packet of a type not known (its size only, never its body)", label: "GCK (unknown type)",
                      attributes: [A("bodySize", .int), A("gckType", .int), A("length", .int)]),
    ]

    static let app: [EventKindSpec] = [
        EventKindSpec(.appHandshake, "app handshake", step: fixed(.appHandshake, "W"), role: start,
                      attributes: [A("deviceId"), A("direction"), A("platform")]),
        EventKindSpec(.appHandshakeResponse, "app handshake response", step: fixed(.appHandshakeDone, "H"), role: traffic,
                      attributes: [A("accepted", .bool), A("deviceId"), A("direction"), A("status")]),
        EventKindSpec(.appKeepAlive, "app keep-alive", step: fixed(.keepAlive, "K"), role: traffic,
                      coalescing: .steady(defaultGap: 6 * second),
                      attributes: [A("deviceId"), A("direction"), A("rttMs", .int), A("session"), A("timestamp")]),
        EventKindSpec(.appChat, "app chat message (contents only with --show-payloads)", step: fixed(.data, "D"),
                      role: traffic, label: "chat", attributes: [A("sender"), A("size", .int), A("type")]),
        EventKindSpec(.appOther, "another app message (attr type)", step: fixed(.data, "D"), role: traffic,
                      attributes: [A("direction"), A("sender"), A("type")]),
        EventKindSpec(.appTimeout, "the app printed a handshake or keep-alive timeout", step: fixed(.timeout, "T"),
                      label: "app", attributes: [A("phase"), A("reason"), A("wait"), A("what")]),
        EventKindSpec(.appDuplicateIgnored, "the app ignored a duplicate connection", label: "duplicate ignored",
                      attributes: []),
    ]

    static let session: [EventKindSpec] = [
        EventKindSpec(.stateChange, "MCSession state change (attrs from, to)", step: stateStep, role: stateRole,
                      attributes: [A("from"), A("session"), A("state"), A("to")]),
        EventKindSpec(.disconnected, "a peer disconnected", step: fixed(.disconnected, "X"), attributes: []),
        EventKindSpec(.reconnectAttempt, "a reconnect attempt (attrs attempt, delay)", step: fixed(.connecting, "P"),
                      label: "reconnect", attributes: [A("attempt", .int), A("delay"), A("maxDelay"), A("session")]),
        EventKindSpec(.encryptionIncompatible, "the two peers' encryption preferences do not match",
                      step: fixed(.error, "!"), label: "encryption mismatch", attributes: [A("preference")]),
        EventKindSpec(.permissionError, "local network permission denied (-72008 and friends)", step: fixed(.error, "!"),
                      label: "permission denied", attributes: [A("code"), A("permission"), A("role")]),
    ]

    static let transport: [EventKindSpec] = [
        EventKindSpec(.tcpOpened, "a TCP connection opened (an invitation channel when attr invitation)",
                      step: tcpOpenedStep, label: "TCP connected",
                      attributes: [A("client"), A("handshakeNs", .int), A("invitation"), A("sawSYN", .bool),
                          A("server")]),
        EventKindSpec(.tcpRefused, "a TCP connection refused", step: fixed(.error, "R"), label: "TCP refused",
                      attributes: [A("by"), A("client"), A("connection"), A("errno", .int), A("error"),
                          A("invitation"), A("server")]),
        EventKindSpec(.tcpReset, "a TCP connection reset", step: fixed(.error, "R"), label: "TCP reset",
                      attributes: [A("by"), A("client"), A("durationNs", .int), A("error"), A("invitation"),
                          A("server")]),
        EventKindSpec(.tcpClosed, "a TCP connection closed", step: fixed(.channelClosed, "F"), label: "TCP",
                      attributes: [A("by"), A("client"), A("durationNs", .int), A("error"), A("how"),
                          A("invitation"), A("server")]),
        EventKindSpec(.icmpUnreachable, "ICMP destination or port unreachable for a flow (the event's flow is the quoted one)",
                      step: fixed(.error, "!"), label: "ICMP unreachable",
                      attributes: [A("code", .int), A("proto"), A("reporter", .address), A("summary"),
                          A("type", .int)]),
        EventKindSpec(.sendError, "a send failed (logs: DTLS send failed, SSLWrite failed...)", step: fixed(.error, "!"),
                      label: "send failed",
                      attributes: [A("channel", .list), A("channelInvalid", .bool), A("code"), A("errno", .int),
                          A("error"), A("layer"), A("packet"), A("peerFrom"), A("sslCode"), A("sslError"), A("what")]),
        EventKindSpec(.checksumError, "a packet failed its CRC", step: fixed(.error, "!"), label: "bad checksum",
                      attributes: [A("computed"), A("given"), A("protocol")]),
    ]

    static let logOnly: [EventKindSpec] = [
        EventKindSpec(.logPeerCreated, "the local MCPeerID was created", label: "peer ID created", attributes: []),
        EventKindSpec(.logAdvertising, "the local peer starts or stops advertising", label: "advertising",
                      attributes: [A("action"), A("serviceType")]),
        EventKindSpec(.logSessionInit, "an MCSession was created (attr encryption)", label: "session created",
                      attributes: [A("encryption"), A("securityIdentity")]),
        EventKindSpec(.logICEScheduled, "an ICE check was scheduled (timeout armed)", step: fixed(.iceChecks),
                      label: "ICE scheduled", attributes: [A("channel", .list)]),
        EventKindSpec(.logDTLSFailed, "a DTLS handshake call failed", step: fixed(.error, "!"),
                      attributes: [A("channel", .list), A("hResult")]),
        EventKindSpec(.logTimeoutIgnored, "a timer fired on a connected channel", label: "timeout ignored",
                      attributes: []),
        EventKindSpec(.logChannelClosed, "a channel was closed", step: fixed(.channelClosed),
                      attributes: [A("channel", .list)]),
        EventKindSpec(.logCleanupTimeout, "\"Timed out, enforcing clean up.\"", step: fixed(.timeout, "T"),
                      attributes: []),
        EventKindSpec(.logStaleIdentifier, "a stale identifier", step: fixed(.error, "!"), attributes: []),
        EventKindSpec(.logMeshFailed, "the mesh could not be built", step: fixed(.error, "!"), attributes: []),
        EventKindSpec(.logCertificateRejected, "a peer's certificate was rejected", step: fixed(.error, "!"),
                      attributes: []),
        EventKindSpec(.logSessionOpened, "a session was opened", label: "session created",
                      attributes: [A("session"), A("sessionID")]),
        EventKindSpec(.logReconnectStart, "the app starts reconnecting", label: "reconnecting",
                      attributes: [A("session")]),
        EventKindSpec(.logSocketError, "a socket error", label: "socket error",
                      attributes: [A("domain"), A("errno", .int), A("layer")]),
        EventKindSpec(.logAppError, "the app printed an error", label: "app error", attributes: [A("error")]),
        EventKindSpec(.logSocketSetup, "no socket for an interface (AWDL disabled)", label: "socket set up",
                      attributes: [A("awdl"), A("interface")]),
        EventKindSpec(.logInvitationError, "the invitation channel failed or got junk", label: "invitation error",
                      attributes: [A("error"), A("reason"), A("side")]),
        EventKindSpec(.logInvitationData, "an invitation Data frame (2100) arrived", label: "invitation data",
                      attributes: [A("invitation")]),
        EventKindSpec(.logSessionError, "MCSession refused a call (wrong state)", label: "session error",
                      attributes: [A("reason")]),
        EventKindSpec(.logPacketDropped, "GCK could not process a packet", label: "packet dropped", attributes: []),
        EventKindSpec(.logInviting, "the app asks MPC to invite a peer", label: "inviting", attributes: []),
    ]
}
