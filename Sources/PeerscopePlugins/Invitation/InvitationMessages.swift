import PeerscopeCore

/// The plist keys of the nearby-service invitation messages (spec §1.2).
public enum InvitationKey {
    public static let messageID = "MCNearbyServiceMessageIDKey"
    public static let sender = "MCNearbyServiceSenderPeerIDKey"
    public static let recipient = "MCNearbyServiceRecipientPeerIDKey"
    public static let inviteID = "MCNearbyServiceInviteIDKey"
    public static let context = "MCNearbyServiceInviteContextKey"
    public static let accept = "MCNearbyServiceAcceptInviteKey"
    public static let connectionData = "MCNearbyServiceConnectionDataKey"
    public static let all: Set<String> = [messageID, sender, recipient, inviteID, context, accept, connectionData]
}

/// One invitation message (MessageID 1, 2 or 3) read from its binary plist. Every field is optional:
/// what is missing or of the wrong type is listed in `problems` with the plist offset where it applies.
public struct InvitationMessage: Sendable {
    public var messageID: Int64?
    public var sender: SerializedPeerID?
    public var recipient: SerializedPeerID?
    public var inviteID: Int64?
    /// Size of the app's invitation context (its contents are app data and never decoded).
    public var contextSize: Int?
    public var accepted: Bool?
    public var connectionData: ConnectionData?
    /// Where the connection-data bytes start within the plist.
    public var connectionDataOffset: Int?
    /// Keys outside the known set (names only).
    public var otherKeys: [String] = []
    public var problems: [(id: String, message: String, offset: Int?)] = []

    public init() {}

    /// Decodes a message plist; nil (with the error) when the bytes are not a readable plist dictionary.
    public static func parse(_ body: Bytes) -> Result<InvitationMessage, BinaryPlistError> {
        let top: PlistValue
        do {
            top = try BinaryPlist.decode(body)
        } catch {
            return .failure(error)
        }
        return parse(top, in: body)
    }

    /// Reads a message from its plist, already decoded from `body` (the framing plugin hands it on
    /// with the bytes; offsets are reported within `body`).
    public static func parse(_ top: PlistValue, in body: Bytes) -> Result<InvitationMessage, BinaryPlistError> {
        guard case .dict(let entries) = top else {
            return .failure(BinaryPlistError(.badKey, at: 0, "top object is a \(top.typeName), not a dictionary"))
        }
        var m = InvitationMessage()
        for (key, value) in entries {
            switch key {
            case InvitationKey.messageID:
                m.messageID = value.intValue
                if m.messageID == nil { m.badType(key, value) }
            case InvitationKey.sender, InvitationKey.recipient:
                guard let d = value.dataValue else { m.badType(key, value); continue }
                switch SerializedPeerID.parse(d) {
                case .success(let p): if key == InvitationKey.sender { m.sender = p } else { m.recipient = p }
                case .failure(let e):
                    m.problems.append(("peer_id.\(e.rawValue)", "\(key): \(d.count)-byte peer ID unreadable (\(e.rawValue))",
                                       d.lower - body.lower))
                }
            case InvitationKey.inviteID:
                m.inviteID = value.intValue
                if m.inviteID == nil { m.badType(key, value) }
            case InvitationKey.context:
                if let d = value.dataValue { m.contextSize = d.count } else { m.badType(key, value) }
            case InvitationKey.accept:
                m.accepted = value.boolValue
                if m.accepted == nil { m.badType(key, value) }
            case InvitationKey.connectionData:
                guard let d = value.dataValue else { m.badType(key, value); continue }
                m.connectionData = ConnectionData(d)
                m.connectionDataOffset = d.lower - body.lower
            default:
                m.otherKeys.append(key)
            }
        }
        return .success(m)
    }

    private mutating func badType(_ key: String, _ value: PlistValue) {
        problems.append(("bad_type", "\(key) is a \(value.typeName)", nil))
    }
}

/// What the three message plugins share: plist decoding with diagnostics, teaching the directory,
/// hints and `decode` fields.
enum InvitationMessageDecoding {
    /// What every invitation message plugin may report.
    static let diagnostics: [DiagnosticSpec] = [
        DiagnosticSpec("bad_plist", .warning, "the message's binary plist cannot be read"),
        DiagnosticSpec("message_id", .warning, "the plist's MessageID is not the one it was handed on as"),
        DiagnosticSpec("missing_key", .warning, "a key the message needs is missing"),
        DiagnosticSpec("bad_type", .warning, "a key of the wrong plist type"),
        DiagnosticSpec("peer_id.*", .warning, "a serialized peer ID that cannot be read"),
        DiagnosticSpec("sender_mismatch", .warning, "the sender named is not the peer the packet came from"),
        DiagnosticSpec("connection_data.*", .info, "connection data (candidate blob) that cannot be fully read"),
    ]

    static func decode(_ input: PluginInput, _ ctx: PluginContext, expecting id: Int64, required: [String]) -> InvitationMessage? {
        let m: InvitationMessage
        let parsed = (input.parsed as? PlistValue).map { InvitationMessage.parse($0, in: input.payload) } ?? InvitationMessage.parse(input.payload)
        switch parsed {
        case .failure(let e):
            ctx.diagnose("bad_plist", "message \(id): \(e.message)", offset: e.offset)
            return nil
        case .success(let v): m = v
        }
        for p in m.problems { ctx.diagnose(p.id, p.message, offset: p.offset) }
        if let got = m.messageID, got != id {
            ctx.diagnose("message_id", "handed on as message \(id) but says \(got)")
        }
        for key in required where !present(key, m) {
            ctx.diagnose("missing_key", "message \(id) has no \(key)")
        }
        if let cd = m.connectionData {
            let base = m.connectionDataOffset ?? 0
            for p in cd.problems { ctx.diagnose(p.id, p.message + " (blob offset \(p.offset))", offset: base + p.offset, severity: .info) }
        }
        if let s = m.sender, let src = input.flow?.src, let known = InvitationText.exactPeer(src, ctx.directory), known != s.peerID {
            ctx.diagnose("sender_mismatch", "message \(id) says sender \(s.idString), but \(src) belongs to \(PeerIdentity.idString(known))")
        }
        teach(m, input, ctx)
        return m
    }

    private static func present(_ key: String, _ m: InvitationMessage) -> Bool {
        switch key {
        case InvitationKey.sender: m.sender != nil
        case InvitationKey.recipient: m.recipient != nil
        case InvitationKey.inviteID: m.inviteID != nil
        case InvitationKey.accept: m.accepted != nil
        case InvitationKey.connectionData: m.connectionData != nil
        case InvitationKey.context: m.contextSize != nil
        default: true
        }
    }

    /// Sender: ID, name, the TCP endpoint it sent from and its UDP endpoints; recipient: ID, name, TCP endpoint.
    private static func teach(_ m: InvitationMessage, _ input: PluginInput, _ ctx: PluginContext) {
        if let s = m.sender {
            ctx.directory.learn(peerID: s.peerID, displayName: s.displayName)
            if let src = input.flow?.src { ctx.directory.learn(peerID: s.peerID, endpoint: src) }
            for e in m.connectionData?.endpoints ?? [] { ctx.directory.learn(peerID: s.peerID, endpoint: e) }
        }
        if let r = m.recipient {
            ctx.directory.learn(peerID: r.peerID, displayName: r.displayName)
            if let dst = input.flow?.dst { ctx.directory.learn(peerID: r.peerID, endpoint: dst) }
        }
    }

    static func hints(_ m: InvitationMessage, _ input: PluginInput, _ ctx: PluginContext) -> (PeerHint, PeerHint) {
        let fallback = ctx.hints()
        let from = m.sender.map { PeerHint(peerID: $0.peerID, displayName: $0.displayName, endpoint: input.flow?.src) } ?? fallback.from
        let to = m.recipient.map { PeerHint(peerID: $0.peerID, displayName: $0.displayName, endpoint: input.flow?.dst) } ?? fallback.to
        return (from, to)
    }

    static func attrs(_ m: InvitationMessage) -> [String: String] {
        var a: [String: String] = [:]
        if let i = m.inviteID { a[.inviteID] = String(i) }
        if let cd = m.connectionData {
            if let e = cd.encryption { a[.encryption] = e.description }
            // The raw flags too: DEC reads `flags & 3` as the preference, MCW saw 0x02 on `.optional` pairs.
            if let f = cd.segments.first(where: \.isMC)?.flags { a[.connectionDataFlags] = "0x" + String(f, radix: 16) }
            if let s = cd.securityIdentity { a[.securityIdentity] = s }
            let eps = cd.endpoints
            if !eps.isEmpty { a[.udpEndpoints] = eps.map(\.description).joined(separator: ",") }
            if let s = m.sender, let r = m.recipient, let p = cd.interfaces.first?.participantID {
                // Whose participant ID the entries carry is uncertain; say which peer it matches.
                a[.entryParticipant] = p == PeerIdentity.participantID(s.peerID) ? "sender"
                    : p == PeerIdentity.participantID(r.peerID) ? "recipient" : "other"
            }
        }
        return a
    }

    static func fields(_ m: InvitationMessage) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = []
        if let s = m.sender { f.append(("sender", s.json)) }
        if let r = m.recipient { f.append(("recipient", r.json)) }
        if let i = m.inviteID { f.append(("inviteID", .int(i))) }
        if let a = m.accepted { f.append(("accepted", .bool(a))) }
        if let c = m.contextSize { f.append(("contextSize", .int(Int64(c)))) }
        if let cd = m.connectionData { f.append(("connectionData", cd.json)) }
        if !m.otherKeys.isEmpty { f.append(("otherKeys", .array(m.otherKeys.map { .string($0) }))) }
        return f
    }
}

/// MessageID 1: the browser invites the advertiser.
public final class InviteMessagePlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "mpc-invite",
        summary: "MPC invitation (MessageID 1): sender, recipient, invite ID, context size",
        claims: [.carried(InvitationFramingPlugin.dataCarrier, key: "1")],
        messageTypes: ["invite"],
        diagnostics: InvitationMessageDecoding.diagnostics)

    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let m = InvitationMessageDecoding.decode(input, ctx, expecting: 1,
                                                       required: [InvitationKey.sender, InvitationKey.recipient, InvitationKey.inviteID])
        else { return }
        let (from, to) = InvitationMessageDecoding.hints(m, input, ctx)
        var attrs = InvitationMessageDecoding.attrs(m)
        attrs[.contextSize] = m.contextSize ?? 0
        ctx.event(.invite, from: from, to: to, attrs: attrs)
        ctx.message("invite", InvitationMessageDecoding.fields(m))
    }
}

/// MessageID 2: the advertiser accepts or declines; on accept it carries its connection data.
public final class InviteResponsePlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "mpc-invite-response",
        summary: "MPC invitation response (MessageID 2): accepted/declined, invite ID, connection data",
        claims: [.carried(InvitationFramingPlugin.dataCarrier, key: "2")],
        messageTypes: ["invite-response"],
        diagnostics: InvitationMessageDecoding.diagnostics
            + [DiagnosticSpec("no_connection_data", .warning, "an accepted response without connection data")])

    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let m = InvitationMessageDecoding.decode(input, ctx, expecting: 2,
                                                       required: [InvitationKey.accept, InvitationKey.inviteID])
        else { return }
        if m.accepted == true && m.connectionData == nil {
            ctx.diagnose("no_connection_data", "accepted response without MCNearbyServiceConnectionDataKey")
        }
        let (from, to) = InvitationMessageDecoding.hints(m, input, ctx)
        var attrs = InvitationMessageDecoding.attrs(m)
        if let a = m.accepted { attrs[.accepted] = a }
        attrs[.connectionData] = m.connectionData != nil
        ctx.event(.inviteResponse, from: from, to: to, attrs: attrs)
        ctx.message("invite-response", InvitationMessageDecoding.fields(m))
    }
}

/// MessageID 3: the browser sends its connection data; the advertiser then connects and closes TCP.
public final class InviteConnectPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "mpc-invite-connect",
        summary: "MPC invite connect (MessageID 3): the browser's connection data, invite ID",
        claims: [.carried(InvitationFramingPlugin.dataCarrier, key: "3")],
        messageTypes: ["invite-connect"],
        diagnostics: InvitationMessageDecoding.diagnostics)

    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard let m = InvitationMessageDecoding.decode(input, ctx, expecting: 3,
                                                       required: [InvitationKey.connectionData, InvitationKey.inviteID])
        else { return }
        let (from, to) = InvitationMessageDecoding.hints(m, input, ctx)
        ctx.event(.inviteConnect, from: from, to: to, attrs: InvitationMessageDecoding.attrs(m))
        ctx.message("invite-connect", InvitationMessageDecoding.fields(m))
    }
}
