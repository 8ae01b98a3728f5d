import Foundation
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
