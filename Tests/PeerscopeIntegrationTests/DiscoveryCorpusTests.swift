import Foundation
import Peerscope
import PeerscopeCore
import PeerscopePlugins
import XCTest

/// Every mDNS frame of the corpus, decoded through the whole pipeline (`PeerscopeRun.decode`), agrees
/// with tshark's reference decodes in `../shared/corpus/ref/`: the records (owner name, type, TTL) from
/// `<name>.mdns.json`, and from `<name>.mdns.tsv` the response flag, questions, PTR and SRV targets, SRV
/// ports, TXT strings and the source address. Reference quirks (MANIFEST): OPT records are not in the
/// JSON (their summary line has no TTL); the TSV files SRV owners apart, so names are compared via JSON.
final class DiscoveryCorpusTests: XCTestCase {
    static var sharedDir: URL? {
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"] {
            let u = URL(fileURLWithPath: env)
            return FileManager.default.fileExists(atPath: u.appendingPathComponent("corpus").path) ? u : nil
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let u = root.appendingPathComponent("../shared").standardizedFileURL
        return FileManager.default.fileExists(atPath: u.appendingPathComponent("corpus").path) ? u : nil
    }

    struct Ref {
        var records: [String]
        var row: [String: String]
    }

    static func loadRefs(json: URL, tsv: URL) -> [UInt64: Ref] {
        var out: [UInt64: Ref] = [:]
        if let data = try? Data(contentsOf: json), let obj = try? JSONSerialization.jsonObject(with: data) as? [String: [[Any]]] {
            for (k, v) in obj {
                guard let f = UInt64(k) else { continue }
                out[f] = Ref(records: v.map { r in r.map { "\($0)" }.joined(separator: "|") }, row: [:])
            }
        }
        if let text = try? String(contentsOf: tsv, encoding: .utf8) {
            var lines = text.split(separator: "\n")
            if !lines.isEmpty {
                let header = lines.removeFirst().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                for line in lines {
                    let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                    var row: [String: String] = [:]
                    for (i, h) in header.enumerated() { row[h] = i < c.count ? c[i] : "" }
                    guard let f = row["frame.number"].flatMap({ UInt64($0) }) else { continue }
                    out[f, default: Ref(records: [], row: [:])].row = row
                }
            }
        }
        return out
    }

    static let typeNumbers: [String: Int] = {
        var m: [String: Int] = [:]
        for t in 0 ... 65535 { m[DNSType.mnemonic(UInt16(t))] = t }
        return m
    }()

    /// What we decoded for one frame, in the reference's terms.
    static func ourView(_ m: DecodedMessage) -> (records: [String], row: [String: String]) {
        let j = m.json(includeInput: false)
        var records: [String] = []
        var ptr: [String] = [], srvT: [String] = [], srvP: [String] = [], txt: [String] = []
        for section in ["answers", "authorities", "additionals"] {
            for r in j[section]?.arrayValue ?? [] {
                let type = r["type"]?.stringValue ?? "?"
                if type != "OPT" {
                    records.append("\(r["name"]?.stringValue ?? "?")|\(type)|\(r["ttl"]?.int64Value.map { "\($0)" } ?? "?")")
                }
                switch type {
                case "PTR": ptr.append(r["target"]?.stringValue ?? "?")
                case "SRV":
                    srvT.append(r["target"]?.stringValue ?? "?")
                    srvP.append(r["port"]?.int64Value.map { "\($0)" } ?? "?")
                case "TXT": txt += (r["txt"]?.arrayValue ?? []).map { $0.stringValue ?? "?" }
                default: break
                }
            }
        }
        let qs = j["questions"]?.arrayValue ?? []
        var src = j["src"]?.stringValue ?? ""
        // "1.2.3.4:5353" / "[fe80::1%en0]:5353" -> address without port and scope
        if src.hasPrefix("["), let close = src.firstIndex(of: "]") { src = String(src[src.index(after: src.startIndex) ..< close]) }
        else if let colon = src.lastIndex(of: ":") { src = String(src[..<colon]) }
        if let pct = src.firstIndex(of: "%") { src = String(src[..<pct]) }
        let row: [String: String] = [
            "dns.flags.response": j["response"]?.boolValue == true ? "1" : "0",
            "dns.qry.name": qs.map { $0["name"]?.stringValue ?? "?" }.joined(separator: ","),
            "dns.qry.type": qs.map { q in q["type"]?.stringValue.flatMap { typeNumbers[$0] }.map { "\($0)" } ?? "?" }
                .joined(separator: ","),
            "dns.ptr.domain_name": ptr.joined(separator: ","),
            "dns.srv.target": srvT.joined(separator: ","),
            "dns.srv.port": srvP.joined(separator: ","),
            "dns.txt": txt.joined(separator: ","),
            "src": src,
        ]
        return (records, row)
    }

    func testEveryCorpusMDNSFrameAgreesWithTshark() throws {
        guard let shared = Self.sharedDir else { throw XCTSkip("../shared not found (set PEERSCOPE_SHARED)") }
        let corpus = shared.appendingPathComponent("corpus")
        let ref = corpus.appendingPathComponent("ref")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        var total = 0, agreeing = 0
        var differences: [String] = []
        var compared = 0
        for f in files where f.hasSuffix(".pcap") || f.hasSuffix(".pcapng") {
            let base = f.hasSuffix(".pcapng") ? String(f.dropLast(7)) : String(f.dropLast(5))
            let json = ref.appendingPathComponent("\(base).mdns.json")
            guard FileManager.default.fileExists(atPath: json.path) else { continue }
            let refs = Self.loadRefs(json: json, tsv: ref.appendingPathComponent("\(base).mdns.tsv"))
            var ours: [UInt64: DecodedMessage] = [:]
            var extra: [UInt64] = []
            do {
                let result = try PeerscopeRun.decode(paths: [corpus.appendingPathComponent(f).path],
                                                     options: DecodeOptions(wantsMessages: true)) { m in
                    guard m.plugin == "mdns" else { return }
                    if ours[m.frame.number] != nil { extra.append(m.frame.number) }
                    ours[m.frame.number] = m
                }
                // Real traffic: the mDNS decoder has nothing to complain about.
                for d in result.diagnostics where d.id.hasPrefix("mdns.") { differences.append("\(f): \(d.line)") }
            } catch {
                differences.append("\(f): \(error)")
                continue
            }
            compared += 1
            for frame in refs.keys.sorted() {
                total += 1
                guard let r = refs[frame] else { continue }
                guard let m = ours[frame] else {
                    differences.append("\(f) #\(frame): no mdns message")
                    continue
                }
                var diffs: [String] = []
                let (records, row) = Self.ourView(m)
                if records != r.records { diffs.append("records: tshark \(r.records) ours \(records)") }
                for (k, v) in row where k != "src" {
                    if let rv = r.row[k], rv != v { diffs.append("\(k): tshark [\(rv)] ours [\(v)]") }
                }
                let refSrc = (r.row["ip.src"] ?? "").isEmpty ? (r.row["ipv6.src"] ?? "") : (r.row["ip.src"] ?? "")
                if !refSrc.isEmpty, IPAddress(refSrc) != IPAddress(row["src"] ?? "") {
                    diffs.append("src: tshark [\(refSrc)] ours [\(row["src"] ?? "")]")
                }
                if diffs.isEmpty { agreeing += 1 } else { differences.append("\(f) #\(frame): " + diffs.joined(separator: "; ")) }
            }
            for frame in ours.keys.sorted() where refs[frame] == nil {
                differences.append("\(f) #\(frame): decoded as mdns, tshark did not")
            }
            for frame in extra { differences.append("\(f) #\(frame): more than one mdns message") }
        }
        let pct = total == 0 ? 0 : Double(agreeing) * 100 / Double(total)
        print("mDNS corpus agreement (pipeline): \(agreeing)/\(total) frames = \(pct)% over \(compared) captures")
        XCTAssertGreaterThan(total, 500, "the corpus references list 537 mDNS frames")
        XCTAssertTrue(differences.isEmpty && agreeing == total,
                      "\(agreeing)/\(total) frames agree; differences:\n" + differences.prefix(40).joined(separator: "\n"))
    }
}
