import Foundation
import Peerscope
import PeerscopeCore

/// Buffered writing to standard output or a file; flushes in large blocks, or per line for live use.
final class OutputSink {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private let lineBuffered: Bool
    private let closeOnFinish: Bool

    init(path: String?, lineBuffered: Bool = false) throws {
        if let path, path != "-" {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CommandFailure(message: "\(path): cannot create the output file", status: ExitStatus.input)
            }
            guard let h = FileHandle(forWritingAtPath: path) else {
                throw CommandFailure(message: "\(path): cannot open the output file for writing", status: ExitStatus.input)
            }
            handle = h
            closeOnFinish = true
        } else {
            handle = FileHandle.standardOutput
            closeOnFinish = false
        }
        self.lineBuffered = lineBuffered
        buffer.reserveCapacity(1 << 16)
    }

    func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if lineBuffered || buffer.count >= 1 << 16 { flush() }
    }

    func line(_ s: String) { write(s + "\n") }

    /// UTF-8 bytes as they are.
    func write(bytes: [UInt8]) {
        if buffer.isEmpty && bytes.count >= 1 << 16 {
            do { try handle.write(contentsOf: Data(bytes)) } catch { exit(0) }
            return
        }
        buffer.append(contentsOf: bytes)
        if lineBuffered || buffer.count >= 1 << 16 { flush() }
    }

    /// One compact JSON value and a newline (JSON Lines), written straight into the buffer.
    func jsonLine(_ v: JSONValue) {
        v.write(to: &buffer, indent: nil, level: 0)
        buffer.append(0x0A)
        if lineBuffered || buffer.count >= 1 << 16 { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        // The throwing write: a closed pipe (`| head`) must not trap.
        do { try handle.write(contentsOf: Data(buffer)) } catch { exit(0) }
        buffer.removeAll(keepingCapacity: true)
    }

    func finish() {
        flush()
        if closeOnFinish { try? handle.close() }
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
