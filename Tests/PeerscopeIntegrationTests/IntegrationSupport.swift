import Foundation
import PeerscopeSimulator
import XCTest

/// Where two texts first differ, for a failure message: `line N:` and that line of each, labelled
/// (`<end>` past the last line). The tests that compare two runs' outputs share it.
func firstDifferingLine(_ a: String, _ b: String, _ labels: (String, String)) -> String {
    firstDifferingLine(a.split(separator: "\n", omittingEmptySubsequences: false).map(String.init),
                       b.split(separator: "\n", omittingEmptySubsequences: false).map(String.init), labels)
}

/// The same for texts already cut into lines.
func firstDifferingLine(_ x: [String], _ y: [String], _ labels: (String, String)) -> String {
    let i = (0 ..< min(x.count, y.count)).first { x[$0] != y[$0] } ?? min(x.count, y.count)
    let width = max(labels.0.count, labels.1.count) + 2
    func head(_ label: String) -> String { (label + ":").padding(toLength: width, withPad: " ", startingAt: 0) }
    return "line \(i + 1):\n  \(head(labels.0))\(i < x.count ? x[i] : "<end>")\n  \(head(labels.1))\(i < y.count ? y[i] : "<end>")"
}

/// Where things are for end-to-end tests: the package root, `../shared`, the built `peerscope` binary.
enum Place {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared` beside the package (or `PEERSCOPE_SHARED`), nil when absent.
    static var shared: URL? {
        var u = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"], !env.isEmpty { u = URL(fileURLWithPath: env) }
        return FileManager.default.fileExists(atPath: u.path) ? u : nil
    }

    static func requireShared(file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        guard let s = shared, FileManager.default.fileExists(atPath: s.appendingPathComponent("corpus").path) else {
            throw XCTSkip("../shared/corpus is not beside the package")
        }
        return s
    }

    static var samples: URL { packageRoot.appendingPathComponent("Samples") }

    /// The manifest's rows: file name -> (packets, bytes).
    static func manifest(_ shared: URL) throws -> [String: (packets: UInt64, bytes: UInt64)] {
        let text = try String(contentsOf: shared.appendingPathComponent("corpus/MANIFEST.md"), encoding: .utf8)
        var rows: [String: (UInt64, UInt64)] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 7 else { continue }
            let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            guard let packets = UInt64(cells[5]), let bytes = UInt64(cells[6]) else { continue }
            rows[name] = (packets, bytes)
        }
        return rows
    }
}

/// The two crowded mDNS captures the browse-folding and query-run tests read, written into a temporary
/// directory removed afterwards: many hosts (refreshes, TXT changes, new addresses, goodbyes,
/// expiries), and few hosts over a long time (each address queries, is re-announced and says goodbye
/// many times). `body` gets each capture's path and host count.
func withGeneratedCrowds(_ tag: String, _ body: (String, Int) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-\(tag)-\(ProcessInfo.processInfo.processIdentifier)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    for (packets, hosts, seed) in [(30_000, 600, UInt64(13)), (20_000, 40, UInt64(7))] {
        let path = dir.appendingPathComponent("crowd-\(hosts).pcap").path
        _ = try CrowdedMDNS.write(path: path, packets: packets, hostCount: hosts, seed: seed)
        try body(path, hosts)
    }
}
