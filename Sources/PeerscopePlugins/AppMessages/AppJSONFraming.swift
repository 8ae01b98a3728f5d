import PeerscopeCore

/// Finds the apps' JSON messages (the seeds: `handshake`, `handshake_response`, `keep_alive`, chat
/// messages) and hands each object on as `app.json` keyed by its `type` (`chat` for chat messages
/// without one). Sources: GCK Data payloads (`gck.data`, where the spec says `MCSession send` puts
/// them), UDP datagrams (one object each) and TCP streams, newline-delimited / concatenated objects or
/// 4-byte big-endian length-prefixed. A TCP stream is taken only on evidence from its first frames
/// (`AppJSONStreamEvidence`), never on one `{`.
public final class AppJSONPlugin: StreamFramingPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-json",
        summary: "App JSON framing: objects from GCK Data, UDP datagrams, TCP (newline-delimited or u32 length-prefixed)",
        claims: [.carried("gck.data"), .udpHeuristic, .tcpHeuristic],
        messageTypes: [],
        diagnostics: [
            DiagnosticSpec("invalid", .warning, "a frame that is not valid JSON"),
            DiagnosticSpec("not_object", .warning, "JSON that is not an object"),
            DiagnosticSpec("truncated", .warning, "a message cut short at the end of the stream"),
            DiagnosticSpec("incomplete", .info, "bytes left over when the stream ended"),
            DiagnosticSpec("oversize", .warning, "a message larger than the framing allows"),
            DiagnosticSpec("garbage", .warning, "bytes between messages that start none"),
            DiagnosticSpec("stream.unknown", .info, "a stream whose framing could not be told"),
        ])

    /// Largest object (or length-prefixed message) kept; bigger ones are skipped with a diagnostic.
    public static let maxMessage = 256 * 1024
    /// The pipeline's bound on a direction's unframed bytes: never reached (objects and prefixed
    /// lengths are bounded by `maxMessage` first).
    public static let streamLimits = StreamLimits(maxBuffered: 2 * maxMessage, overflowProblem: "oversize")

    private var carriedPending: [FlowKey: [UInt8]] = [:]

    public init() {}

    public func probe(_ input: PluginInput) -> ProbeResult {
        let b = input.payload
        switch input.delivery {
        case .stream:
            return AppJSONStreamEvidence.probe(b)
        default:
            var i = 0
            while let c = b.byte(i), AppJSON.isSpace(c) { i += 1 }
            if case .carried = input.delivery, let f = input.flow, carriedPending[f] != nil { return .accept }
            guard b.byte(i) == UInt8(ascii: "{") else { return .reject }
            if case .carried = input.delivery { return .accept }
            // MPC sessions are unicast: JSON broadcast on the LAN (Dropbox LAN sync on 17500, ...) is not an app message.
            if let dst = input.flow?.dst.address, Self.isBroadcastLike(dst) { return .reject }
            var j = b.count - 1
            while let c = b.byte(j), AppJSON.isSpace(c) || c == 0 { j -= 1 }
            guard b.byte(j) == UInt8(ascii: "}") else { return .reject }
            // A datagram that only starts with '{' and ends with '}' is no evidence (about one QUIC packet
            // in 16,000 does): it must be a JSON object, unless its flow already carried one.
            if let f = input.flow, udpAppFlows.contains(f) { return .accept }
            let parsed = Self.parseTrimmed(b)
            guard case .success(let v) = parsed.1, v.objectValue != nil else { return .reject }
            probed = (input.frame.input, input.frame.number, parsed.0, parsed.1)
            return .accept
        }
    }

    /// UDP flows (both directions) that carried a JSON object: a broken datagram on them is diagnosed.
    private var udpAppFlows: Set<FlowKey> = []
    /// What `probe` parsed a datagram into, for its `decode` right after (parsed once).
    private var probed: (input: Int, frame: UInt64, trimmed: Bytes, result: Result<JSONValue, JSONParser.Failure>)?

    /// Multicast, or IPv4 limited/subnet broadcast (last octet 255: a heuristic).
    static func isBroadcastLike(_ a: IPAddress) -> Bool {
        if a.isMulticast { return true }
        if case .v4(let v) = a { return v & 0xFF == 0xFF }
        return false
    }

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        switch input.delivery {
        case .stream:
            // One frame cut by `AppJSONStreamFramer` (the pipeline keeps the stream's bytes).
            object(input.payload, offset: input.streamOffset ?? 0, ctx)
        case .carried:
            carried(input, ctx)
        default:
            datagram(input, ctx)
        }
    }

    /// One object per datagram; its flow (both directions) is remembered as an app flow (bounded).
    private func datagram(_ input: PluginInput, _ ctx: PluginContext) {
        let parsed: (Bytes, Result<JSONValue, JSONParser.Failure>)
        if let p = probed, p.input == input.frame.input, p.frame == input.frame.number {
            parsed = (p.trimmed, p.result)
        } else {
            parsed = Self.parseTrimmed(input.payload)
        }
        probed = nil
        if case .success = parsed.1, let f = input.flow, !udpAppFlows.contains(f) {
            if udpAppFlows.count >= 4096 { udpAppFlows.removeAll() }
            udpAppFlows.insert(f)
            udpAppFlows.insert(f.reversed)
        }
        deliver(parsed.0, parsed.1, offset: 0, ctx)
    }

    /// GCK Data payloads. An object cut at the end of one payload is kept (per directed flow, bounded)
    /// and continued by the next payloads that do not start a new object: a guess that large messages
    /// are split over consecutive Data packets with nothing between the pieces (unverified).
    ///
    /// Each payload is parsed once: a whole object goes on as parsed, one cut at its end waits for the
    /// next payload, anything else is reported as `object` would. The payload is copied only when a
    /// cut object is kept or continued.
    private func carried(_ input: PluginInput, _ ctx: PluginContext) {
        let b = input.payload
        guard let flow = input.flow else {
            object(b, offset: 0, ctx)
            return
        }
        var i = 0
        while let c = b.byte(i), AppJSON.isSpace(c) { i += 1 }
        let startsObject = b.byte(i) == UInt8(ascii: "{")
        var whole = b
        if let pending = carriedPending.removeValue(forKey: flow) {
            if startsObject {
                ctx.diagnose("incomplete", "\(pending.count) bytes of a JSON message never completed before the next one",
                             severity: .info)
            } else {
                whole = Bytes(pending + b.array)
            }
        }
        let (trimmed, result) = Self.parseTrimmed(whole)
        if case .failure(.syntax(let o, _)) = result, o >= trimmed.count, whole.count <= Self.maxMessage {
            if carriedPending.count >= 1024 {
                ctx.diagnose("incomplete", "\(carriedPending.count) partial JSON messages dropped (table full)", severity: .info)
                carriedPending.removeAll()
            }
            carriedPending[flow] = whole.array
            return
        }
        deliver(trimmed, result, offset: 0, ctx)
    }

    /// `bytes` without trailing NULs and white space (tolerated around datagrams), and what it parses to.
    static func parseTrimmed(_ bytes: Bytes) -> (Bytes, Result<JSONValue, JSONParser.Failure>) {
        var end = bytes.count
        while end > 0, let c = bytes.byte(end - 1), c == 0 || AppJSON.isSpace(c) { end -= 1 }
        let trimmed = bytes.prefix(end)
        do {
            return (trimmed, .success(try JSONParser.parse(trimmed)))
        } catch {
            return (trimmed, .failure(error))
        }
    }

    public func makeFramer(_ connection: TCPConnectionInfo, _ direction: TCPDirection) -> any StreamFramer {
        AppJSONStreamFramer(connection)
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        for (_, p) in carriedPending {
            ctx.diagnose("incomplete", "\(p.count) bytes of a JSON message from GCK Data never completed", severity: .info)
        }
        carriedPending.removeAll()
    }

    // MARK: One object

    private func object(_ bytes: Bytes, offset: Int, _ ctx: PluginContext) {
        let (trimmed, result) = Self.parseTrimmed(bytes)
        deliver(trimmed, result, offset: offset, ctx)
    }

    /// Hands a parsed object on as `app.json` (keyed by its type), or reports why it cannot be.
    private func deliver(_ trimmed: Bytes, _ result: Result<JSONValue, JSONParser.Failure>, offset: Int, _ ctx: PluginContext) {
        let value: JSONValue
        switch result {
        case .success(let v): value = v
        case .failure(let error):
            let at: Int
            switch error {
            case .syntax(let o, _), .tooDeep(let o): at = o
            }
            ctx.diagnose("invalid", error.description, offset: offset + at)
            return
        }
        guard value.objectValue != nil else {
            ctx.diagnose("not_object", "JSON message is not an object", offset: offset)
            return
        }
        ctx.handOff("app.json", key: AppJSON.key(for: value), payload: trimmed, parsed: value)
    }
}

/// Where a JSON object that starts at the front of some bytes ends: a brace scanner that skips
/// strings and resumes where it stopped (the bytes may grow between calls). It checks nothing else:
/// the object is parsed once it is cut.
struct JSONObjectScanner {
    private var depth = 1
    private var inString = false
    private var escape = false
    /// How far the bytes were scanned (the `{` at 0 counts as scanned).
    private(set) var scanned = 1

    /// Scans on up to `end`: the object's length (through its closing brace) once it closes, else nil.
    mutating func scan(_ b: Bytes, to end: Int) -> Int? {
        var i = scanned
        while i < end, let c = b.byte(i) {
            i += 1
            if inString {
                if escape { escape = false } else if c == 0x5C { escape = true } else if c == 0x22 { inString = false }
            } else if c == 0x22 {
                inString = true
            } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                depth += 1
            } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                depth -= 1
                if depth == 0 {
                    scanned = i
                    return i
                }
            }
        }
        scanned = i
        return nil
    }
}

/// Whether the first bytes of a TCP stream direction are app JSON: the claim needs evidence, not one
/// byte. Per the spec the apps' JSON travels in the MPC session's GCK Data (`MCSession send`, taken
/// from `gck.data` hand-offs whatever this says); an app's own TCP stream is not described anywhere,
/// so a stream is taken only when its first frames could not be anything else: random bytes, TLS
/// ciphertext seen from the middle of a connection (tcpdump started after the handshake) or another
/// protocol that happens to start with `{` or a zero byte never passes.
///
/// Evidence, in either framing (newline-delimited/concatenated objects, u32 length-prefixed):
/// - the first frame is a complete JSON object whose message key (`AppJSON.key`) is one of the types
///   the library's app-message plugins decode (`AppJSON.knownKeys`), or
/// - the first two frames are complete JSON objects with a message key (an app's own types), or
/// - the first frame is not complete yet but its first `longPrefix` bytes are valid JSON (a first
///   message longer than the pipeline's probe window; nothing but JSON gets that far).
/// Anything that stops being JSON (a syntax error before the end of the bytes, a first frame that is
/// not an object or has no message key, a length prefix out of range) rejects the direction.
enum AppJSONStreamEvidence {
    /// Valid JSON bytes of an unfinished first frame that count as evidence on their own.
    static let longPrefix = 256
    /// White space allowed before the first object (or before a length-prefixed body's object).
    static let leadingSpace = 64

    private enum Frame {
        case bad
        /// Not complete; `valid` bytes of it are valid JSON so far.
        case incomplete(valid: Int)
        /// A JSON object, and where the frame ends.
        case complete(JSONValue, end: Int)
    }

    static func probe(_ b: Bytes) -> ProbeResult {
        var i = 0
        while let c = b.byte(i), AppJSON.isSpace(c), i < leadingSpace { i += 1 }
        guard let c = b.byte(i) else { return i < leadingSpace ? .needMoreBytes : .reject }
        let text: Bool
        if c == UInt8(ascii: "{") {
            text = true
        } else if i == 0 && c == 0 {
            text = false
        } else {
            return .reject
        }
        var at = i
        for n in 1 ... 2 {
            switch text ? textFrame(b, at) : prefixedFrame(b, at) {
            case .bad:
                return .reject
            case .incomplete(let valid):
                return valid >= longPrefix ? .accept : .needMoreBytes
            case .complete(let v, let end):
                guard let key = AppJSON.key(for: v) else { return .reject }
                if n == 2 || AppJSON.knownKeys.contains(key) { return .accept }
                at = end
                if text {
                    while let c = b.byte(at), AppJSON.isSpace(c) || c == 0 { at += 1 }
                    guard let c = b.byte(at) else { return .needMoreBytes }
                    guard c == UInt8(ascii: "{") else { return .reject }
                }
            }
        }
        return .reject
    }

    /// The object starting at `start` (its `{`).
    private static func textFrame(_ b: Bytes, _ start: Int) -> Frame {
        let rest = b.suffix(from: start)
        var scanner = JSONObjectScanner()
        guard let length = scanner.scan(rest, to: min(rest.count, AppJSONPlugin.maxMessage + 1)) else {
            return validPrefix(rest) ? .incomplete(valid: rest.count) : .bad
        }
        guard let v = object(rest.prefix(length)) else { return .bad }
        return .complete(v, end: start + length)
    }

    /// The length-prefixed message starting at `start`.
    private static func prefixedFrame(_ b: Bytes, _ start: Int) -> Frame {
        guard let len32 = b.u32be(start) else { return b.count - start < 4 ? .incomplete(valid: 0) : .bad }
        let len = Int(len32)
        guard len >= 2, len <= AppJSONPlugin.maxMessage else { return .bad }
        let body = b.suffix(from: start + 4)
        guard body.count >= len else {
            var i = 0
            while let c = body.byte(i), AppJSON.isSpace(c), i < leadingSpace { i += 1 }
            guard let c = body.byte(i) else { return i < leadingSpace ? .incomplete(valid: 0) : .bad }
            return c == UInt8(ascii: "{") && validPrefix(body) ? .incomplete(valid: body.count) : .bad
        }
        guard let v = object(body.prefix(len)) else { return .bad }
        return .complete(v, end: start + 4 + len)
    }

    /// The bytes (trailing white space and NULs aside, as `decode` reads a frame) as a JSON object.
    private static func object(_ bytes: Bytes) -> JSONValue? {
        guard case .success(let v) = AppJSONPlugin.parseTrimmed(bytes).1, v.objectValue != nil else { return nil }
        return v
    }

    /// True when `bytes` are the start of a JSON text: parsing fails only at their end.
    static func validPrefix(_ bytes: Bytes) -> Bool {
        do {
            _ = try JSONParser.parse(bytes)
            return true
        } catch .syntax(let o, _) {
            // A lone '-' at the end is a number cut short, reported at its start.
            return o >= bytes.count || (o == bytes.count - 1 && bytes.byte(o) == UInt8(ascii: "-"))
        } catch {
            return false
        }
    }
}

/// Cuts one direction of an app JSON stream into objects: newline-delimited or concatenated objects
/// (`JSONObjectScanner`, resuming where it stopped), or 4-byte big-endian length-prefixed messages.
/// The mode is decided on the first bytes; a stream that starts with neither is given up.
final class AppJSONStreamFramer: StreamFramer {
    private enum Mode { case undecided, text, lengthPrefixed }
    private let connection: TCPConnectionInfo
    private var mode = Mode.undecided
    /// Text mode: the object that starts at the front of the buffer, while it is being scanned.
    private var object: JSONObjectScanner?
    private var skippingToNewline = false

    init(_ connection: TCPConnectionInfo) { self.connection = connection }

    func frame(_ buffer: StreamBuffer, _ ctx: PluginContext) -> FrameResult {
        let b = buffer.bytes
        if mode == .undecided {
            var i = 0
            while let c = b.byte(i), AppJSON.isSpace(c) { i += 1 }
            guard let c = b.byte(i) else { return .needMore }
            if c == UInt8(ascii: "{") {
                mode = .text
            } else if i == 0 && c == 0 {
                mode = .lengthPrefixed
            } else {
                ctx.diagnose("stream.unknown", "stream does not start with JSON or a length prefix (byte \(SessionHex.u8(c)))",
                             offset: buffer.offset + i, severity: .info)
                return .giveUp
            }
        }
        return mode == .text ? text(b, buffer.offset, ctx) : lengthPrefixed(b, buffer.offset, ctx)
    }

    private func text(_ b: Bytes, _ base: Int, _ ctx: PluginContext) -> FrameResult {
        let n = b.count
        if object == nil {
            // Between objects: white space and NULs go, garbage is skipped to the end of its line.
            var i = 0
            while i < n, let c = b.byte(i) {
                if skippingToNewline {
                    if c == 0x0A { skippingToNewline = false }
                } else if AppJSON.isSpace(c) || c == 0 {
                } else if c == UInt8(ascii: "{") {
                    break
                } else {
                    ctx.diagnose("garbage", "unexpected byte \(SessionHex.u8(c)) between JSON messages; skipping to the next line",
                                 offset: base + i)
                    skippingToNewline = true
                }
                i += 1
            }
            if i > 0 { return .skip(i) }
            guard i < n else { return .needMore }
            object = JSONObjectScanner()
        }
        if let length = object?.scan(b, to: min(n, AppJSONPlugin.maxMessage + 1)) {
            object = nil
            return .frame(length: length)
        }
        let scanned = object?.scanned ?? 0
        if scanned > AppJSONPlugin.maxMessage {
            ctx.diagnose("oversize", "JSON message longer than \(AppJSONPlugin.maxMessage) bytes; skipping to the next line",
                         offset: base)
            object = nil
            skippingToNewline = true
            return .skip(scanned)
        }
        return .needMore
    }

    private func lengthPrefixed(_ b: Bytes, _ base: Int, _ ctx: PluginContext) -> FrameResult {
        guard let len32 = b.u32be(0) else { return .needMore }
        let len = Int(len32)
        if len > AppJSONPlugin.maxMessage {
            ctx.diagnose("oversize", "length prefix \(len) exceeds \(AppJSONPlugin.maxMessage); message skipped", offset: base)
            return .skip(4 + len)
        }
        guard b.count >= 4 + len else { return .needMore }
        return .frame(length: 4 + len, payload: 4 ..< 4 + len)
    }

    func end(_ buffer: StreamBuffer, atEndOfInput: Bool, _ ctx: PluginContext) {
        guard !buffer.isEmpty else { return }
        ctx.diagnose("truncated", atEndOfInput ? "\(buffer.count) bytes of an unfinished JSON message at end of input"
                         : "\(buffer.count) bytes of an unfinished JSON message when \(connection) ended",
                     severity: .info)
    }
}

/// Shared by the app-message plugins.
enum AppJSON {
    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    /// The message keys the library's app-message plugins decode (their `app.json` claims): a stream
    /// whose first object has one of these is taken as an app stream (`AppJSONStreamEvidence`).
    static let knownKeys: Set<String> = Set(PluginRegistry.appMessages.flatMap { t in
        t.descriptor.claims.compactMap { claim -> String? in
            if case .carried("app.json", let key?) = claim { return key }
            return nil
        }
    })

    /// The hand-off key: the `type` string, `chat` for `sender`+`content` objects without one.
    static func key(for v: JSONValue) -> String? {
        if let t = v["type"] {
            return t.stringValue
        }
        if v["sender"] != nil && v["content"] != nil { return "chat" }
        return nil
    }

    static func parse(_ input: PluginInput, _ ctx: PluginContext) -> JSONValue? {
        // The framing plugin hands the object it parsed on with the bytes.
        if let v = input.parsed as? JSONValue { return v.objectValue != nil ? v : nil }
        do {
            let v = try JSONParser.parse(input.payload)
            guard v.objectValue != nil else { return nil }
            return v
        } catch {
            ctx.diagnose("invalid", error.description)
            return nil
        }
    }

    /// A short text form of a scalar (names, platforms, timestamps); nil for containers.
    static func scalar(_ v: JSONValue?, limit: Int = 128) -> String? {
        switch v {
        case .string(let s)?: return String(s.prefix(limit))
        case .int(let i)?: return String(i)
        case .uint(let u)?: return String(u)
        case .double(let d)?: return d.isFinite ? String(d) : nil
        case .bool(let b)?: return b ? "true" : "false"
        default: return nil
        }
    }
}
