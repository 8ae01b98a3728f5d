import Foundation
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeReports
import XCTest

/// Issue #11: capture quality inside every verdict. The lossy sample's pcapng interface statistics
/// say the capturing machine dropped packets inside the keep-alive silence: the finding is uncertain,
/// says why in every format, and `check` fails on it only with `--strict`.
final class CaptureQualityTests: XCTestCase {
    let capture = "Samples/keepalive-lossy-capture.pcapng"

    func analyze(_ captures: [String], logs: [String] = []) throws -> Analysis {
        FileManager.default.changeCurrentDirectoryPath(Place.packageRoot.path)
        return try PeerscopeAnalysis.analyze(AnalysisOptions(captures: captures, logs: logs))
    }

    func testInterfaceStatisticsBecomeLossWindows() throws {
        let reader = try CaptureFileReader(path: Place.packageRoot.appendingPathComponent(capture).path)
        var frames = 0
        while reader.next() != nil { frames += 1 }
        XCTAssertNil(reader.problem)
        let losses = reader.losses
        XCTAssertEqual(losses.count, 1, "\(losses)")
        XCTAssertEqual(losses.first?.reason, .kernelDrop)
        XCTAssertEqual(losses.first?.count, 33, "Alice's 2 packets in the window and 31 others")
        XCTAssertEqual(losses.first.map { $0.end - $0.start }, 2_500_000_000)
        XCTAssertEqual(losses.first?.source?.hasSuffix("(en0)"), true)
    }

    func testASilenceInsideALossWindowIsUncertainWithItsReason() throws {
        let r = try analyze([capture]).report
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        XCTAssertEqual(f.confidence, .uncertain)
        XCTAssertEqual(f.caveats.count, 1)
        XCTAssertTrue(f.caveats[0].hasPrefix("33 packets dropped by the kernel"), f.caveats[0])
        XCTAssertEqual(r.captureLosses.count, 1)

        let json = try JSONParser.parse(JSONReportWriter.render(r))
        let jf = try XCTUnwrap(json["findings"]?.arrayValue?.first { $0["kind"]?.stringValue == "keepalive-timeout" })
        XCTAssertEqual(jf["confidence"]?.stringValue, "uncertain")
        XCTAssertEqual(jf["caveats"]?.arrayValue?.count, 1)
        XCTAssertEqual(json["captureLosses"]?.arrayValue?.first?["reason"]?.stringValue, "kernel-drop")
        XCTAssertEqual(json["captureLosses"]?.arrayValue?.first?["count"]?.int64Value, 33)

        XCTAssertTrue(TextReportWriter.render(r).contains("[uncertain]"))
        XCTAssertTrue(TextReportWriter.render(r).contains("uncertain: 33 packets dropped by the kernel"))
        let sarif = try JSONParser.parse(SARIFWriter.render(r))
        let result = try XCTUnwrap(sarif["runs"]?.arrayValue?.first?["results"]?.arrayValue?.first)
        XCTAssertEqual(result["properties"]?["confidence"]?.stringValue, "uncertain")
        XCTAssertTrue(result["message"]?["text"]?.stringValue?.contains("uncertain: 33 packets dropped") ?? false)
        let junit = JUnitWriter.render(r, failAt: .warning)
        XCTAssertTrue(junit.contains("failures=\"0\""), "an uncertain finding passes")
        XCTAssertTrue(junit.contains("confidence: uncertain"))
        XCTAssertTrue(JUnitWriter.render(r, failAt: .warning, strict: true).contains("<failure "))
    }

    func testTheSameSilenceWithoutLossIsCertain() throws {
        // keepalive-timeout is the same scenario with nothing dropped.
        let r = try analyze(["Samples/keepalive-timeout.pcapng"]).report
        XCTAssertEqual(r.captureLosses, [])
        XCTAssertEqual(r.findings.filter { $0.kind == "keepalive-timeout" }.map(\.confidence), [.certain])
        // A loss window elsewhere in time leaves the finding certain.
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        let far = CaptureLoss(reason: .kernelDrop, start: f.t + 60 * CaptureTime.second, end: f.t + 61 * CaptureTime.second, count: 5)
        XCTAssertEqual(CaptureQuality.qualify([f], losses: [far]).map(\.confidence), [.certain])
        let snap = CaptureLoss(reason: .snaplen, start: f.t - 3 * CaptureTime.second, end: f.t, count: 5)
        XCTAssertEqual(CaptureQuality.qualify([f], losses: [snap]).map(\.confidence), [.certain], "a cut frame was still seen")
    }

    func testTheLogConfirmingTheTimerMakesItCertain() throws {
        let logs = try FileManager.default.contentsOfDirectory(atPath: Place.samples.appendingPathComponent("logs/keepalive-lossy-capture").path)
            .filter { $0.hasSuffix(".log") }.sorted().map { "Samples/logs/keepalive-lossy-capture/\($0)" }
        let r = try analyze([capture], logs: logs).report
        let f = try XCTUnwrap(r.findings.first { $0.kind == "keepalive-timeout" })
        XCTAssertEqual(f.details["confirmedByLog"], "true")
        XCTAssertEqual(f.confidence, .certain)
    }

    func testCheckFailsOnUncertainFindingsOnlyWhenStrict() throws {
        let relaxed = try CLI.run(["check", capture, "--fail-on", "warning"])
        XCTAssertEqual(relaxed.status, 0, relaxed.stderr)
        let strict = try CLI.run(["check", capture, "--fail-on", "warning", "--strict"])
        XCTAssertEqual(strict.status, 1, strict.stderr)
        let certain = try CLI.run(["check", "Samples/keepalive-timeout.pcapng", "--fail-on", "warning"])
        XCTAssertEqual(certain.status, 1, certain.stderr)
    }

    // MARK: TCP data acknowledged but never seen

    func corpus(_ name: String) throws -> String {
        let path = try Place.requireShared().appendingPathComponent("corpus/\(name)").path
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(name) not in the corpus") }
        return path
    }

    /// A real capture with a 150 s hole: tshark flags its frames 863/864 `tcp.analysis.lost_segment`
    /// (server bytes 4555..<6931 and client bytes 27325..<41581, relative, never captured; both then
    /// acknowledged). One connection, 2376 + 14256 bytes, from the last in-order data before the hole
    /// to the acknowledgement after it; tshark's other flags there are "common at capture start"
    /// (connections picked up mid-stream), which are no loss.
    func testARealCaptureHoleIsUnseenDataOnItsConnection() throws {
        let a = try analyze([corpus("ndpi-wechat-googlecast.pcap")])
        let unseen = a.report.captureLosses.filter { $0.reason == .unseenData }
        XCTAssertEqual(unseen.map(\.count), [2376 + 14256])
        XCTAssertEqual(unseen.first?.source, "tcp#6 203.205.151.162:443 > 192.168.1.103:54058")
        XCTAssertEqual(unseen.first.map { CaptureTime.iso8601($0.start) }, "2017-04-14T10:57:47.522181000Z")
        XCTAssertEqual(unseen.first.map { CaptureTime.iso8601($0.end) }, "2017-04-14T11:00:19.306422000Z")
    }

    /// Corpus TCP captures tshark finds no lost segment in (beyond capture-start pickups) give no
    /// unseen data: resets, retransmissions, mid-stream starts and a snaplen-cut capture included.
    func testCleanCorpusTCPHasNoUnseenData() throws {
        for name in ["ppp-http-stream-rst.pcap", "sanders-tcp-retransmissions.pcapng", "sanders-nowebaccess2-rst.pcapng",
                     "sanders-http-espn-fail.pcapng", "nfstream-anyconnect-vpn-dtls.pcap", "ndpi-iphone.pcap",
                     "tcpdump-tcp-handshake-nano-sll.pcap", "zeek-truncated-snap68.pcap", "sv-macos-lo0-null-smb.pcap"] {
            let a = try analyze([corpus(name)])
            XCTAssertEqual(a.report.captureLosses.filter { $0.reason == .unseenData }.map(\.caveat), [], name)
        }
    }

    // MARK: a live capture's lossy interface

    /// A live capture whose interface lost packets: the text report says it once, in the "live
    /// capture" block beside the other interfaces' counts, not again among the input problems; other
    /// input problems stay where they were, and the JSON report keeps both (schema 1 is additive only).
    func testTheTextReportSaysALossyLiveInterfaceOnce() throws {
        let s = AnalysisSession()
        _ = s.addLiveInput("live:vA")
        _ = s.addLiveInput("live:vB")
        let lossy = InterfaceCaptureStats(interface: "vA", linkType: 1, received: 100, kernelDropped: 7, pcapReceived: 107)
        let clean = InterfaceCaptureStats(interface: "vB", linkType: 1, received: 50, pcapReceived: 50)
        s.noteLiveCapture(LiveCaptureStats(interfaces: [lossy, clean], stopReason: "interrupt"))
        // As `peerscope capture` notes them: each lossy interface, and a write error.
        s.noteInputProblem(lossy.inputProblem)
        s.noteInputProblem("out.pcapng: cannot write: No space left on device")
        let r = try s.finish().report
        XCTAssertFalse(r.complete)

        let text = TextReportWriter.render(r)
        XCTAssertEqual(text.components(separatedBy: lossy.line).count - 1, 1, text)
        XCTAssertTrue(text.contains("live capture: stopped (interrupt); 7 packet(s) lost\n  \(lossy.line)\n  \(clean.line)\n"), text)
        XCTAssertFalse(text.contains("input problem: live:"), text)
        XCTAssertTrue(text.contains("  input problem: out.pcapng: cannot write: No space left on device\n"), text)
        XCTAssertTrue(text.contains("[incomplete]"), text)

        let json = try JSONParser.parse(JSONReportWriter.render(r))
        XCTAssertEqual(json["inputProblems"]?.arrayValue?.compactMap(\.stringValue),
                       ["live:vA: 100 received, 7 dropped by the kernel, 0 by the interface, 0 at the queue",
                        "out.pcapng: cannot write: No space left on device"])
        XCTAssertEqual(json["stats"]?["capture"]?["interfaces"]?.arrayValue?.count, 2)
    }

    // MARK: one-sided flows

    /// The healthy pair's session flow with Bob's direction (192.0.2.20:16401) cut away, fed as a live
    /// input; everything else (mDNS, the invitation's TCP) is kept.
    func analyzeWithoutBobsUDP(_ name: String = "healthy-pair.pcapng") throws -> Analysis {
        let reader = try CaptureFileReader(path: Place.packageRoot.appendingPathComponent("Samples/\(name)").path)
        let s = AnalysisSession()
        let input = s.addLiveInput("live:test")
        while let f = reader.next() {
            let b = f.data.array
            // Ethernet, IPv4 from 192.0.2.20, UDP from port 16401.
            let fromBob = b.count > 36 && b[12] == 0x08 && b[13] == 0 && b[23] == 17 && Array(b[26 ..< 30]) == [192, 0, 2, 20]
                && Int(b[14] & 0x0F) * 4 == 20 && b[34] == 0x40 && b[35] == 0x11
            if fromBob { continue }
            var g = f
            g.info.input = input
            s.feed(g)
        }
        return try s.finish()
    }

    /// Only Alice's side of the session flow was captured, but Alice answered Bob's ICE checks: Bob was
    /// talking. The GCK Hello and app handshake "not answered" rest on a silence the capture made: they
    /// are uncertain, and the report says why.
    func testAOneSidedFlowMakesItsSilenceFindingsUncertain() throws {
        let a = try analyzeWithoutBobsUDP()
        let oneSided = a.report.captureLosses.filter { $0.reason == .oneSided }
        XCTAssertEqual(oneSided.count, 1)
        XCTAssertEqual(oneSided.first?.source?.hasPrefix("udp 192.0.2.11:16402 > 192.0.2.20:16401 seen, nothing from 192.0.2.20:16401; ice.success at "), true)
        let timeouts = a.report.findings.filter { $0.kind == "handshake-timeout" }
        XCTAssertEqual(timeouts.map(\.details["phase"]), ["gck", "app"])
        XCTAssertEqual(timeouts.map(\.confidence), [.uncertain, .uncertain])
        XCTAssertEqual(timeouts.first?.caveats.first?.hasPrefix("only one direction of a flow captured between "), true)
        // The whole capture: both directions, no one-sided flow, no timeout.
        let whole = try analyze(["Samples/healthy-pair.pcapng"])
        XCTAssertEqual(whole.report.captureLosses.filter { $0.reason == .oneSided }, [])
        XCTAssertEqual(whole.report.findings.filter { $0.kind == "handshake-timeout" }.count, 0)
    }

    /// A handshake simply unanswered stays certain: the requester's checks, ClientHellos and Hellos with
    /// nothing that needs the other side are no evidence the other side talked.
    func testAnUnansweredHandshakeStaysCertain() throws {
        for name in ["handshake-timeout-ice", "handshake-timeout-dtls", "handshake-timeout-app"] {
            let a = try analyze(["Samples/\(name).pcapng"])
            XCTAssertEqual(a.report.captureLosses.filter { $0.reason == .oneSided }.map(\.caveat), [], name)
            let timeouts = a.report.findings.filter { $0.kind == "handshake-timeout" && $0.severity == .error }
            XCTAssertFalse(timeouts.isEmpty, name)
            XCTAssertEqual(Set(timeouts.map(\.confidence)), [.certain], name)
        }
    }
}
