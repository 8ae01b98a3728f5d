#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeerscopeCore

/// Why a capture input could not be opened, or a live capture could not start or went wrong.
///
/// Each case renders as one line that names the file or interface, for the command line.
/// Problems found *while reading* a file (truncation, corruption) are not thrown: the frames before
/// them are delivered and the reader exposes a `CaptureProblem` instead.
public enum CaptureError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The path does not exist.
    case missing(path: String)
    /// The path exists but cannot be read (permission, a directory, an I/O error).
    case unreadable(path: String, reason: String)
    /// The file is readable but is not pcap or pcapng (nor gzip of either).
    case notCapture(path: String, detail: String)
    /// The file looks like a capture but its header cannot be used (truncated, unsupported version).
    case badHeader(path: String, detail: String)
    /// Live capture needs privileges the process does not have.
    case permissionDenied(interface: String, message: String)
    /// Live capture on an interface that does not exist; `available` lists those that do.
    case noSuchInterface(interface: String, available: [String])
    /// libpcap rejected the BPF filter; `message` is libpcap's own text.
    case badFilter(filter: String, message: String)
    /// Any other libpcap failure while opening or reading an interface.
    case live(interface: String, message: String)
    /// Writing a capture file failed.
    case writeFailed(path: String, reason: String)

    /// This program's own file (what `setcap` must be given), not a guess from `$PATH`.
    static var executablePath: String {
        #if os(Linux)
        var buf = [CChar](repeating: 0, count: 4097)
        let n = readlink("/proc/self/exe", &buf, 4096)
        if n > 0 { return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        #endif
        return CommandLine.arguments.first ?? "peerscope"
    }

    /// `s` as one shell word: as is when it is made of safe characters, else single-quoted.
    static func shellQuoted(_ s: String) -> String {
        let safe = s.unicodeScalars.allSatisfy { c in
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || "/._-+:,@%=".unicodeScalars.contains(c)
        }
        if safe && !s.isEmpty { return s }
        return "'" + s.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    public var description: String {
        switch self {
        case .missing(let path):
            return "\(path): no such file"
        case .unreadable(let path, let reason):
            return "\(path): cannot read: \(reason)"
        case .notCapture(let path, let detail):
            return "\(path): not a capture file (pcap or pcapng): \(detail)"
        case .badHeader(let path, let detail):
            return "\(path): unusable capture header: \(detail)"
        case .permissionDenied(let interface, let message):
            #if os(Linux)
            let how = "run as root, or grant the capability once: sudo setcap cap_net_raw,cap_net_admin=eip \(CaptureError.shellQuoted(CaptureError.executablePath))"
            #else
            let how = "run with sudo, or give your user read access to /dev/bpf* (Wireshark's ChmodBPF / the access_bpf group)"
            #endif
            return "\(interface): permission denied capturing packets (\(message)); \(how)"
        case .noSuchInterface(let interface, let available):
            let list = available.isEmpty ? "none visible to this process" : available.joined(separator: ", ")
            return "\(interface): no such capture interface; available: \(list)"
        case .badFilter(let filter, let message):
            return "capture filter \"\(filter)\" rejected by libpcap: \(message)"
        case .live(let interface, let message):
            return "\(interface): live capture failed: \(message)"
        case .writeFailed(let path, let reason):
            return "\(path): cannot write capture: \(reason)"
        }
    }
}

/// Why reading a file stopped before its end. The frames before the problem were delivered.
public struct CaptureProblem: Sendable, Equatable, CustomStringConvertible {
    /// What kind of trouble stopped the file.
    public enum Kind: String, Sendable {
        /// The file ends in the middle of a record or block.
        case truncated
        /// A length or field is impossible (bad block length, absurd captured length, unknown interface).
        case corrupt
        /// The operating system or the gzip decoder reported an error.
        case readError
    }

    /// The file, as given to the reader.
    public var path: String
    /// The input index given to the reader.
    public var input: Int
    /// What kind of trouble it was.
    public var kind: Kind
    /// Number of frames delivered from this file before the problem.
    public var framesRead: UInt64
    /// Byte offset (in the uncompressed data) of the record or block that could not be read.
    public var byteOffset: Int64
    /// What went wrong, e.g. "captured length 300000 exceeds 262144".
    public var detail: String

    /// Describes trouble met after `framesRead` frames, in the record or block at `byteOffset`.
    public init(path: String, input: Int, kind: Kind, framesRead: UInt64, byteOffset: Int64, detail: String) {
        self.path = path
        self.input = input
        self.kind = kind
        self.framesRead = framesRead
        self.byteOffset = byteOffset
        self.detail = detail
    }

    /// The frame that could not be read (1-based).
    public var frame: UInt64 { framesRead &+ 1 }

    /// `FILE: truncated in frame 121 at byte 40960 (frames 1-120 read)`, with the detail after the byte.
    public var description: String {
        let read: String
        switch framesRead {
        case 0: read = "no frames read"
        case 1: read = "frame 1 read"
        default: read = "frames 1-\(framesRead) read"
        }
        let what: String
        switch kind {
        case .truncated: what = "truncated"
        case .corrupt: what = "corrupt"
        case .readError: what = "read error"
        }
        let tail = detail.isEmpty ? "" : ": \(detail)"
        return "\(path): \(what) in frame \(frame) at byte \(byteOffset)\(tail) (\(read))"
    }

    /// The same fact as a diagnostic (`capture.truncated`, `capture.corrupt`, `capture.read-error`).
    public var diagnostic: Diagnostic {
        let id: String
        switch kind {
        case .truncated: id = "capture.truncated"
        case .corrupt: id = "capture.corrupt"
        case .readError: id = "capture.read-error"
        }
        return Diagnostic(id: id, severity: .error, message: description,
                          evidence: .frame(input: input, frame: frame),
                          offset: Int(truncatingIfNeeded: byteOffset))
    }
}
