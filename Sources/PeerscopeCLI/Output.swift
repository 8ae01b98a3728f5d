import Foundation

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
