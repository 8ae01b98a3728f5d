import XCTest
import PeerscopeCore
import PeerscopeDetectors
@testable import PeerscopeReports

/// Baseline states and suppressions on a report with one finding of every kind (issue 16).
final class MarksTests: XCTestCase {
    func testBaselineCountsRepeatedFingerprints() throws {
        let r = try ReportTests.everyKind().report(end: 40)
        var m = FindingMarks(r)
        XCTAssertGreaterThanOrEqual(Set(m.fingerprints).count, 4)
        let first = try XCTUnwrap(m.fingerprints.first)
        // The baseline has the first finding twice and one the report lacks.
        let known = BaselineFinding(fingerprint: first, kind: "k", severity: .error, peer: "p", message: "m")
        let gone = BaselineFinding(fingerprint: "0000000000000000", kind: "keepalive-timeout", severity: .error, peer: "x", message: "m")
        m.compare(with: [known, known, gone], file: "old.json", report: r)
        let states = try XCTUnwrap(m.baselineStates)
        XCTAssertEqual(states.first, .unchanged)
        XCTAssertEqual(states.filter { $0 == .unchanged }.count, m.fingerprints.filter { $0 == first }.count)
        XCTAssertEqual(m.absent.map(\.fingerprint), Array(repeating: first, count: 2 - m.fingerprints.filter { $0 == first }.count)
                       + ["0000000000000000"])
        XCTAssertFalse(m.counts(0))
        XCTAssertTrue(m.counts(try XCTUnwrap(states.firstIndex(of: .new))))
    }

    func testSuppressionPatternsAndExpiry() throws {
        let r = try ReportTests.everyKind().report(end: 40)
        let f = try XCTUnwrap(r.findings.first)
        var m = FindingMarks(r)
        let prefix = String(f.peer.prefix(3)) + "*"
        let rules = [
            Suppression(kind: f.kind, peer: prefix, reason: "known", expires: "2026-06-30", origin: "a"),
            Suppression(kind: f.kind, reason: "old", expires: "2026-01-01", origin: "b"),
            Suppression(kind: "reconnect-*", peer: "nobody?", reason: "never", origin: "c"),
        ]
        m.suppress(rules, today: "2026-06-30", report: r)
        XCTAssertEqual(m.suppressedBy[0]?.origin, "a")   // the last day still applies
        XCTAssertEqual(m.expired.map(\.0.origin), ["b"])
        XCTAssertEqual(m.unused.map(\.origin), ["c"])
        m.suppress(rules, today: "2026-07-01", report: r)
        XCTAssertNil(m.suppressedBy[0])
        XCTAssertEqual(m.expired.map(\.0.origin), ["a", "b"])
        XCTAssertEqual(m.warnings.count, 3)

        XCTAssertTrue(Suppression.glob("Bob*", "Bob's iPad"))
        XCTAssertTrue(Suppression.glob("*iPad", "Bob's iPad"))
        XCTAssertTrue(Suppression.glob("B?b's*", "Bob's iPad"))
        XCTAssertFalse(Suppression.glob("Bob", "Bob's iPad"))
        XCTAssertFalse(Suppression.glob("*iPhone", "Bob's iPad"))
        XCTAssertTrue(Suppression.glob("*", ""))
    }
}
