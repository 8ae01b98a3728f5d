import Foundation

/// One capture of a fleet and the logs that go with it.
public struct FleetItem: Sendable, Hashable {
    /// The capture's path (the folder given, joined with `relative`).
    public var capture: String
    /// Path relative to the folder given (`ios17/run-3.pcapng`); per-capture reports are named after it.
    public var relative: String
    /// Logs beside the capture with its base name: `run-3.log`, `run-3.alice.log`.
    public var logs: [String]

    public init(capture: String, relative: String, logs: [String]) {
        self.capture = capture
        self.relative = relative
        self.logs = logs
    }
}

/// Fleets of captures: `peerscope check DIR/ --recursive --jobs N`. Each capture is analysed on
/// its own (an analysis shares no state with another), so the results do not depend on the number
/// of jobs or the order in which they finish.
public enum Fleet {
    /// Name endings of captures, longest first.
    public static let captureExtensions = [".pcapng.gz", ".pcap.gz", ".pcapng", ".pcap", ".cap", ".gz"]

    /// The capture extension of a file name, if it has one.
    public static func captureExtension(_ name: String) -> String? {
        let lower = name.lowercased()
        return captureExtensions.first { lower.hasSuffix($0) }
    }

    /// The captures under `root` (its own files only unless `recursive`), sorted by path, each with
    /// the logs of the same base name in its folder. Hidden files and folders are skipped.
    public static func discover(_ root: String, recursive: Bool) throws(InputError) -> [FleetItem] {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: root, isDirectory: &isDir), isDir.boolValue else {
            throw InputError(path: root, message: "\(root): no such folder")
        }
        let base = root.hasSuffix("/") ? String(root.dropLast()) : root
        var files: [String] = []
        func walk(_ rel: String) throws(InputError) {
            let dir = rel.isEmpty ? base : base + "/" + rel
            let names: [String]
            do { names = try fm.contentsOfDirectory(atPath: dir) } catch {
                throw InputError(path: dir, message: "\(dir): cannot list the folder")
            }
            for name in names.sorted() where !name.hasPrefix(".") {
                let r = rel.isEmpty ? name : rel + "/" + name
                var d: ObjCBool = false
                guard fm.fileExists(atPath: base + "/" + r, isDirectory: &d) else { continue }
                if d.boolValue {
                    if recursive { try walk(r) }
                } else {
                    files.append(r)
                }
            }
        }
        try walk("")
        let logs = files.filter { $0.lowercased().hasSuffix(".log") }
        return files.compactMap { rel -> FleetItem? in
            guard let ext = captureExtension(rel) else { return nil }
            let stem = String(rel.dropLast(ext.count))
            let own = logs.filter { $0 == stem + ".log" || ($0.hasPrefix(stem + ".") && !$0.dropFirst(stem.count + 1).contains("/")) }
            return FleetItem(capture: base + "/" + rel, relative: rel, logs: own.map { base + "/" + $0 })
        }
    }

    /// `body(0) ... body(count - 1)` on `jobs` threads; the results in index order.
    public static func map<T: Sendable>(_ count: Int, jobs: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
        let state = MapState<T>(count: count)
        let workers = max(1, min(jobs, count))
        if workers == 1 {
            return (0 ..< count).map(body)
        }
        let group = DispatchGroup()
        for _ in 0 ..< workers {
            group.enter()
            let t = Thread {
                while let i = state.take() { state.put(i, body(i)) }
                group.leave()
            }
            t.stackSize = 8 << 20   // the analysis of a large capture recurses deeper than a secondary thread's default
            t.start()
        }
        group.wait()
        return state.results()
    }
}

/// The work list and results of `Fleet.map`, behind a lock.
private final class MapState<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    private let count: Int
    private var slots: [T?]

    init(count: Int) {
        self.count = count
        slots = Array(repeating: nil, count: count)
    }

    func take() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard next < count else { return nil }
        next += 1
        return next - 1
    }

    func put(_ i: Int, _ v: T) {
        lock.lock(); defer { lock.unlock() }
        slots[i] = v
    }

    func results() -> [T] {
        lock.lock(); defer { lock.unlock() }
        return slots.compactMap { $0 }
    }
}
