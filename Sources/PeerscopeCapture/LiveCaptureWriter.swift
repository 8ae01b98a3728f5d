#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeerscopeCore

/// Where a live capture saves its frames: one pcapng file, or a ring of files like dumpcap's
/// `-b filesize:… -b files:…` (`--ring FILES:MEGABYTES`): when a file reaches MEGABYTES the next one
/// is started, and only the newest FILES are kept. Ring files are named `BASE_NNNNN_YYYYMMDDhhmmss.EXT`
/// (number, then the UTC time the file was started), as dumpcap names them.
///
/// Every file starts with one Interface Description Block per capture interface (link type, name,
/// snap length); the final file ends with one Interface Statistics Block per interface (received and
/// dropped counts). Blocks are only ever written whole, so a stopped capture leaves readable files.
public final class LiveCaptureWriter {
    public struct Interface: Sendable, Equatable {
        public var linkType: UInt32
        public var name: String
        public var snapLength: Int
        public init(linkType: UInt32, name: String, snapLength: Int) {
            self.linkType = linkType
            self.name = name
            self.snapLength = snapLength
        }
    }

    /// A ring: keep `files` files of at most about `bytesPerFile` bytes each.
    public struct Ring: Sendable, Equatable {
        public var files: Int
        public var bytesPerFile: Int
        public init(files: Int, bytesPerFile: Int) {
            self.files = max(1, files)
            self.bytesPerFile = max(1, bytesPerFile)
        }

        /// Parses `FILES:MEGABYTES` (both positive whole numbers); nil when malformed.
        public init?(argument: String) {
            let parts = argument.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let f = Int(parts[0]), let mb = Int(parts[1]), f > 0, mb > 0, mb <= 1 << 20 else { return nil }
            self.init(files: f, bytesPerFile: mb << 20)
        }
    }

    /// The path given (`--write`); in ring mode the base of the file names.
    public let path: String
    public let ring: Ring?
    /// The interfaces declared so far (each file describes them all).
    public private(set) var interfaces: [Interface] = []
    /// The files currently kept, oldest first (one file unless in ring mode).
    public private(set) var files: [String] = []
    /// Frames written over all files.
    public private(set) var framesWritten: UInt64 = 0

    /// Temporary files of earlier runs onto this output (for a ring: onto this base name) that ended
    /// without finishing, and what opening each file of this writer did with them: a capture's frames
    /// are renamed to a visible name, never removed (see `OutputFile.removeStaleTemporaries`). A ring
    /// looks again each time it starts a file, so the list grows mid-capture; the caller prints each
    /// `message` on standard error (the new ones after a `write`: see `newStaleTemporaries`).
    public private(set) var staleTemporaries: [StaleTemporary] = []
    /// How many of `staleTemporaries` `newStaleTemporaries` has handed out.
    private var staleHandedOut = 0

    private var current: PcapngWriter?
    private var sequence = 0
    private let calls: FileSystemCalls

    /// Opens the first file (through `OutputFile`: it appears under its name when closed). `mode`
    /// applies to a single file (`--force`, `--append`); ring files are always new names. Throws the
    /// refusal or failure of opening it, before any interface need be opened.
    public convenience init(path: String, ring: Ring? = nil, mode: OutputFile.Mode = .replace) throws(OutputError) {
        try self.init(path: path, ring: ring, mode: mode, calls: FileSystemCalls())
    }

    /// `calls`: how earlier runs' temporary files are looked for (see `OutputFile.removeStaleTemporaries`).
    init(path: String, ring: Ring?, mode: OutputFile.Mode, calls: FileSystemCalls) throws(OutputError) {
        self.path = path
        self.ring = ring
        self.calls = calls
        sequence = 1
        let name = ring == nil ? path : LiveCaptureWriter.ringName(base: path, number: 1, at: LiveCapture.realtimeNanos())
        let file = try open(name, mode: ring == nil ? mode : .createNew)
        do { current = try PcapngWriter(output: file) } catch {
            throw .writeFailed(path: name, reason: LiveCaptureWriter.reason(error))
        }
        files = [name]
    }

    /// Opens file `name` of this writer (the single file, or a ring's next) through `OutputFile`, every
    /// one alike: for a ring, a killed run's temporary ring files are looked for by the pattern first
    /// (ring files have new names each run), then `OutputFile` looks for `name`'s own; what was done
    /// with them goes into `staleTemporaries`.
    private func open(_ name: String, mode: OutputFile.Mode) throws(OutputError) -> OutputFile {
        if ring != nil {
            let (dir, base) = OutputFile.split(path)
            note(OutputFile.removeStaleTemporaries(in: dir, where: { LiveCaptureWriter.isRingName($0, base: base) }, calls: calls))
        }
        let file = try OutputFile(path: name, option: "--write", mode: mode, calls: calls)
        note(file.staleTemporaries)
        return file
    }

    /// The `staleTemporaries` not handed out by an earlier call: what a ring's files started since
    /// found (the first call also gives what opening the writer found).
    public func newStaleTemporaries() -> [StaleTemporary] {
        let new = Array(staleTemporaries[staleHandedOut...])
        staleHandedOut = staleTemporaries.count
        return new
    }

    /// True when `newStaleTemporaries` has something to hand out (cheap: a caller asks after each `write`).
    public var hasNewStaleTemporaries: Bool { staleTemporaries.count > staleHandedOut }

    /// Adds to `staleTemporaries`; a folder not on a local file system is said once (a ring's files
    /// are all in one folder).
    private func note(_ list: [StaleTemporary]) {
        for s in list {
            if case .notLocal = s.outcome, staleTemporaries.contains(where: { if case .notLocal = $0.outcome { true } else { false } }) {
                continue
            }
            staleTemporaries.append(s)
        }
    }

    /// Convenience for a writer whose interfaces are known at once.
    public convenience init(path: String, ring: Ring? = nil, interfaces: [Interface]) throws(CaptureError) {
        do { try self.init(path: path, ring: ring) } catch { throw .writeFailed(path: path, reason: error.reason) }
        try declare(interfaces)
    }

    /// Describes the capture's interfaces (before any frame): one interface block each, in this
    /// file and in every later ring file.
    public func declare(_ list: [Interface]) throws(CaptureError) {
        interfaces += list
        for i in list { current?.addInterface(linkType: i.linkType, name: i.name, snapLength: i.snapLength) }
        try current?.flush()
    }

    static func reason(_ e: CaptureError) -> String {
        if case .writeFailed(_, let r) = e { return r }
        return e.description
    }

    /// The name of ring file `n` started at `t` (ns since the epoch, UTC).
    public static func ringName(base path: String, number n: Int, at t: Nanos) -> String {
        let (stem, ext) = stemAndExtension(path)
        // 2026-11-25T08:15:00.000000000Z -> 20261125081500
        let stamp = String(CaptureTime.iso8601(t).prefix(19).filter(\.isNumber))
        let number = String(n)
        let padded = String(repeating: "0", count: max(0, 5 - number.count)) + number
        return "\(stem)_\(padded)_\(stamp)\(ext)"
    }

    /// (`ring`, `.pcapng`) of `ring.pcapng`; a name without an extension gets `.pcapng`.
    static func stemAndExtension(_ path: String) -> (String, String) {
        let slash = path.lastIndex(of: "/")
        let dot = path.lastIndex(of: ".").flatMap { d in slash.map { d > $0 } ?? true ? d : nil }
        return (dot.map { String(path[..<$0]) } ?? path, dot.map { String(path[$0...]) } ?? ".pcapng")
    }

    /// True when `name` is a ring file name of `base` (a file name, no folder):
    /// `STEM_NNNNN_YYYYMMDDhhmmss.EXT` (five or more digits, then fourteen).
    static func isRingName(_ name: String, base: String) -> Bool {
        let (stem, ext) = stemAndExtension(base)
        guard name.hasPrefix(stem + "_"), name.hasSuffix(ext), name.count > stem.count + ext.count + 1 else { return false }
        let middle = name.dropFirst(stem.count + 1).dropLast(ext.count).split(separator: "_", omittingEmptySubsequences: false)
        return middle.count == 2 && middle[0].count >= 5 && middle[1].count == 14
            && middle.allSatisfy { $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }

    /// Closes the full ring file and starts the next, removing the oldest beyond `ring.files`.
    private func rotate(_ ring: Ring) throws(CaptureError) {
        try current?.close()
        current = nil
        sequence += 1
        let name = LiveCaptureWriter.ringName(base: path, number: sequence, at: LiveCapture.realtimeNanos())
        let file: OutputFile
        do { file = try open(name, mode: .replace) } catch {
            throw .writeFailed(path: name, reason: error.reason)
        }
        let w = try PcapngWriter(output: file)
        for i in interfaces { w.addInterface(linkType: i.linkType, name: i.name, snapLength: i.snapLength) }
        current = w
        files.append(name)
        if files.count > ring.files {
            for old in files.prefix(files.count - ring.files) { _ = unlink(old) }
            files.removeFirst(files.count - ring.files)
        }
    }

    /// Appends `frame`, starting the next ring file first when the current one is full.
    public func write(_ frame: RawFrame) throws(CaptureError) {
        guard let w = current else { throw .writeFailed(path: path, reason: "writer is closed") }
        if let ring, w.framesWritten > 0, w.size >= ring.bytesPerFile { try rotate(ring) }
        guard let w = current else { return }
        try w.write(frame)
        framesWritten &+= 1
    }

    /// Pushes buffered blocks to the file (a live capture does this about every second).
    public func flush() throws(CaptureError) { try current?.flush() }

    /// Gives up on the current file (its temporary file is removed); ring files already complete
    /// stay. No-op after `close`.
    public func discard() {
        current?.discard()
        current = nil
    }

    /// Writes the statistics blocks (when `stats` is given) and closes the current file.
    public func close(stats: LiveCaptureStats?, at t: Nanos) throws(CaptureError) {
        guard let w = current else { return }
        current = nil
        for s in stats?.interfaces ?? [] {
            w.writeStatistics(linkType: s.linkType, name: s.interface, at: t, received: s.pcapReceived,
                              interfaceDropped: s.interfaceDropped, kernelDropped: s.kernelDropped, delivered: s.analysed)
        }
        try w.close()
    }
}
