import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore

/// Buffered writing to standard output or a file; flushes in large blocks, or per line for live use.
///
/// A file is written through `OutputFile` (a temporary file renamed into place by `finish()`). The
/// first write error sticks: later writes are dropped and `finish()` throws it (exit 3, naming the
/// path and the system's reason). On standard output a closed pipe (`| head`) ends the program quietly;
/// any other failure (a full disk behind `> file`) is an error like a file's.
final class OutputSink {
    private let file: OutputFile?
    private var buffer: [UInt8] = []
    private let lineBuffered: Bool
    private var failure: OutputError?
    /// Bytes gathered before one write: large blocks, few system calls.
    static let blockSize = 1 << 18

    init(path: String?, lineBuffered: Bool = false, option: String = "--output") throws {
        if let path, path != "-" {
            do { file = try OutputFile(path: path, option: option) } catch {
                throw CommandFailure(message: error.description, status: error.isRefusal ? ExitStatus.usage : ExitStatus.input)
            }
            for s in file?.staleTemporaries ?? [] { printError(s.message) }
        } else {
            file = nil
        }
        self.lineBuffered = lineBuffered
        buffer.reserveCapacity(Self.blockSize + (1 << 12))
    }

    func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if lineBuffered || buffer.count >= Self.blockSize { flush() }
    }

    func line(_ s: String) { write(s + "\n") }

    /// UTF-8 bytes as they are.
    func write(bytes: [UInt8]) {
        if buffer.isEmpty && bytes.count >= 1 << 16 {
            put(bytes)
            return
        }
        buffer.append(contentsOf: bytes)
        if lineBuffered || buffer.count >= Self.blockSize { flush() }
    }

    /// One compact JSON value and a newline (JSON Lines), written straight into the buffer.
    func jsonLine(_ v: JSONValue) {
        v.write(to: &buffer, indent: nil, level: 0)
        buffer.append(0x0A)
        if lineBuffered || buffer.count >= Self.blockSize { flush() }
    }

    /// One decoded message as a JSON line (`DecodedMessage.json(includeInput:)`), written straight into the buffer.
    func messageLine(_ m: DecodedMessage, includeInput: Bool) {
        m.writeJSONLine(to: &buffer, includeInput: includeInput)
        if lineBuffered || buffer.count >= Self.blockSize { flush() }
    }

    /// The same line, a repeated message's members copied from `cache` (the same bytes).
    func messageLine(_ m: DecodedMessage, includeInput: Bool, cache: inout MessageBodyCache) {
        m.writeJSONLine(to: &buffer, includeInput: includeInput, cache: &cache)
        if lineBuffered || buffer.count >= Self.blockSize { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        put(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    private func put(_ bytes: [UInt8]) {
        guard failure == nil else { return }
        if let file {
            do { try file.write(bytes) } catch { failure = error }
        } else {
            StandardOutput.write(bytes) { failure = $0 }
        }
    }

    /// Flushes; a file is made complete (renamed into place). Throws the first write error.
    func finish() throws {
        flush()
        if let failure {
            file?.discard()
            throw CommandFailure(message: failure.description, status: ExitStatus.input)
        }
        do { try file?.commit() } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
    }
}

/// Raw writes to file descriptor 1 (no Foundation buffering, every error seen).
enum StandardOutput {
    /// Writes all of `bytes`; a broken pipe exits quietly (status 0: the reader chose to stop);
    /// other errors go to `failed`.
    static func write(_ bytes: [UInt8], failed: (OutputError) -> Void) {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var off = 0
            while off < raw.count {
                let n = Foundation.write(STDOUT_FILENO, base + off, raw.count - off)
                if n < 0 {
                    let e = errno
                    if e == EINTR || e == EAGAIN { continue }
                    if e == EPIPE { Foundation.exit(0) }
                    failed(.writeFailed(path: "standard output", reason: OutputFile.describe(e)))
                    return
                }
                if n == 0 {
                    failed(.writeFailed(path: "standard output", reason: "the system accepted no bytes"))
                    return
                }
                off += n
            }
        }
    }
}

/// Whether standard output is a terminal (colour and layout decisions).
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }

/// Whether standard error is a terminal: only then is progress shown.
var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

/// Progress of a long read on standard error: bytes read, rate and time left, one line redrawn in
/// place at most five times a second, and erased when reading ends. Shown only when standard error is
/// a terminal, so nothing reaches a pipe, a file or a CI log, and never on standard output (where the
/// JSON goes). The rate and time left are about the user's wait, so they use the wall clock; analysis
/// itself never does.
final class ProgressLine {
    private let start = DispatchTime.now().uptimeNanoseconds
    private var lastShown: UInt64?
    private var shown = false

    /// A progress line when standard error is a terminal (and, with `unlessStdoutIsTerminal`, standard
    /// output is not the same screen: `decode` streams its lines there while reading).
    static func make(unlessStdoutIsTerminal: Bool = false) -> ProgressLine? {
        guard standardErrorIsTerminal, ProcessInfo.processInfo.environment["PEERSCOPE_NO_PROGRESS"] == nil else { return nil }
        if unlessStdoutIsTerminal && standardOutputIsTerminal { return nil }
        return ProgressLine()
    }

    var callback: PeerscopeRun.Progress { PeerscopeRun.Progress { [self] read, total in update(read, total) } }

    func update(_ read: Int64, _ total: Int64?) {
        let now = DispatchTime.now().uptimeNanoseconds
        if let lastShown, now &- lastShown < 200_000_000, read < (total ?? .max) { return }
        lastShown = now
        let seconds = max(0.001, Double(now &- start) / 1e9)
        let rate = Double(read) / seconds
        var line = "peerscope: read \(Self.mb(Double(read)))"
        if let total, total > 0 {
            line += " of \(Self.mb(Double(total))) (\(min(100, read.multipliedReportingOverflow(by: 100).partialValue / total)) %)"
        }
        line += ", \(Self.mb(rate))/s"
        if let total, rate > 0, read < total {
            line += ", \(Int((Double(total - read) / rate).rounded(.up))) s left"
        }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        shown = true
    }

    /// Erases the line (the report or the shell prompt comes next).
    func finish() {
        if shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        shown = false
    }

    static func mb(_ bytes: Double) -> String { String(format: "%.1f MB", bytes / 1e6) }
}
