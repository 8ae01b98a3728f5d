import Foundation
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeReports

/// Everything `peerscope analyze` / `check` can be asked for.
public struct AnalysisOptions: Sendable {
    /// Capture files, merged by time. Their input indexes come first.
    public var captures: [String]
    /// Log files; their input indexes follow the captures'.
    public var logs: [String]
    public var engine: EngineOptions
    public var logOptions: LogOptions
    public var detectors: DetectorConfig

    public init(captures: [String] = [], logs: [String] = [], engine: EngineOptions = EngineOptions(),
                logOptions: LogOptions = LogOptions(), detectors: DetectorConfig = .defaults) {
        self.captures = captures
        self.logs = logs
        self.engine = engine
        self.logOptions = logOptions
        self.detectors = detectors
    }
}

/// The outcome: the report, plus what the run saw on the way (for unknown-line listings etc.).
public struct Analysis {
    public var report: Report
    public var run: RunResult
    public var logs: LogReadResult?
}

public enum PeerscopeAnalysis {
    /// Splits files given without `--log` into captures and logs by their first bytes: pcap, pcapng
    /// and gzip magics are captures; readable text (and an empty file: a log with no lines) is a log.
    /// Anything else stays a capture, so the capture reader reports it ("not a capture file").
    public static func classify(_ paths: [String]) -> (captures: [String], logs: [String]) {
        var captures: [String] = [], logs: [String] = []
        for p in paths {
            // Directories, unreadable and missing paths stay captures: the capture reader names the problem.
            guard let head = head(p) else { captures.append(p); continue }
            if head.isEmpty { logs.append(p); continue }
            if signature(head) != nil {
                captures.append(p)
                continue
            }
            let text = head.filter { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || ($0 >= 0x20 && $0 != 0x7F) }.count
            if text * 100 >= head.count * 95, !head.contains(0) { logs.append(p) } else { captures.append(p) }
        }
        return (captures, logs)
    }

    /// The first 512 bytes of a readable regular file; nil for directories, missing or unreadable paths.
    static func head(_ p: String) -> [UInt8]? {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir), !isDir.boolValue,
              let h = FileHandle(forReadingAtPath: p) else { return nil }
        // `read(upToCount:)` throws where `readData(ofLength:)` would trap.
        let head = [UInt8]((try? h.read(upToCount: 512)) ?? Data())
        try? h.close()
        return head
    }

    /// "pcap", "pcapng" or "gzip" when the bytes start with that file signature.
    static func signature(_ head: [UInt8]) -> String? {
        let magics: [([UInt8], String)] = [([0xD4, 0xC3, 0xB2, 0xA1], "pcap"), ([0xA1, 0xB2, 0xC3, 0xD4], "pcap"),
                                           ([0x4D, 0x3C, 0xB2, 0xA1], "pcap"), ([0xA1, 0xB2, 0x3C, 0x4D], "pcap"),
                                           ([0x0A, 0x0D, 0x0D, 0x0A], "pcapng"), ([0x1F, 0x8B], "gzip")]
        return magics.first { head.starts(with: $0.0) }?.1
    }

    /// The capture format of a file by its first bytes (pcap, pcapng, gzip), nil for anything else:
    /// a file given as a log that is really a capture.
    public static func captureSignature(_ path: String) -> String? {
        head(path).flatMap(signature)
    }

    /// When a log's span, read as UTC, sits a whole number of hours (within 5 s, start or end) off a
    /// capture's span, the hours (log minus capture): the mark of local times taken for UTC.
    public static func wholeHoursOff(log: ClosedRange<Nanos>, capture: ClosedRange<Nanos>) -> Int? {
        let hour = 3600 * CaptureTime.second, slack = 5 * CaptureTime.second
        for d in [log.lowerBound &- capture.lowerBound, log.upperBound &- capture.upperBound] {
            let h = (d + (d >= 0 ? hour / 2 : -hour / 2)) / hour
            if h != 0, abs(h) <= 26, abs(d - h * hour) <= slack { return Int(h) }
        }
        return nil
    }

    /// Captures and logs through the whole pipeline into one report (an `AnalysisSession` with
    /// these inputs). Inputs that cannot be read are reported (`report.inputProblems`,
    /// `complete == false`) and the rest still analysed; it throws only when no input at all can be read.
    public static func analyze(_ options: AnalysisOptions) throws(InputError) -> Analysis {
        try AnalysisSession(options).finish()
    }
}
