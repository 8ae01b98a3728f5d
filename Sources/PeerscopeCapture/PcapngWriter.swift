#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeerscopeCore

/// Writes frames to a little-endian pcapng file: one Section Header Block, one Interface Description
/// Block per (link type, interface name) as they first appear, and Enhanced Packet Blocks with
/// nanosecond timestamps (`if_tsresol` = 9).
///
/// Output is buffered (1 MiB); call `flush()` to push it to the file and `close()` when done. The file
/// is written through `OutputFile`: a new or replaced file appears only at `close()` (renamed from a
/// temporary file in the same folder); a writer dropped without `close()` leaves the old file as it was.
/// With `OutputFile.Mode.append` a new section is added at the end of an existing pcapng file.
public final class PcapngWriter {
    private struct InterfaceKey: Hashable {
        var linkType: UInt32
        var name: String?
    }

    /// The path being written.
    public let path: String
    /// Frames written so far.
    public private(set) var framesWritten: UInt64 = 0

    private var file: OutputFile?
    private var out: [UInt8] = []
    private var interfaceIDs: [InterfaceKey: UInt32] = [:]
    private let flushThreshold = 1 << 20

    /// Creates `path` (replacing it at `close()`) and writes the section header.
    public convenience init(path: String, application: String = "peerscope") throws(CaptureError) {
        let f: OutputFile
        do { f = try OutputFile(path: path, option: "--write") } catch {
            throw .writeFailed(path: path, reason: PcapngWriter.reason(error))
        }
        try self.init(output: f, application: application)
    }

    /// Writes a pcapng section to an opened output. For `.append` onto an existing file, the file must
    /// already be pcapng (a new section starts after its last block).
    public init(output: OutputFile, application: String = "peerscope") throws(CaptureError) {
        self.path = output.path
        file = output
        if output.appendingToExisting, let problem = PcapngWriter.appendProblem(output.path) {
            output.discard()
            throw .writeFailed(path: output.path, reason: "cannot append: \(problem)")
        }
        out.reserveCapacity(flushThreshold + 300_000)
        var body: [UInt8] = []
        PcapngWriter.u32(&body, 0x1A2B_3C4D)
        PcapngWriter.u16(&body, 1)
        PcapngWriter.u16(&body, 0)
        PcapngWriter.u32(&body, 0xFFFF_FFFF)  // section length: unknown (-1)
        PcapngWriter.u32(&body, 0xFFFF_FFFF)
        PcapngWriter.option(&body, 4, Array(application.utf8))  // shb_userappl
        PcapngWriter.u32(&body, 0)  // opt_endofopt
        block(0x0A0D_0D0A, body)
        try flush()
    }

    deinit {
        file?.discard()
    }

    /// Gives up without closing: the temporary file is removed (an appended file is cut back); no-op
    /// after `close()`.
    public func discard() {
        file?.discard()
        file = nil
    }

    /// Why a new section cannot be appended to the file at `path`, or nil when it can.
    public static func appendProblem(_ path: String) -> String? {
        guard let f = fopen(path, "rb") else { return "cannot read it to check its format" }
        defer { fclose(f) }
        var head = [UInt8](repeating: 0, count: 12)
        let n = fread(&head, 1, 12, f)
        guard n == 12, Array(head[0 ..< 4]) == [0x0A, 0x0D, 0x0D, 0x0A] else {
            return "it is not a pcapng file (only pcapng files take another section)"
        }
        return nil
    }

    private static func reason(_ e: OutputError) -> String { e.reason }

    /// Appends `frame`, describing its interface first when it is new.
    public func write(_ frame: RawFrame) throws(CaptureError) {
        guard file != nil else { throw .writeFailed(path: path, reason: "writer is closed") }
        let key = InterfaceKey(linkType: frame.info.linkType, name: frame.info.interfaceName)
        let id: UInt32
        if let known = interfaceIDs[key] {
            id = known
        } else {
            id = UInt32(interfaceIDs.count)
            interfaceIDs[key] = id
            var body: [UInt8] = []
            PcapngWriter.u16(&body, UInt16(truncatingIfNeeded: key.linkType))
            PcapngWriter.u16(&body, 0)
            PcapngWriter.u32(&body, UInt32(CaptureFileReader.maxCapturedLength))
            if let name = key.name { PcapngWriter.option(&body, 2, Array(name.utf8)) }  // if_name
            PcapngWriter.option(&body, 9, [9])  // if_tsresol: nanoseconds
            PcapngWriter.u32(&body, 0)
            block(1, body)
        }
        let data = frame.data
        let ts = UInt64(max(0, frame.info.t))
        let orig = UInt32(clamping: max(frame.info.originalLength, data.count))
        let total = 32 &+ ((data.count &+ 3) & ~3)
        PcapngWriter.u32(&out, 6)
        PcapngWriter.u32(&out, UInt32(total))
        PcapngWriter.u32(&out, id)
        PcapngWriter.u32(&out, UInt32(ts >> 32))
        PcapngWriter.u32(&out, UInt32(ts & 0xFFFF_FFFF))
        PcapngWriter.u32(&out, UInt32(data.count))
        PcapngWriter.u32(&out, orig)
        data.withUnsafeBytes { out.append(contentsOf: $0) }
        for _ in 0 ..< ((4 &- (data.count & 3)) & 3) { out.append(0) }
        PcapngWriter.u32(&out, UInt32(total))
        framesWritten &+= 1
        if out.count >= flushThreshold { try flush() }
    }

    /// Writes buffered blocks to the file.
    public func flush() throws(CaptureError) {
        guard let file else { return }
        do { try file.write(out) } catch {
            throw .writeFailed(path: path, reason: PcapngWriter.reason(error))
        }
        out.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes the file; later writes throw.
    public func close() throws(CaptureError) {
        guard let f = file else { return }
        defer { file = nil }
        do {
            try flush()
        } catch {
            f.discard()
            throw error
        }
        do { try f.commit() } catch {
            throw .writeFailed(path: path, reason: PcapngWriter.reason(error))
        }
    }

    private func block(_ type: UInt32, _ body: [UInt8]) {
        let len = UInt32(12 &+ body.count)
        PcapngWriter.u32(&out, type)
        PcapngWriter.u32(&out, len)
        out += body
        PcapngWriter.u32(&out, len)
    }

    private static func u16(_ a: inout [UInt8], _ v: UInt16) {
        a.append(UInt8(truncatingIfNeeded: v))
        a.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    private static func u32(_ a: inout [UInt8], _ v: UInt32) {
        a.append(UInt8(truncatingIfNeeded: v))
        a.append(UInt8(truncatingIfNeeded: v >> 8))
        a.append(UInt8(truncatingIfNeeded: v >> 16))
        a.append(UInt8(truncatingIfNeeded: v >> 24))
    }

    private static func option(_ a: inout [UInt8], _ code: UInt16, _ value: [UInt8]) {
        let v = value.prefix(0xFFFF)
        u16(&a, code)
        u16(&a, UInt16(v.count))
        a += v
        while a.count % 4 != 0 { a.append(0) }
    }
}

// `close` and `write` are shadowed by the writer's own methods.
