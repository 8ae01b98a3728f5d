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
    private let temporaryPath: String?
    private let finalPath: String
    private let appendStart: off_t
    private var done = false

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
        // A new file, or a regular file replaced: through a temporary file. Appending and special files: in place.
        if !exists || (isRegular && mode != .append) {
            let (dir, name) = OutputFile.split(finalPath)
            var template = Array("\(dir)/.\(name).peerscope-XXXXXX".utf8CString)
            let f = template.withUnsafeMutableBufferPointer { b in b.baseAddress.map { mkstemp($0) } ?? -1 }
            guard f >= 0 else { throw .writeFailed(path: path, reason: OutputFile.describe(errno)) }
            let tmp = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // The permissions a plain create would give (or the replaced file's own).
            let m: mode_t
            if exists { m = st.st_mode & 0o7777 } else {
                let mask = umask(0)
                umask(mask)
                m = 0o666 & ~mask
            }
            _ = fchmod(f, m)
            fd = f
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
        if let tmp = temporaryPath, rename(tmp, finalPath) != 0 {
            let e = errno
            unlink(tmp)
            throw .writeFailed(path: path, reason: OutputFile.describe(e))
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
