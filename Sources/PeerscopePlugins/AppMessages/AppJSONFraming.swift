import PeerscopeCore

/// Finds the apps' JSON messages (the seeds: `handshake`, `handshake_response`, `keep_alive`, chat
/// messages) and hands each object on as `app.json` keyed by its `type` (`chat` for chat messages
/// without one). Sources: GCK Data payloads (`gck.data`), UDP datagrams (one object each) and TCP
/// streams, newline-delimited / concatenated objects or 4-byte big-endian length-prefixed.
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

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    public func probe(_ input: PluginInput) -> ProbeResult {
        let b = input.payload
        switch input.delivery {
        case .stream:
            var i = 0
            while let c = b.byte(i), Self.isSpace(c), i < 64 { i += 1 }
            guard let c = b.byte(i) else { return i < 64 ? .needMoreBytes : .reject }
            if c == UInt8(ascii: "{") { return .accept }
            guard i == 0, c == 0 else { return .reject }
            guard b.count >= 5 else { return .needMoreBytes }
            guard let len = b.u32be(0), len >= 2, len <= UInt32(Self.maxMessage) else { return .reject }
            var j = 4
            while let d = b.byte(j), Self.isSpace(d), j < 68 { j += 1 }
            guard let d = b.byte(j) else { return j < 68 ? .needMoreBytes : .reject }
            return d == UInt8(ascii: "{") ? .accept : .reject
        default:
            var i = 0
            while let c = b.byte(i), Self.isSpace(c) { i += 1 }
            if case .carried = input.delivery, let f = input.flow, carriedPending[f] != nil { return .accept }
            guard b.byte(i) == UInt8(ascii: "{") else { return .reject }
            if case .carried = input.delivery { return .accept }
            // MPC sessions are unicast: JSON broadcast on the LAN (Dropbox LAN sync on 17500, ...) is not an app message.
            if let dst = input.flow?.dst.address, Self.isBroadcastLike(dst) { return .reject }
            var j = b.count - 1
            while let c = b.byte(j), Self.isSpace(c) || c == 0 { j -= 1 }
            return b.byte(j) == UInt8(ascii: "}") ? .accept : .reject
        }
    }

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
            object(input.payload, offset: 0, ctx)
        }
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
        while let c = b.byte(i), Self.isSpace(c) { i += 1 }
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
    private static func parseTrimmed(_ bytes: Bytes) -> (Bytes, Result<JSONValue, JSONParser.Failure>) {
        var end = bytes.count
        while end > 0, let c = bytes.byte(end - 1), c == 0 || isSpace(c) { end -= 1 }
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

/// Cuts one direction of an app JSON stream into objects: newline-delimited or concatenated objects
/// (a brace scanner that resumes where it stopped), or 4-byte big-endian length-prefixed messages.
/// The mode is decided on the first bytes; a stream that starts with neither is given up.
final class AppJSONStreamFramer: StreamFramer {
    private enum Mode { case undecided, text, lengthPrefixed }
    private let connection: TCPConnectionInfo
    private var mode = Mode.undecided
    // Text mode: the scanner's state, relative to the front of the buffer (an object starts there).
    private var scan = 0
    private var inObject = false
    private var depth = 0
    private var inString = false
    private var escape = false
    private var skippingToNewline = false

    init(_ connection: TCPConnectionInfo) { self.connection = connection }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    func frame(_ buffer: StreamBuffer, _ ctx: PluginContext) -> FrameResult {
        let b = buffer.bytes
        if mode == .undecided {
            var i = 0
            while let c = b.byte(i), Self.isSpace(c) { i += 1 }
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
        if !inObject {
            // Between objects: white space and NULs go, garbage is skipped to the end of its line.
            var i = 0
            while i < n, let c = b.byte(i) {
                if skippingToNewline {
                    if c == 0x0A { skippingToNewline = false }
                } else if Self.isSpace(c) || c == 0 {
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
            inObject = true
            depth = 1
            inString = false
            escape = false
            scan = 1
        }
        var i = scan
        while i < n, let c = b.byte(i) {
            if inString {
                if escape { escape = false } else if c == 0x5C { escape = true } else if c == 0x22 { inString = false }
            } else if c == 0x22 {
                inString = true
            } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                depth += 1
            } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                depth -= 1
                if depth == 0 {
                    inObject = false
                    scan = 0
                    return .frame(length: i + 1)
                }
            }
            i += 1
            if i > AppJSONPlugin.maxMessage {
                ctx.diagnose("oversize", "JSON message longer than \(AppJSONPlugin.maxMessage) bytes; skipping to the next line",
                             offset: base)
                inObject = false
                skippingToNewline = true
                scan = 0
                return .skip(i)
            }
        }
        scan = i
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
