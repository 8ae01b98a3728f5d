import PeerscopeCore

/// The 16-byte header of an invitation-channel frame (spec §1.2, all big-endian):
/// `u16 type | u16 flags (1 = receipt) | u32 body length | u32 CRC32 | u32 sequence (31-bit)`.
public struct InvitationFrameHeader: Sendable, Hashable {
    public static let size = 16
    /// Larger bodies make the framework close the connection.
    public static let maxBodyLength: UInt32 = 0x500_0000

    public enum FrameType: UInt16, Sendable, CaseIterable {
        case hello = 0x07D0, data = 0x0834, accept = 0x0898
        public var name: String {
            switch self {
            case .hello: "hello"
            case .data: "data"
            case .accept: "accept"
            }
        }
    }

    /// Why a header cannot start a frame.
    public enum Problem: String, Sendable, Error {
        case unknownType = "unknown_type", badFlags = "bad_flags", oversize, badSequence = "bad_sequence"
    }

    public var rawType: UInt16
    public var flags: UInt16
    public var length: UInt32
    public var crc: UInt32
    public var sequence: UInt32

    public init(rawType: UInt16, flags: UInt16, length: UInt32, crc: UInt32, sequence: UInt32) {
        self.rawType = rawType
        self.flags = flags
        self.length = length
        self.crc = crc
        self.sequence = sequence
    }

    /// Reads the 16 bytes at `at`; nil when fewer are there.
    public init?(_ b: Bytes, at o: Int = 0) {
        guard let t = b.u16be(o), let f = b.u16be(o + 2), let l = b.u32be(o + 4), let c = b.u32be(o + 8),
              let s = b.u32be(o + 12) else { return nil }
        self.init(rawType: t, flags: f, length: l, crc: c, sequence: s)
    }

    public var type: FrameType? { FrameType(rawValue: rawType) }
    public var isReceipt: Bool { flags == 1 }
    public var typeName: String { type?.name ?? "0x" + String(rawType, radix: 16) }

    /// The first problem that keeps this header from starting a frame, and the offset of its field.
    public var problem: (Problem, Int)? {
        if type == nil { return (.unknownType, 0) }
        if flags > 1 { return (.badFlags, 2) }
        if length > Self.maxBodyLength { return (.oversize, 4) }
        if sequence & 0x8000_0000 != 0 { return (.badSequence, 12) }
        return nil
    }

    /// zlib CRC-32 over the header with the CRC field zeroed, then the body.
    public static func crc(header: Bytes, body: Bytes) -> UInt32 {
        var c = Checksum.crc32(header.prefix(8))
        c = Checksum.crc32([0, 0, 0, 0], continuing: c)
        c = Checksum.crc32(header.slice(12, 4) ?? .empty, continuing: c)
        return Checksum.crc32(body, continuing: c)
    }

    /// The 16 header bytes.
    public var bytes: [UInt8] {
        func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        return be16(rawType) + be16(flags) + be32(length) + be32(crc) + be32(sequence)
    }
}

/// The Hello body: `u32 flags | u16 name length (incl. NUL) | "<idString>+<displayName>\0"`.
public struct InvitationHello: Sendable, Hashable {
    public var flags: UInt32
    public var idString: String
    public var peerID: UInt64
    public var displayName: String

    public enum Problem: String, Sendable, Error {
        case short, nameLength = "name_length", unterminated, badUTF8 = "bad_utf8", noSeparator = "no_separator", badID = "bad_id"
    }

    /// Parses a Hello body; on failure, the problem and the body offset it was found at.
    public static func parse(_ body: Bytes) -> Result<InvitationHello, InvitationHelloError> {
        guard let flags = body.u32be(0), let n16 = body.u16be(4) else {
            return .failure(InvitationHelloError(problem: .short, offset: 0, message: "Hello body of \(body.count) bytes, need 6"))
        }
        let n = Int(n16)
        guard n >= 1, let name = body.slice(6, n) else {
            return .failure(InvitationHelloError(problem: .nameLength, offset: 4,
                                                 message: "name length \(n) does not fit the \(body.count - 6) bytes after it"))
        }
        guard name.byte(n - 1) == 0 else {
            return .failure(InvitationHelloError(problem: .unterminated, offset: 6 + n - 1, message: "name not NUL-terminated"))
        }
        let text = name.prefix(n - 1)
        guard let s = InvitationText.utf8(text) else {
            return .failure(InvitationHelloError(problem: .badUTF8, offset: 6, message: "name is not UTF-8"))
        }
        guard let plus = s.firstIndex(of: "+") else {
            return .failure(InvitationHelloError(problem: .noSeparator, offset: 6, message: "no '+' between idString and display name"))
        }
        let idString = String(s[..<plus])
        guard let id = PeerIdentity.parse(idString: idString) else {
            return .failure(InvitationHelloError(problem: .badID, offset: 6, message: "idString \"\(idString)\" is not base-36 of 64 bits"))
        }
        return .success(InvitationHello(flags: flags, idString: idString, peerID: id, displayName: String(s[s.index(after: plus)...])))
    }
}

public struct InvitationHelloError: Error, Sendable, Hashable {
    public var problem: InvitationHello.Problem
    public var offset: Int
    public var message: String
}

/// Frames of the MPC invitation channel: TCP to the advertiser's (ephemeral) SRV port. Its framer
/// (`InvitationFramer`) cuts CRC-checked frames from each direction the pipeline buffers,
/// resynchronising after junk or a TCP gap; this plugin decodes Hello and Accept, matches
/// receipts to the messages they acknowledge, and hands Data bodies (binary plists) on under
/// `mpc.invitation.data` keyed by their `MCNearbyServiceMessageIDKey`.
public final class InvitationFramingPlugin: StreamFramingPlugin {
    public static let descriptor = PluginDescriptor(
        id: "mpc-invitation",
        summary: "MPC invitation channel framing (Hello/Accept/Data, receipts, CRC32)",
        claims: [.tcpHeuristic],
        messageTypes: ["hello", "accept", "data", "receipt"],
        diagnostics: [
            DiagnosticSpec("bad_crc", .warning, "a frame failing its CRC"),
            DiagnosticSpec("frame_too_large", .warning, "a frame larger than the channel allows"),
            DiagnosticSpec("buffer_overflow", .warning, "more unframed bytes than the buffer holds; the stream is dropped"),
            DiagnosticSpec("gap", .warning, "bytes missing from the stream (capture loss)"),
            DiagnosticSpec("resync", .info, "framing found again after junk"),
            DiagnosticSpec("resync_failed", .warning, "no frame found after junk; the stream is dropped"),
            DiagnosticSpec("stopped", .info, "the stream is no longer decoded"),
            DiagnosticSpec("truncated", .info, "a frame cut short when the stream ended"),
            DiagnosticSpec("unknown_type", .warning, "a frame header of an unknown type"),
            DiagnosticSpec("bad_flags", .warning, "a frame header with impossible flags"),
            DiagnosticSpec("oversize", .warning, "a frame header with an impossible length"),
            DiagnosticSpec("bad_sequence", .warning, "a frame header out of sequence"),
            DiagnosticSpec("hello.*", .warning, "a Hello body that cannot be read (short, bad name, bad ID...)"),
            DiagnosticSpec("accept.body", .warning, "an Accept body that cannot be read"),
            DiagnosticSpec("receipt.body", .warning, "a receipt body that cannot be read"),
            DiagnosticSpec("receipt.unmatched", .info, "a receipt for no message seen"),
            DiagnosticSpec("data.bad_plist", .warning, "a Data frame whose plist cannot be read"),
            DiagnosticSpec("data.no_message_id", .warning, "a Data frame without a MessageID"),
            DiagnosticSpec("data.unknown_message_id", .info, "a Data frame of an unknown MessageID"),
        ])

    /// The carrier Data bodies are handed on under; the key is the message ID as a decimal string.
    public static let dataCarrier = "mpc.invitation.data"
    /// Bytes buffered per direction; larger frames are skipped unchecked.
    public static let maxBuffer = 1 << 20
    public static let streamLimits = StreamLimits(maxBuffered: maxBuffer, overflowProblem: "buffer_overflow")
    /// Frames this small are waited for in full by the probe, so their CRC decides.
    public static let probeWaitLimit = 480
    /// While resynchronising, candidate frames larger than this are not waited for.
    public static let resyncWaitLimit = 64 * 1024
    /// Framing errors after which a direction is no longer decoded.
    public static let maxFramingErrors = 8
    /// CRC-checked candidates one resynchronisation may try before the direction is given up.
    public static let maxResyncCandidates = 32
    /// Messages remembered per direction while their receipts are outstanding.
    public static let maxAwaiting = 256

    struct Sent {
        var type: UInt16
        var frame: UInt64
        var t: Nanos
    }

    /// Messages sent in a direction awaiting their receipt, by sequence number.
    struct Connection {
        var awaitingToServer: [UInt32: Sent] = [:]
        var awaitingToClient: [UInt32: Sent] = [:]
    }

    private var connections: [UInt64: Connection] = [:]

    public init() {}

    public func probe(_ input: PluginInput) -> ProbeResult {
        let b = input.payload
        if b.count < InvitationFrameHeader.size {
            // Cheap early answers on a prefix: a wrong type or flags can never become a frame.
            if let t = b.u16be(0), InvitationFrameHeader.FrameType(rawValue: t) == nil { return .reject }
            if let f = b.u16be(2), f > 1 { return .reject }
            return .needMoreBytes
        }
        guard let h = InvitationFrameHeader(b), h.problem == nil else { return .reject }
        let total = InvitationFrameHeader.size + Int(h.length)
        if b.count >= total {
            let body = b.slice(InvitationFrameHeader.size, Int(h.length)) ?? .empty
            return InvitationFrameHeader.crc(header: b, body: body) == h.crc ? .accept : .reject
        }
        return total <= Self.probeWaitLimit ? .needMoreBytes : .accept
    }

    public func makeFramer(_ connection: TCPConnectionInfo, _ direction: TCPDirection) -> any StreamFramer {
        InvitationFramer(connection, direction)
    }

    /// One CRC-checked frame cut by `InvitationFramer` (header and body; `parsed` is its header and index).
    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard case .stream(let conn, let dir) = input.delivery, let f = input.parsed as? InvitationFramer.Frame else { return }
        let body = input.payload.suffix(from: InvitationFrameHeader.size)
        var c = connections[conn.id] ?? Connection()
        handle(f.header, body, frameOffset: input.streamOffset ?? 0, index: f.index, &c, conn: conn, dir: dir, ctx)
        connections[conn.id] = c
    }

    public func streamEnded(_ connection: TCPConnectionInfo, _ ctx: PluginContext) {
        connections[connection.id] = nil
    }

    public func finish(_ t: Nanos, _ ctx: PluginContext) {
        connections.removeAll()
    }

    // MARK: Frames

    private func handle(_ h: InvitationFrameHeader, _ body: Bytes, frameOffset: Int, index: Int, _ c: inout Connection,
                        conn: TCPConnectionInfo, dir: TCPDirection, _ ctx: PluginContext) {
        let role = dir == .toServer ? "browser" : "advertiser"
        let hints = ctx.hints()
        if h.isReceipt {
            if !body.isEmpty {
                ctx.diagnose("receipt.body", "receipt \(index) carries \(body.count) body bytes", offset: frameOffset + 4, severity: .info)
            }
            // A receipt acknowledges a message the other side sent.
            let acked = dir == .toServer ? c.awaitingToClient[h.sequence] : c.awaitingToServer[h.sequence]
            var attrs = Self.frameAttrs(h, role: role)
            attrs[.type] = h.typeName
            if let acked, acked.type == h.rawType {
                if dir == .toServer { c.awaitingToClient[h.sequence] = nil } else { c.awaitingToServer[h.sequence] = nil }
                attrs[.matched] = true
                attrs[.ackedFrame] = acked.frame
                attrs[.latencyNs] = ctx.now &- acked.t
            } else {
                attrs[.matched] = false
                ctx.diagnose("receipt.unmatched", "receipt for \(h.typeName) seq \(h.sequence) matches no message seen from the other side",
                             offset: frameOffset + 12, severity: .info)
            }
            ctx.event(.invitationReceipt, from: hints.from, to: hints.to, attrs: attrs)
            ctx.message("receipt", writing: InvitationFrameFields(ackedType: h.typeName, seq: h.sequence, matched: attrs[.matched] == true,
                                                                  crc: h.crc))
            return
        }
        let sent = Sent(type: h.rawType, frame: ctx.currentInput?.frame.number ?? 0, t: ctx.now)
        if dir == .toServer {
            if c.awaitingToServer.count < Self.maxAwaiting { c.awaitingToServer[h.sequence] = sent }
        } else if c.awaitingToClient.count < Self.maxAwaiting {
            c.awaitingToClient[h.sequence] = sent
        }
        switch h.type {
        case .hello: hello(h, body, frameOffset: frameOffset, role: role, ctx)
        case .accept:
            if !body.isEmpty {
                ctx.diagnose("accept.body", "Accept carries \(body.count) body bytes", offset: frameOffset + 4, severity: .info)
            }
            ctx.event(.invitationAccept, from: hints.from, to: hints.to, attrs: Self.frameAttrs(h, role: role))
            ctx.message("accept", writing: InvitationFrameFields(seq: h.sequence, crc: h.crc))
        case .data: data(h, body, frameOffset: frameOffset, ctx)
        case nil: break
        }
    }

    /// What every frame event carries: its sequence number and the side that sent it.
    private static func frameAttrs(_ h: InvitationFrameHeader, role: String) -> [String: String] {
        var a: [String: String] = [:]
        a[.seq] = Int(h.sequence)
        a[.role] = role
        return a
    }

    private func hello(_ h: InvitationFrameHeader, _ body: Bytes, frameOffset: Int, role: String, _ ctx: PluginContext) {
        let bodyOffset = frameOffset + InvitationFrameHeader.size
        switch InvitationHello.parse(body) {
        case .failure(let e):
            ctx.diagnose("hello.\(e.problem.rawValue)", e.message, offset: bodyOffset + e.offset)
            let hints = ctx.hints()
            var attrs = Self.frameAttrs(h, role: role)
            attrs[.malformed] = true
            ctx.event(.invitationHello, from: hints.from, to: hints.to, attrs: attrs)
            ctx.message("hello", [("seq", .uint(UInt64(h.sequence))), ("crc", .string(InvitationText.hex32(h.crc))), ("error", .string(e.problem.rawValue))])
        case .success(let hello):
            let nameEnd = 6 + hello.idString.utf8.count + 1 + hello.displayName.utf8.count + 1
            if body.count > nameEnd {
                ctx.diagnose("hello.trailing", "\(body.count - nameEnd) bytes after the name", offset: bodyOffset + nameEnd, severity: .info)
            }
            let flow = ctx.currentInput?.flow
            var attrs = Self.frameAttrs(h, role: role)
            attrs[.idString] = hello.idString
            attrs[.helloFlags] = Int(hello.flags)
            // The browser drops a Hello whose identity is not the peer it discovered at that endpoint
            // ("Unexpected (possibly stale) identifier"): say so when discovery taught a different peer.
            if let src = flow?.src, let known = InvitationText.exactPeer(src, ctx.directory), known != hello.peerID {
                attrs[.expectedIdString] = PeerIdentity.idString(known)
                attrs[.identityMismatch] = true
                ctx.diagnose("hello.unexpected_identity",
                             "Hello from \(src) says \(hello.idString), but that endpoint belongs to \(PeerIdentity.idString(known))",
                             offset: bodyOffset + 6)
            }
            ctx.directory.learn(peerID: hello.peerID, displayName: hello.displayName)
            if let src = flow?.src { ctx.directory.learn(peerID: hello.peerID, endpoint: src) }
            let from = PeerHint(peerID: hello.peerID, displayName: hello.displayName, endpoint: flow?.src)
            let to = flow.map { ctx.directory.hint(for: $0.dst) } ?? .unknown
            ctx.event(.invitationHello, from: from, to: to, attrs: attrs)
            ctx.message("hello", [("seq", .uint(UInt64(h.sequence))), ("crc", .string(InvitationText.hex32(h.crc))),
                                  ("flags", .uint(UInt64(hello.flags))), ("peerID", .string(hello.idString)),
                                  ("participant", .string(PeerIdentity.participantHex(PeerIdentity.participantID(hello.peerID)))),
                                  ("displayName", .string(hello.displayName))])
        }
    }

    private func data(_ h: InvitationFrameHeader, _ body: Bytes, frameOffset: Int, _ ctx: PluginContext) {
        let bodyOffset = frameOffset + InvitationFrameHeader.size
        var fields: [(String, JSONValue)] = [("seq", .uint(UInt64(h.sequence))), ("length", .uint(UInt64(h.length))),
                                             ("crc", .string(InvitationText.hex32(h.crc)))]
        let plist: PlistValue
        do {
            plist = try BinaryPlist.decode(body)
        } catch {
            ctx.diagnose("data.bad_plist", "Data body is not a readable binary plist: \(error.message)",
                         offset: bodyOffset + error.offset)
            fields.append(("error", .string(error.kind.rawValue)))
            ctx.message("data", fields)
            return
        }
        guard let id = plist["MCNearbyServiceMessageIDKey"]?.intValue else {
            ctx.diagnose("data.no_message_id", "Data plist has no integer MCNearbyServiceMessageIDKey", offset: bodyOffset)
            ctx.message("data", fields)
            return
        }
        fields.append(("messageID", .int(id)))
        ctx.message("data", fields)
        if !(1 ... 3).contains(id) {
            ctx.diagnose("data.unknown_message_id", "message ID \(id) is not 1 (invite), 2 (response) or 3 (connect)",
                         offset: bodyOffset, severity: .info)
        }
        ctx.handOff(Self.dataCarrier, key: String(id), payload: body, parsed: plist)
    }
}

/// Cuts one direction of an invitation channel into CRC-checked frames. After a framing error (bad
/// header, bad CRC) or a TCP gap it resynchronises on the next CRC-valid frame, within bounds; after
/// too many errors the direction is given up.
final class InvitationFramer: StreamFramer {
    /// A frame's header and its index in its direction (1-based), handed to the plugin with the bytes.
    struct Frame: Sendable {
        var header: InvitationFrameHeader
        var index: Int
    }

    typealias P = InvitationFramingPlugin
    private let connection: TCPConnectionInfo
    private let direction: TCPDirection
    private var syncing = false
    private var syncFrom = 0
    private var candidates = 0
    private var errors = 0
    private var frames = 0

    init(_ connection: TCPConnectionInfo, _ direction: TCPDirection) {
        self.connection = connection
        self.direction = direction
    }

    func frame(_ buffer: StreamBuffer, _ ctx: PluginContext) -> FrameResult {
        let view = buffer.bytes
        if syncing {
            switch resync(view, buffer.offset, ctx) {
            case .wait(let skip): return skip > 0 ? .skip(skip) : .needMore
            case .giveUp: return .giveUp
            case .locked(let at) where at > 0: return .skip(at)
            case .locked: break
            }
        }
        guard let h = InvitationFrameHeader(view) else { return .needMore }
        if let (problem, field) = h.problem {
            let what: String
            switch problem {
            case .unknownType: what = "unknown frame type 0x\(String(h.rawType, radix: 16))"
            case .badFlags: what = "flags 0x\(String(h.flags, radix: 16)) are neither 0 nor 1"
            case .oversize: what = "body length \(h.length) above the 0x5000000 limit"
            case .badSequence: what = "sequence number 0x\(String(h.sequence, radix: 16)) has the top bit set"
            }
            ctx.diagnose(problem.rawValue, "frame \(frames + 1): \(what) (stream offset \(buffer.offset + field))",
                         offset: buffer.offset + field)
            return framingError(buffer.offset, ctx)
        }
        let length = Int(h.length)
        if length > P.maxBuffer - InvitationFrameHeader.size {
            ctx.diagnose("frame_too_large", "frame \(frames + 1): \(h.typeName) body of \(length) bytes not buffered; skipped unchecked",
                         offset: buffer.offset + 4, severity: .info)
            frames += 1
            return .skip(InvitationFrameHeader.size + length)
        }
        guard view.count >= InvitationFrameHeader.size + length else { return .needMore }
        let body = view.slice(InvitationFrameHeader.size, length) ?? .empty
        let crc = InvitationFrameHeader.crc(header: view, body: body)
        if crc != h.crc {
            ctx.diagnose("bad_crc", "frame \(frames + 1): \(h.typeName) CRC32 field \(InvitationText.hex32(h.crc)), computed \(InvitationText.hex32(crc))",
                         offset: buffer.offset + 8)
            let hints = ctx.hints()
            var attrs: [String: String] = [:]
            attrs[.protocolName] = "mpc-invitation"
            attrs[.frameType] = h.typeName
            attrs[.field] = InvitationText.hex32(h.crc)
            attrs[.computed] = InvitationText.hex32(crc)
            ctx.event(.checksumError, from: hints.from, to: hints.to, attrs: attrs)
            return framingError(buffer.offset, ctx)
        }
        frames += 1
        return .frame(length: InvitationFrameHeader.size + length, parsed: Frame(header: h, index: frames))
    }

    /// A framing error at stream offset `offset`: resynchronise from the next byte, or stop after too many.
    private func framingError(_ offset: Int, _ ctx: PluginContext) -> FrameResult {
        errors += 1
        if errors >= P.maxFramingErrors {
            ctx.diagnose("stopped", "\(errors) framing errors; direction no longer decoded", offset: offset, severity: .error)
            return .giveUp
        }
        syncing = true
        syncFrom = offset
        candidates = 0
        return .skip(1)
    }

    private enum Resync { case locked(at: Int), wait(skip: Int), giveUp }

    /// Looks for the next position where a CRC-valid frame starts.
    private func resync(_ view: Bytes, _ base: Int, _ ctx: PluginContext) -> Resync {
        var p = 0
        while p + InvitationFrameHeader.size <= view.count {
            // Every frame type starts with 0x07 or 0x08: skip the rest without reading a header.
            let first = view.byte(p)
            if first != 0x07 && first != 0x08 {
                p += 1
                continue
            }
            if let h = InvitationFrameHeader(view, at: p), h.problem == nil {
                let total = InvitationFrameHeader.size + Int(h.length)
                if p + total <= view.count {
                    candidates += 1
                    if candidates > P.maxResyncCandidates {
                        ctx.diagnose("resync_failed", "no valid frame among \(P.maxResyncCandidates) candidates after stream offset \(syncFrom); direction no longer decoded",
                                     offset: base + p, severity: .error)
                        return .giveUp
                    }
                    let hdr = view.slice(p, InvitationFrameHeader.size) ?? .empty
                    let body = view.slice(p + InvitationFrameHeader.size, Int(h.length)) ?? .empty
                    if InvitationFrameHeader.crc(header: hdr, body: body) == h.crc {
                        syncing = false
                        ctx.diagnose("resync", "resynchronised at stream offset \(base + p), \(base + p - syncFrom) bytes skipped",
                                     offset: base + p, severity: .info)
                        return .locked(at: p)
                    }
                } else if total <= P.resyncWaitLimit {
                    return .wait(skip: p)  // a candidate: wait for the rest of it
                }
            }
            p += 1
        }
        // Keep the last bytes: a header may start there.
        return .wait(skip: max(0, view.count - (InvitationFrameHeader.size - 1)))
    }

    /// Bytes were lost: what is buffered cannot be trusted to line up with what comes next, so it is
    /// dropped and the next valid frame looked for (not counted as a framing error).
    func gap(_ buffer: StreamBuffer, _ ctx: PluginContext) -> Bool {
        ctx.diagnose("gap", "bytes missing in the \(direction == .toServer ? "client" : "server") stream after offset \(buffer.offset); resynchronising",
                     offset: buffer.offset, severity: .info)
        syncing = true
        syncFrom = buffer.offset + buffer.count
        candidates = 0
        return true
    }

    func end(_ buffer: StreamBuffer, atEndOfInput: Bool, _ ctx: PluginContext) {
        guard !atEndOfInput, !buffer.isEmpty else { return }
        // No input is current when a stream ends: the evidence is the frame that brought the last bytes.
        ctx.onDiagnostic(Diagnostic(id: "\(InvitationFramingPlugin.descriptor.id).truncated", severity: .info,
                                    message: "connection ended with \(buffer.count) bytes of an incomplete frame from the \(direction == .toServer ? "client" : "server") (\(connection))",
                                    evidence: buffer.lastFrame?.evidence, offset: buffer.offset, t: ctx.now))
    }
}

/// The `peerscope decode` members of a Receipt (`ackedType`, `seq`, `matched`, `crc`) or an Accept (`seq`,
/// `crc`), written straight into the line: receipts are most of an invitation channel's frames. `fields`
/// is the list these bytes must equal.
struct InvitationFrameFields: MessageFieldsWriter {
    /// A receipt's acknowledged type and whether it matched a message; nil for an Accept.
    var receipt: (ackedType: String, matched: Bool)?
    var seq: UInt32
    var crc: UInt32

    init(ackedType: String, seq: UInt32, matched: Bool, crc: UInt32) {
        receipt = (ackedType, matched)
        self.seq = seq
        self.crc = crc
    }

    init(seq: UInt32, crc: UInt32) {
        receipt = nil
        self.seq = seq
        self.crc = crc
    }

    var fields: [(String, JSONValue)] {
        guard let receipt else { return [("seq", .uint(UInt64(seq))), ("crc", .string(InvitationText.hex32(crc)))] }
        return [("ackedType", .string(receipt.ackedType)), ("seq", .uint(UInt64(seq))), ("matched", .bool(receipt.matched)),
                ("crc", .string(InvitationText.hex32(crc)))]
    }

    func writeMembers(to out: inout JSONBytes) {
        if let receipt {
            out.key("ackedType")
            out.string(receipt.ackedType)
        }
        out.key("seq")
        out.uint(UInt64(seq))
        if let receipt {
            out.key("matched")
            out.bool(receipt.matched)
        }
        out.key("crc")
        out.fixedHex(UInt64(crc), digits: 8)
    }
}
