import Foundation
import XCTest
import Peerscope
import PeerscopeCapture
import PeerscopeCore
import PeerscopeLogs
import PeerscopePackets
import PeerscopePlugins

/// Issue 14: every diagnostic id peerscope may report is declared once, with a severity and a
/// one-line meaning (like Wireshark's expert info): plugins in their descriptors, the capture
/// readers, packet layers, log reading and the analysis as a `DiagnosticLayer`. A diagnostic emitted
/// anywhere (found in the sources, or met on the samples, the corpus, the fuzz regressions and
/// damaged input) that no one declares fails here.
final class DeclaredDiagnosticsTests: XCTestCase {
    /// The ids among `ds` that nothing declares.
    static func undeclared(_ ds: [Diagnostic]) -> [String] {
        Set(ds.map(\.id)).filter { PeerscopeInfo.declaration(of: $0) == nil }.sorted()
    }

    // MARK: the sources

    /// A diagnostic id a source line reports, as written there.
    struct Emitted: Hashable {
        enum Form: Hashable {
            /// The whole id (`ipv4.truncated`).
            case full
            /// A plugin's problem (`ctx.diagnose("record.invalid", ...)`): `<plugin>.record.invalid`.
            case pluginProblem
            /// The end of an id whose start is computed (`pfx + ".frag.limit"`).
            case suffix
            /// The start of an id whose end is computed (`"hello.\(e.problem)"`).
            case prefix
        }
        var text: String
        var form: Form
        var place: String
    }

    /// The calls that report a diagnostic with a literal id, and how to read the id.
    static let calls: [(call: String, form: Emitted.Form)] = [
        ("ctx.diagnose(", .pluginProblem), ("context.diagnose(", .pluginProblem),
        ("diagnose(ctx, ", .full), ("diag(", .full), ("truncated(", .full), ("problems.add(", .full),
        ("Diagnostic(id: ", .full), ("note(", .full), ("id = ", .full),
    ]

    /// The ids the line reports (string literals right after a reporting call, or among its first
    /// arguments: `truncated(v6 ? "icmpv6.truncated" : "icmp.truncated", ...)`).
    static func emitted(in line: Substring, place: String) -> [Emitted] {
        var out: [Emitted] = []
        for (call, form) in calls {
            guard let r = line.range(of: call) else { continue }
            // The first argument: up to the first comma outside a literal (or the line's end).
            var arg = ""
            var inLiteral = false
            var depth = 0
            for c in line[r.upperBound...] {
                if c == "\"" { inLiteral.toggle() }
                if !inLiteral {
                    if c == "(" { depth += 1 }
                    if c == ")" { depth -= 1 }
                    if depth < 0 || (depth == 0 && c == ",") { break }
                }
                arg.append(c)
            }
            let literals = arg.split(separator: "\"", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            // An id is lower-case words joined by dots; anything else (a message) is not one.
            func isID(_ s: Substring) -> Bool {
                !s.isEmpty && s.allSatisfy { $0.isLowercase || $0.isNumber || "._-".contains($0) } && (form == .pluginProblem || s.contains("."))
            }
            for lit in literals {
                if let interp = lit.range(of: "\\(") {
                    let head = lit[..<interp.lowerBound]
                    guard isID(head) else { continue }
                    out.append(form == .pluginProblem ? Emitted(text: head + "*", form: .pluginProblem, place: place)
                                                      : Emitted(text: String(head), form: .prefix, place: place))
                } else if lit.hasPrefix("."), isID(Substring(lit)) {
                    out.append(Emitted(text: lit, form: .suffix, place: place))
                } else if isID(Substring(lit)) {
                    out.append(Emitted(text: lit, form: form, place: place))
                }
            }
            break
        }
        return out
    }

    /// True when the declarations cover `e`.
    static func isDeclared(_ e: Emitted) -> Bool {
        let all = PeerscopeInfo.diagnosticLayers.flatMap(\.ids)
        switch e.form {
        case .full: return PeerscopeInfo.declaration(of: e.text) != nil
        case .suffix: return all.contains { $0.hasSuffix(e.text) }
        case .prefix: return all.contains { $0.hasPrefix(e.text) }
        case .pluginProblem:
            let plugins = PeerscopeInfo.decoderPlugins
            if e.text.hasSuffix("*") {
                // `hello.\(...)`: a declared family `hello.*`.
                return plugins.contains { $0.diagnosticIDs.contains($0.id + "." + e.text) }
            }
            return plugins.contains { $0.declares(diagnostic: $0.id + "." + e.text) }
                || PluginPipeline.diagnostics.contains { $0.problem == e.text }
        }
    }

    /// Every reporting call in `Sources/` (the simulator excepted: it reports nothing).
    static func emittedInSources() throws -> [Emitted] {
        let root = Place.packageRoot.appendingPathComponent("Sources")
        guard let walk = FileManager.default.enumerator(atPath: root.path) else { return [] }
        var out: [Emitted] = []
        for case let f as String in walk where f.hasSuffix(".swift") && !f.hasPrefix("PeerscopeSimulator/") {
            let text = try String(contentsOf: root.appendingPathComponent(f), encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.drop { $0 == " " }
                if code.hasPrefix("//") || code.hasPrefix("///") { continue }
                out += emitted(in: line, place: "\(f):\(n + 1)")
            }
        }
        return out
    }

    func testEveryDiagnosticIDInTheSourcesIsDeclared() throws {
        let found = try Self.emittedInSources()
        // Not vacuous: the packet layers, plugins, logs, capture readers and analysis all report.
        XCTAssertGreaterThan(found.count, 150, "\(found.count) reporting calls found")
        for prefix in ["ipv4.", "tcp.", "log.", "capture.", "input.", "gck."] {
            XCTAssertTrue(found.contains { $0.text.hasPrefix(prefix) }, "no \(prefix) ids found: the scan is broken")
        }
        XCTAssertTrue(found.contains { $0.form == .pluginProblem && $0.text == "no_quoted_flow" })
        XCTAssertTrue(found.contains { $0.form == .suffix && $0.text == ".frag.incomplete" })
        let missing = found.filter { !Self.isDeclared($0) }.map { "\($0.place): \($0.text)" }
        XCTAssertEqual(missing, [], "declare these (plugin descriptor, or the layer's DiagnosticLayer)")
    }

    /// The scan itself: it reads each form of call, and it would catch an undeclared id.
    func testTheSourceScanReadsEachFormAndCatchesAnUndeclaredID() {
        func ids(_ line: String) -> [String] { Self.emitted(in: Substring(line), place: "x").map(\.text) }
        XCTAssertEqual(ids(#"return truncated(v6 ? "icmpv6.truncated" : "icmp.truncated", "ICMP header cut short", off)"#),
                       ["icmpv6.truncated", "icmp.truncated"])
        XCTAssertEqual(ids(#"diag(pfx + ".frag.limit", .warning, "x")"#), [".frag.limit"])
        XCTAssertEqual(ids(#"ctx.diagnose("hello.\(e.problem.rawValue)", e.message)"#), ["hello.*"])
        XCTAssertEqual(ids(#"ctx.diagnose("empty", "DTLS datagram without a record", offset: 0)"#), ["empty"])
        XCTAssertEqual(ids(#"problems.add("log.json.malformed", .warning, "not a JSON object line", ev(lineNo))"#), ["log.json.malformed"])
        let made = Self.emitted(in: #"diag("ipv4.made_up", .warning, "x", off)"#, place: "x")
        XCTAssertEqual(made.count, 1)
        XCTAssertFalse(made.allSatisfy(Self.isDeclared))
        XCTAssertFalse(Self.emitted(in: #"ctx.diagnose("made_up", "x")"#, place: "x").allSatisfy(Self.isDeclared))
        XCTAssertTrue(Self.emitted(in: #"ctx.diagnose("no_quoted_flow", "x")"#, place: "x").allSatisfy(Self.isDeclared))
    }

    // MARK: what runs

    /// Every diagnostic of analysing every sample (captures with their logs), every corpus capture
    /// (when `../shared` is there), damaged logs and the fuzz regressions of the file-level targets.
    func testEveryDiagnosticMetOnSamplesCorpusLogsAndFuzzRegressionsIsDeclared() throws {
        var all: [Diagnostic] = []
        func analyse(_ paths: [String] = [], logs: [String] = [], _ c: AnalysisSession.Configuration = .init()) {
            let s = AnalysisSession(c)
            s.addCaptures(paths)
            s.addLogs(logs)
            if let a = try? s.finish() { all += a.report.diagnostics }
        }
        // Each sample with its logs, then each corpus capture (the spec, read as a log, is not a capture group).
        var corpus = 0
        for g in try EventCatalogueTests.inputGroups() where !g.captures.isEmpty {
            analyse(g.captures, logs: g.logs)
            if g.captures[0].contains("/corpus/") { corpus += 1 }
        }
        // Damaged inputs: logs of every kind of junk, a capture cut short, a missing file.
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("declared-diags-\(getpid())")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let junk: [(String, [UInt8])] = [
            ("binary.log", Array("12:00:00.000 a\n".utf8) + [0, 1, 2, 3, 10] + Array("\u{1}\u{2}\u{3}\u{4}\u{5}x\n".utf8) + [0xFF, 0xFE, 10]),
            ("empty.log", []),
            ("json.ndjson", Array("{\"timestamp\":\"nope\",\"eventMessage\":\"x\"}\n[1]\n{\"a\":1}\n{bad\n".utf8)),
            ("long.log", Array(("2024-01-01 12:00:00.000 " + String(repeating: "x", count: 70_000) + "\n").utf8)),
            ("nodate.log", Array("12:00:00.000 hello\nno time here\n".utf8)),
        ]
        var paths: [String] = []
        for (name, bytes) in junk {
            let p = tmp.appendingPathComponent(name).path
            FileManager.default.createFile(atPath: p, contents: Data(bytes))
            paths.append(p)
        }
        for p in paths { analyse(logs: [p]) }
        let cut = tmp.appendingPathComponent("cut.pcapng").path
        let sample = try Data(contentsOf: Place.samples.appendingPathComponent("healthy-pair.pcapng"))
        FileManager.default.createFile(atPath: cut, contents: sample.prefix(sample.count / 2 + 3))
        analyse([cut, tmp.appendingPathComponent("missing.pcapng").path])
        // A bad patterns file.
        let patterns = tmp.appendingPathComponent("p.yml").path
        FileManager.default.createFile(atPath: patterns, contents: Data("patterns:\n  - name: x\n    regex: '('\n    kind: user.x\n".utf8))
        var c = AnalysisSession.Configuration()
        c.logOptions.patternsFile = patterns
        analyse(logs: [paths[0]], c)
        // The fuzz regressions of the file-level targets.
        let fuzz = Place.packageRoot.appendingPathComponent("Tests/PeerscopeFuzzTests/FuzzRegressions")
        var replayed = 0
        for target in ["capture-file", "logs", "patterns"] {
            let dir = fuzz.appendingPathComponent(target)
            for f in ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() where !f.hasPrefix(".") {
                let data = try [UInt8](Data(contentsOf: dir.appendingPathComponent(f)))
                let p = tmp.appendingPathComponent("fuzz-\(target)-\(f)").path
                switch target {
                case "capture-file":
                    FileManager.default.createFile(atPath: p + ".pcap", contents: Data(data.dropFirst()))
                    analyse([p + ".pcap"])
                case "logs":
                    FileManager.default.createFile(atPath: p + ".log", contents: Data(data))
                    analyse(logs: [p + ".log"])
                default:
                    // [YAML patterns] 0x00 [log text]
                    let cut = data.firstIndex(of: 0) ?? data.endIndex
                    FileManager.default.createFile(atPath: p + ".yml", contents: Data(data[..<cut]))
                    FileManager.default.createFile(atPath: p + ".log", contents: Data(data[min(cut + 1, data.endIndex)...]))
                    var c = AnalysisSession.Configuration()
                    c.logOptions.patternsFile = p + ".yml"
                    analyse(logs: [p + ".log"], c)
                }
                replayed += 1
            }
        }
        let ids = Set(all.map(\.id))
        for id in ["log.line.binary", "log.empty", "log.json.malformed", "log.line.too_long", "input.unreadable"] {
            XCTAssertTrue(ids.contains(id), "\(id) was not met: the damaged inputs no longer reach it")
        }
        XCTAssertTrue(ids.contains { $0.hasPrefix("capture.") }, "the cut capture reports a capture.* diagnostic")
        if corpus > 0 { XCTAssertTrue(ids.contains { $0.hasPrefix("tcp.") || $0.hasPrefix("ipv4.") || $0.hasPrefix("udp.") }) }
        print("declared diagnostics: \(ids.count) ids met (\(corpus) corpus captures, \(replayed) fuzz regressions)")
        XCTAssertEqual(Self.undeclared(all), [], "declare these")
    }

    /// Every sample capture with its UDP and TCP payload bytes flipped (seeded, so the same each
    /// run), fed through an analysis session: malformed messages of every family.
    func testEveryPluginDiagnosticOnMalformedInputIsDeclared() throws {
        var all: [Diagnostic] = []
        let dir = Place.samples
        var rng: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return rng >> 33
        }
        for f in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where f.hasSuffix(".pcapng") {
            for variant in 0 ..< 3 {
                let s = AnalysisSession()
                _ = s.addLiveInput(f)
                let reader = try CaptureFileReader(path: dir.appendingPathComponent(f).path, input: 0)
                while let frame = reader.next() {
                    var bytes = frame.data.array
                    // Past Ethernet + IPv4 + UDP headers: flip a few payload bytes, or cut the frame.
                    if bytes.count > 46 {
                        let flips = 1 + Int(next() % UInt64(2 + variant))
                        for _ in 0 ..< flips {
                            let i = 42 + Int(next() % UInt64(bytes.count - 42))
                            bytes[i] ^= UInt8(truncatingIfNeeded: 1 + next() % 255)
                        }
                    }
                    var info = frame.info
                    if variant == 2, bytes.count > 60, next() % 4 == 0 {
                        bytes.removeLast(Int(next() % UInt64(bytes.count - 50)))
                        info.capturedLength = bytes.count
                        info.originalLength = bytes.count
                    }
                    s.feed(RawFrame(info: info, data: Bytes(bytes)))
                }
                all += try s.finish().report.diagnostics
            }
        }
        let pluginIDs = Set(all.map(\.id)).filter { id in PluginRegistry.decoders.contains { id.hasPrefix($0.descriptor.id + ".") } || id.hasPrefix("gck.") }
        XCTAssertGreaterThan(pluginIDs.count, 10, "the flipped bytes reach many plugins: \(pluginIDs.sorted())")
        XCTAssertEqual(Self.undeclared(all), [], "declare these in the plugin's descriptor (`diagnostics:`)")
    }

    func testEveryDeclaredDiagnosticHasAMeaningAndIsDeclaredOnce() {
        for p in PluginRegistry.decoders.map({ $0.descriptor }) {
            XCTAssertEqual(Set(p.diagnosticIDs).count, p.diagnosticIDs.count, p.id)
            for d in p.diagnostics { XCTAssertFalse(d.meaning.isEmpty, d.fullID(plugin: p.id)) }
        }
        let all = PeerscopeInfo.diagnosticLayers.flatMap(\.ids)
        XCTAssertEqual(all.count, Set(all).count, "an id declared twice: \(Dictionary(grouping: all) { $0 }.filter { $0.value.count > 1 }.keys.sorted())")
        for l in PeerscopeInfo.diagnosticLayers {
            XCTAssertFalse(l.diagnostics.isEmpty, l.name)
            for d in l.diagnostics { XCTAssertFalse(d.meaning.isEmpty, d.problem) }
        }
        XCTAssertEqual(PeerscopeInfo.diagnosticLayers.map(\.name), ["capture", "packets", "plugins", "logs", "analysis"])
        let icmp = PluginRegistry.decoders.map { $0.descriptor }.first { $0.id == "icmp-error" }
        XCTAssertEqual(icmp?.diagnosticIDs, ["icmp-error.no_quoted_flow"])
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "icmp-error.made_up", message: "x")]), ["icmp-error.made_up"])
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "mdns.name.loop", message: "x")]), [], "a declared family")
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "tcp.truncated", message: "x")]), [], "the packet layer's")
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "tcp.made_up", message: "x")]), ["tcp.made_up"])
        XCTAssertEqual(Self.undeclared([Diagnostic(id: "app-json.handoff.depth", message: "x")]), [], "the pipeline's, under a plugin")
        XCTAssertEqual(PeerscopeInfo.declaration(of: "ipv6.frag.incomplete")?.layer, "packets")
        XCTAssertEqual(PeerscopeInfo.declaration(of: "log.line.binary")?.layer, "logs")
        XCTAssertEqual(PeerscopeInfo.declaration(of: "capture.truncated")?.spec.severity, .error)
    }

    func testPluginsCommandListsDiagnosticsByLayer() throws {
        let r = try CLI.run(["plugins"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.contains("diagnostic icmp-error.no_quoted_flow (info): an ICMP error whose quoted packet cannot be read"))
        XCTAssertTrue(r.stdout.contains("diagnostic gck.bad_crc (warning)"))
        XCTAssertTrue(r.stdout.contains("by layer:"))
        for line in ["tcp.reassembly.overflow (warning): ", "capture.truncated (error): ", "log.line.binary (warning): ",
                     "input.unreadable (error): "] {
            XCTAssertTrue(r.stdout.contains(line), line)
        }
        // Layers in data-flow order.
        let order = ["  capture ", "  packets ", "  plugins ", "  logs ", "  analysis "].map { r.stdout.range(of: $0)?.lowerBound }
        XCTAssertFalse(order.contains(nil), "\(order)")
        XCTAssertEqual(order.compactMap { $0 }, order.compactMap { $0 }.sorted())
        let j = try CLI.run(["plugins", "--json"])
        let doc = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        let layers = doc?["diagnosticLayers"] as? [[String: Any]] ?? []
        XCTAssertEqual(layers.map { $0["name"] as? String }, ["capture", "packets", "plugins", "logs", "analysis"])
        let packets = layers.first { $0["name"] as? String == "packets" }?["diagnostics"] as? [[String: Any]] ?? []
        XCTAssertTrue(packets.contains { $0["id"] as? String == "ipv4.frag.incomplete" && $0["severity"] as? String == "warning" })
    }
}

/// Issue 14: one collector with per-id limits serves every stage. A flood of one packet-layer
/// problem past every limit keeps the engine's few, counts them all under their own id (no
/// `packets.diagnostics_suppressed` pseudo-id, which used to be counted as a diagnostic of its own),
/// and every frame that had one counts in `framesWithDiagnostics`.
final class OneCollectorTests: XCTestCase {
    func testAFloodOfOnePacketProblemIsKeptOnceAndCountedTruly() {
        var options = EngineOptions()
        options.diagnosticsKeptPerID = 5
        options.packets.maxDiagnosticsPerID = 3   // the decoder's own limit no longer applies inside an engine
        let engine = Engine(options: options)
        let n = 1_200
        for i in 0 ..< n {
            let info = FrameInfo(input: 0, number: UInt64(i + 1), t: Nanos(i) * CaptureTime.millisecond, capturedLength: 3,
                                 originalLength: 3, linkType: 1)
            engine.process(RawFrame(info: info, data: Bytes([1, 2, 3])))
        }
        engine.record(Diagnostic(id: "input.unreadable", severity: .error, message: "x.pcap: no such file"))
        engine.finish()
        XCTAssertEqual(engine.diagnostics.map(\.id), Array(repeating: "eth.truncated", count: 5) + ["input.unreadable"])
        XCTAssertEqual(engine.diagnosticCounts, ["eth.truncated": n, "input.unreadable": 1])
        XCTAssertEqual(engine.stats.framesWithDiagnostics, UInt64(n))
        XCTAssertEqual(engine.collector.count, n + 1)
    }
}
