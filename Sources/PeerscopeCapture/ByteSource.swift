#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZlib

/// A file opened for streaming through zlib: gzip data is inflated, anything else is passed through
/// unchanged (zlib's transparent mode), so plain and compressed captures share one path.
final class ByteSource {
    private var gz: gzFile?
    /// The error zlib or the OS reported, once a read failed.
    private(set) var errorMessage: String?
    /// Bytes handed out so far (after inflating).
    private(set) var inflated: Int64 = 0

    /// Decompression-bomb guard: past `bombCheckAfter` inflated bytes, a gzip stream that expands
    /// more than `maxRatio` times its compressed size is refused (real captures compress 2-20:1; a
    /// stream of zeros 1000:1). Reading stops with an error that says how to read such a file anyway.
    static let bombCheckAfter: Int64 = 32 << 20
    static let maxRatio: Int64 = 100

    /// Opens `path` (`-` is standard input), turning the usual failures into one-line errors that
    /// name the file. Pipes and FIFOs work: nothing seeks.
    init(path: String) throws(CaptureError) {
        if path == "-" {
            let fd = dup(STDIN_FILENO)
            guard fd >= 0, let g = gzdopen(fd, "rb") else {
                if fd >= 0 { close(fd) }
                throw .unreadable(path: path, reason: "cannot read standard input")
            }
            gzbuffer(g, 128 * 1024)
            gz = g
            return
        }
        var st = stat()
        if stat(path, &st) != 0 {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw .missing(path: path) }
            throw .unreadable(path: path, reason: ByteSource.describe(errno: e))
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            throw .unreadable(path: path, reason: "is a directory")
        }
        let fd = open(path, O_RDONLY)
        if fd < 0 {
            let e = errno
            if e == ENOENT { throw .missing(path: path) }
            throw .unreadable(path: path, reason: ByteSource.describe(errno: e))
        }
        guard let g = gzdopen(fd, "rb") else {
            close(fd)
            throw .unreadable(path: path, reason: "cannot set up decompression (out of memory)")
        }
        // Small internal buffers: reads of at least twice this size go straight into our buffer.
        gzbuffer(g, 128 * 1024)
        gz = g
        size = st.st_size > 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int64(st.st_size) : nil
    }

    /// The file's size when it is a regular file (nil for standard input and pipes).
    private(set) var size: Int64?

    deinit {
        if let gz { gzclose_r(gz) }
    }

    /// Bytes of the file consumed so far (compressed bytes for gzip data), for progress.
    var offset: Int64 {
        guard let gz else { return 0 }
        return Int64(gzoffset(gz))
    }

    /// True when the data is gzip-compressed (valid after the first read).
    var isCompressed: Bool {
        guard let gz else { return false }
        return gzdirect(gz) == 0
    }

    /// Reads up to `count` bytes; returns 0 at end of data or after an error (see `errorMessage`).
    func read(into p: UnsafeMutableRawPointer, count: Int) -> Int {
        guard let gz, errorMessage == nil, count > 0 else { return 0 }
        let want = UInt32(min(count, 1 << 30))
        let n = gzread(gz, p, want)
        if n < 0 {
            var code: Int32 = 0
            if let cmsg = gzerror(gz, &code) {
                let text = String(cString: cmsg)
                if code == Z_ERRNO {
                    errorMessage = ByteSource.describe(errno: errno)
                } else {
                    errorMessage = text.isEmpty ? "decompression error \(code)" : "gzip: \(text)"
                }
            } else {
                errorMessage = "read failed"
            }
            return 0
        }
        if n > 0 {
            inflated &+= Int64(n)
            if inflated >= ByteSource.bombCheckAfter, gzdirect(gz) == 0 {
                let packed = max(Int64(gzoffset(gz)), 1)
                if inflated / packed > ByteSource.maxRatio {
                    errorMessage = "gzip: expands more than \(ByteSource.maxRatio):1 (\(inflated >> 20) MiB from \(max(packed >> 10, 1)) KiB), "
                        + "a likely decompression bomb: reading stopped (decompress it with gunzip to read it whole)"
                    return 0
                }
            }
        }
        if n == 0 {
            // zlib reports a truncated gzip stream as an error on the read that hits the end.
            var code: Int32 = 0
            if let cmsg = gzerror(gz, &code), code != Z_OK {
                let text = String(cString: cmsg)
                errorMessage = "gzip: \(text.isEmpty ? "error \(code)" : text)"
            }
        }
        return Int(n)
    }

    static func describe(errno e: Int32) -> String {
        switch e {
        case EACCES, EPERM: return "permission denied"
        case EISDIR: return "is a directory"
        default:
            if let s = strerror(e) { return String(cString: s) }
            return "errno \(e)"
        }
    }
}
