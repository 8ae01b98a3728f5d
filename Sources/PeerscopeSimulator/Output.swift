// Writing a result to disk: the capture, one log per device, the expected findings.

import Foundation

/// A file the simulator could not write: one line naming the path and the reason.
public struct SimulationWriteError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String { "\(path): cannot write: \(reason)" }
}

extension SimulationResult {
    /// Writes the capture to `capturePath`, the device logs to `logDirectory/<device>.log` (when given),
    /// and the expected findings to `expectedPath` (when given). The log directory is created when
    /// missing; the parents of the capture and expected files only with `createParents` (a mistyped
    /// output path is an error, not a new directory tree). `writeFile` writes one whole file (the
    /// command line passes one that writes through a temporary file and renames it into place).
    public func write(capturePath: String, logDirectory: String?, expectedPath: String?, createParents: Bool = false,
                      writeFile: ((_ bytes: [UInt8], _ path: String) throws(SimulationWriteError) -> Void)? = nil) throws(SimulationWriteError) {
        let fm = FileManager.default
        func parent(_ path: String) throws(SimulationWriteError) {
            let dir = (path as NSString).deletingLastPathComponent
            guard !dir.isEmpty else { return }
            var isDir: ObjCBool = false
            if fm.fileExists(atPath: dir, isDirectory: &isDir) {
                if !isDir.boolValue { throw SimulationWriteError(path: path, reason: "\(dir) is not a directory") }
                return
            }
            guard createParents else { throw SimulationWriteError(path: path, reason: "no such directory \(dir)") }
            do { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
                throw SimulationWriteError(path: dir, reason: SimulationWriteError.reason(error))
            }
        }
        func put(_ data: Data, _ path: String) throws(SimulationWriteError) {
            if let writeFile { return try writeFile(Array(data), path) }
            do { try data.write(to: URL(fileURLWithPath: path)) } catch {
                throw SimulationWriteError(path: path, reason: SimulationWriteError.reason(error))
            }
        }
        try parent(capturePath)
        try put(Data(capture), capturePath)
        if let dir = logDirectory {
            do { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
                throw SimulationWriteError(path: dir, reason: SimulationWriteError.reason(error))
            }
            for log in logs {
                try put(Data(log.text.utf8), (dir as NSString).appendingPathComponent("\(log.slug).log"))
            }
        }
        if let path = expectedPath {
            try parent(path)
            try put(Data(expectedJSON().utf8), path)
        }
    }

    /// `Samples/<scenario>.expected.json` beside a capture `Samples/<scenario>.pcapng`.
    public static func defaultExpectedPath(forCapture path: String) -> String {
        let ns = path as NSString
        let base = ns.deletingPathExtension
        return base + ".expected.json"
    }
}

extension Simulator {
    /// Writes every scenario with the default options the way `Samples/` holds them:
    /// `<dir>/<scenario>.pcapng`, `<dir>/<scenario>.expected.json`, `<dir>/logs/<scenario>/<device>.log`.
    public static func writeSamples(to directory: String, seed: UInt64 = 1) throws {
        for s in scenarios {
            let r = try run(s.name, options: SimulationOptions(seed: seed))
            let dir = directory as NSString
            try r.write(capturePath: dir.appendingPathComponent("\(s.name).pcapng"),
                        logDirectory: dir.appendingPathComponent("logs/\(s.name)"),
                        expectedPath: dir.appendingPathComponent("\(s.name).expected.json"), createParents: true)
        }
    }
}

extension SimulationWriteError {
    /// The system's reason (`Permission denied`, `No such file or directory`) rather than Foundation's
    /// `Error Domain=NSCocoaErrorDomain ...` text.
    static func reason(_ error: Error) -> String {
        let ns = error as NSError
        if let u = ns.userInfo[NSUnderlyingErrorKey] as? NSError, u.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(u.code)))
        }
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileWriteNoPermission, .fileReadNoPermission: return "permission denied"
        case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or directory"
        case .fileWriteOutOfSpace: return "no space left on the device"
        case .fileWriteVolumeReadOnly: return "read-only file system"
        default: return ns.localizedDescription
        }
    }
}
