import Foundation
import XCTest

/// Runs the built `peerscope` binary and captures what it printed and how it exited.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    /// The loopback interface's name for live-capture tests.
    #if os(Linux)
    static let loopback = "lo"
    #else
    static let loopback = "lo0"
    #endif

    /// `.build/<config>/peerscope`, beside the test bundle.
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") {
            dir = b.bundleURL.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("peerscope")
    }

    static func requireBinary() throws -> URL {
        let b = binary
        guard FileManager.default.isExecutableFile(atPath: b.path) else {
            throw XCTSkip("peerscope binary not built at \(b.path) (run swift build first)")
        }
        return b
    }

    @discardableResult
    static func run(_ args: [String], cwd: URL = Place.packageRoot, timeout: TimeInterval = 120,
                    prefix: [String] = []) throws -> CLIResult {
        let bin = try requireBinary()
        let p = Process()
        if prefix.isEmpty {
            p.executableURL = bin
            p.arguments = args
        } else {
            p.executableURL = URL(fileURLWithPath: prefix[0])
            p.arguments = Array(prefix.dropFirst()) + [bin.path] + args
        }
        p.currentDirectoryURL = cwd
        // Output goes to files, so a large report can never fill a pipe and block the child.
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let outURL = dir.appendingPathComponent("stdout"), errURL = dir.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning {
            p.terminate()
            XCTFail("peerscope \(args.joined(separator: " ")) did not finish within \(timeout) s")
        }
        p.waitUntilExit()
        try? out.close()
        try? err.close()
        let outData = (try? Data(contentsOf: outURL)) ?? Data()
        let errData = (try? Data(contentsOf: errURL)) ?? Data()
        return CLIResult(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self))
    }

    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }
}
