import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

final class AnalyzerTests: XCTestCase {
    func read(_ text: String, _ options: LogOptions = LogOptions()) throws -> LogReadResult {
        try LogAnalyzer.read(text: text, path: "device.log", options: options, directory: PeerDirectory())
    }

    static func console(_ ms: Int, _ message: String) -> String {
        let s = ms / 1000, f = ms % 1000
        let ss = s < 10 ? "0\(s)" : "\(s)"
        let ff = f < 10 ? "00\(f)" : (f < 100 ? "0\(f)" : "\(f)")
        return "2024-03-03 10:00:\(ss).\(ff)000+0000 App[1:2] [GCKSession] \(message)"
    }

    // MARK: channel bursts

    func testChannelBurstCoalescesIntoOneEventWithItsChannels() throws {
        let lines = [
            Self.console(10, "Not in connected state, so giving up for participant [2308149F] on channel [0]."),
            Self.console(12, "Not in connected state, so giving up for participant [2308149F] on channel [1]."),
            Self.console(15, "Not in connected state, so giving up for participant [0BADCAFE] on channel [0]."),
            Self.console(40, "Not in connected state, so giving up for participant [2308149F] on channel [2]."),
            // 5 s later: a new handshake attempt gave up again, a new event.
            Self.console(5040, "Not in connected state, so giving up for participant [2308149F] on channel [0]."),
        ]
        let r = try read(lines.joined(separator: "\n"))
        XCTAssertEqual(r.events.count, 3)
        let a = r.events.filter { $0.from.participantID == 0x2308_149F }
        XCTAssertEqual(a.map { $0.attrs["channel"] }, ["0,1,2", "0"])
        XCTAssertEqual(a.first?.attrs["lines"], "3")
        XCTAssertEqual(a.first?.evidence, .logLine(input: 0, line: 1))
        // First and last line as evidence, the span of the burst.
        XCTAssertEqual(a.first?.count, 3)
        XCTAssertEqual(a.first?.lastEvidence, .logLine(input: 0, line: 4))
        XCTAssertEqual(a.first.map { $0.lastT - $0.t }, 30 * CaptureTime.millisecond)
        XCTAssertEqual(a.first?.occurrences.map(\.evidence), [.logLine(input: 0, line: 1), .logLine(input: 0, line: 4)])
        XCTAssertEqual(a.last?.count, 1)
        XCTAssertNil(a.last?.lastEvidence)
        let other = r.events.first { $0.from.participantID == 0x0BAD_CAFE }
        XCTAssertEqual(other?.attrs["channel"], "0")
        XCTAssertEqual(other?.count, 1)
    }

    func testBurstWindowIsAnOption() throws {
        let lines = [
            Self.console(0, "ICE timeout expired for participant [2308149F] on channel [0] state [ICE]."),
            Self.console(300, "ICE timeout expired for participant [2308149F] on channel [1] state [ICE]."),
        ].joined(separator: "\n")
        XCTAssertEqual(try read(lines).events.count, 2)
        var o = LogOptions()
        o.coalesceWindow = CaptureTime.second
        let r = try read(lines, o)
        XCTAssertEqual(r.events.count, 1)
        XCTAssertEqual(r.events.first?.attrs["channel"], "0,1")
    }

    func testDistinctStateChangesAreNotMerged() throws {
        let text = """
        2024-03-03 10:00:00.000000+0000 App[1:2] [MCSession] PeerID [Eve] change state from [Not Connected] to [Connecting].
        2024-03-03 10:00:00.100000+0000 App[1:2] [MCSession] Peer [<MCPeerID: 0x1 DisplayName = Eve>] changed state from [Not Connected] to [Connecting]; pd((null)) d(<A: 0x2>) prop(1).
        2024-03-03 10:00:00.200000+0000 App[1:2] [MCSession] PeerID [Eve] change state from [Connecting] to [Not Connected].
        2024-03-03 10:00:00.300000+0000 App[1:2] [MCSession] PeerID [Eve] change state from [Not Connected] to [Connecting].
        """
        let r = try read(text)
        XCTAssertEqual(r.events.map { $0.attrs["to"] }, ["Connecting", "Not Connected", "Connecting"])
        XCTAssertEqual(r.events.first?.attrs["lines"], "2")
    }

    func testHandshakeTimeoutSignatureKeepsItsKindsApart() throws {
        // One participant, two channels: scheduled, ICE timeout, giving up: three events with two channels each.
        let lines = [
            Self.console(0, "Scheduling ICE connection timeout for participant [2308149F] on channel [0]."),
            Self.console(1, "Scheduling ICE connection timeout for participant [2308149F] on channel [1]."),
            Self.console(10_000, "ICE timeout expired for participant [2308149F] on channel [0] state [ICE]."),
            Self.console(10_000, "Not in connected state, so giving up for participant [2308149F] on channel [0]."),
            Self.console(10_001, "ICE timeout expired for participant [2308149F] on channel [1] state [Connecting]."),
            Self.console(10_001, "Not in connected state, so giving up for participant [2308149F] on channel [1]."),
        ]
        let r = try read(lines.joined(separator: "\n"))
        XCTAssertEqual(r.events.map(\.kind), [.logICEScheduled, .iceTimeout, .gckGivingUp])
        XCTAssertEqual(r.events.map { $0.attrs["channel"] }, ["0,1", "0,1", "0,1"])
        XCTAssertEqual(r.events[1].t &- r.events[0].t, 10 * CaptureTime.second)
    }

    func testAnyLineNamingIDStringAndNameTeachesTheDirectory() throws {
        let dir = PeerDirectory()
        _ = try LogAnalyzer.read(text: "Invite timeout for peer [<MCPeerID: 0x1> idString[1ddatjp8m3xy7] pid64[5A2DDCB42308149F] displayName[the-air]] fired.",
                                 directory: dir)
        XCTAssertEqual(dir.peerIDs(named: "the-air"), [0x5A2D_DCB4_2308_149F])
        XCTAssertEqual(dir.hint(forParticipant: 0x2308_149F).displayName, "the-air")
    }

    // MARK: unknown lines

    func testUnknownLinesAreCountedPerFormatAndListedOnRequest() throws {
        let text = """
        2024-03-03 10:00:00.000000+0000 App[1:2] [GCKSession] Something the framework never printed.
        2024-03-03 10:00:00.000000+0000 App[1:2] [GCKSession] Disconnecting participant [2308149F].
        2024-03-03 10:00:01.000000+0000 App[1:2] Something the app said
        """
        let quiet = try read(text)
        XCTAssertEqual(quiet.unknownCounts, ["xcode": 2])
        XCTAssertTrue(quiet.unknownLines.isEmpty)
        XCTAssertEqual(quiet.events.map(\.kind), [.disconnected])
        XCTAssertEqual(quiet.unknownSummary, ["xcode: 2 entries not understood"])
        var o = LogOptions()
        o.collectUnknown = true
        let loud = try read(text, o)
        XCTAssertEqual(loud.unknownLines.map(\.line), [1, 3])
        XCTAssertEqual(loud.unknownLines.first?.description, "device.log:1: Something the framework never printed.")
        let nd = try read(#"{"timestamp":"2024-03-03 10:00:00.000000+0000","eventMessage":"Routing table of a stranger."}"#)
        XCTAssertEqual(nd.unknownCounts, ["log-ndjson": 1])
        XCTAssertEqual(quiet.recognized["log-mpc-disconnect"], 1)
    }

    // MARK: malformed input

    func testBinaryJunkLongLinesAndBadDatesGiveDiagnosticsNamingTheLine() throws {
        var bytes: [UInt8] = Array("2024-03-03 10:00:00.000000+0000 App[1:2] [GCKSession] Disconnecting participant [2308149F].\n".utf8)
        bytes += [0x00, 0xFF, 0x13, 0x37, 0x00, 0x01, 0x0A]                      // line 2: binary
        bytes += Array(String(repeating: "A", count: 100_000).utf8) + [0x0A]     // line 3: very long
        bytes += Array("2024-13-45 25:61:00.000000+0000 App[1:2] [GCKSession] Disconnecting participant [0BADCAFE].\n".utf8) // line 4: bad date
        bytes += [0xC3, 0x28, 0x20, 0x41, 0x0A]                                   // line 5: invalid UTF-8
        let r = LogAnalyzer.read(bytes: bytes, path: "junk.log", input: 2, options: LogOptions(), directory: PeerDirectory(), engine: .builtin)
        func diag(_ id: String) -> Diagnostic? { r.problems.first { $0.id == id } }
        XCTAssertEqual(diag("log.line.binary")?.evidence, .logLine(input: 2, line: 2))
        XCTAssertEqual(diag("log.line.too_long")?.evidence, .logLine(input: 2, line: 3))
        XCTAssertEqual(diag("log.time.invalid")?.evidence, .logLine(input: 2, line: 4))
        XCTAssertEqual(diag("log.line.encoding")?.evidence, .logLine(input: 2, line: 5))
        XCTAssertTrue(diag("log.line.binary")?.message.hasPrefix("junk.log: ") ?? false)
        // The bad-date line still counts, at the time of the line before.
        XCTAssertEqual(r.events.map(\.from.participantID), [0x2308_149F, 0x0BAD_CAFE])
        XCTAssertEqual(r.events.last?.attrs["time"], "inferred")
    }

    func testRandomBytesNeverTrap() {
        var s: UInt64 = 42
        for round in 0..<20 {
            var bytes: [UInt8] = []
            for _ in 0..<4000 {
                s = s &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: s >> 56))
            }
            // Salt with fragments of real lines so parsers get deep.
            bytes += Array("\n2024-03-03 10:00:00.000000+0000 App[1:2] [GCKSession] Not in connected state, so giving up for participant [".utf8)
            bytes += Array("\n[{\"eventMessage\":\"Peer [\(round)".utf8)
            for f in [LogFormat.xcode, .logJSON, .logNDJSON, .logDefault, .plain] {
                _ = LogAnalyzer.read(bytes: bytes, path: "fuzz", input: 0, options: LogOptions(format: f), directory: PeerDirectory(), engine: .builtin)
            }
            _ = LogAnalyzer.read(bytes: bytes, path: "fuzz", input: 0, options: LogOptions(), directory: PeerDirectory(), engine: .builtin)
        }
    }

    func testHostileLinesStayFast() throws {
        // Thousands of partial matches for formats with several `%@`.
        let hostile = String(repeating: "Peer [x] changed state from [", count: 500)
        // Every literal present, in order, many times: only the end does not fit.
        let ambiguous = String(repeating: "Peer [a] changed state from [b] to [c]; pd(d) d(e) prop(1).", count: 200) + " X"
        let many = (0..<100).map { _ in Self.console(0, hostile) + "\n" + Self.console(0, ambiguous) }.joined(separator: "\n")
        let start = Date()
        let r = try read(many)
        XCTAssertEqual(r.unknownCounts["xcode"], 200)
        XCTAssertLessThan(Date().timeIntervalSince(start), 20)
    }

    func testBinaryFloodIsCapped() {
        let bytes = [UInt8]((0..<200).flatMap { _ in [0x00, 0x01, 0x0A] })
        let r = LogAnalyzer.read(bytes: bytes, path: "bin", input: 0, options: LogOptions(), directory: PeerDirectory(), engine: .builtin)
        XCTAssertEqual(r.problems.filter { $0.id == "log.line.binary" }.count, 21)   // 20 named + one "more" summary
        XCTAssertTrue(r.problems.contains { $0.message.contains("180 more") })
    }

    func testBrokenJSON() throws {
        let r = try read("""
        {"timestamp":"2024-03-03 10:00:00.000000+0000","eventMessage":"Disconnecting participant [2308149F]."}
        {"timestamp":"2024-03-03 10:00:00.000000+0000","eventMessage":"unterminated
        {"timestamp":"not a time","eventMessage":"Disconnecting participant [0BADCAFE]."}
        """)
        XCTAssertEqual(r.format, .logNDJSON)
        XCTAssertEqual(r.events.count, 2)
        XCTAssertEqual(r.problems.first { $0.id == "log.json.malformed" }?.evidence, .logLine(input: 0, line: 2))
        XCTAssertEqual(r.problems.first { $0.id == "log.time.invalid" }?.evidence, .logLine(input: 0, line: 3))
        let arr = try read("[{\"eventMessage\":\"Disconnecting participant [2308149F].\",\"timestamp\":\"2024-03-03 10:00:00+0000\"},{\"eventMessage\":")
        XCTAssertEqual(arr.events.count, 1)
        XCTAssertTrue(arr.problems.contains { $0.id == "log.json.unterminated" })
    }

    // MARK: registry

    func testRegistryIdsAreUniqueAndEveryExampleIsUnderstoodByItsPlugin() throws {
        let plugins = LogPluginRegistry.builtins
        let ids = plugins.map(\.id)
        XCTAssertEqual(Set(ids).count, ids.count, "duplicate ids")
        XCTAssertEqual(LogPluginRegistry.plugins.map(\.id), ids)
        for p in plugins {
            XCTAssertTrue(p.id.hasPrefix("log-"), p.id)
            XCTAssertFalse(p.rules.isEmpty, p.id)
            XCTAssertFalse(p.descriptor.summary.isEmpty, p.id)
            for r in p.rules {
                if case .format(let f) = r.matcher { XCTAssertFalse(f.format.contains("invalid built-in pattern"), "\(p.id): \(r.shape)") }
                XCTAssertFalse(r.needle.isEmpty, "\(p.id) has a rule without prefilter: \(r.shape)")
            }
            let r = try read(p.descriptor.example)
            XCTAssertEqual(r.recognized[p.id], 1, "\(p.id) does not understand its own example: \(p.descriptor.example) (got \(r.recognized))")
        }
    }

    // MARK: speed

    func testManyLinesStayFast() throws {
        var lines: [String] = []
        for i in 0..<20_000 {
            switch i % 4 {
            case 0: lines.append(Self.console(i % 60_000, "Retransmitting Heartbeat with SN [\(i)] to participant [2308149F] over channel [0]."))
            case 1: lines.append(Self.console(i % 60_000, "My routing table: 2 nodes."))
            case 2: lines.append(Self.console(i % 60_000, "Sending 120 bytes of data to participant 1234, mode=0."))
            default: lines.append(Self.console(i % 60_000, "PeerID [Bob] change state from [Connecting] to [Connected]."))
            }
        }
        let text = lines.joined(separator: "\n")
        let start = Date()
        let r = try read(text)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(r.entries, 20_000)
        XCTAssertEqual(r.recognized["log-mpc-retransmit"], 5_000)
        XCTAssertLessThan(elapsed, 30, "20k lines took \(elapsed) s")
    }

    // MARK: time zones

    func testZonelessStampsWarnAndTakeTheGivenZone() throws {
        let line = "2026-01-15 11:00:00.050 Df ChatApp[1311:59cf9] Inviting Bob's iPad"
        let utc = try read(line)
        XCTAssertEqual(utc.zonelessInputs, [0: 1])
        XCTAssertTrue(utc.problems.contains { $0.id == "log.time.no_zone" && $0.message.contains("read as UTC") })
        let t0 = try XCTUnwrap(utc.events.first?.t)
        var o = LogOptions()
        o.timeZone = TimeZone(identifier: "Europe/Paris")
        let paris = try read(line, o)
        XCTAssertEqual(paris.zonelessInputs, [:])
        XCTAssertFalse(paris.problems.contains { $0.id == "log.time.no_zone" })
        XCTAssertEqual(paris.events.first.map { t0 - $0.t }, 3600 * CaptureTime.second, "11:00 in Paris in January is 10:00 UTC")
        // Summer time: the same zone is UTC+2 in July.
        let july = try read("2026-07-15 11:00:00.050 Df ChatApp[1311:59cf9] Inviting Bob's iPad", o)
        let julyUTC = try read("2026-07-15 09:00:00.050 Df ChatApp[1311:59cf9] Inviting Bob's iPad", LogOptions())
        XCTAssertEqual(july.events.first?.t, julyUTC.events.first?.t)
        // A stamp with its own zone is never shifted, and never warned about.
        let zoned = try read("2026-01-15 10:00:00.050000+0000 ChatApp[1:2] Inviting Bob's iPad", o)
        XCTAssertEqual(zoned.events.first?.t, paris.events.first?.t)
        XCTAssertEqual(zoned.zonelessInputs, [:])
    }

    func testEmptyLogAndJSONEntriesCount() throws {
        XCTAssertTrue(try read("").problems.contains { $0.id == "log.empty" })
        XCTAssertTrue(try read("\n\n").problems.contains { $0.id == "log.empty" })
        XCTAssertFalse(try read(Self.console(10, "hello")).problems.contains { $0.id == "log.empty" })
        let json = """
        [{
          "timestamp" : "2026-01-15 10:00:00.050000+0000",
          "eventMessage" : "Inviting Bob's iPad",
          "processImagePath" : "/ChatApp"
        },{
          "timestamp" : "2026-01-15 10:00:01.050000+0000",
          "eventMessage" : "Peer Bob's iPad changed state: 2",
          "processImagePath" : "/ChatApp"
        }]
        """
        let r = try read(json)
        XCTAssertEqual(r.format, .logJSON)
        XCTAssertEqual(r.entries, 2)
        XCTAssertEqual(r.lines, 2, "entries, not the \(json.split(separator: "\n").count) physical lines")
    }
}
