import Foundation
import PeerscopeCore
import PeerscopeDetectors
@testable import PeerscopeReports
import PeerscopeTimeline
import XCTest

#if canImport(FoundationXML)
import FoundationXML
#endif

final class ReportTests: XCTestCase {
    let A = Script.alice, B = Script.bob, C = Script.carol
    static let secret = "SECRET-CHAT-TEXT-42"

    /// One input with findings of every kind, discovery, and a chat message whose text must never show.
    func everyKind() throws -> Script { try ReportTests.everyKind() }

    static func everyKind() throws -> Script {
        let A = Script.alice, B = Script.bob, C = Script.carol
        let s = Script()
        let a = try XCTUnwrap(IPAddress("192.0.2.1"))
        s.packet(.announced, 0, PeerHint(peerID: A.peerID, displayName: "Alice", address: a), .unknown,
                 attrs: ["service": "_peerscope._tcp", "txt.platform": "iOS", "port": "50000"], source: "mdns")
        s.packet(.resolved, 0.1, B, .unknown, attrs: ["service": "_peerscope._tcp", "port": "50001"], source: "mdns")
        // duplicate-connection + declined-invitation
        s.packet(.invite, 1, A, B)
        s.packet(.invite, 1.1, B, A)
        s.packet(.inviteResponse, 1.2, B, A, attrs: ["accepted": "false"])
        // reconnect-storm between Alice and Carol, with a chat message
        var t = 2.0
        for _ in 0 ..< 6 {
            s.connect(A, C, at: t)
            s.packet(.appChat, t + 0.5, A, C, attrs: ["text": ReportTests.secret])
            s.log(.disconnected, t + 1, C, A)
            t += 2
        }
        // handshake-timeout: Bob never answers ICE
        s.packet(.iceRequest, 20, A, B)
        // keepalive-timeout (log) and channel-error
        s.log(.gckTimeout, 21, PeerHint(participantID: PeerIdentity.participantID(0x0FED_CBA9_8765_4321)), attrs: ["wait": "Heartbeat"])
        s.packet(.checksumError, 22, C, A)
        // invitation-storm: a log finds Dave three times within a second
        let D = PeerHint(displayName: "Dave")
        for dt in [0.0, 0.3, 0.6] { s.log(.found, 24 + dt, D) }
        // flapping: the log sees Dave connect and drop three times within seconds
        for k in 0 ..< 3 {
            s.log(.stateChange, 26 + Double(k) * 3, D, attrs: ["to": "Connected"])
            s.log(.stateChange, 27.5 + Double(k) * 3, D, attrs: ["to": "Not Connected"])
        }
        return s
    }

    func testEveryKindIsFound() throws {
        let r = try everyKind().report(end: 40)
        XCTAssertEqual(Set(r.findings.map(\.kind)), Set(DetectorSuite.kinds))
    }

    // MARK: JSON and the schema

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    func python(_ args: [String]) -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3"] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func validate(_ json: String, name: String) throws {
        guard let (code, _) = python(["-c", "import jsonschema"]), code == 0 else {
            throw XCTSkip("python3 with jsonschema is not available")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-schema-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("\(name).json")
        try Data(json.utf8).write(to: file)
        let schema = ReportTests.root.appendingPathComponent("Schemas/peerscope.report.v1.schema.json").path
        let script = """
            import json, sys, jsonschema
            s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator.check_schema(s)
            errs = list(jsonschema.Draft202012Validator(s).iter_errors(d))
            for e in errs[:5]: print(list(e.absolute_path), e.message)
            sys.exit(1 if errs else 0)
            """
        let (rc, out) = try XCTUnwrap(python(["-c", script, schema, file.path]))
        XCTAssertEqual(rc, 0, "\(name): \(out)")
    }

    func testJSONReportsValidateAgainstTheSchema() throws {
        let empty = Report(inputs: [], timelines: .empty, findings: [])
        try validate(JSONReportWriter.render(empty), name: "empty")
        try validate(JSONReportWriter.render(try everyKind().report(end: 40)), name: "every-kind")
        let tl = Script.fullSession()
        try validate(JSONReportWriter.render(tl.report()), name: "session")
    }

    func testSchemaRejectsABrokenReport() throws {
        // The validation is real: a report missing `findings` and with a bad severity fails.
        var bad = JSONReportWriter.json(try everyKind().report(end: 40))
        if case .object(var members) = bad {
            members.removeAll { $0.0 == "findings" }
            bad = .object(members)
        }
        guard let (code, _) = python(["-c", "import jsonschema"]), code == 0 else {
            throw XCTSkip("python3 with jsonschema is not available")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("peerscope-schema-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("bad.json")
        try Data(bad.prettyText.utf8).write(to: file)
        let schema = ReportTests.root.appendingPathComponent("Schemas/peerscope.report.v1.schema.json").path
        let (rc, _) = try XCTUnwrap(python(["-c", "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))", schema, file.path]))
        XCTAssertNotEqual(rc, 0)
    }

    /// A live report gives its loss windows in `captureLosses` (the documented member, in every report);
    /// `stats.capture.losses` is schema 1's copy of exactly those windows (schema 1 is additive only), and
    /// both validate.
    func testLiveLossWindowsAreInCaptureLossesAndSchemaOnesCopyIsTheSame() throws {
        var r = try everyKind().report(end: 40)
        let drop = CaptureLoss(reason: .kernelDrop, start: Script.at(14), end: Script.at(15), count: 33, source: "vB")
        let queue = CaptureLoss(reason: .queueDrop, start: Script.at(16), end: Script.at(17), count: 5, source: "vB")
        r.stats.capture = LiveCaptureStats(interfaces: [InterfaceCaptureStats(interface: "vB", linkType: 1, received: 100,
                                                                              kernelDropped: 33, queueDropped: 5, pcapReceived: 100)],
                                           stopReason: "interrupt", losses: [drop, queue])
        r.captureLosses = [drop, queue]
        let text = JSONReportWriter.render(r)
        let v = try JSONParser.parse(text)
        let capture = try XCTUnwrap(v["stats"]?["capture"])
        XCTAssertEqual(capture.objectValue?.map(\.0), ["stopReason", "complete", "lost", "interfaces", "losses"])
        XCTAssertEqual(capture["lost"]?.int64Value, 38)
        let windows = v["captureLosses"]?.arrayValue ?? []
        XCTAssertEqual(windows.map { $0["reason"]?.stringValue ?? "" }, ["kernel-drop", "queue-drop"])
        XCTAssertEqual(windows.map { $0["count"]?.int64Value ?? -1 }, [33, 5])
        XCTAssertEqual(windows.map { $0["source"]?.stringValue ?? "" }, ["vB", "vB"])
        // The same windows (the copy has no ISO times).
        let members = ["reason", "startT", "endT", "count", "source"]
        func project(_ ws: [JSONValue]) -> [[JSONValue?]] { ws.map { w in members.map { w[$0] } } }
        XCTAssertEqual(project(capture["losses"]?.arrayValue ?? []), project(windows))
        XCTAssertEqual(project(windows).count, 2)
        try validate(text, name: "live")
    }

    func testStreamedJSONIsTheRenderedDocumentInPieces() throws {
        let r = try everyKind().report(end: 40)
        var pieces: [[UInt8]] = []
        JSONReportWriter.write(r, chunk: 256) { pieces.append($0) }
        XCTAssertGreaterThan(pieces.count, 3, "written in pieces, not as one string")
        XCTAssertEqual(String(decoding: pieces.joined(), as: UTF8.self), JSONReportWriter.render(r))
        XCTAssertEqual(JSONReportWriter.render(r), JSONReportWriter.json(r).prettyText + "\n")
        var compact = ""
        JSONReportWriter.write(r, pretty: false) { compact += String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(compact, JSONReportWriter.json(r).jsonText + "\n")
        XCTAssertNoThrow(try JSONParser.parse(compact))
    }

    /// Issue 13: the discovery section is written a peer at a time (never one value of every peer, nor
    /// alive while the peers are written) with the bytes of the whole value, pretty and compact, at
    /// any level, with no peers, with one, and with several that have names, addresses, ports and info.
    func testStreamedDiscoveryIsTheDiscoveryValuesBytes() {
        func reports() -> [Report] {
            let empty = Script()
            empty.packet(.tcpOpened, 1, Script.alice, Script.bob)
            let one = Script()
            one.packet(.resolved, 1, PeerHint(address: IPAddress("192.0.2.9")), .unknown,
                       attrs: ["service": "_ipp._tcp.local", "instance": "Printer", "port": "631", "host": "p.local"])
            let many = Script()
            for i in 0 ..< 12 {
                let h = PeerHint(address: IPAddress("192.0.2.\(10 + i)"))
                many.packet(.resolved, Double(i), h, .unknown,
                            attrs: ["service": i % 2 == 0 ? "_airplay._tcp.local" : "_peerchat._tcp.local", "instance": "Host \(i) \"q\"",
                                    "port": "\(7000 + i)", "host": "h\(i).local", "addresses": "192.0.2.\(10 + i),fe80::\(i)",
                                    "txt.model": "M\(i)", "txt.note": "ä\u{1}\(i)"])
                if i % 3 == 0 { many.packet(.goodbye, Double(i) + 0.5, h, .unknown, attrs: ["service": "_airplay._tcp.local"]) }
            }
            return [empty.report(), one.report(), many.report()]
        }
        let rs = reports()
        XCTAssertEqual(rs.map(\.discovery.peers.count), [0, 1, 12])
        for r in rs {
            for indent in ["  ", nil] as [String?] {
                for level in [0, 1, 3] {
                    var whole: [UInt8] = []
                    JSONReportWriter.discovery(r).write(to: &whole, indent: indent, level: level)
                    var streamed: [UInt8] = [], flushed: [UInt8] = []
                    JSONReportWriter.writeDiscovery(r, into: &streamed, indent: indent, level: level) { buffer in
                        flushed += buffer
                        buffer.removeAll()
                    }
                    XCTAssertEqual(String(decoding: flushed + streamed, as: UTF8.self), String(decoding: whole, as: UTF8.self))
                }
            }
            var pieces: [[UInt8]] = []
            JSONReportWriter.write(r, chunk: 64) { pieces.append($0) }
            XCTAssertEqual(String(decoding: pieces.joined(), as: UTF8.self), JSONReportWriter.json(r).prettyText + "\n")
        }
    }

    func testJSONKeyOrderAndFindingFields() throws {
        let r = try everyKind().report(end: 40)
        let v = try JSONParser.parse(JSONReportWriter.render(r))
        XCTAssertEqual(v.objectValue?.map(\.0), ["schema", "tool", "inputs", "complete", "inputProblems", "summary", "stats",
                                                 "captureLosses", "diagnostics", "discovery", "peers", "sessions", "findings", "detectors"])
        XCTAssertEqual(v["schema"]?.stringValue, "peerscope.report/1")
        let f = try XCTUnwrap(v["findings"]?.arrayValue?.first { $0["kind"]?.stringValue == "handshake-timeout" })
        XCTAssertEqual(f["peer"]?.stringValue, "Bob")
        XCTAssertEqual(f["peerID"]?.stringValue, PeerIdentity.idString(0x0FED_CBA9_8765_4321))
        XCTAssertEqual(f["t"]?.int64Value, Script.at(30), "the timer fires 10 s after the request at 20 s")
        XCTAssertEqual(v["stats"]?["firstT"]?.int64Value, Script.at(0))
        XCTAssertEqual(v["stats"]?["firstTime"]?.stringValue, CaptureTime.iso8601(Script.at(0)))
        XCTAssertEqual(v["diagnostics"]?["counts"]?["gck.header.short"]?.int64Value, 1)
        let item = try XCTUnwrap(v["diagnostics"]?["items"]?.arrayValue?.first)
        XCTAssertEqual(item["first"]?["frame"]?.int64Value, 1)
        XCTAssertEqual(item["offset"]?.int64Value, 3, "the byte offset of the first occurrence")
        XCTAssertTrue(TextReportWriter.render(r).contains("gck.header.short: short header (first at frame 1, offset 3)"))
        let alice = try XCTUnwrap(v["peers"]?.arrayValue?.first { $0["displayName"]?.stringValue == "Alice" })
        XCTAssertEqual(alice["participantID"]?.stringValue, PeerIdentity.participantHex(PeerIdentity.participantID(0x0123_4567_89AB_CDEF)))
        XCTAssertEqual(v["discovery"]?["services"]?.arrayValue?.first?["name"]?.stringValue, "_peerscope._tcp")
        let dAlice = try XCTUnwrap(v["discovery"]?["peers"]?.arrayValue?.first { $0["displayName"]?.stringValue == "Alice" })
        XCTAssertEqual(dAlice["port"]?.int64Value, 50000)
        XCTAssertEqual(dAlice["info"]?["platform"]?.stringValue, "iOS")
        XCTAssertEqual(dAlice["addresses"]?.arrayValue?.first?.stringValue, "192.0.2.1")
        // Stable: the same input renders the same bytes.
        XCTAssertEqual(JSONReportWriter.render(r), JSONReportWriter.render(try everyKind().report(end: 40)))
    }

    // MARK: Writers

    func testNoWriterPrintsMessageContents() throws {
        let r = try everyKind().report(end: 40)
        for (name, text) in [("text", TextReportWriter.render(r, colour: false, showAllTimeline: true)),
                             ("json", JSONReportWriter.render(r)), ("sarif", SARIFWriter.render(r)),
                             ("junit", JUnitWriter.render(r)), ("html", HTMLReportWriter.render(r))] {
            XCTAssertFalse(text.contains(ReportTests.secret), "\(name) leaks chat text")
        }
    }

    func testTextHasSummaryFirstAndColourOnlyWhenAsked() throws {
        let r = try everyKind().report(end: 40)
        let text = TextReportWriter.render(r, colour: false, showAllTimeline: false)
        let lines = text.split(separator: "\n").map(String.init)
        let peers = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("peers: ") })
        let sessions = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("sessions: ") })
        let findings = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("findings: ") })
        let timelines = try XCTUnwrap(lines.firstIndex { $0 == "Timelines" })
        let findingList = try XCTUnwrap(lines.firstIndex { $0 == "Findings" })
        XCTAssertLessThan(peers, timelines)
        XCTAssertLessThan(sessions, timelines)
        XCTAssertLessThan(findings, timelines)
        XCTAssertLessThan(timelines, findingList)
        XCTAssertTrue(lines.contains("  handshake-timeout: 1"), text)
        XCTAssertFalse(text.contains("\u{1B}["))
        XCTAssertTrue(TextReportWriter.render(r, colour: true, showAllTimeline: false).contains("\u{1B}["))
        XCTAssertTrue(text.contains("evidence: capture.pcapng frame"))
    }

    func testTextFoldsLongTimelinesUnlessAskedForAll() {
        let s = Script()
        for i in 0 ..< 60 {
            s.packet(i % 2 == 0 ? .invite : .inviteResponse, Double(i), i % 2 == 0 ? A : B, i % 2 == 0 ? B : A,
                     attrs: ["accepted": "true"])
        }
        // A problem deep in the middle of a long timeline stays visible when folded.
        s.log(.disconnected, 30.5, A, B)
        let r = s.report()
        let folded = TextReportWriter.render(r)
        XCTAssertTrue(folded.contains("more entries (--full-timeline shows all)"), folded)
        let aliceLines = folded.split(separator: "\n").filter { $0.hasPrefix("    +") && $0.contains("disconnected") }
        XCTAssertFalse(aliceLines.isEmpty, "the disconnect in the folded middle is still shown")
        XCTAssertFalse(TextReportWriter.render(r, showAllTimeline: true).contains("more entries"))
        // The hint names a flag that exists.
        XCTAssertTrue(TextReportWriter.render(r).contains("--full-timeline"))
    }

    func testNamesakesAreToldApartByPeerID() throws {
        let twin = PeerHint(peerID: 0x0555_6666_7777_8888, displayName: "Alice")
        let s = Script()
        s.facts.learn(peerID: 0x0555_6666_7777_8888, displayName: "Alice")
        s.connect(A, B, at: 0)
        s.packet(.invite, 5, twin, B)
        let text = TextReportWriter.render(s.report())
        let a1 = "Alice [\(PeerIdentity.idString(0x0123_4567_89AB_CDEF))]", a2 = "Alice [\(PeerIdentity.idString(0x0555_6666_7777_8888))]"
        XCTAssertTrue(text.contains("peers: 3 (\(a1), \(a2), Bob)") || text.contains("peers: 3 (\(a2), \(a1), Bob)"), text)
        XCTAssertTrue(text.contains("-> Bob") && !text.contains("Bob [\(PeerIdentity.idString(0x0FED_CBA9_8765_4321))]"),
                      "a unique name stays bare")
        XCTAssertTrue(text.contains("<- \(a2)"), text)
    }

    func testHostsWithoutAnMPCPeerIDAreOneLinePerHost() {
        let s = Script()
        let printer = PeerHint(address: IPAddress("192.0.2.50"))
        for (svc, port) in [("_ipp._tcp.local", "631"), ("_http._tcp.local", "80")] {
            s.packet(.resolved, 1, printer, .unknown, attrs: ["service": svc, "instance": "Office Printer", "port": port,
                                                              "host": "printer.local", "addresses": "192.0.2.50"])
        }
        let text = TextReportWriter.render(s.report())
        XCTAssertTrue(text.contains("  other hosts (no MPC peer ID):\n    printer.local: _http._tcp.local _ipp._tcp.local, ports 80 631, 192.0.2.50\n"), text)
    }

    func testTextReportEscapesControlCharactersFromTheWire() {
        let evil = PeerHint(peerID: 0x0555_6666_7777_8888, displayName: "\u{1B}[31mEvil\u{1B}[0m\nfindings: none\r\u{202E}")
        let s = Script()
        s.facts.learn(peerID: 0x0555_6666_7777_8888, displayName: evil.displayName)
        s.packet(.announced, 0, evil, .unknown, attrs: ["service": "_x._tcp.local", "info.note": "a\u{0}b"])
        s.packet(.invite, 1, evil, B)
        let text = TextReportWriter.render(s.report())
        XCTAssertFalse(text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x0D || $0.value == 0 || $0.value == 0x202E }, text)
        XCTAssertTrue(text.contains("\\u{1B}[31mEvil\\u{1B}[0m\\u{A}findings: none\\u{D}\\u{202E}"), text)
        XCTAssertEqual(text.components(separatedBy: "\nfindings: ").count, 2, "no forged summary line")
    }

    func testTimelineEvidenceNamesTheLogFileAndLine() {
        let s = Script()
        s.packet(.invite, 1, A, B)
        s.log(.inviteResponse, 2, B, A, attrs: ["accepted": "false"])
        let text = TextReportWriter.render(s.report())
        XCTAssertTrue(text.contains("(test; frame 1)"), text)
        XCTAssertTrue(text.contains("(log-test; device.log:1)"), text)
        XCTAssertFalse(text.contains("of input"), text)
    }

    func testTextReportHasADiscoverySection() throws {
        let s = Script()
        s.packet(.announced, 0, Script.alice, .unknown,
                 attrs: ["service": "_chat._tcp.local", "instance": "x", "peerID": PeerIdentity.idString(0x0123_4567_89AB_CDEF),
                         "port": "50000", "info.platform": "iOS", "addresses": "192.0.2.1"])
        // Another service of the same host (no MPC peer ID) adds a service but not its port.
        s.packet(.resolved, 1, Script.alice, .unknown,
                 attrs: ["service": "_companion-link._tcp.local", "instance": "Alice's phone", "port": "49152"])
        // The announcement was refreshed later: one `identity.advertised` event spans its times.
        s.facts.advertised(peerID: 0x0123_4567_89AB_CDEF, at: Script.at(0))
        s.facts.advertised(peerID: 0x0123_4567_89AB_CDEF, at: Script.at(120))
        s.packet(.invite, 130, A, B)
        let r = s.report()
        let text = TextReportWriter.render(r)
        let lines = text.split(separator: "\n").map(String.init)
        let disc = try XCTUnwrap(lines.firstIndex(of: "Discovery"), text)
        XCTAssertLessThan(disc, try XCTUnwrap(lines.firstIndex(of: "Timelines")))
        XCTAssertTrue(lines.contains("  service _chat._tcp.local: 1 instance, +0.000s .. +0.000s"), text)
        let alice = try XCTUnwrap(r.discovery.peers.first { $0.displayName == "Alice" })
        XCTAssertEqual(alice.port, 50000, "the MPC instance's port, not the companion service's")
        XCTAssertEqual(alice.services, ["_chat._tcp.local", "_companion-link._tcp.local"])
        XCTAssertEqual(alice.lastSeen, Script.at(120), "refreshes count as seen")
        XCTAssertTrue(text.contains("port 50000"), text)
        XCTAssertTrue(text.contains("discovery info: platform=iOS"), text)
        XCTAssertTrue(text.contains("first seen +0.000s, last seen +2m0.000s") || text.contains("last seen +120"), text)
    }

    func testSARIFStructure() throws {
        let r = try everyKind().report(end: 40)
        let v = try JSONParser.parse(SARIFWriter.render(r))
        XCTAssertEqual(v["version"]?.stringValue, "2.1.0")
        XCTAssertNotNil(v["$schema"]?.stringValue)
        let run = try XCTUnwrap(v["runs"]?.arrayValue?.first)
        XCTAssertEqual(run["tool"]?["driver"]?["name"]?.stringValue, "peerscope")
        let rules = try XCTUnwrap(run["tool"]?["driver"]?["rules"]?.arrayValue).compactMap { $0["id"]?.stringValue }
        XCTAssertEqual(Set(rules), Set(DetectorSuite.kinds))
        let results = try XCTUnwrap(run["results"]?.arrayValue)
        XCTAssertEqual(results.count, r.findings.count)
        for res in results {
            let rule = try XCTUnwrap(res["ruleId"]?.stringValue)
            XCTAssertTrue(rules.contains(rule))
            XCTAssertEqual(res["ruleIndex"]?.int64Value.map(Int.init), rules.firstIndex(of: rule))
            XCTAssertTrue(["error", "warning", "note", "none"].contains(res["level"]?.stringValue ?? ""))
            XCTAssertFalse(res["message"]?["text"]?.stringValue?.isEmpty ?? true)
            let locs = try XCTUnwrap(res["locations"]?.arrayValue)
            XCTAssertFalse(locs.isEmpty)
            for l in locs {
                XCTAssertNotNil(l["physicalLocation"]?["artifactLocation"]?["uri"]?.stringValue)
                if let line = l["physicalLocation"]?["region"]?["startLine"]?.int64Value { XCTAssertGreaterThanOrEqual(line, 1) }
            }
        }
        let logResult = try XCTUnwrap(results.first { $0["ruleId"]?.stringValue == "keepalive-timeout" })
        XCTAssertEqual(logResult["locations"]?.arrayValue?.first?["physicalLocation"]?["artifactLocation"]?["uri"]?.stringValue, "device.log")
        XCTAssertNotNil(logResult["locations"]?.arrayValue?.first?["physicalLocation"]?["region"]?["startLine"]?.int64Value)
    }

    final class JUnitCounter: NSObject, XMLParserDelegate {
        var testcases = 0
        var failures = 0
        var suites = 0
        var failureMessages: [String] = []
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            switch name {
            case "testcase": testcases += 1
            case "failure": failures += 1; failureMessages.append(attributes["message"] ?? "")
            case "testsuite": suites += 1
            default: break
            }
        }
    }

    func testJUnitIsWellFormedWithOneFailurePerFinding() throws {
        let r = try everyKind().report(end: 40)
        let xml = JUnitWriter.render(r)
        let parser = XMLParser(data: Data(xml.utf8))
        let counter = JUnitCounter()
        parser.delegate = counter
        XCTAssertTrue(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        XCTAssertEqual(counter.failures, r.findings(atLeast: .warning).count, "info findings pass")
        XCTAssertEqual(counter.suites, DetectorSuite.kinds.count)
        XCTAssertEqual(counter.testcases, r.findings.count)  // every kind has findings here
        // With check --fail-on error, warnings are reported but do not fail.
        let strict = JUnitCounter()
        let p3 = XMLParser(data: Data(JUnitWriter.render(r, failAt: .error).utf8))
        p3.delegate = strict
        XCTAssertTrue(p3.parse())
        XCTAssertEqual(strict.failures, r.findings(atLeast: .error).count)
        XCTAssertLessThan(strict.failures, counter.failures, "the script has warnings")
        XCTAssertEqual(strict.testcases, r.findings.count)

        let clean = JUnitWriter.render(Report(inputs: ["x.pcap"], timelines: .empty, findings: []))
        let p2 = XMLParser(data: Data(clean.utf8))
        let c2 = JUnitCounter()
        p2.delegate = c2
        XCTAssertTrue(p2.parse())
        XCTAssertEqual(c2.failures, 0)
        XCTAssertEqual(c2.testcases, DetectorSuite.kinds.count, "one passing case per kind checked")
    }

    func testJUnitEscapesMarkup() {
        XCTAssertEqual(JUnitWriter.esc("a<b>&\"c\"\u{01}"), "a&lt;b&gt;&amp;&quot;c&quot;\u{FFFD}")
    }

    /// One escaper for JUnit and HTML: the same references, and every character XML 1.0 cannot carry
    /// replaced, so a peer name or log text with control bytes still gives a parsable document.
    func testOneMarkupEscaperCarriesOnlyWhatXMLAllows() throws {
        XCTAssertEqual(JUnitWriter.esc("Bob's"), "Bob&#39;s")
        XCTAssertEqual(MarkupEscaping.escape("Bob's", breaks: .literal), "Bob&#39;s")
        XCTAssertEqual(JUnitWriter.esc("a\nb\tc\rd"), "a&#10;b&#9;c&#13;d", "kept in attribute values")
        XCTAssertEqual(MarkupEscaping.escape("a\nb\tc\rd", breaks: .literal), "a\nb\tc&#13;d")
        var forbidden: [Unicode.Scalar] = (0 ..< 0x20).compactMap { Unicode.Scalar(UInt32($0)) }.filter { !["\t", "\n", "\r"].contains($0) }
        forbidden += ["\u{FFFE}", "\u{FFFF}"]
        for u in forbidden {
            XCTAssertFalse(MarkupEscaping.isXMLChar(u), "U+\(String(u.value, radix: 16))")
            XCTAssertEqual(JUnitWriter.esc("x\(Character(u))y"), "x\u{FFFD}y")
            XCTAssertEqual(MarkupEscaping.escape("x\(Character(u))y", breaks: .literal), "x\u{FFFD}y")
        }
        for u: Unicode.Scalar in [" ", "\u{7F}", "\u{85}", "\u{D7FF}", "\u{E000}", "\u{FFFD}", "\u{10000}", "\u{10FFFF}"] {
            XCTAssertTrue(MarkupEscaping.isXMLChar(u), "U+\(String(u.value, radix: 16))")
        }
        // Every scalar of a hostile string through the JUnit writer: an XML parser reads it back.
        let hostile = String(String.UnicodeScalarView((0 ..< 0x80).compactMap { Unicode.Scalar(UInt32($0)) } + ["\u{FFFE}", "\u{FFFF}", "\u{1F600}"]))
        let doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><t a=\"\(JUnitWriter.esc(hostile))\">\(JUnitWriter.esc(hostile))</t>"
        let parser = XMLParser(data: Data(doc.utf8))
        XCTAssertTrue(parser.parse(), "\(String(describing: parser.parserError))")
    }

    func testHTMLIsSelfContainedWithOneLanePerPeer() throws {
        let r = try everyKind().report(end: 40)
        let html = HTMLReportWriter.render(r)
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        XCTAssertTrue(html.contains("<svg"))
        for banned in ["<script", "src=", "href=", "@import", "url(", "<link"] {
            XCTAssertFalse(html.lowercased().contains(banned), "fetches \(banned)")
        }
        let lanes = html.components(separatedBy: "class=\"lane").count - 1
        XCTAssertEqual(lanes, r.timelines.peers.count)
        let marks = html.components(separatedBy: "class=\"finding\"").count - 1
        XCTAssertEqual(marks, r.findings.count)
        XCTAssertTrue(html.contains("handshake-timeout"))
        XCTAssertTrue(html.hasSuffix("</html>\n"))
    }

    func testEmptyReportRendersEverywhere() throws {
        let r = Report(inputs: ["empty.pcap"], timelines: .empty, findings: [])
        XCTAssertTrue(TextReportWriter.render(r).contains("findings: none"))
        XCTAssertNil(r.worstSeverity)
        XCTAssertEqual(try JSONParser.parse(SARIFWriter.render(r))["runs"]?.arrayValue?.first?["results"]?.arrayValue?.count, 0)
        XCTAssertTrue(HTMLReportWriter.render(r).contains("No findings."))
    }
}
