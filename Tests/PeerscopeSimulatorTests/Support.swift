import Foundation
import XCTest

/// Paths and external tools for the simulator tests.
enum TestSupport {
    /// Package root: three levels up from this file (Tests/PeerscopeSimulatorTests/Support.swift).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var samplesDirectory: URL { packageRoot.appendingPathComponent("Samples") }

    /// `../shared`, or `PEERSCOPE_SHARED`.
    static func sharedDirectory() throws -> URL {
        var url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"], !env.isEmpty { url = URL(fileURLWithPath: env) }
        guard FileManager.default.fileExists(atPath: url.path) else { throw XCTSkip("../shared not found; set PEERSCOPE_SHARED") }
        return url
    }

    static func hexBytes(_ s: String) -> [UInt8] {
        let clean = s.filter { $0.isHexDigit }
        var out: [UInt8] = []
        var i = clean.startIndex
        while i < clean.endIndex {
            let j = clean.index(i, offsetBy: 2, limitedBy: clean.endIndex) ?? clean.endIndex
            if let b = UInt8(clean[i ..< j], radix: 16) { out.append(b) }
            i = j
        }
        return out
    }

    static func which(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let p = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs a tool; returns (status, stdout). Stderr is folded into the returned text on failure.
    @discardableResult
    static func run(_ tool: String, _ args: [String], stdin: Data? = nil) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let inPipe = Pipe()
        if stdin != nil { p.standardInput = inPipe }
        try p.run()
        if let stdin {
            inPipe.fileHandleForWriting.write(stdin)
            try? inPipe.fileHandleForWriting.close()
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        if p.terminationStatus != 0 { text += String(decoding: errData, as: UTF8.self) }
        return (p.terminationStatus, text)
    }

    static func tempDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-sim-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
