#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CPcap   // its shim includes <sys/vfs.h> on Linux: fstatfs, f_type
#endif

/// A file identity that survives links, `./` and `..` spellings: device and inode of what a path
/// resolves to (symbolic links followed).
public struct FileIdentity: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64

    /// The identity of what `path` names, or nil when it does not exist (or cannot be examined).
    public init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
    }

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity of the name `path` itself (a symbolic link is not followed).
    init?(lstat path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
    }

    /// The identity of the file open on descriptor `fd`.
    init?(descriptor fd: Int32) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
    }
}

/// Why an output was refused or could not be written. Refusals are usage errors (exit 2), failures
/// to write are output errors (exit 3); both name the path and, for failures, the system's reason.
public enum OutputError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The output resolves to one of the run's inputs (or to another output of the same run).
    case isInput(option: String, path: String, input: String)
    /// The file exists and the command needs `--force` (replace) or `--append`.
    case exists(option: String, path: String)
    /// `--append` onto a file that is not of the kind being written.
    case cannotAppend(path: String, reason: String)
    /// Creating, writing, syncing, closing or renaming failed.
    case writeFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .isInput(let option, let path, let input):
            return path == input
                ? "\(option) \(path) is also an input of this run; refusing to overwrite it"
                : "\(option) \(path) is the same file as the input \(input); refusing to overwrite it"
        case .exists(let option, let path):
            return "\(option) \(path) already exists; give --force to replace it or --append to add to it"
        case .cannotAppend(let path, let reason): return "\(path): cannot append: \(reason)"
        case .writeFailed(let path, let reason): return "\(path): cannot write: \(reason)"
        }
    }

    /// The system's reason for a failed write; the whole message for a refusal.
    public var reason: String {
        if case .writeFailed(_, let r) = self { return r }
        return description
    }

    /// True for refusals decided before anything was written (usage errors).
    public var isRefusal: Bool {
        switch self {
        case .isInput, .exists, .cannotAppend: return true
        case .writeFailed: return false
        }
    }
}

/// The rule every writer follows: an output never names an input, and no two outputs name one file.
public enum OutputGuard {
    /// Throws `.isInput` when any output (option, path) resolves, by device and inode, to one of
    /// `inputs` or to an earlier output. Outputs that do not exist yet cannot clash with an input,
    /// but two spellings of one new path (`a.txt`, `./a.txt`) are caught by their resolved parent.
    public static func check(outputs: [(option: String, path: String)], inputs: [String]) throws(OutputError) {
        var known: [(id: FileIdentity, name: String)] = []
        for i in inputs {
            if let id = FileIdentity(path: i) { known.append((id, i)) }
        }
        var newPaths: [String: String] = [:]
        for (option, path) in outputs where path != "-" {
            if let id = FileIdentity(path: path) {
                if let clash = known.first(where: { $0.id == id }) {
                    throw .isInput(option: option, path: path, input: clash.name)
                }
                known.append((id, path))
            } else if let key = resolvedNewPath(path) {
                if let other = newPaths[key] { throw .isInput(option: option, path: path, input: other) }
                newPaths[key] = path
            }
        }
    }

    /// A not-yet-existing path as (parent device:inode)/name, so two spellings compare equal.
    static func resolvedNewPath(_ path: String) -> String? {
        let (dir, name) = OutputFile.split(path)
        guard let id = FileIdentity(path: dir) else { return nil }
        return "\(id.device):\(id.inode)/\(name)"
    }
}

/// A temporary file of an earlier run onto an output that ended without finishing (SIGKILL, a crash,
/// power loss), and what the next run onto that output did with it.
public struct StaleTemporary: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Not capture data (a report, which can be made again): removed.
        case removed
        /// Capture data: renamed to this visible path beside the output.
        case recovered(as: String)
        /// Capture data that could not be given a visible name (a file system without hard links, say):
        /// left where it is, under its hidden name, and never removed (each later run onto the output
        /// finds it and says so again). `visibleName`: the name it would have had.
        case kept(reason: String, visibleName: String)
        /// Not looked at: the folder is not on a local file system, where a lock cannot prove a writer
        /// dead (`OutputFile.isOnLocalFileSystem`; `fileSystem` names it). One entry per folder:
        /// `path` is the first file there that looks like a temporary file of an earlier run,
        /// `files` how many do.
        case notLocal(files: Int, fileSystem: String)
    }

    /// The temporary file's path (`DIR/.NAME.peerscope-XXXXXX`).
    public var path: String
    /// NAME: the file name of the output it was being written for.
    public var output: String
    public var outcome: Outcome

    /// One line for standard error.
    public var message: String {
        switch outcome {
        case .removed:
            return "removed \(path): the temporary file of an earlier run onto \(output) that ended without finishing (killed or crashed)"
        case .recovered(let to):
            return "recovered \(to): the frames of an earlier capture into \(output) that ended without finishing (killed or crashed), readable up to its last complete block (it was the temporary file \(path))"
        case .kept(let reason, let visible):
            return "kept \(path): the frames of an earlier capture into \(output) that ended without finishing (killed or crashed) are in this hidden file,"
                + " readable up to its last complete block; it could not be given a visible name (\(reason)), so it stays under its hidden name"
                + " and no run removes it: rename it yourself (to \(visible), say)"
        case .notLocal(let files, let fileSystem):
            let (dir, _) = OutputFile.split(path)
            let them = files == 1 ? "it" : "them"
            return "left \(path)" + (files > 1 ? " and \(files - 1) more file(s) like it" : "")
                + " as found: \(dir) is not on a local file system (\(fileSystem)), where no lock can prove that the run which wrote \(them) has ended,"
                + " so no temporary file of an earlier run is cleaned up there; once no run writes there, remove \(them) (or rename \(them) if \(them == "it" ? "it holds" : "they hold") capture frames)"
        }
    }
}

/// The calls by which `OutputFile.removeStaleTemporaries` judges a folder and keeps a capture's frames:
/// the system's; tests put in others (a folder not on a local file system, no hard links).
struct FileSystemCalls {
    var isLocal: (Int32) -> Bool = OutputFile.isOnLocalFileSystem
    var fileSystemName: (Int32) -> String = OutputFile.fileSystemName
    /// `linkat(fromDir, from, toDir, to, 0)`: -1 and `errno` on failure (tests: a file system without hard links).
    var link: (Int32, String, Int32, String) -> Int32 = { linkat($0, $1, $2, $3, 0) }
}

/// An output file written safely: to a temporary file in the same folder, renamed into place only by
/// `commit()`, so an interrupted or failed write never leaves a half file where a good one was (and
/// never a half report a CI job could mistake for a whole one). Every write error is reported: short
/// writes are retried, ENOSPC/EPIPE/EIO, a failing `fsync`, `close` or `rename` throw
/// `.writeFailed` naming the path and the system's reason.
///
/// Special files (`/dev/null`, `/dev/full`, a named pipe, a terminal) are written in place: there is
/// nothing to rename onto. `.append` writes at the end of the existing file in place; when it fails the
/// file is cut back to its old length.
public final class OutputFile {
    public enum Mode: Sendable {
        /// Create the file, or replace an existing one.
        case replace
        /// Create the file; an existing one is refused (`.exists`).
        case createNew
        /// Add to the end of an existing file (created when missing).
        case append
    }

    /// The path as given.
    public let path: String
    /// The option that named it (for messages), e.g. `--output`.
    public let option: String
    /// Bytes written so far by this run.
    public private(set) var bytesWritten: UInt64 = 0
    /// True when appending to a file that already had content.
    public let appendingToExisting: Bool

    private var fd: Int32
    /// A second descriptor of the temporary file's open file description: it keeps the `flock` that
    /// says "a live writer owns this file" until the file has been renamed into place (see
    /// `removeStaleTemporaries`). -1 when there is no temporary file or the file system has no locks.
    private var lockFD: Int32 = -1
    private let temporaryPath: String?
    private let finalPath: String
    private let appendStart: off_t
    private var done = false

    /// Temporary files of earlier runs onto this same output that were killed before they could
    /// remove them (SIGKILL, a crash, power loss), and what this `init` did with each (see
    /// `removeStaleTemporaries`): a capture's frames are renamed to a visible name, anything else is
    /// removed. Callers print each `message` on standard error.
    public private(set) var staleTemporaries: [StaleTemporary] = []

    /// The paths of `staleTemporaries` that were removed (not capture data).
    public var removedStaleTemporaries: [String] {
        staleTemporaries.compactMap { $0.outcome == .removed ? $0.path : nil }
    }

    public convenience init(path: String, option: String = "--output", mode: Mode = .replace) throws(OutputError) {
        try self.init(path: path, option: option, mode: mode, calls: FileSystemCalls())
    }

    /// `calls`: how earlier runs' temporary files are looked for (see `removeStaleTemporaries`).
    init(path: String, option: String, mode: Mode, calls: FileSystemCalls) throws(OutputError) {
        self.path = path
        self.option = option
        var st = stat()
        let exists = stat(path, &st) == 0
        let isRegular = exists && (st.st_mode & S_IFMT) == S_IFREG
        if exists && (st.st_mode & S_IFMT) == S_IFDIR { throw .writeFailed(path: path, reason: "is a directory") }
        if exists && mode == .createNew && isRegular { throw .exists(option: option, path: path) }
        // Links are followed: the file they point to is replaced, the link stays a link.
        finalPath = isRegular ? (OutputFile.realPath(path) ?? path) : path
        // An earlier run onto this output that was killed (SIGKILL cannot be caught) left its
        // temporary file: keep a capture's frames under a visible name, remove anything else; never
        // while its writer may still be running.
        if !exists || isRegular {
            let (dir, name) = OutputFile.split(finalPath)
            staleTemporaries = OutputFile.removeStaleTemporaries(in: dir, where: { $0 == name }, calls: calls)
        }
        // A new file, or a regular file replaced: through a temporary file. Appending and special files: in place.
        if !exists || (isRegular && mode != .append) {
            let (dir, name) = OutputFile.split(finalPath)
            let (f, tmp, lock) = try OutputFile.lockedTemporary(dir: dir, name: name, path: path)
            // The permissions a plain create would give (or the replaced file's own).
            let m: mode_t
            if exists { m = st.st_mode & 0o7777 } else {
                let mask = umask(0)
                umask(mask)
                m = 0o666 & ~mask
            }
            _ = fchmod(f, m)
            fd = f
            lockFD = lock
            temporaryPath = tmp
            appendStart = 0
            appendingToExisting = false
        } else {
            let flags = mode == .append ? (O_WRONLY | O_APPEND | O_CREAT) : (O_WRONLY | O_TRUNC)
            let f = open(path, flags, 0o666)
            guard f >= 0 else { throw .writeFailed(path: path, reason: OutputFile.describe(errno)) }
            fd = f
            temporaryPath = nil
            appendStart = mode == .append && isRegular ? st.st_size : 0
            appendingToExisting = mode == .append && isRegular && st.st_size > 0
        }
    }

    deinit {
        if !done { discard() }
    }

    /// Writes all of `bytes`, retrying short writes and interrupted calls.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(OutputError) {
        guard fd >= 0, !done else { throw .writeFailed(path: path, reason: "the file is already closed") }
        guard let base = bytes.baseAddress else { return }
        var off = 0
        while off < bytes.count {
            #if canImport(Glibc)
            let n = Glibc.write(fd, base + off, bytes.count - off)
            #else
            let n = Darwin.write(fd, base + off, bytes.count - off)
            #endif
            if n < 0 {
                let e = errno
                if e == EINTR || e == EAGAIN { continue }
                throw .writeFailed(path: path, reason: OutputFile.describe(e))
            }
            if n == 0 { throw .writeFailed(path: path, reason: "the system accepted no bytes (device full?)") }
            off += n
            bytesWritten &+= UInt64(n)
        }
    }

    public func write(_ bytes: [UInt8]) throws(OutputError) {
        var failure: OutputError?
        bytes.withUnsafeBytes { b in
            do throws(OutputError) { try self.write(b) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Writes a whole file safely in one call (temporary file, renamed into place). Returns what was
    /// done with earlier runs' temporary files (`staleTemporaries`), for standard error.
    @discardableResult
    public static func writeWhole(path: String, option: String = "--output", bytes: [UInt8]) throws(OutputError) -> [StaleTemporary] {
        let f = try OutputFile(path: path, option: option)
        try f.write(bytes)
        try f.commit()
        return f.staleTemporaries
    }

    /// Makes the file complete: syncs and closes it, then renames the temporary file into place.
    /// On failure nothing replaces the old file, and the temporary file is removed.
    public func commit() throws(OutputError) {
        guard !done else { return }
        defer { done = true }
        // A full disk may only show at fsync or close (NFS, some FUSE file systems).
        if fsync(fd) != 0 {
            let e = errno
            if e != EINVAL && e != EROFS && e != ENOTSUP {  // special files cannot be synced
                failAndClean()
                throw .writeFailed(path: path, reason: OutputFile.describe(e))
            }
        }
        if close(fd) != 0 {
            let e = errno
            fd = -1
            failAndClean()
            throw .writeFailed(path: path, reason: OutputFile.describe(e))
        }
        fd = -1
        // The lock is held until the rename: a run starting meanwhile never takes this file for a
        // dead run's.
        defer { releaseLock() }
        if let tmp = temporaryPath, rename(tmp, finalPath) != 0 {
            let e = errno
            unlink(tmp)
            throw .writeFailed(path: path, reason: OutputFile.describe(e))
        }
    }

    private func releaseLock() {
        if lockFD >= 0 {
            close(lockFD)
            lockFD = -1
        }
    }

    /// Gives up: removes the temporary file (the old file, if any, is untouched), or cuts an appended
    /// file back to its old length.
    public func discard() {
        guard !done else { return }
        done = true
        failAndClean()
    }

    private func failAndClean() {
        if let tmp = temporaryPath {
            unlink(tmp)
        } else if appendStart > 0, fd >= 0 {
            _ = ftruncate(fd, appendStart)
        }
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        releaseLock()
    }

    /// The infix of temporary names: `.NAME.peerscope-XXXXXX` beside `NAME`.
    static let temporaryInfix = ".peerscope-"
    /// The infix of a temporary file its writer could not lock (`.NAME.peerscope~XXXXXX`): no cleaner
    /// ever matches it, since nothing would stop a cleaner from taking it for a dead run's.
    static let unlockedInfix = ".peerscope~"

    /// Creates `dir/.name.peerscope-XXXXXX` and takes an exclusive `flock` on it, held (through a
    /// second descriptor) until the file is renamed into place or removed: the proof, for a later run's
    /// `removeStaleTemporaries`, that its writer is alive. Returns (descriptor, path, lock descriptor).
    /// When the lock cannot be taken (a file system without locks, ENOLCK), the file is made again as
    /// `.name.peerscope~XXXXXX`, a name no cleaner matches, and the lock descriptor is -1.
    static func lockedTemporary(dir: String, name: String, path: String,
                                takeLock: (Int32) -> Int32 = { flock($0, LOCK_EX | LOCK_NB) }) throws(OutputError) -> (Int32, String, Int32) {
        func make(_ infix: String) throws(OutputError) -> (Int32, String) {
            var template = Array("\(dir)/.\(name)\(infix)XXXXXX".utf8CString)
            let f = template.withUnsafeMutableBufferPointer { b in b.baseAddress.map { mkstemp($0) } ?? -1 }
            guard f >= 0 else { throw .writeFailed(path: path, reason: OutputFile.describe(errno)) }
            return (f, String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        for _ in 0 ..< 8 {
            let (f, tmp) = try make(temporaryInfix)
            if takeLock(f) != 0 {
                let e = errno
                // No lock (a file system without locks, or ENOLCK while a lock daemon is away): write
                // unlocked, under a name no cleaner matches, so that no later run takes it for a dead one's.
                if e != EWOULDBLOCK && e != EAGAIN && e != EINTR {
                    if let mine = FileIdentity(descriptor: f), FileIdentity(lstat: tmp) == mine { unlink(tmp) }
                    close(f)
                    let (u, unlockedTmp) = try make(unlockedInfix)
                    return (u, unlockedTmp, -1)
                }
                // Another run's cleanup is looking at it in the instant between mkstemp and flock.
                if let mine = FileIdentity(descriptor: f), FileIdentity(lstat: tmp) == mine { unlink(tmp) }
                close(f)
                continue
            }
            // That other run may have removed it in that instant: then make another.
            guard let mine = FileIdentity(descriptor: f), FileIdentity(lstat: tmp) == mine else {
                close(f)
                continue
            }
            let lock = dup(f)
            guard lock >= 0 else {
                let e = errno
                close(f)
                unlink(tmp)
                throw .writeFailed(path: path, reason: OutputFile.describe(e))
            }
            return (f, tmp, lock)
        }
        throw .writeFailed(path: path, reason: "could not create a temporary file beside it")
    }

    /// Deals with the temporary files `.NAME.peerscope-XXXXXX` in `dir` left by runs that were killed
    /// before they could (SIGKILL cannot be caught), for the outputs whose NAME `isOurs` accepts.
    /// A file is touched only when all of these hold, so that nothing that is not provably a dead
    /// run's temporary file is: the folder is on a local file system (where a lock is seen by every
    /// process that could hold it; see `isOnLocalFileSystem`); the name is exactly that pattern (six
    /// letters or digits, as `mkstemp` makes them); it is a regular file with one link (not a symbolic
    /// link, not a hard link to something else), owned by this user; and no process holds its `flock`
    /// (a live writer holds it until its file is renamed into place; a lock dies with its process,
    /// however it died). The name must still be that file when it is renamed or removed. Every check
    /// and change is made relative to one descriptor of the folder, never by re-resolving its path.
    ///
    /// A file that holds capture data (it starts as a pcapng or pcap file does) is the only copy of a
    /// killed capture's frames: it is renamed to a visible name beside the output
    /// (`STEM.recovered-XXXXXX.EXT`, never onto an existing file) and kept (where that cannot be done,
    /// a file system without hard links, it stays under its own name: `.kept`); anything else (a report,
    /// which can be made again) is removed. Returns what was done, in name order.
    ///
    /// On a folder that is not on a local file system nothing is touched; when files there look like
    /// temporary files of earlier runs (name, regular file, this user's, one link), the one entry
    /// returned says so (`.notLocal`), for standard error.
    @discardableResult
    public static func removeStaleTemporaries(in dir: String, where isOurs: (String) -> Bool,
                                              isLocal: @escaping (Int32) -> Bool = OutputFile.isOnLocalFileSystem) -> [StaleTemporary] {
        var calls = FileSystemCalls()
        calls.isLocal = isLocal
        return removeStaleTemporaries(in: dir, where: isOurs, calls: calls)
    }

    /// `removeStaleTemporaries` with the file system calls it judges the folder by (tests: a remote folder).
    static func removeStaleTemporaries(in dir: String, where isOurs: (String) -> Bool, calls: FileSystemCalls) -> [StaleTemporary] {
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return [] }
        defer { close(dfd) }
        let local = calls.isLocal(dfd)
        let listFD = dup(dfd)
        guard listFD >= 0 else { return [] }
        guard let d = fdopendir(listFD) else {
            close(listFD)
            return []
        }
        var candidates: [(entry: String, name: String)] = []
        while let e = readdir(d) {
            let entry = withUnsafePointer(to: &e.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: e.pointee.d_name)) { String(cString: $0) }
            }
            if let name = temporaryOutputName(entry), isOurs(name) { candidates.append((entry, name)) }
        }
        closedir(d)
        var done: [StaleTemporary] = []
        let me = geteuid()
        func looksStale(_ entry: String) -> Bool {
            var st = stat()
            return fstatat(dfd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == S_IFREG
                && st.st_uid == me && st.st_nlink == 1
        }
        func identity(_ entry: String) -> FileIdentity? {
            var st = stat()
            guard fstatat(dfd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
            return FileIdentity(device: UInt64(truncatingIfNeeded: st.st_dev), inode: UInt64(truncatingIfNeeded: st.st_ino))
        }
        func inDir(_ entry: String) -> String { dir == "/" ? "/" + entry : dir + "/" + entry }
        guard local else {
            // Said once for the folder, and only when something there looks like a dead run's file.
            let seen = candidates.sorted(by: { $0.entry < $1.entry }).filter { looksStale($0.entry) }
            guard let first = seen.first else { return [] }
            return [StaleTemporary(path: inDir(first.entry), output: first.name,
                                   outcome: .notLocal(files: seen.count, fileSystem: calls.fileSystemName(dfd)))]
        }
        for (entry, name) in candidates.sorted(by: { $0.entry < $1.entry }) {
            var st = stat()
            guard fstatat(dfd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                  st.st_uid == me, st.st_nlink == 1 else { continue }
            let f = openat(dfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard f >= 0 else { continue }
            defer { close(f) }
            guard let id = FileIdentity(descriptor: f), identity(entry) == id,
                  id == FileIdentity(device: UInt64(truncatingIfNeeded: st.st_dev), inode: UInt64(truncatingIfNeeded: st.st_ino)),
                  flock(f, LOCK_EX | LOCK_NB) == 0 else { continue }
            // Locked by us now: its writer is gone. Act on the name only if it is still this file.
            guard identity(entry) == id else { continue }
            if let kind = captureKind(f) {
                // The only copy of a killed capture's frames: keep it under a visible name.
                let suffix = String(entry.suffix(6))
                let visible = inDir(recoveredName(output: name, suffix: suffix, kind: kind))
                var outcome = StaleTemporary.Outcome.kept(reason: "no free name to rename it to", visibleName: visible)
                for attempt in 1 ... 20 {
                    let target = recoveredName(output: name, suffix: attempt == 1 ? suffix : "\(suffix)-\(attempt)", kind: kind)
                    // link + unlink, not rename: a link never replaces an existing file. Where the file
                    // system has no hard links (FAT, exFAT: EPERM or ENOTSUP) the file stays as it is.
                    if calls.link(dfd, entry, dfd, target) == 0 {
                        if identity(entry) == id { _ = unlinkat(dfd, entry, 0) }
                        outcome = .recovered(as: inDir(target))
                        break
                    }
                    let e = errno
                    if e != EEXIST {
                        outcome = .kept(reason: "making a link to it failed: \(describe(e))", visibleName: visible)
                        break
                    }
                }
                done.append(StaleTemporary(path: inDir(entry), output: name, outcome: outcome))
            } else {
                guard unlinkat(dfd, entry, 0) == 0 else { continue }
                done.append(StaleTemporary(path: inDir(entry), output: name, outcome: .removed))
            }
        }
        return done
    }

    /// What kind of capture file the file open on `fd` starts as: a pcapng Section Header Block or a
    /// pcap file header (either byte order, micro- or nanoseconds); nil for anything else.
    static func captureKind(_ fd: Int32) -> CaptureKind? {
        var head = [UInt8](repeating: 0, count: 4)
        let n = head.withUnsafeMutableBytes { b in pread(fd, b.baseAddress, 4, 0) }
        guard n == 4 else { return nil }
        return captureKind(head)
    }

    enum CaptureKind: Equatable { case pcapng, pcap }

    static func captureKind(_ head: [UInt8]) -> CaptureKind? {
        guard head.count >= 4 else { return nil }
        let h = Array(head.prefix(4))
        if h == [0x0A, 0x0D, 0x0D, 0x0A] { return .pcapng }
        if [[0xD4, 0xC3, 0xB2, 0xA1], [0xA1, 0xB2, 0xC3, 0xD4], [0x4D, 0x3C, 0xB2, 0xA1], [0xA1, 0xB2, 0x3C, 0x4D]].contains(h) { return .pcap }
        return nil
    }

    /// `STEM.recovered-SUFFIX.EXT` for output file name `output` (`live.pcapng` ->
    /// `live.recovered-Ab12Cd.pcapng`); a name without a capture extension keeps its whole name as the
    /// stem and gets the extension of `kind`.
    static func recoveredName(output: String, suffix: String, kind: CaptureKind) -> String {
        var stem = output, ext = kind == .pcapng ? ".pcapng" : ".pcap"
        if let dot = output.lastIndex(of: "."), dot > output.startIndex,
           [".pcapng", ".pcap", ".cap", ".ntar"].contains(output[dot...].lowercased()) {
            stem = String(output[..<dot])
            ext = String(output[dot...])
        }
        return "\(stem).recovered-\(suffix)\(ext)"
    }

    /// True when the folder open on `dirFD` is on a file system whose `flock` locks are seen by every
    /// process that could hold one: only then does taking a lock prove a writer dead. Network and
    /// user-space file systems (NFS with `local_lock`, CIFS with `nobrl`, FUSE/sshfs, 9p, virtiofs,
    /// Docker Desktop bind mounts) can grant a lock another machine also holds, so nothing is cleaned
    /// up there. Linux: the `f_type` of `fstatfs` against `localFileSystemTypes`; macOS: `MNT_LOCAL`.
    public static func isOnLocalFileSystem(_ dirFD: Int32) -> Bool {
        #if os(Linux)
        var s = statfs()
        guard fstatfs(dirFD, &s) == 0 else { return false }
        return isLocalLinuxFileSystemType(UInt32(truncatingIfNeeded: s.f_type))
        #elseif canImport(Darwin)
        var s = statfs()
        guard fstatfs(dirFD, &s) == 0 else { return false }
        return s.f_flags & UInt32(MNT_LOCAL) != 0
        #else
        return false
        #endif
    }

    /// The name of the file system the folder open on `dirFD` is on, for messages: Linux: a network or
    /// user-space file system's name (`nfs`, `fuse`), else `type 0x...` (`f_type`); macOS: `f_fstypename`.
    public static func fileSystemName(_ dirFD: Int32) -> String {
        #if os(Linux)
        var s = statfs()
        guard fstatfs(dirFD, &s) == 0 else { return "unknown: \(describe(errno))" }
        let type = UInt32(truncatingIfNeeded: s.f_type)
        return localFileSystemTypes[type] ?? otherFileSystemTypes[type] ?? "type 0x" + String(type, radix: 16)
        #elseif canImport(Darwin)
        var s = statfs()
        guard fstatfs(dirFD, &s) == 0 else { return "unknown: \(describe(errno))" }
        let name = withUnsafeBytes(of: s.f_fstypename) { b in String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) }
        return name.isEmpty ? "unknown" : name
        #else
        return "unknown"
        #endif
    }

    /// Linux `f_type` magic numbers of network and user-space file systems, for messages (linux/magic.h).
    static let otherFileSystemTypes: [UInt32: String] = [
        0x6969: "nfs", 0xFF53_4D42: "cifs", 0xFE53_4D42: "smb2", 0x6573_5546: "fuse", 0x0102_1997: "9p",
        0x6A65_6A63: "virtiofs", 0x00C3_6400: "ceph", 0x5346_414F: "afs", 0x0BD0_0BD0: "lustre",
    ]

    /// Linux `statfs.f_type` magic numbers of local disk and memory file systems (linux/magic.h).
    static let localFileSystemTypes: [UInt32: String] = [
        0xEF53: "ext2/ext3/ext4", 0x5846_5342: "xfs", 0x9123_683E: "btrfs", 0x0102_1994: "tmpfs",
        0x8584_58F6: "ramfs", 0x794C_7630: "overlayfs", 0xF2F5_2010: "f2fs", 0x2FC1_2FC1: "zfs",
    ]

    /// True when `type` (a Linux `f_type`) is one of `localFileSystemTypes`.
    static func isLocalLinuxFileSystemType(_ type: UInt32) -> Bool { localFileSystemTypes[type] != nil }

    /// NAME when `entry` is `.NAME.peerscope-XXXXXX` (six ASCII letters or digits), else nil.
    static func temporaryOutputName(_ entry: String) -> String? {
        let u = Array(entry.utf8), infix = Array(temporaryInfix.utf8)
        guard u.count > 1 + infix.count + 6, u[0] == UInt8(ascii: ".") else { return nil }
        let suffix = u[(u.count - 6)...]
        guard suffix.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }),
              Array(u[(u.count - 6 - infix.count) ..< (u.count - 6)]) == infix else { return nil }
        let name = u[1 ..< (u.count - 6 - infix.count)]
        return name.isEmpty ? nil : String(decoding: name, as: UTF8.self)
    }

    /// (folder, file name) of a path; the folder is `.` for a bare name.
    static func split(_ path: String) -> (String, String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let dir = String(path[..<slash])
        return (dir.isEmpty ? "/" : dir, String(path[path.index(after: slash)...]))
    }

    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// The system's text for `errno` (`No space left on device`).
    public static func describe(_ e: Int32) -> String {
        guard let s = strerror(e) else { return "error \(e)" }
        return String(cString: s)
    }
}
