import Foundation
import PeerscopeCore
import XCTest

/// Issue 14: the stages read and write event attributes by typed key (`e[.txid]`, `attrs[.accepted]`,
/// `.typed([.layer: "udp"])`), each key declared once in `EventAttributes.swift`. These files were
/// moved to typed keys; a string key slipping back in fails here.
final class TypedAttributeKeysTests: XCTestCase {
    static let typedFiles = [
        "PeerscopePlugins/ICE/STUNPlugin.swift", "PeerscopePlugins/DTLS/DTLSPlugin.swift",
        "PeerscopePlugins/Transport/TCPConnectionPlugin.swift", "PeerscopePlugins/Transport/ICMPErrorPlugin.swift",
        "PeerscopeLogs/LogEventBuilder.swift", "PeerscopeLogs/MPCLogPlugins.swift",
    ]
    static let typedFolders = ["PeerscopeDetectors", "PeerscopeTimeline"]

    /// `attrs["key"]`, `a["key"] =`, `attrs: ["key": ...]`, `attrs = ["key": ...]`.
    static let stringKey = #"(\battrs|\ba)\["[A-Za-z]+"(\]|, default)|attrs(: \[String: String\])? ?[:=] \["[A-Za-z]+": "#

    static func stringKeys(in text: String) throws -> [String] {
        let stringKey = try NSRegularExpression(pattern: Self.stringKey)
        return text.split(separator: "\n").compactMap { line in
            let s = String(line)
            return stringKey.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) == nil ? nil : s.trimmingCharacters(in: .whitespaces)
        }
    }

    func testConvertedFilesUseTypedKeysOnly() throws {
        let root = Place.packageRoot.appendingPathComponent("Sources")
        var files = Self.typedFiles
        for folder in Self.typedFolders {
            files += try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
                .filter { $0.hasSuffix(".swift") }.map { "\(folder)/\($0)" }
        }
        var found: [String] = []
        for f in files {
            let text = try String(contentsOf: root.appendingPathComponent(f), encoding: .utf8)
            found += try Self.stringKeys(in: text).map { "\(f): \($0)" }
        }
        XCTAssertEqual(found, [], "use the typed key (declare it once in EventAttributes.swift)")
    }

    func testTheScanCatchesStringKeys() throws {
        XCTAssertEqual(try Self.stringKeys(in: #"if x { attrs["useCandidate"] = "true" }"#).count, 1)
        XCTAssertEqual(try Self.stringKeys(in: #"var attrs: [String: String] = ["txid": txid]"#).count, 1)
        XCTAssertEqual(try Self.stringKeys(in: #"LogMatch(kind: .lost, attrs: ["moreComing": c[1]])"#).count, 1)
        XCTAssertEqual(try Self.stringKeys(in: #"let n = events[i].attrs["lines", default: "1"]"#).count, 1)
        XCTAssertEqual(try Self.stringKeys(in: #"LogMatch(kind: .lost, attrs: .typed([.moreComing: c[1]]))"#).count, 0)
        XCTAssertEqual(try Self.stringKeys(in: #"details: ["case": "tcp-reset"]"#).count, 0, "finding details are not event attributes")
    }

    /// Typed keys write the same text the string keys did (so event traces and reports are unchanged).
    func testTypedKeysWriteTheSameText() {
        var a: [String: String] = .typed([.layer: "udp", .code: "7"])
        a[.matched] = false
        a[.retransmits] = 3
        a[.reporter] = IPAddress("192.0.2.1")
        XCTAssertEqual(a, ["layer": "udp", "code": "7", "matched": "false", "retransmits": "3", "reporter": "192.0.2.1"])
        XCTAssertEqual([String: String].typed([.accepted: true]), ["accepted": "true"])
        XCTAssertEqual(a[.matched], false)
        a[.code] = nil
        XCTAssertNil(a["code"])
        // A value as a log prints it, under a typed key of another type: kept as text, not reparsed.
        a[text: .sn] = "0012"
        XCTAssertEqual(a["sn"], "0012")
        XCTAssertEqual(a[.sn], 12)
    }
}
