#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
    /// remove them (SIGKILL, a crash, power loss), removed by this `init` (see `removeStaleTemporaries`).
    public private(set) var removedStaleTemporaries: [String] = []

    public init(path: String, option: String = "--output", mode: Mode = .replace) throws(OutputError) {
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
        // temporary file: remove it, unless its writer is still running.
        if !exists || isRegular {
            let (dir, name) = OutputFile.split(finalPath)
            removedStaleTemporaries = OutputFile.removeStaleTemporaries(in: dir) { $0 == name }
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

    /// Writes a whole file safely in one call (temporary file, renamed into place).
    public static func writeWhole(path: String, option: String = "--output", bytes: [UInt8]) throws(OutputError) {
        let f = try OutputFile(path: path, option: option)
        try f.write(bytes)
        try f.commit()
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

    /// Creates `dir/.name.peerscope-XXXXXX` and takes an exclusive `flock` on it, held (through a
    /// second descriptor) until the file is renamed into place or removed: the proof, for a later run's
    /// `removeStaleTemporaries`, that its writer is alive. Returns (descriptor, path, lock descriptor;
    /// -1 where the file system has no locks, so that no cleaner can ever lock it either).
    static func lockedTemporary(dir: String, name: String, path: String) throws(OutputError) -> (Int32, String, Int32) {
        for _ in 0 ..< 8 {
            var template = Array("\(dir)/.\(name)\(temporaryInfix)XXXXXX".utf8CString)
            let f = template.withUnsafeMutableBufferPointer { b in b.baseAddress.map { mkstemp($0) } ?? -1 }
            guard f >= 0 else { throw .writeFailed(path: path, reason: OutputFile.describe(errno)) }
            let tmp = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if flock(f, LOCK_EX | LOCK_NB) != 0 {
                let e = errno
                // No locks here (some network file systems): write unlocked; a cleaner cannot lock it either.
                if e != EWOULDBLOCK && e != EAGAIN && e != EINTR { return (f, tmp, -1) }
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

    /// Removes the temporary files `.NAME.peerscope-XXXXXX` in `dir` left by runs that were killed
    /// before they could (SIGKILL cannot be caught), for the outputs whose NAME `isOurs` accepts.
    /// A file is removed only when all of these hold, so that nothing that is not provably a dead
    /// run's temporary file is touched: its name is exactly that pattern (six letters or digits, as
    /// `mkstemp` makes them); it is a regular file with one link (not a symbolic link, not a hard link
    /// to something else), owned by this user; and no process holds its `flock` (a live writer holds
    /// it until its file is renamed into place; a lock dies with its process, however it died). The
    /// name must still be that file when it is removed. Returns the paths removed.
    @discardableResult
    public static func removeStaleTemporaries(in dir: String, where isOurs: (String) -> Bool) -> [String] {
        guard let d = opendir(dir) else { return [] }
        var candidates: [String] = []
        while let e = readdir(d) {
            let entry = withUnsafePointer(to: &e.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: e.pointee.d_name)) { String(cString: $0) }
            }
            if let name = temporaryOutputName(entry), isOurs(name) { candidates.append(entry) }
        }
        closedir(d)
        var removed: [String] = []
        let me = geteuid()
        for entry in candidates.sorted() {
            let p = dir == "/" ? "/" + entry : dir + "/" + entry
            var st = stat()
            guard lstat(p, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == me, st.st_nlink == 1 else { continue }
            let f = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard f >= 0 else { continue }
            defer { close(f) }
            guard let id = FileIdentity(descriptor: f), FileIdentity(lstat: p) == id,
                  id == FileIdentity(device: UInt64(truncatingIfNeeded: st.st_dev), inode: UInt64(truncatingIfNeeded: st.st_ino)),
                  flock(f, LOCK_EX | LOCK_NB) == 0 else { continue }
            // Locked by us now: its writer is gone. Remove the name only if it is still this file.
            guard FileIdentity(lstat: p) == id, unlink(p) == 0 else { continue }
            removed.append(p)
        }
        return removed
    }

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
