import Foundation
import PeerscopeFuzzHarness
import XCTest

/// Replays every input the fuzzers ever crashed or hung on (`FuzzRegressions/<target>/`, saved by
/// `Scripts/fuzz`) through the same entry points: each must now finish, quickly.
final class FuzzRegressionTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FuzzRegressions")

    func testEveryTargetHasARegressionFolder() throws {
        for t in FuzzTarget.allCases {
            var isDir: ObjCBool = false
            XCTAssertTrue(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(t.rawValue).path, isDirectory: &isDir) && isDir.boolValue,
                          "FuzzRegressions/\(t.rawValue) is missing")
        }
    }

    func testCrashAndTimeoutInputsNowFinish() throws {
        var replayed = 0
        for t in FuzzTarget.allCases {
            let dir = Self.root.appendingPathComponent(t.rawValue)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
            for f in files {
                let data = try [UInt8](Data(contentsOf: dir.appendingPathComponent(f)))
                let start = Date()
                FuzzHarness.run(t, data)
                // libFuzzer's timeout was 10 s on an optimised build; a debug build gets a generous 20 s.
                XCTAssertLessThan(Date().timeIntervalSince(start), 20, "\(t.rawValue)/\(f) is slow again")
                replayed += 1
            }
        }
        print("replayed \(replayed) fuzz regression input(s)")
    }
}
