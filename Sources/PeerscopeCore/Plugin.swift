/// What traffic a decoder plugin asks to see. Dispatch is a table built from these claims;
/// the capture and transport code never changes when a plugin is added.
public enum Claim: Sendable, Hashable, CustomStringConvertible {
    /// UDP datagrams with either port in the range.
    case udpPorts(ClosedRange<UInt16>)
    /// TCP connections with either port in the range.
    case tcpPorts(ClosedRange<UInt16>)
    /// Any UDP datagram no port claim took; the probe decides.
    case udpHeuristic
    /// Any TCP stream no port claim took; the probe decides on its first bytes.
    case tcpHeuristic
    /// Payloads another plugin hands on under `carrier` (and, when given, only those with `key`).
    case carried(String, key: String? = nil)
    /// TCP connection events (SYN, RST, FIN, ...).
    case tcpEvents
    /// ICMP and ICMPv6 errors.
    case icmpErrors
    /// Datagrams a protocol family's one probe (`ProtocolFamily`) classified as message type `key`
    /// (nil: any type no other member claims; declare such a member `.fallback`).
    case member(family: String, key: String?)

    public var description: String {
        switch self {
        case .udpPorts(let r): r.count == 1 ? "udp/\(r.lowerBound)" : "udp/\(r.lowerBound)-\(r.upperBound)"
        case .tcpPorts(let r): r.count == 1 ? "tcp/\(r.lowerBound)" : "tcp/\(r.lowerBound)-\(r.upperBound)"
        case .udpHeuristic: "udp heuristic"
        case .tcpHeuristic: "tcp heuristic"
        case .carried(let c, let k): "inside \(c)" + (k.map { " [\($0)]" } ?? "")
        case .tcpEvents: "tcp events"
        case .icmpErrors: "icmp errors"
        case .member(let f, let k): "\(f) family" + (k.map { " [\($0)]" } ?? "")
        }
    }
}

/// Which of several plugins claiming the same traffic is asked first. Registry order means nothing:
/// the pipeline orders claimants by priority, then by id.
public enum ClaimPriority: Int, Sendable, Hashable, Comparable {
    case normal = 0
    /// Takes what no normal claimant took (`app-other`: any app JSON type without its own plugin).
    case fallback = 1
    public static func < (a: ClaimPriority, b: ClaimPriority) -> Bool { a.rawValue < b.rawValue }
}

/// Who a plugin is and what it binds to; `peerscope plugins` prints these.
public struct PluginDescriptor: Sendable, Hashable {
    /// Stable id, used in `decode` output (`plugin`), stats and diagnostics (`<id>.<problem>`).
    public var id: String
    public var summary: String
    public var claims: [Claim]
    /// The `type` values its decoded messages carry.
    public var messageTypes: [String]
    /// The diagnostics it may report, like Wireshark's expert info: `peerscope plugins` lists them.
    public var diagnostics: [DiagnosticSpec]
    /// `.fallback`: asked only after every normal claimant of the same traffic.
    public var priority: ClaimPriority

    public init(id: String, summary: String, claims: [Claim], messageTypes: [String], diagnostics: [DiagnosticSpec] = [],
                priority: ClaimPriority = .normal) {
        self.id = id
        self.summary = summary
        self.claims = claims
        self.messageTypes = messageTypes
        self.diagnostics = diagnostics
        self.priority = priority
    }

    /// The full diagnostic ids it declares (`<plugin>.<problem>`, or as written for absolute ids).
    public var diagnosticIDs: [String] { diagnostics.map { $0.fullID(plugin: id) } }

    /// True when the plugin declares the diagnostic `fullID` (a declared `prefix.*` covers `prefix.NAME`).
    public func declares(diagnostic fullID: String) -> Bool {
        diagnosticIDs.contains { d in d == fullID || (d.hasSuffix(".*") && fullID.hasPrefix(d.dropLast())) }
    }
}

/// A diagnostic a plugin declares: its problem name, severity and a one-line meaning.
public struct DiagnosticSpec: Sendable, Hashable {
    /// The problem (`no_quoted_flow`; `hello.*` for a family of them); the diagnostic id is
    /// `<plugin>.<problem>` unless `absolute` (ids shared by a protocol family, `gck.bad_crc`).
    public var problem: String
    public var severity: Severity
    public var meaning: String
    public var absolute: Bool

    public init(_ problem: String, _ severity: Severity = .warning, _ meaning: String, absolute: Bool = false) {
        self.problem = problem
        self.severity = severity
        self.meaning = meaning
        self.absolute = absolute
    }

    public func fullID(plugin: String) -> String { absolute ? problem : "\(plugin).\(problem)" }
}

public enum ProbeResult: Sendable, Equatable {
    case accept
    case reject
    /// Streams only: not enough bytes yet to decide (the pipeline buffers a little and asks again).
    case needMoreBytes
}

/// How a payload reached the plugin.
public enum Delivery: Sendable, Hashable {
    case datagram
    case stream(TCPConnectionInfo, TCPDirection)
    case tcpEvent(TCPConnectionInfo, TCPDirection, TCPEvent)
    case icmpError(ICMPErrorInfo)
    /// Handed on by plugin `parent` under `carrier`/`key`; `parentDelivery` is how the outer payload came.
    case carried(carrier: String, key: String?, parent: String)
}

public struct PluginInput: Sendable {
    public var frame: FrameInfo
    public var delivery: Delivery
    /// The directed flow this payload travelled on (for carried payloads, the outer flow).
    public var flow: FlowKey?
    /// For carried payloads inside a TCP stream: the connection and direction of the outer stream.
    public var connection: (TCPConnectionInfo, TCPDirection)?
    public var payload: Bytes
    /// For carried payloads: what the parent already parsed the bytes into (app JSON's object, an
    /// invitation Data frame's plist), so the message plugin does not parse them again.
    public var parsed: (any Sendable)?
    /// For frames cut by a `StreamFramer`: where `payload` starts in its direction's stream.
    public var streamOffset: Int?

    public init(frame: FrameInfo, delivery: Delivery, flow: FlowKey?, connection: (TCPConnectionInfo, TCPDirection)? = nil,
                payload: Bytes, parsed: (any Sendable)? = nil, streamOffset: Int? = nil) {
        self.frame = frame
        self.delivery = delivery
        self.flow = flow
        self.connection = connection
        self.payload = payload
        self.parsed = parsed
        self.streamOffset = streamOffset
    }

    public var t: Nanos { frame.t }
    public var evidence: Evidence { frame.evidence }
}

/// A decoder plugin: one message type, one small type. Instances are made fresh for every run and
/// used from one thread; they may keep per-flow state, and must drop it in `streamEnded`/`tick`.
public protocol DecoderPlugin: AnyObject {
    static var descriptor: PluginDescriptor { get }
    /// The protocol family whose one probe classifies this plugin's datagrams (members claim
    /// `.member(family:key:)`); nil for plugins that probe for themselves.
    static var family: (any ProtocolFamily.Type)? { get }
    /// Event kinds this plugin emits that the built-in catalogue does not declare (plugins defined
    /// outside the library); the pipeline registers them with `EventCatalogue.register`.
    static var eventKinds: [EventKindSpec] { get }
    init()
    /// A cheap look at a payload: is it mine? Must not emit anything.
    func probe(_ input: PluginInput) -> ProbeResult
    /// Decode; report messages, events, diagnostics and hand-offs through `ctx`. Never traps on bad bytes.
    func decode(_ input: PluginInput, _ ctx: PluginContext)
    /// Capture time moved on (about once per captured second): expire timers and state.
    func tick(_ t: Nanos, _ ctx: PluginContext)
    /// A TCP connection this plugin was decoding is over or evicted: drop its state.
    func streamEnded(_ connection: TCPConnectionInfo, _ ctx: PluginContext)
    /// End of input at capture time `t`: flush what is pending.
    func finish(_ t: Nanos, _ ctx: PluginContext)
}

extension DecoderPlugin {
    public static var family: (any ProtocolFamily.Type)? { nil }
    public static var eventKinds: [EventKindSpec] { [] }
    public func probe(_ input: PluginInput) -> ProbeResult { .accept }
    public func tick(_ t: Nanos, _ ctx: PluginContext) {}
    public func streamEnded(_ connection: TCPConnectionInfo, _ ctx: PluginContext) {}
    public func finish(_ t: Nanos, _ ctx: PluginContext) {}
    public var id: String { Self.descriptor.id }
}

/// What a protocol family's probe makes of a datagram.
public enum FamilyMatch {
    case reject
    /// A message of type `key`, with what the probe already parsed (the header) for the member plugin.
    case member(key: String, parsed: (any Sendable)?)
}

/// One probe for a protocol family (GCK): it reads the family's header once per datagram and names
/// the message type; the pipeline runs the one member plugin that claims that type (or the family's
/// fallback member). Members stay one plugin per message type, for listing and for adding types.
public protocol ProtocolFamily {
    /// The family id members name in `.member(family:key:)`.
    static var id: String { get }
    /// The traffic the family takes (UDP port ranges and heuristics).
    static var claims: [Claim] { get }
    static func classify(_ input: PluginInput) -> FamilyMatch
}

/// One decoded message, as `peerscope decode` prints it (one JSON object per line).
public struct DecodedMessage: Sendable {
    public var plugin: String
    public var type: String
    public var frame: FrameInfo
    public var flow: FlowKey?
    private var list: [(String, JSONValue)]
    /// Fields that write themselves (`MessageFieldsWriter`); nil for a message made from a field list.
    public private(set) var writer: (any MessageFieldsWriter)?

    /// The decoded fields in order (a writer's, built on demand).
    public var fields: [(String, JSONValue)] {
        get { writer?.fields ?? list }
        set {
            list = newValue
            writer = nil
        }
    }

    public init(plugin: String, type: String, frame: FrameInfo, flow: FlowKey?, fields: [(String, JSONValue)]) {
        self.plugin = plugin
        self.type = type
        self.frame = frame
        self.flow = flow
        list = fields
    }

    /// A message whose fields write themselves into `peerscope decode`'s output (no JSON tree per message).
    public init(plugin: String, type: String, frame: FrameInfo, flow: FlowKey?, writer: any MessageFieldsWriter) {
        self.plugin = plugin
        self.type = type
        self.frame = frame
        self.flow = flow
        list = []
        self.writer = writer
    }

    /// `{"frame":..,"t":..,"plugin":..,"type":..,"src":..,"dst":.., fields...}`
    public func json(includeInput: Bool) -> JSONValue {
        var o: [(String, JSONValue)] = []
        if includeInput { o.append(("input", .int(Int64(frame.input)))) }
        o.append(("frame", .uint(frame.number)))
        o.append(("t", .int(frame.t)))
        o.append(("plugin", .string(plugin)))
        o.append(("type", .string(type)))
        if let flow {
            o.append(("proto", .string(flow.proto.rawValue)))
            o.append(("src", .string(flow.src.description)))
            o.append(("dst", .string(flow.dst.description)))
        }
        o.append(contentsOf: fields)
        return .object(o)
    }
}

public struct DecodeOptions: Sendable {
    /// Keep message contents (chat text) in messages; off by default.
    public var showPayloads: Bool
    /// Build `DecodedMessage`s (for `peerscope decode`); analysis alone may skip that work.
    public var wantsMessages: Bool

    /// Take fast paths that skip work whose outcome is known (byte-identical mDNS refreshes). Off only
    /// to show that they change nothing: reports must be byte-identical either way.
    public var fastPaths: Bool

    public init(showPayloads: Bool = false, wantsMessages: Bool = false, fastPaths: Bool = true) {
        self.showPayloads = showPayloads
        self.wantsMessages = wantsMessages
        self.fastPaths = fastPaths
    }
}

/// What a plugin reports through while decoding. The pipeline fills in the current plugin and input.
public final class PluginContext {
    public let directory: PeerDirectory
    public let options: DecodeOptions
    public var onMessage: (DecodedMessage) -> Void = { _ in }
    public var onEvent: (PeerEvent) -> Void = { _ in }
    /// Whether anyone keeps peer events. Off (`peerscope decode` without `--events`), `event` builds
    /// none; a plugin may also ask before assembling an event's attributes.
    public var wantsEvents = true
    public var onDiagnostic: (Diagnostic) -> Void = { _ in }
    /// Set by the pipeline: dispatches a hand-off to the plugins that claim the carrier.
    public var onHandOff: (_ carrier: String, _ key: String?, _ payload: Bytes, _ parsed: (any Sendable)?, _ from: PluginInput,
                           _ parent: String) -> Void = { _, _, _, _, _, _ in }

    /// The plugin and input being decoded right now (set by the pipeline).
    public var currentPlugin: String = ""
    public var currentInput: PluginInput?
    /// Capture time of the latest frame.
    public var now: Nanos = 0
    /// This analysis's table of interned hints and flows (events made here are interned in it).
    public let interner = EventInterner()

    public init(directory: PeerDirectory = PeerDirectory(), options: DecodeOptions = DecodeOptions()) {
        self.directory = directory
        self.options = options
        directory.onFact = { [weak self] fact in self?.identity(fact) }
    }

    /// A fact the directory learnt, as an `identity.*` event at the current frame (no flow: identity
    /// facts never close or join a flow's runs). Advertisements are steady: the engine's coalescer
    /// keeps one event per peer and plugin and moves its last time.
    private func identity(_ fact: PeerDirectory.Fact) {
        guard wantsEvents else { return }
        let input = currentInput
        let evidence = input?.evidence ?? .frame(input: 0, frame: 0)
        switch fact {
        case .learnt(let h):
            onEvent(PeerEvent(kind: .identityLearned, t: input?.t ?? now, evidence: evidence, from: h, to: .unknown, flow: nil,
                              source: currentPlugin, attrs: EventAttrs(), interner: interner))
        case .advertised(let id, let t):
            onEvent(PeerEvent(kind: .identityAdvertised, t: t, evidence: evidence, from: PeerHint(peerID: id), to: .unknown, flow: nil,
                              source: currentPlugin, attrs: EventAttrs(), interner: interner))
        }
    }

    public var wantsMessages: Bool { options.wantsMessages }

    /// Report a decoded message (skipped cheaply when nobody asked for messages).
    public func message(_ type: String, _ fields: @autoclosure () -> [(String, JSONValue)]) {
        guard options.wantsMessages, let input = currentInput else { return }
        onMessage(DecodedMessage(plugin: currentPlugin, type: type, frame: input.frame, flow: input.flow, fields: fields()))
    }

    /// Report a decoded message whose fields write themselves (`MessageFieldsWriter`): the hot paths'
    /// form, with no field list built per message.
    public func message(_ type: String, writing fields: @autoclosure () -> some MessageFieldsWriter) {
        guard options.wantsMessages, let input = currentInput else { return }
        onMessage(DecodedMessage(plugin: currentPlugin, type: type, frame: input.frame, flow: input.flow, writer: fields()))
    }

    /// Report a decoded message whose field list is built when it is written (`DeferredFields`): off the
    /// decoding thread, and not at all when nobody asked for messages. `fields` must capture values only.
    public func message(_ type: String, deferred fields: @escaping @Sendable () -> [(String, JSONValue)]) {
        guard options.wantsMessages, let input = currentInput else { return }
        onMessage(DecodedMessage(plugin: currentPlugin, type: type, frame: input.frame, flow: input.flow, writer: DeferredFields(fields)))
    }

    /// Report a peer event at the current frame.
    public func event(_ kind: EventKind, from: PeerHint = .unknown, to: PeerHint = .unknown,
                      attrs: [String: String] = [:], t: Nanos? = nil) {
        event(kind, from: from, to: to, packed: EventAttrs(attrs), t: t)
    }

    /// Report a peer event at the current frame with attributes built packed (`EventAttrs`): the hot
    /// paths' form, with no dictionary per event.
    public func event(_ kind: EventKind, from: PeerHint = .unknown, to: PeerHint = .unknown, packed attrs: EventAttrs,
                      t: Nanos? = nil) {
        guard wantsEvents else { return }
        let frame = currentInput?.frame
        onEvent(PeerEvent(kind: kind, t: t ?? frame?.t ?? now, evidence: frame?.evidence ?? .frame(input: 0, frame: 0),
                          from: from, to: to, flow: currentInput?.flow, source: currentPlugin, attrs: attrs, interner: interner))
    }

    /// Report a fully built event (timers firing on capture time, events about earlier frames).
    public func event(_ e: PeerEvent) {
        if wantsEvents { onEvent(e) }
    }

    /// Report malformed input. `id` is appended to the plugin id: `problem` -> `<plugin>.<problem>`.
    public func diagnose(_ problem: String, _ message: String, offset: Int? = nil, severity: Severity = .warning) {
        onDiagnostic(Diagnostic(id: currentPlugin.isEmpty ? problem : "\(currentPlugin).\(problem)", severity: severity,
                                message: message, evidence: currentInput?.evidence, offset: offset, t: currentInput?.t ?? now))
    }

    /// Hand an inner payload on to the plugins that claim `carrier` (and `key`), with the value the
    /// bytes were parsed into when there is one (`PluginInput.parsed`).
    public func handOff(_ carrier: String, key: String? = nil, payload: Bytes, parsed: (any Sendable)? = nil) {
        guard let input = currentInput else { return }
        onHandOff(carrier, key, payload, parsed, input, currentPlugin)
    }

    /// Hints for the two ends of the current input's flow, from what the directory has learnt.
    public func hints() -> (from: PeerHint, to: PeerHint) {
        guard let flow = currentInput?.flow else { return (.unknown, .unknown) }
        return (directory.hint(for: flow.src), directory.hint(for: flow.dst))
    }
}
