/// A value an event attribute can hold. Attributes travel as text (user patterns fill them from
/// regex captures, the event stream writes them as JSON strings); typed accessors convert.
public protocol EventAttributeValue: Sendable {
    init?(attributeText: String)
    var attributeText: String { get }
}

extension String: EventAttributeValue {
    public init?(attributeText: String) { self = attributeText }
    public var attributeText: String { self }
}

/// Integers travel in decimal.
extension EventAttributeValue where Self: FixedWidthInteger {
    public init?(attributeText: String) { self.init(attributeText, radix: 10) }
    public var attributeText: String { String(self) }
}

extension Int: EventAttributeValue {}
extension Int64: EventAttributeValue {}
extension UInt64: EventAttributeValue {}
extension UInt16: EventAttributeValue {}

extension Bool: EventAttributeValue {
    /// `true`/`yes`/`1` and `false`/`no`/`0`, any case (log lines and user patterns say it either way).
    public init?(attributeText: String) {
        switch attributeText.lowercased() {
        case "true", "yes", "1": self = true
        case "false", "no", "0": self = false
        default: return nil
        }
    }
    public var attributeText: String { self ? "true" : "false" }
}

extension IPAddress: EventAttributeValue {
    public init?(attributeText: String) { self.init(attributeText) }
    public var attributeText: String { description }
}

/// A typed attribute key: `event[.accepted]` is a `Bool?`, `event[.reporter]` an `IPAddress?`.
/// The keys are declared here once; `EventCatalogue` says which kinds carry which.
public struct EventAttribute<Value: EventAttributeValue>: Sendable, Hashable {
    public let key: String
    public init(_ key: String) { self.key = key }
}

extension PeerEvent {
    /// The attribute as its type; nil when absent or not of that type.
    @inlinable public subscript<V>(_ a: EventAttribute<V>) -> V? {
        get { attrs[a.key].flatMap { V(attributeText: $0) } }
        set { attrs[a.key] = newValue?.attributeText }
    }
}

// The attribute keys the stages read. Text attributes:
extension EventAttribute where Value == String {
    /// DTLS handshake message (`ClientHello`...), app print, log message summary.
    public static var message: Self { .init("message") }
    /// DTLS alert description, error descriptions.
    public static var description: Self { .init("description") }
    /// DTLS alert level (`warning`, `fatal`, `encrypted`).
    public static var level: Self { .init("level") }
    /// `session.state`: the state before / after.
    public static var from: Self { .init("from") }
    public static var to: Self { .init("to") }
    public static var state: Self { .init("state") }
    /// App message type, receipt's acknowledged type, ICMP type.
    public static var type: Self { .init("type") }
    /// `invitation.decision`: approves / declines / already in dictionary.
    public static var decision: Self { .init("decision") }
    /// Encryption preference (`required`, `optional`, `none`).
    public static var encryption: Self { .init("encryption") }
    /// The GCK channel(s) a log line names (`0,1,2`).
    public static var channel: Self { .init("channel") }
    /// Which timer a timeout is (`Hello`, `Heartbeat`, `keep-alive`...).
    public static var wait: Self { .init("wait") }
    public static var reason: Self { .init("reason") }
    public static var code: Self { .init("code") }
    public static var phase: Self { .init("phase") }
    /// An invitation-channel TCP connection (`tcp.opened`): how it is known to be one.
    public static var invitation: Self { .init("invitation") }
    /// The peer ID (base-36 idString) an event names.
    public static var peerID: Self { .init("peerID") }
    public static var instance: Self { .init("instance") }
    /// An mDNS instance's name as announced (the discovery section counts instances by it).
    public static var instanceName: Self { .init("instanceName") }
    /// Message contents, present only with `--show-payloads`.
    public static var content: Self { .init("content") }
    /// DTLS records that carried MPC's one-byte `0xD0` prefix.
    public static var mpcPrefix: Self { .init("mpcPrefix") }
    /// ICMP error summary (`port unreachable`...).
    public static var summary: Self { .init("summary") }
    /// Encryption preference named by a mismatch log line.
    public static var preference: Self { .init("preference") }
    /// TCP connection ends (`address:port`): the side that listened, the side that connected.
    public static var server: Self { .init("server") }
    public static var client: Self { .init("client") }
    /// What a timeout or error was about, as the line says (`handshake`, `keep-alive`...).
    public static var what: Self { .init("what") }
    public static var timer: Self { .init("timer") }
    /// A reconnect attempt's delay (seconds, as printed).
    public static var delay: Self { .init("delay") }
    /// A timer that fired on a connected channel and was ignored (`ignored`).
    public static var ignored: Self { .init("ignored") }
}

// Text attributes of the transport, ICE, DTLS and log events (values kept as the plugin writes them).
extension EventAttribute where Value == String {
    /// STUN transaction ID (hex).
    public static var txid: Self { .init("txid") }
    /// ICE role of a binding request (`controlling`, `controlled`), a log line's role, the side that
    /// sent an invitation frame (`browser`, `advertiser`).
    public static var role: Self { .init("role") }
    /// STUN USERNAME's two fragments (who the check is to and from).
    public static var usernameTo: Self { .init("usernameTo") }
    public static var usernameFrom: Self { .init("usernameFrom") }
    /// A retransmission: how many (STUN), or `true` (DTLS, log lines).
    public static var retransmit: Self { .init("retransmit") }
    /// The reflexive address a STUN response maps to.
    public static var mapped: Self { .init("mapped") }
    /// `checksum.error`: the protocol (`stun`, `gck`, `mpc-invitation`), the values given and computed (hex).
    public static var protocolName: Self { .init("protocol") }
    public static var given: Self { .init("given") }
    public static var computed: Self { .init("computed") }
    /// A DTLS record's protocol version (`1.3`); a certificate's fate (`accepted`...).
    public static var version: Self { .init("version") }
    public static var certificate: Self { .init("certificate") }
    /// Milliseconds: a STUN round trip, how long a check or handshake waited, a handshake's length.
    public static var rttMs: Self { .init("rttMs") }
    public static var waitedMs: Self { .init("waitedMs") }
    public static var handshakeMs: Self { .init("handshakeMs") }
    /// Nanoseconds: a TCP handshake's and connection's length.
    public static var handshakeNs: Self { .init("handshakeNs") }
    public static var durationNs: Self { .init("durationNs") }
    /// DTLS record epoch, handshake message sequence, fragment (`offset+length/total`), cipher suite.
    public static var epoch: Self { .init("epoch") }
    public static var messageSeq: Self { .init("messageSeq") }
    public static var fragment: Self { .init("fragment") }
    public static var cipherSuite: Self { .init("cipherSuite") }
    /// How something ended (`alert`, `reset`, `fin`...), which side did it (`client`, `server`).
    public static var how: Self { .init("how") }
    public static var by: Self { .init("by") }
    /// The last DTLS handshake message of a stalled handshake.
    public static var lastMessage: Self { .init("lastMessage") }
    /// The IP protocol of an ICMP error's quoted packet (`udp`, `tcp`).
    public static var proto: Self { .init("proto") }
    /// A log event's peer taken from the lines around it (`context`), its time (`inferred`).
    public static var peerFrom: Self { .init("peerFrom") }
    public static var time: Self { .init("time") }
    /// Log lines folded into one event.
    public static var lines: Self { .init("lines") }
    /// Which MCSession a state line is about.
    public static var session: Self { .init("session") }
    /// Timeline notes (`stopped advertising; still in session`).
    public static var note: Self { .init("note") }
    /// An invitation's id (matches invitations, responses and sessions).
    public static var inviteID: Self { .init("inviteID") }
    /// An mDNS service type (`_chat._tcp`).
    public static var service: Self { .init("service") }
    /// MPC log lines: discovery info present, advertising action and service type, more coming.
    public static var discoveryInfo: Self { .init("discoveryInfo") }
    public static var action: Self { .init("action") }
    public static var serviceType: Self { .init("serviceType") }
    public static var moreComing: Self { .init("moreComing") }
    /// The side of a connection decision (`advertiser`, `browser`) and the state it was already in.
    public static var side: Self { .init("side") }
    public static var alreadyInState: Self { .init("alreadyInState") }
    /// Errors as the log prints them: text, errno, status, HRESULT, SSL error and code.
    public static var error: Self { .init("error") }
    public static var errno: Self { .init("errno") }
    /// A status as printed (a log's, an app handshake's).
    public static var status: Self { .init("status") }
    public static var hResult: Self { .init("hResult") }
    public static var sslError: Self { .init("sslError") }
    public static var sslCode: Self { .init("sslCode") }
    /// Where a send failed (`session`, `agp`, `dtls`, `ssl`, `udp`, `socket`, `gck`, `ice`) and with what.
    public static var layer: Self { .init("layer") }
    public static var packet: Self { .init("packet") }
    public static var bytes: Self { .init("bytes") }
    public static var socket: Self { .init("socket") }
    /// A permission that was refused (`local-network`).
    public static var permission: Self { .init("permission") }
    /// Lines of older MPC builds (`viceroy`, `failover`) and what they said.
    public static var legacy: Self { .init("legacy") }
    public static var detail: Self { .init("detail") }
    /// An old ICE line's call ID, an old GCK line's connection state.
    public static var call: Self { .init("call") }
    public static var clstate: Self { .init("clstate") }
    /// A reconnect attempt's number; a service's port (mDNS SRV).
    public static var attempt: Self { .init("attempt") }
    public static var port: Self { .init("port") }
}

extension EventAttribute where Value == Bool {
    /// STUN: a USE-CANDIDATE request, a second answer, a check forgotten when the table was full.
    public static var useCandidate: Self { .init("useCandidate") }
    public static var duplicate: Self { .init("duplicate") }
    public static var evicted: Self { .init("evicted") }
    /// DTLS: an encrypted handshake record, an alert during the handshake.
    public static var encrypted: Self { .init("encrypted") }
    public static var duringHandshake: Self { .init("duringHandshake") }
    /// `tcp.*`: whether the connection's SYN was captured.
    public static var sawSYN: Self { .init("sawSYN") }
    /// Log lines: the peer was already in the session dictionary; the channel was marked invalid.
    public static var alreadyInDictionary: Self { .init("alreadyInDictionary") }
    public static var channelInvalid: Self { .init("channelInvalid") }
}

extension EventAttribute where Value == Bool {
    /// `invitation.response`: accepted (true) or declined (false).
    public static var accepted: Self { .init("accepted") }
    /// `ice.unanswered`, `dtls.stalled`: unfinished when the capture ended.
    public static var atEnd: Self { .init("atEnd") }
    /// `invitation.receipt`: false when no such message was seen.
    public static var matched: Self { .init("matched") }
}

extension EventAttribute where Value == IPAddress {
    /// `icmp.unreachable`: the host (or router) that sent the ICMP error.
    public static var reporter: Self { .init("reporter") }
}

extension Dictionary where Key == String, Value == String {
    /// An event's attributes read and written by typed key: `attrs[.txid] = id`, `attrs[.accepted]`
    /// is a `Bool?` (nil when absent or not of that type); setting nil removes it.
    @inlinable public subscript<V>(_ a: EventAttribute<V>) -> V? {
        get { self[a.key].flatMap { V(attributeText: $0) } }
        set { self[a.key] = newValue?.attributeText }
    }

    /// The attribute's text whatever its type: a log line's value as printed (`attrs[text: .sn] = c[0]`).
    @inlinable public subscript<V>(text a: EventAttribute<V>) -> String? {
        get { self[a.key] }
        set { self[a.key] = newValue }
    }

    /// An event's attributes from typed text keys: `.typed([.layer: "udp", .code: c[0]])`.
    public static func typed(_ text: KeyValuePairs<EventAttribute<String>, String>) -> [String: String] {
        var out: [String: String] = [:]
        out.reserveCapacity(text.count)
        for (k, v) in text { out[k.key] = v }
        return out
    }

    /// An event's attributes from typed flags: `.typed([.accepted: false])`.
    public static func typed(_ flags: KeyValuePairs<EventAttribute<Bool>, Bool>) -> [String: String] {
        var out: [String: String] = [:]
        for (k, v) in flags { out[k.key] = v.attributeText }
        return out
    }
}

// The keys the GCK, app-message and invitation plugins write.
extension EventAttribute where Value == String {
    /// `checksum.error`: the frame type and the field checked (protocol, given and computed are above).
    public static var frameType: Self { .init("frameType") }
    public static var field: Self { .init("field") }
    /// GCK header flags (hex), how a flagged DD/LSA body was read, a Data packet's inner kind.
    public static var flags: Self { .init("flags") }
    public static var compressed: Self { .init("compressed") }
    public static var kind: Self { .init("kind") }
    /// App messages: the device, its platform, the sender's name, the timestamp as sent (status is above).
    public static var deviceId: Self { .init("deviceId") }
    public static var platform: Self { .init("platform") }
    public static var sender: Self { .init("sender") }
    public static var timestamp: Self { .init("timestamp") }
    /// Invitation channel: the Hello's identity (the sending side is `role`, above).
    public static var idString: Self { .init("idString") }
    public static var expectedIdString: Self { .init("expectedIdString") }
    /// Invitation connection data: flags (hex), the UDP endpoints (comma-separated), whose participant the entries carry.
    public static var connectionDataFlags: Self { .init("connectionDataFlags") }
    public static var udpEndpoints: Self { .init("udpEndpoints") }
    public static var entryParticipant: Self { .init("entryParticipant") }
}

extension EventAttribute where Value == Int {
    /// GCK: the header's length, node count, sequence numbers, sizes and the type of an unknown packet.
    public static var length: Self { .init("length") }
    public static var nodes: Self { .init("nodes") }
    public static var sn: Self { .init("sn") }
    public static var seq: Self { .init("seq") }
    public static var ack: Self { .init("ack") }
    public static var payloadSize: Self { .init("payloadSize") }
    public static var bodySize: Self { .init("bodySize") }
    public static var gckType: Self { .init("gckType") }
    /// App message size (bytes), invitation context size, a Hello's flags.
    public static var size: Self { .init("size") }
    public static var contextSize: Self { .init("contextSize") }
    public static var helloFlags: Self { .init("helloFlags") }
}

extension EventAttribute where Value == Int64 {
    /// A receipt's delay after the message it acknowledges.
    public static var latencyNs: Self { .init("latencyNs") }
}

extension EventAttribute where Value == UInt64 {
    /// The frame of the message a receipt acknowledges.
    public static var ackedFrame: Self { .init("ackedFrame") }
}

extension EventAttribute where Value == Bool {
    /// Invitation: a response carrying connection data, a malformed Hello, a Hello whose identity is
    /// not the one discovery saw at its endpoint, connection data asking for a security identity.
    public static var connectionData: Self { .init("connectionData") }
    public static var malformed: Self { .init("malformed") }
    public static var identityMismatch: Self { .init("identityMismatch") }
    public static var securityIdentity: Self { .init("securityIdentity") }
}

extension EventAttribute where Value == Int {
    /// How many times an unanswered STUN request was sent again.
    public static var retransmits: Self { .init("retransmits") }
}

/// Readings of attributes that several stages share.
public enum EventAttributes {
    /// `invitation.response`'s answer (`accepted`, or `accept` as some logs say): nil when unknown.
    public static func isAccepted(_ attrs: some AttributeLookup) -> Bool? {
        (attrs["accepted"] ?? attrs["accept"]).flatMap { Bool(attributeText: $0) }
    }

    /// The target state of a `session.state` event: "connected", "connecting", "notconnected".
    public static func targetState(_ attrs: some AttributeLookup) -> String {
        (attrs[.to] ?? attrs[.state] ?? "").lowercased().filter { $0.isLetter }
    }
}

extension PeerEvent {
    /// `icmp.unreachable`: the flow of the packet the ICMP error quotes, as its sender sent it
    /// (the event's own flow; nil when the quote was unreadable).
    public var quotedFlow: FlowKey? { kind == .icmpUnreachable ? flow : nil }
    /// `invitation.response`: accepted (true), declined (false), nil when unknown.
    public var accepted: Bool? { EventAttributes.isAccepted(attrs) }
    /// `session.state`: the state it goes to ("connected", "connecting", "notconnected").
    public var targetState: String { EventAttributes.targetState(attrs) }
}
