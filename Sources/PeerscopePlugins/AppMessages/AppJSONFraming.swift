import PeerscopeCore

/// Finds the apps' JSON messages (the seeds: `handshake`, `handshake_response`, `keep_alive`, chat
/// messages) and hands each object on as `app.json` keyed by its `type` (`chat` for chat messages
/// without one). Sources: GCK Data payloads (`gck.data`), UDP datagrams (one object each) and TCP
/// streams, newline-delimited / concatenated objects or 4-byte big-endian length-prefixed.
public final class AppJSONPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "app-json",
        summary: "App JSON framing: objects from GCK Data, UDP datagrams, TCP (newline-delimited or u32 length-prefixed)",
        claims: [.carried("gck.data"), .udpHeuristic, .tcpHeuristic],
        messageTypes: []
    ,
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

    private enum Mode { case undecided, text, lengthPrefixed, ignored }

    private struct StreamKey: Hashable {
        var connection: UInt64
        var direction: TCPDirection
    }

    private struct StreamState {
        var mode: Mode = .undecided
        var buf: [UInt8] = []
        var start = 0           // first unconsumed byte
        // text mode scanner
        var scan = 0
        var objStart: Int? = nil
        var depth = 0
        var inString = false
        var escape = false
        var skippingToNewline = false
        // length-prefixed mode
        var skip = 0
        var consumedTotal = 0   // stream offset of `buf[0]`
    }

    private var streams: [StreamKey: StreamState] = [:]
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
        case .stream(let conn, let dir):
            let key = StreamKey(connection: conn.id, direction: dir)
            var st = streams[key] ?? StreamState()
            feed(&st, input.payload, ctx)
            streams[key] = st
        case .carried:
            carried(input, ctx)
        default:
            object(input.payload, offset: 0, ctx)
        }
    }

    /// GCK Data payloads. An object cut at the end of one payload is kept (per directed flow, bounded)
    /// and continued by the next payloads that do not start a new object: a guess that large messages
    /// are split over consecutive Data packets with nothing between the pieces (unverified).
    private func carried(_ input: PluginInput, _ ctx: PluginContext) {
        let b = input.payload
        guard let flow = input.flow else {
            object(b, offset: 0, ctx)
            return
        }
        var i = 0
        while let c = b.byte(i), Self.isSpace(c) { i += 1 }
        let startsObject = b.byte(i) == UInt8(ascii: "{")
        var bytes = b.array
        if let pending = carriedPending[flow] {
            carriedPending[flow] = nil
            if startsObject {
                ctx.diagnose("incomplete", "\(pending.count) bytes of a JSON message never completed before the next one",
                             severity: .info)
            } else {
                bytes = pending + bytes
            }
        }
        let whole = Bytes(bytes)
        switch Self.completeness(whole) {
        case .complete:
            object(whole, offset: 0, ctx)
        case .cut where bytes.count <= Self.maxMessage:
            if carriedPending.count >= 1024 {
                ctx.diagnose("incomplete", "\(carriedPending.count) partial JSON messages dropped (table full)", severity: .info)
                carriedPending.removeAll()
            }
            carriedPending[flow] = bytes
        default:
            object(whole, offset: 0, ctx)
        }
    }

    private enum Completeness { case complete, cut, broken }

    /// Whether `b` holds a whole JSON value, one cut at its end, or something else.
    private static func completeness(_ b: Bytes) -> Completeness {
        var end = b.count
        while end > 0, let c = b.byte(end - 1), c == 0 || isSpace(c) { end -= 1 }
        do {
            _ = try JSONParser.parse(b.prefix(end))
            return .complete
        } catch {
            switch error {
            case .syntax(let o, _) where o >= end: return .cut
            default: return .broken
            }
        }
    }

    public func streamEnded(_ connection: TCPConnectionInfo, _ ctx: PluginContext) {
        for d in [TCPDirection.toServer, .toClient] {
            let key = StreamKey(connection: connection.id, direction: d)
            if let st = streams[key], st.buf.count > st.start, st.mode != .ignored {
                ctx.diagnose("truncated", "\(st.buf.count - st.start) bytes of an unfinished JSON message when \(connection) ended",
                             severity: .info)
            }
            streams[key] = nil
        }
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        for (_, st) in streams where st.buf.count > st.start && st.mode != .ignored {
            ctx.diagnose("truncated", "\(st.buf.count - st.start) bytes of an unfinished JSON message at end of input",
                         severity: .info)
        }
        streams.removeAll()
        for (_, p) in carriedPending {
            ctx.diagnose("incomplete", "\(p.count) bytes of a JSON message from GCK Data never completed", severity: .info)
        }
        carriedPending.removeAll()
    }

    // MARK: Stream framing

    private func feed(_ st: inout StreamState, _ bytes: Bytes, _ ctx: PluginContext) {
        if st.mode == .ignored { return }
        st.buf.append(contentsOf: bytes.array)
        if st.mode == .undecided {
            var i = st.start
            while i < st.buf.count, Self.isSpace(st.buf[i]) { i += 1 }
            guard i < st.buf.count else { return }
            if st.buf[i] == UInt8(ascii: "{") {
                st.mode = .text
            } else if i == st.start && st.buf[i] == 0 {
                st.mode = .lengthPrefixed
            } else {
                ctx.diagnose("stream.unknown", "stream does not start with JSON or a length prefix (byte \(SessionHex.u8(st.buf[i])))",
                             offset: st.consumedTotal + i, severity: .info)
                st.mode = .ignored
                st.buf = []
                st.start = 0
                return
            }
        }
        switch st.mode {
        case .text: scanText(&st, ctx)
        case .lengthPrefixed: scanLengthPrefixed(&st, ctx)
        default: break
        }
        compact(&st)
    }

    private func compact(_ st: inout StreamState) {
        let keepFrom = min(st.objStart ?? st.start, st.start)
        guard keepFrom > 0, keepFrom >= st.buf.count || keepFrom >= 4096 else { return }
        st.buf.removeFirst(keepFrom)
        st.consumedTotal += keepFrom
        st.start -= keepFrom
        st.scan -= keepFrom
        if let o = st.objStart { st.objStart = o - keepFrom }
    }

    private func scanText(_ st: inout StreamState, _ ctx: PluginContext) {
        var i = max(st.scan, st.start)
        let n = st.buf.count
        while i < n {
            let c = st.buf[i]
            if st.skippingToNewline {
                if c == 0x0A { st.skippingToNewline = false }
                i += 1
                st.start = i
                continue
            }
            guard let begin = st.objStart else {
                if Self.isSpace(c) || c == 0 {
                    i += 1
                    st.start = i
                } else if c == UInt8(ascii: "{") {
                    st.objStart = i
                    st.depth = 1
                    st.inString = false
                    st.escape = false
                    i += 1
                } else {
                    ctx.diagnose("garbage", "unexpected byte \(SessionHex.u8(c)) between JSON messages; skipping to the next line",
                                 offset: st.consumedTotal + i)
                    st.skippingToNewline = true
                }
                continue
            }
            if st.inString {
                if st.escape { st.escape = false } else if c == 0x5C { st.escape = true } else if c == 0x22 { st.inString = false }
            } else if c == 0x22 {
                st.inString = true
            } else if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
                st.depth += 1
            } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                st.depth -= 1
                if st.depth == 0 {
                    let obj = Bytes(storage: st.buf, lower: begin, count: i + 1 - begin)
                    object(obj, offset: st.consumedTotal + begin, ctx)
                    st.objStart = nil
                    st.start = i + 1
                }
            }
            i += 1
            if let b = st.objStart, i - b > Self.maxMessage {
                ctx.diagnose("oversize", "JSON message longer than \(Self.maxMessage) bytes; skipping to the next line",
                             offset: st.consumedTotal + b)
                st.objStart = nil
                st.skippingToNewline = true
                st.start = i
            }
        }
        st.scan = i
    }

    private func scanLengthPrefixed(_ st: inout StreamState, _ ctx: PluginContext) {
        while true {
            if st.skip > 0 {
                let n = min(st.skip, st.buf.count - st.start)
                st.skip -= n
                st.start += n
                if st.skip > 0 { return }
            }
            let avail = st.buf.count - st.start
            guard avail >= 4 else { return }
            let len = Int(UInt32(st.buf[st.start]) << 24 | UInt32(st.buf[st.start + 1]) << 16
                          | UInt32(st.buf[st.start + 2]) << 8 | UInt32(st.buf[st.start + 3]))
            if len > Self.maxMessage {
                ctx.diagnose("oversize", "length prefix \(len) exceeds \(Self.maxMessage); message skipped",
                             offset: st.consumedTotal + st.start)
                st.start += 4
                st.skip = len
                continue
            }
            guard avail >= 4 + len else { return }
            let obj = Bytes(storage: st.buf, lower: st.start + 4, count: len)
            object(obj, offset: st.consumedTotal + st.start + 4, ctx)
            st.start += 4 + len
        }
    }

    // MARK: One object

    private func object(_ bytes: Bytes, offset: Int, _ ctx: PluginContext) {
        // Trailing NULs/whitespace around datagrams are tolerated.
        var end = bytes.count
        while end > 0, let c = bytes.byte(end - 1), c == 0 || Self.isSpace(c) { end -= 1 }
        let trimmed = bytes.prefix(end)
        let value: JSONValue
        do {
            value = try JSONParser.parse(trimmed)
        } catch {
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
