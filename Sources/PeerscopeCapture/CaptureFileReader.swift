#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeerscopeCore

/// One interface of a capture file: classic pcap has one, pcapng one per Interface Description Block.
public struct CaptureInterface: Sendable, Equatable {
    /// LINKTYPE_* value.
    public var linkType: UInt32
    /// `if_name` when the file gives one.
    public var name: String?
    /// Snap length (0 = unlimited).
    public var snapLength: UInt32

    /// An interface with a link type, an optional name and a snap length (0 = unlimited).
    public init(linkType: UInt32, name: String? = nil, snapLength: UInt32 = 0) {
        self.linkType = linkType
        self.name = name
        self.snapLength = snapLength
    }
}

/// Streams the frames of one pcap or pcapng file (optionally gzip-compressed), detected by its magic.
///
/// Reads through 1 MiB chunks, so memory does not grow with the file. A frame's `data` is a slice of
/// its chunk (no per-frame copy); a chunk is never written again once frames point into it, so kept
/// frames stay valid, but each kept frame pins its whole 1 MiB chunk: copy (`Bytes(frame.data.array)`)
/// what you keep for long (reassembly buffers, tables). Truncation and corruption stop the file without throwing: every frame before
/// them is delivered, then `next()` returns nil and `problem` says what happened.
public final class CaptureFileReader {
    /// The largest captured length accepted (libpcap's and Wireshark's limit).
    public static let maxCapturedLength = 262_144
    static let bufferCapacity = 1 << 20
    /// Blocks that are skipped unread may be large, but not absurdly so.
    static let maxSkippedBlock: UInt32 = 64 << 20

    // All parsing state lives in one struct: one exclusivity check per `next()` instead of one per field.
    private var state: ReaderState

    /// Opens `path` (`-` reads standard input; pipes and FIFOs work) and reads its header. Throws for
    /// files that cannot be read at all; later trouble becomes `problem`. `input` is stamped on every frame.
    public init(path: String, input: Int = 0) throws(CaptureError) {
        state = try ReaderState(path: path, input: input)
    }

    /// The next frame, or nil at the end of the file or after a problem (see `problem`).
    public func next() -> RawFrame? { state.next() }

    /// The path given to `init`.
    public var path: String { state.path }
    /// The input index stamped on every frame (`FrameInfo.input`).
    public var input: Int { state.input }
    /// Why reading stopped early, if it did (set once `next()` has returned nil).
    public var problem: CaptureProblem? { state.problem }
    /// Frames delivered so far.
    public var framesRead: UInt64 { state.framesRead }
    /// Interfaces seen so far (all sections of a pcapng file, in order).
    public var interfaces: [CaptureInterface] { state.interfaces }
    /// Packets the capturing machine says it dropped (pcapng Interface Statistics Blocks), as windows
    /// between successive readings of each interface (complete once `next()` returned nil).
    public var losses: [CaptureLoss] {
        var byInterface: [Int: [(t: Nanos, ifDrop: UInt64?, osDrop: UInt64?)]] = [:]
        for r in state.statistics { byInterface[r.interface, default: []].append((r.t, r.ifDrop, r.osDrop)) }
        return byInterface.keys.sorted().flatMap { i in
            let name = i < state.interfaces.count ? state.interfaces[i].name : nil
            return CaptureLoss.fromDropCounters(byInterface[i] ?? [], start: state.firstFrameT,
                                                source: path + (name.map { " (\($0))" } ?? ""))
        }
    }
    /// Non-fatal findings about the file (`capture.timestamp.shifted`, `capture.timestamp.clamped`),
    /// at most one per id.
    public var diagnostics: [Diagnostic] { state.diagnostics }
    /// Frames whose timestamp did not fit in `Nanos` (before 1677 or after 2262): shifted (see
    /// `timestampShift`) or, when even that fails, clamped.
    public var clampedTimestamps: UInt64 { state.clampedTimestamps }
    /// Seconds subtracted from the out-of-range timestamps of the first interface that had them (the
    /// first such frame lands in the first second of 1970); nil when none was shifted.
    public var timestampShift: Int64? { state.timestampShift }
    /// A short description of the format, e.g. `pcapng (little-endian, 2 interfaces)`,
    /// `gzip-compressed pcap (big-endian, nanosecond, EN10MB)`.
    public var formatDescription: String { state.formatDescription }
    /// True when the file is gzip-compressed.
    public var isCompressed: Bool { state.compressed }

    /// Bytes of the file read so far (compressed bytes for gzip data) and its size when known: progress.
    public var bytesRead: Int64 { state.bytesRead }
    public var fileSize: Int64? { state.fileSize }
}

/// The reader proper (see `CaptureFileReader`).
struct ReaderState {
    /// The path given to `init`.
    let path: String
    /// The input index stamped on every frame (`FrameInfo.input`).
    let input: Int
    /// Why reading stopped early, if it did (set once `next()` has returned nil).
    private(set) var problem: CaptureProblem?
    /// Frames delivered so far.
    private(set) var framesRead: UInt64 = 0
    /// Interfaces seen so far (all sections of a pcapng file, in order).
    private(set) var interfaces: [CaptureInterface] = []
    /// Interface statistics readings (interface index across sections, time, drop counters).
    private(set) var statistics: [(interface: Int, t: Nanos, ifDrop: UInt64?, osDrop: UInt64?)] = []
    private(set) var firstFrameT: Nanos?
    /// Non-fatal findings about the file, at most one per id.
    private(set) var diagnostics: [Diagnostic] = []
    /// Frames whose timestamp did not fit in `Nanos` (before 1677 or after 2262).
    private(set) var clampedTimestamps: UInt64 = 0
    private(set) var timestampShift: Int64?

    private enum Format { case pcap(nanos: Bool), pcapng }
    private let format: Format
    private let source: ByteSource
    let compressed: Bool

    // The window [pos, end) of `buf` holds unread bytes; `base` is the stream offset of buf[0].
    private var buf: [UInt8]
    private var pos = 0
    private var end = 0
    private var base: Int64 = 0
    private var eof = false
    private var finished = false
    private var bigEndian = false

    // Classic pcap.
    private var pcapLinkType: UInt32 = 0
    // pcapng: interfaces of the current section.
    private struct SectionInterface {
        var linkType: UInt32
        var name: String?
        var snapLength: UInt32
        var scale: TimestampScale
        /// Seconds subtracted from this interface's out-of-range timestamps, once one was seen.
        var shift: Int64? = nil
    }
    private var section: [SectionInterface] = []
    private var sectionCount = 0
    private var lastTime: Nanos = 0

    init(path: String, input: Int) throws(CaptureError) {
        self.path = path
        self.input = input
        let src = try ByteSource(path: path)
        source = src
        buf = []

        // Sniff the magic (after decompression).
        _ = CaptureFileReaderBootstrap.fill(&buf, &pos, &end, &base, &eof, src, 24)
        compressed = src.isCompressed
        let have = end - pos
        if have == 0 {
            if let err = src.errorMessage { throw .unreadable(path: path, reason: err) }
            throw .notCapture(path: path, detail: compressed ? "gzip data that decompresses to nothing" : "the file is empty")
        }
        let head = Array(buf[0 ..< min(have, 16)])
        guard have >= 4 else {
            throw .notCapture(path: path, detail: "only \(have) byte\(have == 1 ? "" : "s"): \(CaptureFileReaderBootstrap.show(head))")
        }
        let magicBE = UInt32(head[0]) << 24 | UInt32(head[1]) << 16 | UInt32(head[2]) << 8 | UInt32(head[3])
        let magicLE = magicBE.byteSwapped
        let gzNote = compressed ? "gzip-compressed data that " : ""
        switch (magicBE, magicLE) {
        case (0xA1B2_C3D4, _): format = .pcap(nanos: false); bigEndian = true
        case (_, 0xA1B2_C3D4): format = .pcap(nanos: false); bigEndian = false
        case (0xA1B2_3C4D, _): format = .pcap(nanos: true); bigEndian = true
        case (_, 0xA1B2_3C4D): format = .pcap(nanos: true); bigEndian = false
        case (0x0A0D_0D0A, _): format = .pcapng
        case (0xA1B2_CD34, _), (_, 0xA1B2_CD34):
            throw .badHeader(path: path, detail: "magic a1b2cd34 (Kuznetzov's modified pcap) is not supported; convert it with editcap -F pcap")
        default:
            throw .notCapture(path: path, detail: "\(gzNote)starts with \(CaptureFileReaderBootstrap.show(head)) (magic \(CaptureFileReaderBootstrap.hex32(magicBE)))")
        }

        switch format {
        case .pcap:
            guard have >= 24 else {
                throw .badHeader(path: path, detail: "file ends inside the 24-byte pcap header (\(have) bytes)")
            }
            let major = u16(4), minor = u16(6)
            guard major == 2 else {
                throw .badHeader(path: path, detail: "pcap version \(major).\(minor) (expected 2.4)")
            }
            let snap = u32(16)
            // The link type is the low 16 bits; the upper bits carry FCS information.
            pcapLinkType = u32(20) & 0xFFFF
            interfaces = [CaptureInterface(linkType: pcapLinkType, snapLength: snap)]
            pos = 24
        case .pcapng:
            if let err = readSectionHeader(first: true) {
                throw .badHeader(path: path, detail: err)
            }
        }
    }

    var bytesRead: Int64 { source.offset }
    var fileSize: Int64? { source.size }

    var formatDescription: String {
        let order = bigEndian ? "big-endian" : "little-endian"
        let body: String
        switch format {
        case .pcap(let nanos):
            body = "pcap (\(order), \(nanos ? "nanosecond" : "microsecond"), \(LinkType.name(pcapLinkType)))"
        case .pcapng:
            let n = interfaces.count
            let sections = sectionCount > 1 ? ", \(sectionCount) sections" : ""
            body = "pcapng (\(order), \(n) interface\(n == 1 ? "" : "s")\(sections))"
        }
        return compressed ? "gzip-compressed " + body : body
    }

    mutating func next() -> RawFrame? {
        if finished { return nil }
        switch format {
        case .pcap(let nanos): return nextClassic(nanos: nanos)
        case .pcapng: return nextPcapng()
        }
    }

    // MARK: - Buffer

    /// Makes at least `n` unread bytes available (n <= buffer capacity); false at end of data.
    @inline(__always)
    private mutating func fill(_ n: Int) -> Bool {
        if end &- pos >= n { return true }
        return CaptureFileReaderBootstrap.fill(&buf, &pos, &end, &base, &eof, source, n)
    }

    @inline(__always)
    private func u16(_ i: Int) -> UInt16 {
        buf.withUnsafeBytes { raw in
            let v = raw.loadUnaligned(fromByteOffset: i, as: UInt16.self)
            return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
        }
    }

    @inline(__always)
    private func u32(_ i: Int) -> UInt32 {
        buf.withUnsafeBytes { raw in
            let v = raw.loadUnaligned(fromByteOffset: i, as: UInt32.self)
            return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
        }
    }

    private func offset(_ i: Int) -> Int64 { base &+ Int64(i) }

    private mutating func stop(_ kind: CaptureProblem.Kind, at start: Int, _ detail: String) -> RawFrame? {
        var d = detail
        if kind == .truncated, let err = source.errorMessage { d += d.isEmpty ? err : " (\(err))" }
        problem = CaptureProblem(path: path, input: input, kind: kind, framesRead: framesRead,
                                 byteOffset: offset(start), detail: d)
        finished = true
        return nil
    }

    /// End of data at a record boundary: clean, unless the source reported an error.
    private mutating func endOfData() -> RawFrame? {
        finished = true
        if let err = source.errorMessage {
            problem = CaptureProblem(path: path, input: input, kind: .readError, framesRead: framesRead,
                                     byteOffset: offset(pos), detail: err)
        }
        return nil
    }

    // MARK: - Classic pcap

    private mutating func nextClassic(nanos: Bool) -> RawFrame? {
        let start = pos
        guard fill(16) else {
            return end == pos ? endOfData() : stop(.truncated, at: pos, "file ends inside a record header")
        }
        let p = pos
        let be = bigEndian
        let (sec, frac, capLen, origLen) = buf.withUnsafeBytes { raw in
            func f(_ i: Int) -> UInt32 {
                let v = raw.loadUnaligned(fromByteOffset: p &+ i, as: UInt32.self)
                return be ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
            }
            return (f(0), f(4), f(8), f(12))
        }
        guard capLen <= UInt32(CaptureFileReader.maxCapturedLength) else {
            return stop(.corrupt, at: start, "captured length \(capLen) exceeds \(CaptureFileReader.maxCapturedLength)")
        }
        let cap = Int(capLen)
        guard fill(16 &+ cap) else {
            return stop(.truncated, at: pos, "record needs \(16 + cap) bytes, \(end - pos) left")
        }
        let q = pos
        // sec < 2^32, frac < 2^32: at most 4.3e18 + 4.3e12 ns, below Int64.max.
        let t = Int64(sec) &* CaptureTime.second &+ (nanos ? Int64(frac) : Int64(frac) &* 1000)
        framesRead &+= 1
        let info = FrameInfo(input: input, number: framesRead, t: t, capturedLength: cap,
                             originalLength: Int(origLen), linkType: pcapLinkType, interfaceName: nil)
        let data = Bytes(storage: buf, lower: q &+ 16, count: cap)
        pos = q &+ 16 &+ cap
        return RawFrame(info: info, data: data)
    }

    // MARK: - pcapng

    private static let shbType: UInt32 = 0x0A0D_0D0A
    private static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    /// Parses the Section Header Block at `pos` and moves past it; returns an error text on failure.
    private mutating func readSectionHeader(first: Bool) -> String? {
        guard fill(12) else { return "file ends inside a section header block (\(end - pos) bytes)" }
        let p = pos
        let raw = buf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: p &+ 8, as: UInt32.self) }
        if UInt32(bigEndian: raw) == ReaderState.byteOrderMagic {
            bigEndian = true
        } else if UInt32(littleEndian: raw) == ReaderState.byteOrderMagic {
            bigEndian = false
        } else {
            return "section header byte-order magic is \(CaptureFileReaderBootstrap.hex32(UInt32(bigEndian: raw))), expected 1a2b3c4d"
        }
        let len = u32(p &+ 4)
        guard len >= 28, len % 4 == 0, len <= UInt32(CaptureFileReader.bufferCapacity) else {
            return "section header block length \(len) is invalid"
        }
        guard fill(Int(len)) else {
            return "file ends inside a section header block (\(end - pos) of \(len) bytes)"
        }
        let q = pos
        let major = u16(q &+ 12), minor = u16(q &+ 14)
        guard major == 1 else { return "pcapng version \(major).\(minor) is not supported (expected 1.x)" }
        guard u32(q &+ Int(len) &- 4) == len else {
            return "section header block length \(len) does not match its trailing copy \(u32(q &+ Int(len) &- 4))"
        }
        section.removeAll(keepingCapacity: true)
        sectionCount &+= 1
        pos = q &+ Int(len)
        return nil
    }

    private mutating func nextPcapng() -> RawFrame? {
        while true {
            let start = pos
            guard fill(8) else {
                return end == pos ? endOfData() : stop(.truncated, at: pos, "file ends inside a block header")
            }
            let rawType = buf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: pos, as: UInt32.self) }
            if rawType == ReaderState.shbType {
                if let err = readSectionHeader(first: false) {
                    let truncated = err.hasPrefix("file ends")
                    return stop(truncated ? .truncated : .corrupt, at: pos, err)
                }
                continue
            }
            let type = bigEndian ? UInt32(bigEndian: rawType) : UInt32(littleEndian: rawType)
            let len = u32(pos &+ 4)
            guard len >= 12, len % 4 == 0 else {
                return stop(.corrupt, at: start, "block length \(len) is invalid (block type \(CaptureFileReaderBootstrap.hex32(type)))")
            }
            switch type {
            case 1, 2, 3, 6:
                guard len <= UInt32(CaptureFileReader.bufferCapacity) else {
                    return stop(.corrupt, at: start, "block length \(len) is absurd (block type \(type))")
                }
                let n = Int(len)
                guard fill(n) else {
                    return stop(.truncated, at: pos, "block needs \(n) bytes, \(end - pos) left")
                }
                let p = pos
                let trailer = u32(p &+ n &- 4)
                guard trailer == len else {
                    return stop(.corrupt, at: p, "block length \(len) does not match its trailing copy \(trailer)")
                }
                if type == 1 {
                    if let err = readInterface(at: p, length: n) { return stop(.corrupt, at: p, err) }
                    pos = p &+ n
                    continue
                }
                return packet(type: type, at: p, length: n)
            case 5 where len <= 4096:
                // Interface Statistics Block: drop counters at a time.
                let n = Int(len)
                guard fill(n) else {
                    return stop(.truncated, at: pos, "block needs \(n) bytes, \(end - pos) left")
                }
                let p = pos
                if u32(p &+ n &- 4) == len, n >= 24 { readStatistics(at: p, length: n) }
                pos = p &+ n
                continue
            default:
                // Name resolution, statistics, decryption secrets, custom and unknown blocks.
                guard len <= CaptureFileReader.maxSkippedBlock else {
                    return stop(.corrupt, at: start, "block length \(len) is absurd (block type \(CaptureFileReaderBootstrap.hex32(type)))")
                }
                if !skip(Int(len)) {
                    return stop(.truncated, at: start, "file ends inside a block of \(len) bytes (type \(CaptureFileReaderBootstrap.hex32(type)))")
                }
            }
        }
    }

    /// Skips `n` bytes, reading through the buffer when they are not all there yet.
    private mutating func skip(_ n: Int) -> Bool {
        var left = n
        while left > 0 {
            let avail = end &- pos
            if avail >= left {
                pos &+= left
                return true
            }
            pos = end
            left &-= avail
            guard fill(min(left, CaptureFileReader.bufferCapacity)) || end > pos else { return false }
        }
        return true
    }

    /// Parses an Interface Statistics Block of `n` bytes at `p` (a malformed one is ignored: it only
    /// tells what was lost).
    private mutating func readStatistics(at p: Int, length n: Int) {
        let iface = Int(u32(p &+ 8))
        guard iface < section.count else { return }
        let ts = UInt64(u32(p &+ 12)) << 32 | UInt64(u32(p &+ 16))
        let t = section[iface].scale.convert(ts).t
        var ifDrop: UInt64?, osDrop: UInt64?
        var o = p &+ 20
        let limit = p &+ n &- 4
        while o &+ 4 <= limit {
            let code = u16(o), olen = Int(u16(o &+ 2))
            let v = o &+ 4
            guard code != 0, v &+ olen <= limit else { break }
            if olen >= 8, code == 5 || code == 7 {
                let lo = UInt64(u32(v)), hi = UInt64(u32(v &+ 4))
                let value = bigEndian ? (lo << 32 | hi) : (hi << 32 | lo)
                if code == 5 { ifDrop = value } else { osDrop = value }
            }
            o = v &+ ((olen &+ 3) & ~3)
        }
        // Interfaces are numbered per section; readings use the index across the file's sections.
        let global = interfaces.count &- section.count &+ iface
        statistics.append((global, t, ifDrop, osDrop))
    }

    /// Parses an Interface Description Block of `n` bytes at `p`.
    private mutating func readInterface(at p: Int, length n: Int) -> String? {
        guard n >= 20 else { return "interface description block of \(n) bytes is too short" }
        let linkType = UInt32(u16(p &+ 8))
        let snap = u32(p &+ 12)
        var name: String?
        var resolution: UInt8 = 6
        var tsOffset: Int64 = 0
        var o = p &+ 16
        let limit = p &+ n &- 4
        while o &+ 4 <= limit {
            let code = u16(o), olen = Int(u16(o &+ 2))
            let v = o &+ 4
            guard v &+ olen <= limit else { break }  // a bad option ends the list; the interface stays usable
            switch code {
            case 0:
                o = limit
                continue
            case 2:
                var bytes = Array(buf[v ..< v &+ olen])
                while let last = bytes.last, last == 0 { bytes.removeLast() }
                name = String(decoding: bytes, as: UTF8.self)
            case 9 where olen >= 1:
                resolution = buf[v]
            case 14 where olen >= 8:
                let lo = UInt64(u32(v)), hi = UInt64(u32(v &+ 4))
                // Stored as one 64-bit value in the section's byte order.
                let value = bigEndian ? (lo << 32 | hi) : (hi << 32 | lo)
                tsOffset = Int64(bitPattern: value)
            default:
                break
            }
            o = v &+ ((olen &+ 3) & ~3)
        }
        let scale = TimestampScale(resolution: resolution, offsetSeconds: tsOffset)
        section.append(SectionInterface(linkType: linkType, name: name, snapLength: snap, scale: scale))
        interfaces.append(CaptureInterface(linkType: linkType, name: name, snapLength: snap))
        return nil
    }

    /// A timestamp that does not fit `Nanos` (tshark dates some converted files to the year 152000):
    /// rather than clamping every such frame to one instant, which loses their order and spacing, the
    /// interface's out-of-range timestamps are shifted by whole seconds so that the first lands in the
    /// first second of 1970; the diagnostic gives the shift. Clamped only when even that overflows.
    private mutating func outOfRange(_ ts: UInt64, clampedTo v: Nanos, iface: Int, at p: Int) -> Nanos {
        clampedTimestamps &+= 1
        let scale = section[iface].scale
        var t = v
        var shifted = false
        if let (seconds, nanos) = scale.split(ts) {
            let shift = section[iface].shift ?? seconds
            let (d, o1) = seconds.subtractingReportingOverflow(shift)
            let (m, o2) = d.multipliedReportingOverflow(by: CaptureTime.second)
            let (sum, o3) = m.addingReportingOverflow(nanos)
            if !o1 && !o2 && !o3 {
                t = sum
                shifted = true
                if section[iface].shift == nil {
                    section[iface].shift = shift
                    if timestampShift == nil { timestampShift = shift }
                    note("capture.timestamp.shifted",
                         "\(path): timestamp \(ts) × \(scale.unitDescription) (offset \(scale.offsetSeconds) s) is \(seconds) s after 1970, outside the 1677-2262 peerscope holds; this interface's out-of-range times are shifted by -\(shift) s (spacing kept, times start at 1970-01-01)",
                         at: p)
                }
            }
        }
        if !shifted {
            note("capture.timestamp.clamped",
                 "\(path): timestamp \(ts) × \(scale.unitDescription) (offset \(scale.offsetSeconds) s) is outside 1677-2262; clamped, later frames may be too",
                 at: p)
        }
        return t
    }

    private mutating func note(_ id: String, _ message: String, at p: Int) {
        guard !diagnostics.contains(where: { $0.id == id }) else { return }
        diagnostics.append(Diagnostic(id: id, severity: .warning, message: message,
                                      evidence: .frame(input: input, frame: framesRead &+ 1), offset: Int(truncatingIfNeeded: offset(p))))
    }

    /// Turns an EPB (6), SPB (3) or obsolete Packet Block (2) of `n` bytes at `p` into a frame.
    private mutating func packet(type: UInt32, at p: Int, length n: Int) -> RawFrame? {
        let maxCap = CaptureFileReader.maxCapturedLength
        let iface: Int
        var t: Nanos
        let capLen: Int
        let origLen: Int
        let dataOffset: Int
        switch type {
        case 3:
            guard n >= 16 else { return stop(.corrupt, at: p, "simple packet block of \(n) bytes is too short") }
            iface = 0
            guard !section.isEmpty else {
                return stop(.corrupt, at: p, "simple packet block before any interface description block")
            }
            let orig = u32(p &+ 8)
            var c = min(Int(orig), n &- 16)
            let snap = section[0].snapLength
            if snap > 0 { c = min(c, Int(snap)) }
            capLen = c
            origLen = Int(orig)
            dataOffset = 12
            t = lastTime  // simple packet blocks carry no timestamp
        default:
            guard n >= 32 else { return stop(.corrupt, at: p, "packet block of \(n) bytes is too short") }
            iface = type == 6 ? Int(u32(p &+ 8)) : Int(u16(p &+ 8))
            guard iface < section.count else {
                return stop(.corrupt, at: p, "packet refers to interface \(iface) but the section defines \(section.count)")
            }
            let ts = UInt64(u32(p &+ 12)) << 32 | UInt64(u32(p &+ 16))
            let c = u32(p &+ 20)
            guard c <= UInt32(maxCap) else {
                return stop(.corrupt, at: p, "captured length \(c) exceeds \(maxCap)")
            }
            capLen = Int(c)
            guard 28 &+ capLen &+ 4 <= n else {
                return stop(.corrupt, at: p, "captured length \(capLen) does not fit in a block of \(n) bytes")
            }
            origLen = Int(u32(p &+ 24))
            dataOffset = 28
            let scale = section[iface].scale
            let (v, clamped) = scale.convert(ts)
            t = clamped ? outOfRange(ts, clampedTo: v, iface: iface, at: p) : v
            lastTime = t
        }
        guard capLen <= maxCap else {
            return stop(.corrupt, at: p, "captured length \(capLen) exceeds \(maxCap)")
        }
        let i = section[iface]
        framesRead &+= 1
        if firstFrameT == nil { firstFrameT = t }
        let info = FrameInfo(input: input, number: framesRead, t: t, capturedLength: capLen,
                             originalLength: origLen, linkType: i.linkType, interfaceName: i.name)
        let data = Bytes(storage: buf, lower: p &+ dataOffset, count: capLen)
        pos = p &+ n
        return RawFrame(info: info, data: data)
    }
}

/// Helpers shared by `init` (before all stored properties exist) and the reader.
enum CaptureFileReaderBootstrap {
    /// Compacts the window to the front of `buf` and reads until `n` bytes are available or the data ends.
    /// Moves the unread window into a fresh 1 MiB chunk and reads until `n` bytes are available or
    /// the data ends. A fresh chunk (rather than compacting in place) means frames handed out from the
    /// old chunk stay valid without a copy; the old chunk is freed when the last of them goes.
    static func fill(_ buf: inout [UInt8], _ pos: inout Int, _ end: inout Int, _ base: inout Int64,
                     _ eof: inout Bool, _ source: ByteSource, _ n: Int) -> Bool {
        if end &- pos >= n { return true }
        if eof { return false }
        let keep = end &- pos
        let from = pos
        let capacity = CaptureFileReader.bufferCapacity
        var filled = keep
        var hitEnd = false
        let old = buf
        let fresh = [UInt8](unsafeUninitializedCapacity: capacity) { out, count in
            guard let dst = out.baseAddress else { count = 0; return }
            if keep > 0 {
                old.withUnsafeBytes { src in
                    if let s = src.baseAddress { UnsafeMutableRawPointer(dst).copyMemory(from: s + from, byteCount: keep) }
                }
            }
            while filled < n {
                let got = source.read(into: UnsafeMutableRawPointer(dst + filled), count: capacity &- filled)
                if got <= 0 { hitEnd = true; break }
                filled &+= got
            }
            count = filled
        }
        buf = fresh
        base &+= Int64(from)
        pos = 0
        end = filled
        if hitEnd { eof = true }
        return end >= n
    }

    static func show(_ bytes: [UInt8]) -> String {
        let hex = bytes.map { b in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: " ")
        let text = String(bytes.map { (0x20 ..< 0x7F).contains($0) ? Character(UnicodeScalar($0)) : "." })
        return "\(hex) \"\(text)\""
    }

    static func hex32(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 8 - s.count)) + s
    }
}
