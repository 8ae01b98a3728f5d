import Foundation
import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// The seeds' real console lines and print statements, read from ../shared at run time.
final class SeedLogTests: XCTestCase {
    static var shared: URL? {
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"] { return URL(fileURLWithPath: env) }
        // Tests/PeerscopeLogsTests/SeedLogTests.swift -> package root -> ../shared
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared")
    }

    func seed(_ prefix: String) throws -> String {
        guard let dir = Self.shared, let files = try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("seeds").path),
              let f = files.first(where: { $0.hasPrefix(prefix) }),
              let text = try? String(contentsOfFile: dir.appendingPathComponent("seeds").appendingPathComponent(f).path, encoding: .utf8) else {
            throw XCTSkip("../shared/seeds not available")
        }
        return text
    }

    /// Seed 004: the Diffusion back-off reconnection console lines.
    func testDiffusionBackOffConsoleLines() throws {
        let text = try seed("004")
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("2020-01-14 ") }
        XCTAssertGreaterThan(lines.count, 20)
        var o = LogOptions()
        o.collectUnknown = true
        let r = try LogAnalyzer.read(text: lines.joined(separator: "\n"), path: "seed004", options: o, directory: PeerDirectory())
        XCTAssertEqual(r.format, .xcode)
        XCTAssertEqual(r.unknownCounts, [:], "\(r.unknownLines)")
        let attempts = r.events.filter { $0.kind == .reconnectAttempt }
        XCTAssertEqual(attempts.map { $0.attrs["attempt"] }, ["1", "2", "4"])
        XCTAssertEqual(attempts.map { $0.attrs["delay"] }, ["0", "1", "3"])
        XCTAssertEqual(attempts.first?.t, (CaptureTime.days(year: 2020, month: 1, day: 14) * 86400 + 10 * 3600 + 27 * 60 + 48) * CaptureTime.second + 18_803_000)
        let states = r.events.filter { $0.kind == .stateChange }
        XCTAssertEqual(states.first?.attrs["to"], "Connected Active")
        XCTAssertEqual(states.first?.attrs["from"], "Connecting")
        XCTAssertEqual(states.last?.attrs["to"], "Connected Active")
        XCTAssertEqual(states.last?.attrs["from"], "Recovering Reconnecting")
        XCTAssertTrue(r.events.contains { $0.kind == .tcpRefused && $0.attrs["errno"] == "61" })
        XCTAssertTrue(r.events.allSatisfy { $0.source.hasPrefix("log-") })
    }

    /// Seed 000's print statements, as the app prints them for a peer named in the test.
    func testSeedZeroPrintStatements() throws {
        let text = try seed("000")
        // Every print("…\(peerID.displayName)…") line of the seed, with the display name filled in.
        var prints: [String] = []
        for line in text.split(separator: "\n") {
            guard let r = line.range(of: "print(\""), let e = line.range(of: "\")", options: .backwards), r.upperBound <= e.lowerBound else { continue }
            var s = String(line[r.upperBound..<e.lowerBound])
            s = s.replacingOccurrences(of: "\\(peerID.displayName)", with: "Bob")
            s = s.replacingOccurrences(of: "\\(peer.displayName)", with: "Bob")
            s = s.replacingOccurrences(of: "\\(state.rawValue)", with: "2")
            s = s.replacingOccurrences(of: "\\(type)", with: "mystery")
            s = s.replacingOccurrences(of: "\\(json)", with: "[\"type\": \"keep_alive\", \"deviceId\": \"Bob\"]")
            s = s.replacingOccurrences(of: "\\(error)", with: "Error Domain=MCSession Code=1")
            prints.append(s)
        }
        XCTAssertGreaterThan(prints.count, 15)
        var o = LogOptions()
        o.collectUnknown = true
        o.referenceTime = 1_700_000_000 * CaptureTime.second
        let r = try LogAnalyzer.read(text: prints.joined(separator: "\n"), path: "seed000", options: o, directory: PeerDirectory())
        XCTAssertEqual(r.unknownCounts, [:], "\(r.unknownLines)")
        let kinds = Set(r.events.map(\.kind))
        for k in [EventKind.appTimeout, .appDuplicateIgnored, .appHandshake, .appKeepAlive, .appOther, .sendError, .disconnected, .stateChange] {
            XCTAssertTrue(kinds.contains(k), "no \(k) from the seed's prints")
        }
        XCTAssertEqual(r.events.filter { $0.kind == .appTimeout }.compactMap { $0.attrs["what"] }.sorted(), ["handshake", "keep_alive"])
        // Contents never reach the events: the keep-alive's deviceId is not an attribute.
        XCTAssertFalse(r.events.contains { $0.attrs.values.contains { $0.contains("deviceId") } })
    }
}
