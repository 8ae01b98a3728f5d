import PeerscopeCore
@testable import PeerscopeLogs
import XCTest

/// The same MPC line in every input style gives the same event at the same UTC time.
final class InputStyleTests: XCTestCase {
    static let msg = "Not in connected state, so giving up for participant [2308149F] on channel [0]."

    /// 2018-09-15 19:02:55.002888 at +01:00 = 18:02:55.002888 UTC.
    static let t0: Nanos = (CaptureTime.days(year: 2018, month: 9, day: 15) * 86400 + 18 * 3600 + 2 * 60 + 55) * CaptureTime.second + 2_888_000

    func read(_ text: String, _ options: LogOptions = LogOptions()) throws -> LogReadResult {
        try LogAnalyzer.read(text: text, path: "test.log", options: options, directory: PeerDirectory())
    }

    func assertGivingUp(_ r: LogReadResult, at t: Nanos, format: LogFormat, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.format, format, file: file, line: line)
        XCTAssertEqual(r.events.count, 1, "\(r.events)", file: file, line: line)
        XCTAssertEqual(r.events.first?.kind, .gckGivingUp, file: file, line: line)
        XCTAssertEqual(r.events.first?.t, t, file: file, line: line)
        XCTAssertEqual(r.events.first?.from.participantID, 0x2308_149F, file: file, line: line)
        XCTAssertEqual(r.events.first?.source, "log-mpc-giving-up", file: file, line: line)
        XCTAssertEqual(r.unknownCounts, [:], file: file, line: line)
    }

    func testXcodeConsole() throws {
        let r = try read("2018-09-15 19:02:55.002888+0100 App[25100:3633729] [GCKSession] \(Self.msg)\n")
        assertGivingUp(r, at: Self.t0, format: .xcode)
    }

    func testLogShowDefaultStyle() throws {
        let text = """
        Filtering the log data using "subsystem == "com.apple.multipeerconnectivity""
        Timestamp                       Thread     Type        Activity             PID    TTL
        2018-09-15 19:02:55.002888+0100 0x3778b1   Default     0x0                  25100  0    My App: (MultipeerConnectivity) [com.apple.multipeerconnectivity:GCKSession] \(Self.msg)
        --------------------------------------------------------------------------------------------------------------------
        Log      - Default:          1, Info:                0, Debug:             0, Error:          0, Fault:          0
        Activity - Create:           0, Transition:          0, Actions:           0
        """
        let r = try read(text)
        assertGivingUp(r, at: Self.t0, format: .logDefault)
        XCTAssertEqual(r.entries, 1)
    }

    func testLogShowCompactStyleHasNoZone() throws {
        let text = """
        Timestamp               Ty Process[PID:TID]
        2018-09-15 19:02:55.002 Df App[25100:3778b1] (MultipeerConnectivity) [com.apple.multipeerconnectivity:GCKSession] \(Self.msg)
        """
        // Without a zone the stamp is read as UTC unless told otherwise.
        let utc = try read(text)
        assertGivingUp(utc, at: Self.t0 + 3600 * CaptureTime.second - 888_000, format: .logCompact)
        var o = LogOptions()
        o.utcOffsetSeconds = 3600
        assertGivingUp(try read(text, o), at: Self.t0 - 888_000, format: .logCompact)
    }

    func testLogShowSyslogStyle() throws {
        let text = """
        Timestamp                       (process)[PID]
        2018-09-15 19:02:55.002888+0100  localhost App[25100]: (MultipeerConnectivity) [com.apple.multipeerconnectivity:GCKSession] \(Self.msg)
        """
        assertGivingUp(try read(text), at: Self.t0, format: .logSyslog)
    }

    func testLogShowJSONStyle() throws {
        let text = """
        [{
          "traceID" : 3169743378388877828,
          "eventMessage" : "\(Self.msg)",
          "eventType" : "logEvent",
          "source" : null,
          "formatString" : "Not in connected state, so giving up for participant [%08X] on channel [%d].",
          "subsystem" : "com.apple.multipeerconnectivity",
          "category" : "GCKSession",
          "processImagePath" : "\\/private\\/var\\/containers\\/Bundle\\/Application\\/X\\/App.app\\/App",
          "timestamp" : "2018-09-15 19:02:55.002888+0100",
          "messageType" : "Default",
          "processID" : 25100
        },{
          "eventMessage" : "Peer lost: idString [1ddatjp8m3xy7] moreComing [0].",
          "subsystem" : "com.apple.multipeerconnectivity",
          "category" : "MCNearbyServiceBrowser",
          "timestamp" : "2018-09-15 19:02:56.000000+0100",
          "processID" : 25100
        }]
        """
        let r = try read(text)
        XCTAssertEqual(r.format, .logJSON)
        XCTAssertEqual(r.events.map(\.kind), [.gckGivingUp, .lost])
        XCTAssertEqual(r.events.first?.t, Self.t0)
        XCTAssertEqual(r.events.first?.evidence, .logLine(input: 0, line: 1))
        XCTAssertEqual(r.events.last?.evidence, .logLine(input: 0, line: 13))
        XCTAssertEqual(r.events.last?.from.peerID, 0x5A2D_DCB4_2308_149F)
    }

    func testNDJSONStyleWithTrailer() throws {
        let text = """
        {"timezoneName":"","messageType":"Default","eventType":"logEvent","subsystem":"com.apple.multipeerconnectivity","category":"GCKSession","processImagePath":"\\/App","timestamp":"2018-09-15 19:02:55.002888+0100","eventMessage":"\(Self.msg)","processID":25100}
        {"count":1,"finished":1}
        """
        let r = try read(text)
        assertGivingUp(r, at: Self.t0, format: .logNDJSON)
        XCTAssertTrue(r.problems.isEmpty, "\(r.problems)")
    }

    func testConsoleAppCopiedRows() throws {
        // Console.app copies the visible columns tab-separated; the column set varies.
        let a = "default\t19:02:55.002888+0100\tApp\tcom.apple.multipeerconnectivity\tGCKSession\t\(Self.msg)"
        let r = try read(a, LogOptions(baseDate: LogDate(year: 2018, month: 9, day: 15)))
        assertGivingUp(r, at: Self.t0, format: .consoleApp)
        let b = "2018-09-15 19:02:55.002888+0100\terror\tApp\t\(Self.msg)"
        assertGivingUp(try read(b), at: Self.t0, format: .consoleApp)
    }

    func testDeviceSyslogFromIdevicesyslog() throws {
        let text = """
        Sep 15 19:02:55 iPhone App(MultipeerConnectivity)[25100] <Notice>: \(Self.msg)
        Sep 15 19:02:56 iPhone App[25100] <Notice>: Keep-alive timeout for peer: Bob
        Sep 31 19:02:57 iPhone App(MultipeerConnectivity)[25100] <Notice>: Disconnecting participant [2308149F].
        """
        var o = LogOptions(baseDate: LogDate(year: 2018, month: 1, day: 1))
        o.utcOffsetSeconds = 3600
        let r = try read(text, o)
        XCTAssertEqual(r.format, .deviceSyslog)
        XCTAssertEqual(r.events.map(\.kind), [.gckGivingUp, .appTimeout, .disconnected])
        XCTAssertEqual(r.events.first?.t, Self.t0 - 2_888_000)
        XCTAssertEqual(r.events[1].t, Self.t0 - 2_888_000 + CaptureTime.second)
        // September has no 31st: named, and the entry keeps the time before it.
        XCTAssertEqual(r.problems.first { $0.id == "log.time.invalid" }?.evidence, .logLine(input: 0, line: 3))
        XCTAssertEqual(r.events[2].attrs["time"], "inferred")
    }

    func testTimeZonesGiveTheSameInstant() throws {
        let a = try read("2018-09-15 19:02:55.002888+0100 App[1:2] \(Self.msg)")
        let b = try read("2018-09-15 10:02:55.002888-0800 App[1:2] \(Self.msg)")
        let c = try read("2018-09-15T18:02:55.002888Z \(Self.msg)")
        let d = try read("2018-09-15 23:32:55.002888+05:30 App[1:2] \(Self.msg)")
        XCTAssertEqual(a.events.first?.t, Self.t0)
        XCTAssertEqual(b.events.first?.t, Self.t0)
        XCTAssertEqual(c.events.first?.t, Self.t0)
        XCTAssertEqual(d.events.first?.t, Self.t0)
    }

    func testPlainPrintsWithoutTimestampsTakeTheBaseDateAndKeepOrder() throws {
        let text = """
        Peer Bob changed state: 1
        Peer connecting: Bob
        Keep-alive timeout for peer: Bob
        Disconnecting from peer: Bob
        """
        let ref: Nanos = 1_700_000_000 * CaptureTime.second
        let r = try read(text, LogOptions(referenceTime: ref))
        XCTAssertEqual(r.format, .plain)
        XCTAssertEqual(r.events.map(\.kind), [.stateChange, .appTimeout, .disconnected])  // the two "connecting" prints are one change
        XCTAssertEqual(r.events.map(\.from.displayName), ["Bob", "Bob", "Bob"])
        XCTAssertEqual(r.events[1].attrs["what"], "keep_alive")
        XCTAssertEqual(r.events.first?.attrs["time"], "inferred")
        XCTAssertTrue(r.events.allSatisfy { $0.t >= ref && $0.t < ref + 1000 })
        XCTAssertEqual(r.events.map(\.t), r.events.map(\.t).sorted())
        XCTAssertTrue(r.problems.contains { $0.id == "log.time.missing" })
    }

    func testPlainPrintsWithTimesOfDayUseTheDateOption() throws {
        let text = """
        23:59:59.500 Handshake timeout for peer: Carol
        [00:00:00.250] Ignoring duplicate connection from Carol
        """
        let r = try read(text, LogOptions(baseDate: LogDate(parsing: "2026-11-21")))
        let day = CaptureTime.days(year: 2026, month: 11, day: 21) * 86400 * CaptureTime.second
        XCTAssertEqual(r.events.map(\.kind), [.appTimeout, .appDuplicateIgnored])
        XCTAssertEqual(r.events.first?.t, day + (23 * 3600 + 59 * 60 + 59) * CaptureTime.second + 500 * CaptureTime.millisecond)
        // Past midnight: the next day.
        XCTAssertEqual(r.events.last?.t, day + 86400 * CaptureTime.second + 250 * CaptureTime.millisecond)
        XCTAssertNil(r.events.first?.attrs["time"])
    }

    func testTimeOfDayWithoutAnyDateIsReported() throws {
        let r = try read("12:00:00.000 Handshake timeout for peer: Carol")
        XCTAssertEqual(r.events.count, 1)
        XCTAssertTrue(r.problems.contains { $0.id == "log.time.no_date" && $0.evidence == .logLine(input: 0, line: 1) })
    }

    func testMultiLineEntriesBelongToTheEntryAbove() throws {
        let text = """
        2024-03-03 10:00:00.000000+0000 App[1:2] [MCNearbyServiceBrowser] NSNetServiceBrowser did not search with error dict [{
            NSNetServicesErrorCode = "-72008";
            NSNetServicesErrorDomain = 10;
        }].
        2024-03-03 10:00:01.000000+0000 App[1:2] [MCNearbyServiceBrowser] Peer lost: idString [1ddatjp8m3xy7] moreComing [0].
        """
        let r = try read(text)
        XCTAssertEqual(r.entries, 2)
        XCTAssertEqual(r.events.map(\.kind), [.permissionError, .lost])
        XCTAssertEqual(r.events.first?.attrs["code"], "-72008")
        XCTAssertEqual(r.events.first?.attrs["permission"], "local-network")
        XCTAssertEqual(r.events.first?.evidence, .logLine(input: 0, line: 1))
        XCTAssertEqual(r.events.last?.evidence, .logLine(input: 0, line: 5))
        XCTAssertEqual(r.unknownCounts, [:])
    }

    func testAnOpenBracketInAPrintDoesNotSwallowTheNextLines() throws {
        let text = """
        Handshake rejected (code 3
        Ignoring duplicate connection from Carol
        Received data from Carol: {
        type = "keep_alive";
        deviceId = Carol;
        }
        Keep-alive timeout for peer: Carol
        """
        let r = try read(text)
        XCTAssertEqual(r.events.map(\.kind), [.appDuplicateIgnored, .appKeepAlive, .appTimeout])
        XCTAssertEqual(r.events.map(\.evidence), [.logLine(input: 0, line: 2), .logLine(input: 0, line: 3), .logLine(input: 0, line: 7)])
        XCTAssertEqual(r.unknownCounts, ["plain": 1])   // "Handshake rejected (code 3" is not the seed's line
        XCTAssertEqual(r.entries, 4)
    }

    func testSwiftPrintsBetweenConsoleLinesTakeThePreviousTime() throws {
        let text = """
        2024-03-03 10:00:00.000000+0000 App[1:2] [MCSession] PeerID [Dan] change state from [Connecting] to [Not Connected].
        Peer Dan changed state: 0
        Handshake timeout for peer: Dan
        2024-03-03 10:00:05.000000+0000 App[1:2] [MCSession] PeerID [Dan] change state from [Not Connected] to [Connecting].
        """
        let r = try read(text)
        XCTAssertEqual(r.format, .xcode)
        let base = (CaptureTime.days(year: 2024, month: 3, day: 3) * 86400 + 36000) * CaptureTime.second
        XCTAssertEqual(r.events.map(\.kind), [.stateChange, .appTimeout, .stateChange])
        XCTAssertEqual(r.events[0].attrs["lines"], "2")   // framework line + app print of the same change
        XCTAssertEqual(r.events[0].attrs["from"], "Connecting")
        XCTAssertEqual(r.events[1].t, base + 2)
        XCTAssertEqual(r.events[1].attrs["time"], "inferred")
        XCTAssertEqual(r.events[2].t, base + 5 * CaptureTime.second)
    }

    func testFormatOverride() throws {
        // Forced to plain, a console line is a print with a stamp: the message still matches.
        let r = try read("2018-09-15 19:02:55.002888+0100 App[25100:3633729] [GCKSession] \(Self.msg)", LogOptions(format: .plain))
        XCTAssertEqual(r.format, .plain)
        XCTAssertEqual(r.events.first?.kind, .gckGivingUp)
        XCTAssertEqual(r.events.first?.t, Self.t0)
        XCTAssertEqual(LogFormat(name: "ndjson"), .logNDJSON)
        XCTAssertEqual(LogFormat(name: "console"), .xcode)
        XCTAssertNil(LogFormat(name: "xml"))
    }

    func testUndatedLogTakesItsDateFromAnotherInput() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-logs-\(getpid())-\(#line)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("device.log").path
        let b = dir.appendingPathComponent("app.txt").path
        try "2024-03-03 10:00:00.000000+0000 App[1:2] [GCKSession] \(Self.msg)\n".write(toFile: a, atomically: true, encoding: .utf8)
        try "10:00:02.000 Keep-alive timeout for peer: Bob\n".write(toFile: b, atomically: true, encoding: .utf8)
        let r = try LogAnalyzer.read(paths: [a, b], firstInput: 3, directory: PeerDirectory())
        XCTAssertEqual(r.formats, [.xcode, .plain])
        XCTAssertEqual(r.events.map(\.kind), [.gckGivingUp, .appTimeout])
        XCTAssertEqual(r.events.map(\.evidence), [.logLine(input: 3, line: 1), .logLine(input: 4, line: 1)])
        let base = (CaptureTime.days(year: 2024, month: 3, day: 3) * 86400 + 36000) * CaptureTime.second
        XCTAssertEqual(r.events.last?.t, base + 2 * CaptureTime.second)
    }
}
