import Foundation
@testable import PeerscopeCapture
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A run killed with SIGKILL cannot remove its temporary file `.NAME.peerscope-XXXXXX`; the next run
/// onto the same output removes it, and nothing else: not a live writer's file (it holds a `flock`),
/// not another output's, not a link, a folder or another user's file, not a name off the pattern.
/// (The end-to-end case, a `peerscope capture` killed mid-write, is in `LiveNetnsTests`.)
final class StaleTemporaryTests: XCTestCase {
    func names(_ dir: TempDir) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    func testTheNextRunRemovesADeadRunsTemporaryFileAndNothingElse() throws {
        let dir = TempDir()
        // What a killed run leaves: its temporary file, no lock on it.
        let stale = dir.write(".out.pcapng.peerscope-Ab12Cd", [1, 2, 3])
        // The user's files, and names close to the pattern that are not a dead run's temporary file.
        let user = dir.write("out.pcapng", [9, 9, 9])
        let other = dir.write(".other.pcapng.peerscope-Ab12Cd", [4])
        let short = dir.write(".out.pcapng.peerscope-Ab12C", [5])
        let longer = dir.write(".out.pcapng.peerscope-Ab12Cd.bak", [6])
        let odd = dir.write(".out.pcapng.peerscope-Ab_2Cd", [7])
        let notes = dir.write("notes.txt", [8])
        let symlinked = dir.path + "/.out.pcapng.peerscope-Sym123"
        XCTAssertEqual(symlink(notes, symlinked), 0)
        let hard = dir.path + "/.out.pcapng.peerscope-Hrd123"
        XCTAssertEqual(link(notes, hard), 0)
        let folder = dir.path + "/.out.pcapng.peerscope-Dir123"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        var foreign: String?
        if geteuid() == 0 {
            // Another user's file (only root can make one here).
            let f = dir.write(".out.pcapng.peerscope-Uid123", [10])
            XCTAssertEqual(chown(f, 65534, 65534), 0)
            foreign = f
        }
        let before = names(dir)

        let w = try OutputFile(path: user)
        XCTAssertEqual(w.removedStaleTemporaries, [stale])
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        w.discard()
        // Everything else is as it was, byte for byte.
        XCTAssertEqual(names(dir), before.filter { $0 != ".out.pcapng.peerscope-Ab12Cd" })
        for (path, bytes) in [(user, [9, 9, 9] as [UInt8]), (other, [4]), (short, [5]), (longer, [6]), (odd, [7]), (notes, [8]), (hard, [8])] {
            XCTAssertEqual(FileManager.default.contents(atPath: path).map { [UInt8]($0) }, bytes, path)
        }
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: symlinked), notes)
        if let foreign { XCTAssertTrue(FileManager.default.fileExists(atPath: foreign)) }
    }

    func testALiveWritersTemporaryFileIsNeverRemoved() throws {
        let dir = TempDir()
        let target = dir.path + "/report.json"
        // A writer still running (here in this process: a flock is held per open file).
        let first = try OutputFile(path: target)
        try first.write(Array("first".utf8))
        let firstTemp = try XCTUnwrap(names(dir).first { $0.hasPrefix(".report.json.peerscope-") })
        // A second run onto the same output meanwhile leaves it alone.
        let second = try OutputFile(path: target)
        XCTAssertEqual(second.removedStaleTemporaries, [])
        XCTAssertTrue(names(dir).contains(firstTemp))
        try second.write(Array("second".utf8))
        try second.commit()
        // The first still completes: its file was not taken from under it.
        try first.commit()
        XCTAssertEqual(FileManager.default.contents(atPath: target).map { String(decoding: $0, as: UTF8.self) }, "first")
        XCTAssertEqual(names(dir), ["report.json"])
    }

    func testAFileLockedByAnotherProcessIsKeptAndRemovedOnceThatProcessIsKilled() throws {
        guard FileManager.default.isExecutableFile(atPath: "/bin/sh"),
              ["/usr/bin/flock", "/bin/flock"].contains(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("flock(1) is not installed")
        }
        let dir = TempDir()
        let temp = dir.write(".out.json.peerscope-Live01", [1])
        // Another process holds the kind of lock a writer holds: a shell opens the file, flock(1) locks
        // that open file, and the shell becomes `sleep` (one process, the lock its own).
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 9<\"$0\" && flock -x 9 && exec sleep 60", temp]
        try holder.run()
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        var locked = false
        for _ in 0 ..< 500 where !locked {
            let f = open(temp, O_RDONLY)
            locked = flock(f, LOCK_EX | LOCK_NB) != 0
            close(f)
            if !locked { usleep(10_000) }
        }
        XCTAssertTrue(locked, "the shell did not take the lock")
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { $0 == "out.json" }, [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: temp))
        // Killed: its lock dies with it, and the file is now provably a dead run's.
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { $0 == "out.json" }, [temp])
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp))
    }

    func testTemporaryNamesAndRingNames() {
        XCTAssertEqual(OutputFile.temporaryOutputName(".out.pcapng.peerscope-Ab12Cd"), "out.pcapng")
        XCTAssertEqual(OutputFile.temporaryOutputName(".a.peerscope-zzzzzz"), "a")
        for bad in ["out.pcapng.peerscope-Ab12Cd", "..peerscope-Ab12Cd", ".out.peerscope-Ab12C", ".out.peerscope-Ab12Cd7",
                    ".out.peerscope-Ab-2Cd", ".out.peerscope_Ab12Cd", ".out.pcapng"] {
            XCTAssertNil(OutputFile.temporaryOutputName(bad), bad)
        }
        XCTAssertTrue(LiveCaptureWriter.isRingName("ring_00001_20261126120000.pcapng", base: "ring.pcapng"))
        XCTAssertTrue(LiveCaptureWriter.isRingName("ring_123456_20261126120000.pcapng", base: "ring.pcapng"))
        XCTAssertTrue(LiveCaptureWriter.isRingName("cap_00002_20261126120000.pcapng", base: "cap"))
        for bad in ["ring.pcapng", "ring_0001_20261126120000.pcapng", "ring_00001_2026112612000.pcapng", "ring_00001_20261126120000.pcap",
                    "ringx_00001_20261126120000.pcapng", "ring_00001_20261126120000_1.pcapng", "ring_0000a_20261126120000.pcapng"] {
            XCTAssertFalse(LiveCaptureWriter.isRingName(bad, base: "ring.pcapng"), bad)
        }
    }

    func testARingRemovesADeadRunsTemporaryRingFile() throws {
        let dir = TempDir()
        let stale = dir.write(".ring_00003_20261126120000.pcapng.peerscope-Xy12Zw", [1])
        let kept = dir.write("ring_00002_20261126115900.pcapng", [2])
        let otherBase = dir.write(".other_00003_20261126120000.pcapng.peerscope-Xy12Zw", [3])
        let w = try LiveCaptureWriter(path: dir.path + "/ring.pcapng", ring: .init(files: 2, bytesPerFile: 1 << 20))
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertEqual(FileManager.default.contents(atPath: kept).map { [UInt8]($0) }, [2])
        XCTAssertEqual(FileManager.default.contents(atPath: otherBase).map { [UInt8]($0) }, [3])
        w.discard()
    }
}
