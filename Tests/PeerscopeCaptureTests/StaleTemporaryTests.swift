import Foundation
@testable import PeerscopeCapture
import PeerscopeCore
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
        XCTAssertEqual(w.staleTemporaries, [StaleTemporary(path: stale, output: "out.pcapng", outcome: .removed)])
        XCTAssertTrue(w.staleTemporaries.first?.message.contains(stale) ?? false)
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
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { $0 == "out.json" },
                       [StaleTemporary(path: temp, output: "out.json", outcome: .removed)])
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
        XCTAssertEqual(w.staleTemporaries, [StaleTemporary(path: stale, output: "ring_00003_20261126120000.pcapng", outcome: .removed)])
        XCTAssertEqual(FileManager.default.contents(atPath: kept).map { [UInt8]($0) }, [2])
        XCTAssertEqual(FileManager.default.contents(atPath: otherBase).map { [UInt8]($0) }, [3])
        w.discard()
    }

    // MARK: a killed capture's frames are kept, never removed

    let base: Int64 = 1_763_800_000 * 1_000_000_000

    /// A pcapng capture of `n` frames as a live writer leaves it when killed: the last block cut short.
    func killedCaptureBytes(frames n: Int) throws -> [UInt8] {
        let dir = TempDir()
        let path = dir.path + "/whole.pcapng"
        let w = try LiveCaptureWriter(path: path, interfaces: [.init(linkType: 1, name: "en0", snapLength: 65_535)])
        for i in 1 ... n {
            let data = (0 ..< 200).map { UInt8(truncatingIfNeeded: $0 &+ i) }
            try w.write(RawFrame(info: FrameInfo(input: 0, number: UInt64(i), t: base + Int64(i) * 1_000_000, capturedLength: 200,
                                                 originalLength: 200, linkType: 1, interfaceName: "en0"), data: Bytes(data)))
        }
        try w.close(stats: nil, at: base)
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        return Array(whole.dropLast(37))   // the last frame's block is cut
    }

    func frameCount(_ path: String) throws -> Int {
        let r = try CaptureFileReader(path: path)
        var n = 0
        while r.next() != nil { n += 1 }
        return n
    }

    func testADeadCapturesTemporaryFileIsRenamedToAVisibleNameNeverOntoAnExistingFile() throws {
        let dir = TempDir()
        let bytes = try killedCaptureBytes(frames: 5)
        let stale = dir.write(".live.pcapng.peerscope-Ab12Cd", bytes)
        // A user's file already has the first name a recovered file would get: it is left alone.
        let taken = dir.write("live.recovered-Ab12Cd.pcapng", [7, 7])
        let w = try OutputFile(path: dir.path + "/live.pcapng", option: "--write")
        let recovered = dir.path + "/live.recovered-Ab12Cd-2.pcapng"
        XCTAssertEqual(w.staleTemporaries, [StaleTemporary(path: stale, output: "live.pcapng", outcome: .recovered(as: recovered))])
        XCTAssertEqual(w.removedStaleTemporaries, [])
        let message = try XCTUnwrap(w.staleTemporaries.first?.message)
        XCTAssertTrue(message.contains(recovered) && message.contains("ended without finishing"), message)
        w.discard()
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertEqual(FileManager.default.contents(atPath: taken).map { [UInt8]($0) }, [7, 7])
        // The frames, byte for byte, readable up to the last complete block.
        XCTAssertEqual(FileManager.default.contents(atPath: recovered).map { [UInt8]($0) }, bytes)
        XCTAssertEqual(try frameCount(recovered), 4)
        XCTAssertEqual(names(dir), ["live.recovered-Ab12Cd-2.pcapng", "live.recovered-Ab12Cd.pcapng"])
        // The next run finds nothing more to do.
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { _ in true }, [])
    }

    func testARingKeepsADeadRunsTemporaryRingFileUnderAVisibleName() throws {
        let dir = TempDir()
        let bytes = try killedCaptureBytes(frames: 3)
        let stale = dir.write(".ring_00003_20261126120000.pcapng.peerscope-Xy12Zw", bytes)
        let w = try LiveCaptureWriter(path: dir.path + "/ring.pcapng", ring: .init(files: 2, bytesPerFile: 1 << 20))
        let recovered = dir.path + "/ring_00003_20261126120000.recovered-Xy12Zw.pcapng"
        XCTAssertEqual(w.staleTemporaries, [StaleTemporary(path: stale, output: "ring_00003_20261126120000.pcapng", outcome: .recovered(as: recovered))])
        w.discard()
        XCTAssertEqual(FileManager.default.contents(atPath: recovered).map { [UInt8]($0) }, bytes)
        XCTAssertEqual(try frameCount(recovered), 2)
    }

    /// On a file system without hard links (FAT, exFAT) a killed capture's temporary file cannot be
    /// given a visible name: it stays where it is, whole, under its hidden name, and standard error
    /// says where the frames are, why, and the name it would have had; every later run says so again
    /// and never removes it.
    func testADeadCapturesFileThatCannotBeLinkedStaysWhereItIsAndIsSaid() throws {
        let dir = TempDir()
        let bytes = try killedCaptureBytes(frames: 5)
        let stale = dir.write(".live.pcapng.peerscope-Ab12Cd", bytes)
        var noLinks = FileSystemCalls()
        var tried: [String] = []
        noLinks.link = { _, from, _, to in
            tried.append("\(from) -> \(to)")
            errno = EPERM
            return -1
        }
        let visible = dir.path + "/live.recovered-Ab12Cd.pcapng"
        let expected = [StaleTemporary(path: stale, output: "live.pcapng",
                                       outcome: .kept(reason: "making a link to it failed: Operation not permitted", visibleName: visible))]
        let w = try OutputFile(path: dir.path + "/live.pcapng", option: "--write", mode: .replace, calls: noLinks)
        w.discard()
        XCTAssertEqual(tried, [".live.pcapng.peerscope-Ab12Cd -> live.recovered-Ab12Cd.pcapng"])
        XCTAssertEqual(w.staleTemporaries, expected)
        XCTAssertEqual(w.removedStaleTemporaries, [])
        let message = try XCTUnwrap(w.staleTemporaries.first?.message)
        XCTAssertEqual(message, "kept \(stale): the frames of an earlier capture into live.pcapng that ended without finishing (killed or crashed)"
                       + " are in this hidden file, readable up to its last complete block; it could not be given a visible name"
                       + " (making a link to it failed: Operation not permitted), so it stays under its hidden name and no run removes it:"
                       + " rename it yourself (to \(visible), say)")
        // The frames are where the message says, byte for byte; nothing else was made.
        XCTAssertEqual(FileManager.default.contents(atPath: stale).map { [UInt8]($0) }, bytes)
        XCTAssertEqual(try frameCount(stale), 4)
        XCTAssertEqual(names(dir), [".live.pcapng.peerscope-Ab12Cd"])
        // The next run onto that output finds it again, says so again, and still keeps it.
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path, where: { $0 == "live.pcapng" }, calls: noLinks), expected)
        XCTAssertEqual(FileManager.default.contents(atPath: stale).map { [UInt8]($0) }, bytes)
        // Where links work (the system's calls), the same file is recovered under that visible name.
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { $0 == "live.pcapng" },
                       [StaleTemporary(path: stale, output: "live.pcapng", outcome: .recovered(as: visible))])
        XCTAssertEqual(FileManager.default.contents(atPath: visible).map { [UInt8]($0) }, bytes)
    }

    func frame(_ i: Int) -> RawFrame {
        RawFrame(info: FrameInfo(input: 0, number: UInt64(i), t: base + Int64(i) * 1_000_000, capturedLength: 100,
                                 originalLength: 100, linkType: 1, interfaceName: "en0"), data: Bytes([UInt8](repeating: UInt8(i & 0xFF), count: 100)))
    }

    /// Each file a ring starts mid-capture is opened as its first was: a killed run's temporary ring
    /// file that turned up since is recovered, and said (once each) by `newStaleTemporaries`.
    func testEachFileARingStartsDealsWithStaleTemporariesAsTheFirstDid() throws {
        let dir = TempDir()
        let w = try LiveCaptureWriter(path: dir.path + "/ring.pcapng", ring: .init(files: 2, bytesPerFile: 1))
        try w.declare([.init(linkType: 1, name: "en0", snapLength: 65_535)])
        XCTAssertFalse(w.hasNewStaleTemporaries)
        XCTAssertEqual(w.newStaleTemporaries(), [])
        try w.write(frame(1))
        // A run with the same base, killed after this one started.
        let bytes = try killedCaptureBytes(frames: 3)
        let stale = dir.write(".ring_00009_20261126120000.pcapng.peerscope-Xy12Zw", bytes)
        try w.write(frame(2))   // the ring starts its second file
        let recovered = dir.path + "/ring_00009_20261126120000.recovered-Xy12Zw.pcapng"
        let expected = [StaleTemporary(path: stale, output: "ring_00009_20261126120000.pcapng", outcome: .recovered(as: recovered))]
        XCTAssertEqual(w.staleTemporaries, expected)
        XCTAssertTrue(w.hasNewStaleTemporaries)
        XCTAssertEqual(w.newStaleTemporaries(), expected)
        XCTAssertFalse(w.hasNewStaleTemporaries)
        XCTAssertEqual(w.newStaleTemporaries(), [])
        XCTAssertEqual(FileManager.default.contents(atPath: recovered).map { [UInt8]($0) }, bytes)
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        try w.write(frame(3))
        try w.close(stats: nil, at: base)
        XCTAssertEqual(w.staleTemporaries, expected)
        XCTAssertEqual(w.files.count, 2)

        // Not on a local file system: said once for the ring, however many files it starts.
        let remoteDir = TempDir()
        let r = try LiveCaptureWriter(path: remoteDir.path + "/ring.pcapng", ring: .init(files: 2, bytesPerFile: 1), mode: .replace, calls: remote)
        try r.declare([.init(linkType: 1, name: "en0", snapLength: 65_535)])
        try r.write(frame(1))
        let first = remoteDir.write(".ring_00009_20261126120000.pcapng.peerscope-Xy12Zw", bytes)
        for i in 2 ... 5 { try r.write(frame(i)) }
        try r.close(stats: nil, at: base)
        XCTAssertEqual(r.staleTemporaries, [StaleTemporary(path: first, output: "ring_00009_20261126120000.pcapng", outcome: .notLocal(files: 1, fileSystem: "nfs"))])
        XCTAssertTrue(FileManager.default.fileExists(atPath: first))
    }

    func testCaptureKindsAndRecoveredNames() {
        XCTAssertEqual(OutputFile.captureKind([0x0A, 0x0D, 0x0D, 0x0A, 0]), .pcapng)
        for magic: [UInt8] in [[0xD4, 0xC3, 0xB2, 0xA1], [0xA1, 0xB2, 0xC3, 0xD4], [0x4D, 0x3C, 0xB2, 0xA1], [0xA1, 0xB2, 0x3C, 0x4D]] {
            XCTAssertEqual(OutputFile.captureKind(magic), .pcap)
        }
        for other: [UInt8] in [[], [0x0A, 0x0D, 0x0D], Array("{\"a\"".utf8), Array("peerscope".utf8)] {
            XCTAssertNil(OutputFile.captureKind(other))
        }
        XCTAssertEqual(OutputFile.recoveredName(output: "live.pcapng", suffix: "Ab12Cd", kind: .pcapng), "live.recovered-Ab12Cd.pcapng")
        XCTAssertEqual(OutputFile.recoveredName(output: "sim.pcap", suffix: "Ab12Cd", kind: .pcap), "sim.recovered-Ab12Cd.pcap")
        XCTAssertEqual(OutputFile.recoveredName(output: "capture", suffix: "Ab12Cd", kind: .pcapng), "capture.recovered-Ab12Cd.pcapng")
        XCTAssertEqual(OutputFile.recoveredName(output: "out.json", suffix: "Ab12Cd", kind: .pcap), "out.json.recovered-Ab12Cd.pcap")
        XCTAssertEqual(OutputFile.recoveredName(output: ".pcapng", suffix: "Ab12Cd", kind: .pcapng), ".pcapng.recovered-Ab12Cd.pcapng")
    }

    // MARK: only where a lock proves a writer dead

    /// The calls of a folder on NFS.
    var remote: FileSystemCalls {
        var c = FileSystemCalls()
        c.isLocal = { _ in false }
        c.fileSystemName = { _ in "nfs" }
        return c
    }

    func testNothingIsTouchedWhereTheFileSystemIsNotKnownToBeLocal() throws {
        let dir = TempDir()
        let stale = dir.write(".out.json.peerscope-Ab12Cd", [1])
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path, where: { _ in true }, calls: remote),
                       [StaleTemporary(path: stale, output: "out.json", outcome: .notLocal(files: 1, fileSystem: "nfs"))])
        XCTAssertTrue(FileManager.default.fileExists(atPath: stale))
        // The test folder itself is local (where these tests run): the same call with the real check acts.
        let f = open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { close(f) }
        if OutputFile.isOnLocalFileSystem(f) {
            XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { _ in true }.map(\.path), [stale])
        }
    }

    /// Where nothing can be cleaned up, the run says so once, naming the folder and why, and only when
    /// something there looks like an earlier run's temporary file.
    func testAFolderNotOnALocalFileSystemIsSaidOnceWhenItHoldsWhatLooksStale() throws {
        let dir = TempDir()
        let a = dir.write(".out.pcapng.peerscope-Ab12Cd", [1])
        let b = dir.write(".out.pcapng.peerscope-Zz99Yy", [2])
        _ = dir.write(".other.pcapng.peerscope-Ab12Cd", [3])   // another output's
        let w = try OutputFile(path: dir.path + "/out.pcapng", option: "--write", mode: .replace, calls: remote)
        w.discard()
        XCTAssertEqual(w.staleTemporaries, [StaleTemporary(path: a, output: "out.pcapng", outcome: .notLocal(files: 2, fileSystem: "nfs"))])
        XCTAssertEqual(w.removedStaleTemporaries, [])
        let message = try XCTUnwrap(w.staleTemporaries.first?.message)
        XCTAssertTrue(message.hasPrefix("left \(a) and 1 more file(s) like it as found: \(dir.path) is not on a local file system (nfs)"), message)
        XCTAssertTrue(message.contains("no temporary file of an earlier run is cleaned up there"), message)
        XCTAssertEqual(FileManager.default.contents(atPath: a).map { [UInt8]($0) }, [1])
        XCTAssertEqual(FileManager.default.contents(atPath: b).map { [UInt8]($0) }, [2])

        // A ring: the folder is said once, though both the ring's pattern and its first file's name are looked for.
        let ringDir = TempDir()
        let r3 = ringDir.write(".ring_00003_20261126120000.pcapng.peerscope-Xy12Zw", try killedCaptureBytes(frames: 2))
        _ = ringDir.write(".ring_00004_20261126120100.pcapng.peerscope-Xy12Zw", [4])
        let ring = try LiveCaptureWriter(path: ringDir.path + "/ring.pcapng", ring: .init(files: 2, bytesPerFile: 1 << 20), mode: .replace, calls: remote)
        ring.discard()
        XCTAssertEqual(ring.staleTemporaries, [StaleTemporary(path: r3, output: "ring_00003_20261126120000.pcapng", outcome: .notLocal(files: 2, fileSystem: "nfs"))])
        XCTAssertTrue(FileManager.default.fileExists(atPath: r3))

        // Nothing that looks like a dead run's file (another output's, a name off the pattern, a link, a folder): nothing said.
        let quiet = TempDir()
        _ = quiet.write(".other.pcapng.peerscope-Ab12Cd", [1])
        _ = quiet.write(".out.pcapng.peerscope-Ab12C", [2])
        let notes = quiet.write("notes.txt", [3])
        XCTAssertEqual(symlink(notes, quiet.path + "/.out.pcapng.peerscope-Sym123"), 0)
        XCTAssertEqual(link(notes, quiet.path + "/.out.pcapng.peerscope-Hrd123"), 0)
        try FileManager.default.createDirectory(atPath: quiet.path + "/.out.pcapng.peerscope-Dir123", withIntermediateDirectories: false)
        let q = try OutputFile(path: quiet.path + "/out.pcapng", option: "--write", mode: .replace, calls: remote)
        q.discard()
        XCTAssertEqual(q.staleTemporaries, [])
    }

    func testLocalFileSystemTypes() {
        // linux/magic.h: disk and memory file systems whose locks every process that could hold one sees.
        for local: UInt32 in [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0x794C_7630, 0xF2F5_2010, 0x2FC1_2FC1] {
            XCTAssertTrue(OutputFile.isLocalLinuxFileSystemType(local), String(local, radix: 16))
        }
        // NFS, CIFS, SMB2, FUSE (sshfs, Docker Desktop's grpcfuse), 9p, virtiofs, Ceph, AFS, Lustre, unknown.
        for remote: UInt32 in [0x6969, 0xFF53_4D42, 0xFE53_4D42, 0x6573_5546, 0x0102_1997, 0x6A65_6A63, 0x00C3_6400, 0x5346_414F, 0x0BD0_0BD0, 0] {
            XCTAssertFalse(OutputFile.isLocalLinuxFileSystemType(remote), String(remote, radix: 16))
        }
    }

    func testAWriterThatCouldNotLockItsFileUsesANameNoCleanerMatches() throws {
        let dir = TempDir()
        // flock fails for a passing reason (ENOLCK: the lock daemon is unreachable).
        let (f, tmp, lock) = try OutputFile.lockedTemporary(dir: dir.path, name: "out.pcapng", path: dir.path + "/out.pcapng",
                                                            takeLock: { _ in errno = ENOLCK; return -1 })
        defer { close(f) }
        XCTAssertEqual(lock, -1)
        let entry = String(tmp.split(separator: "/").last ?? "")
        XCTAssertTrue(entry.hasPrefix(".out.pcapng.peerscope~"), entry)
        XCTAssertNil(OutputFile.temporaryOutputName(entry))
        // Only that file is left (not the locked-name file made first), and it is the open one.
        XCTAssertEqual(names(dir), [entry])
        XCTAssertEqual(FileIdentity(path: tmp), FileIdentity(descriptor: f))
        // A later run whose lock works leaves it alone.
        XCTAssertEqual(OutputFile.removeStaleTemporaries(in: dir.path) { _ in true }, [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: tmp))
        unlink(tmp)
    }
}
