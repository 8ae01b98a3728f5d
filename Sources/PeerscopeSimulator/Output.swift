// Writing a result to disk: the capture, one log per device, the expected findings.

import Foundation

extension SimulationResult {
    /// Writes the capture to `capturePath`, the device logs to `logDirectory/<device>.log` (when given),
    /// and the expected findings to `expectedPath` (when given). Creates missing directories.
    public func write(capturePath: String, logDirectory: String?, expectedPath: String?) throws {
        let fm = FileManager.default
        func ensureParent(_ path: String) throws {
            let dir = (path as NSString).deletingLastPathComponent
            if !dir.isEmpty { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        }
        try ensureParent(capturePath)
        try Data(capture).write(to: URL(fileURLWithPath: capturePath))
        if let dir = logDirectory {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for log in logs {
                try Data(log.text.utf8).write(to: URL(fileURLWithPath: (dir as NSString).appendingPathComponent("\(log.slug).log")))
            }
        }
        if let path = expectedPath {
            try ensureParent(path)
            try Data(expectedJSON().utf8).write(to: URL(fileURLWithPath: path))
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
                        expectedPath: dir.appendingPathComponent("\(s.name).expected.json"))
        }
    }
}
