/// Where a peer is, as a timeline entry says it.
public enum TimelineState: String, Sendable, Hashable, CaseIterable, Comparable {
    case browsing, discovered, updated, lost
    case invitationChannel = "invitation-channel"
    case invited
    case invitationAccepted = "invitation-accepted"
    case invitationDeclined = "invitation-declined"
    case connectionData = "connection-data"
    case connecting
    case iceChecks = "ice-checks"
    case iceConnected = "ice-connected"
    case secureHandshake = "secure-handshake"
    case secureChannelUp = "secure-channel-up"
    case gckHandshake = "gck-handshake"
    case gckConnected = "gck-connected"
    case connected
    case appHandshake = "app-handshake"
    case appHandshakeDone = "app-handshake-done"
    case keepAlive = "keep-alive"
    case heartbeat
    case data
    case timeout
    case error
    case disconnected
    case channelClosed = "channel-closed"
    case other

    public static func < (a: TimelineState, b: TimelineState) -> Bool { a.rawValue < b.rawValue }

    /// States whose repeats are folded into one entry (first/last/count per run).
    public var aggregates: Bool {
        switch self {
        case .keepAlive, .heartbeat, .data, .iceChecks, .secureHandshake, .gckHandshake, .browsing, .discovered, .updated,
             .other: true
        default: false
        }
    }

    /// A coarse group for colours and lanes.
    public var category: String {
        switch self {
        case .browsing, .discovered, .updated, .lost: "discovery"
        case .invitationChannel, .invited, .invitationAccepted, .invitationDeclined, .connectionData: "invitation"
        case .connecting, .iceChecks, .iceConnected, .secureHandshake, .secureChannelUp, .gckHandshake: "handshake"
        case .gckConnected, .connected, .appHandshake, .appHandshakeDone: "connected"
        case .keepAlive, .heartbeat: "keepalive"
        case .data: "data"
        case .timeout, .error: "problem"
        case .disconnected, .channelClosed: "disconnect"
        case .other: "other"
        }
    }
}

/// The timeline step an event is: its state and its history letter (nil: no letter).
public struct TimelineStep: Sendable, Hashable {
    public var state: TimelineState
    public var letter: Character?
    public init(_ state: TimelineState, _ letter: Character? = nil) {
        self.state = state
        self.letter = letter
    }
    public static let other = TimelineStep(.other)
}

/// What an event does to the session between its two peers.
public enum SessionRole: String, Sendable, Hashable {
    /// Starts a session (or belongs to the one being set up).
    case start
    /// Belongs to a running session.
    case traffic
    /// Joins the pair's latest session when there is one; never starts one.
    case attach
}

/// A value of a kind that depends on the event's attributes (`invitation.response`: accepted or
/// declined). Fixed values are the rule; the few computed ones are in the catalogue, not in stages.
public enum KindRule<Value: Sendable>: Sendable {
    case fixed(Value)
    case byAttributes(@Sendable (_ attrs: EventAttrs) -> Value)

    @inlinable public func value(_ attrs: EventAttrs) -> Value {
        switch self {
        case .fixed(let v): v
        case .byAttributes(let f): f(attrs)
        }
    }

    /// True when the value depends on attributes (a user pattern may fill them from its captures).
    public var dependsOnAttributes: Bool {
        if case .byAttributes = self { return true }
        return false
    }
}

/// Whether steady repeats of a kind on one flow are folded into one event (see `EventCoalescer`).
public enum CoalescingRule: Sendable, Hashable {
    case never
    /// Folded while repeats come no more than `defaultGap` apart (analysis may shorten the gap).
    case steady(defaultGap: Nanos)
}

/// The type of an event attribute's value (attributes travel as text; see `EventAttribute`).
public enum AttributeType: String, Sendable, Hashable {
    case string, int, bool, address, endpoint, list
}

/// One attribute a kind may carry: its key, type and a one-line meaning.
public struct AttributeSpec: Sendable, Hashable {
    public var key: String
    public var type: AttributeType
    public var meaning: String
    public init(_ key: String, _ type: AttributeType = .string, _ meaning: String = "") {
        self.key = key
        self.type = type
        self.meaning = meaning
    }
}

/// Everything the stages know about one event kind, declared once (see `EventCatalogue`).
public struct EventKindSpec: Sendable {
    public var kind: EventKind
    /// `discovery`, `invitation`, `ice`, `dtls`, `gck`, `app`, `session`, `tcp`, `icmp`, `channel`, `log`, `user`.
    public var family: String
    /// One line: what happened.
    public var summary: String
    /// The timeline step: state and history letter.
    public var step: KindRule<TimelineStep>
    /// What the event does to its pair's session.
    public var role: KindRule<SessionRole>
    public var coalescing: CoalescingRule
    /// The message the text report names where the state alone does not say it (`gck-handshake DD`).
    public var label: String?
    /// The attributes events of this kind carry. User kinds (`user.NAME`) carry free-form ones.
    public var attributes: [AttributeSpec]
    /// Free-form attributes: any key is allowed (user kinds, and kinds a user pattern may name).
    public var freeForm: Bool

    public init(_ kind: EventKind, _ summary: String, step: KindRule<TimelineStep> = .fixed(.other),
                role: KindRule<SessionRole> = .fixed(.attach), coalescing: CoalescingRule = .never, label: String? = nil,
                attributes: [AttributeSpec] = [], freeForm: Bool = false) {
        self.kind = kind
        family = String(kind.family)
        self.summary = summary
        self.step = step
        self.role = role
        self.coalescing = coalescing
        self.label = label
        self.attributes = attributes
        self.freeForm = freeForm
    }

    /// True when the kind declares `key` (a declared `prefix.*` covers every `prefix.NAME`).
    public func declares(_ key: String) -> Bool {
        attributes.contains { a in
            a.key == key || (a.key.hasSuffix(".*") && key.hasPrefix(a.key.dropLast()))
        }
    }
}

/// The one list of event kinds. The timeline (state, letter, session role), the coalescer, the report
/// writers (labels) and the user-pattern check read it; a kind that is not here is an `other` entry
/// (user kinds `user.NAME` are, on purpose). Adding a kind: a constant in `EventKind` and one entry
/// in `EventCatalogue.entries` (see `EventCatalogue+Kinds.swift`).
public enum EventCatalogue {
    /// The spec of a declared kind (built in, or registered by a plugin from outside the library),
    /// nil for kinds not in the catalogue (user kinds).
    @inlinable public static func spec(_ kind: EventKind) -> EventKindSpec? { byKind[kind] ?? registered(kind) }

    /// The spec of any kind: a user kind (or an unknown one) gets an `other` entry with free-form attributes.
    public static func specOrDefault(_ kind: EventKind) -> EventKindSpec {
        spec(kind) ?? EventKindSpec(kind, "a kind of the user's own", freeForm: true)
    }

    /// Adds kinds declared outside the library (a plugin's `eventKinds`); the pipeline calls it for
    /// the plugins it runs. A built-in kind is never replaced; registering a kind again replaces it.
    public static func register(_ specs: [EventKindSpec]) {
        guard !specs.isEmpty else { return }
        extensions.withLock { table in
            for s in specs where byKind[s.kind] == nil { table[s.kind] = s }
        }
    }

    /// A registered (non built-in) kind's spec; looked up only when the built-in table misses.
    @usableFromInline static func registered(_ kind: EventKind) -> EventKindSpec? {
        extensions.withLock { $0[kind] }
    }

    private static let extensions = LockedTable<EventKind, EventKindSpec>()

    public static let byKind: [EventKind: EventKindSpec] = {
        var d: [EventKind: EventKindSpec] = [:]
        for e in entries {
            precondition(d[e.kind] == nil, "event kind \(e.kind) declared twice in the catalogue")
            d[e.kind] = e
        }
        return d
    }()

    /// A small number for each built-in kind (its place in `entries`, from 1), 0 for any other kind:
    /// what a resolved event keeps of its kind, so that reading the kind does not fetch the event's
    /// record (issue 13: detectors read the kind of every event).
    public static func code(of kind: EventKind) -> UInt16 { codes[kind] ?? 0 }

    /// The kind a nonzero `code(of:)` stands for (`kindsByCode[0]` is a placeholder, never read for a kind).
    public static let kindsByCode: [EventKind] = [EventKind("")] + entries.map(\.kind)

    private static let codes: [EventKind: UInt16] = {
        var d: [EventKind: UInt16] = [:]
        for (i, e) in entries.enumerated() { d[e.kind] = UInt16(truncatingIfNeeded: i + 1) }
        return d
    }()

    /// The timeline step of an event.
    @inlinable public static func step(_ e: PeerEvent) -> TimelineStep {
        spec(e.kind)?.step.value(e.attrs) ?? .other
    }

    /// The session role of an event.
    @inlinable public static func role(_ e: PeerEvent) -> SessionRole {
        spec(e.kind)?.role.value(e.attrs) ?? .attach
    }

    /// The report label of a kind.
    @inlinable public static func label(_ kind: EventKind) -> String? { spec(kind)?.label }

    /// Steady kinds with their default coalescing gaps.
    public static let defaultCoalescingGaps: [EventKind: Nanos] = {
        var d: [EventKind: Nanos] = [:]
        for e in entries { if case .steady(let gap) = e.coalescing { d[e.kind] = gap } }
        return d
    }()

    /// True when `kind` is a user kind (`user.NAME`): an `other` entry with free-form attributes.
    public static func isUserKind(_ kind: EventKind) -> Bool { kind.rawValue.hasPrefix("user.") }

    /// The problems of an emitted event against its kind's declaration: an undeclared kind, or an
    /// attribute key its kind does not declare. Empty for a well-formed event and for user kinds.
    public static func problems(_ e: PeerEvent) -> [String] {
        if isUserKind(e.kind) { return [] }
        guard let spec = spec(e.kind) else { return ["kind `\(e.kind)` (from \(e.source)) is not in the event catalogue"] }
        if spec.freeForm { return [] }
        return e.attrs.keys.sorted().filter { !spec.declares($0) && !commonAttributeKeys.contains($0) }
            .map { "kind `\(e.kind)` (from \(e.source)): attribute `\($0)` is not declared in the event catalogue" }
    }

    /// Attributes any kind may carry: added by the timeline (`note`), by the log reader (`via`: which
    /// plugin family; `time`: the line's own time text; `lines`: a line repeated per channel), and
    /// message contents with `--show-payloads` (`content`).
    public static let commonAttributeKeys: Set<String> = ["note", "via", "time", "lines", "content"]
}
