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

extension Int: EventAttributeValue {
    public init?(attributeText: String) { self.init(attributeText) }
    public var attributeText: String { String(self) }
}

extension UInt16: EventAttributeValue {
    public init?(attributeText: String) { self.init(attributeText) }
    public var attributeText: String { String(self) }
}

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

/// Readings of attributes that several stages share.
public enum EventAttributes {
    /// `invitation.response`'s answer (`accepted`, or `accept` as some logs say): nil when unknown.
    public static func isAccepted(_ attrs: some AttributeLookup) -> Bool? {
        (attrs["accepted"] ?? attrs["accept"]).flatMap { Bool(attributeText: $0) }
    }

    /// The target state of a `session.state` event: "connected", "connecting", "notconnected".
    public static func targetState(_ attrs: some AttributeLookup) -> String {
        (attrs["to"] ?? attrs["state"] ?? "").lowercased().filter { $0.isLetter }
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
