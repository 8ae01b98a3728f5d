import Foundation
import PeerscopeCore
import PeerscopePlugins

/// Reads tshark's reference decodes of the corpus (`../shared/corpus/ref/<name>.mdns.json` and `.tsv`)
/// and compares decoded DNS messages with them.
enum CorpusReference {
    static var sharedDir: URL? {
        if let env = ProcessInfo.processInfo.environment["PEERSCOPE_SHARED"] {
            let u = URL(fileURLWithPath: env)
            return FileManager.default.fileExists(atPath: u.path) ? u : nil
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let u = root.appendingPathComponent("../shared").standardizedFileURL
        return FileManager.default.fileExists(atPath: u.appendingPathComponent("corpus").path) ? u : nil
    }

    /// Captures that have a reference: (capture path, json path, tsv path).
    static func references(_ shared: URL) -> [(capture: URL, json: URL, tsv: URL)] {
        let corpus = shared.appendingPathComponent("corpus")
        let ref = corpus.appendingPathComponent("ref")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []
        var out: [(URL, URL, URL)] = []
        for f in files.sorted() where f.hasSuffix(".pcap") || f.hasSuffix(".pcapng") {
            let base = f.hasSuffix(".pcapng") ? String(f.dropLast(7)) : String(f.dropLast(5))
            let j = ref.appendingPathComponent("\(base).mdns.json")
            let t = ref.appendingPathComponent("\(base).mdns.tsv")
            if FileManager.default.fileExists(atPath: j.path) { out.append((corpus.appendingPathComponent(f), j, t)) }
        }
        return out
    }

    /// frame -> [[name, type, ttl]] as strings ("name|TYPE|ttl").
    static func loadJSON(_ url: URL) -> [UInt64: [String]] {
        guard let data = try? Data(contentsOf: url),
              let obj = try? JSONSerialization.jsonObject(with: data) as? [String: [[Any]]] else { return [:] }
        var out: [UInt64: [String]] = [:]
        for (k, v) in obj {
            guard let f = UInt64(k) else { continue }
            out[f] = v.map { r in
                let name = r.count > 0 ? "\(r[0])" : "?"
                let type = r.count > 1 ? "\(r[1])" : "?"
                let ttl = r.count > 2 ? "\(r[2])" : "?"
                return "\(name)|\(type)|\(ttl)"
            }
        }
        return out
    }

    struct TSVRow {
        var response: String
        var questionNames: String
        var questionTypes: String
        var ptrTargets: String
        var srvTargets: String
        var srvPorts: String
        var txt: String
    }

    static func loadTSV(_ url: URL) -> [UInt64: TSVRow] {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [:] }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard !lines.isEmpty else { return [:] }
        let header = lines.removeFirst().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        func col(_ n: String) -> Int? { header.firstIndex(of: n) }
        var out: [UInt64: TSVRow] = [:]
        for line in lines {
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            func v(_ n: String) -> String { col(n).flatMap { $0 < c.count ? c[$0] : nil } ?? "" }
            guard let f = UInt64(v("frame.number")) else { continue }
            out[f] = TSVRow(response: v("dns.flags.response"), questionNames: v("dns.qry.name"),
                            questionTypes: v("dns.qry.type"), ptrTargets: v("dns.ptr.domain_name"),
                            srvTargets: v("dns.srv.target"), srvPorts: v("dns.srv.port"), txt: v("dns.txt"))
        }
        return out
    }

    /// The reference view of a decoded record list (OPT records are not in tshark's JSON reference:
    /// their summary line has no TTL).
    static func recordKeys(_ records: [(name: String, type: String, ttl: String)]) -> [String] {
        records.filter { $0.type != "OPT" }.map { "\($0.name)|\($0.type)|\($0.ttl)" }
    }

    static func tsvView(_ m: DNSMessage) -> TSVRow {
        var ptr: [String] = [], srvT: [String] = [], srvP: [String] = [], txt: [String] = []
        for r in m.records {
            switch r.data {
            case .ptr(let n) where r.type == DNSType.ptr: ptr.append(n.text)
            case .srv(_, _, let port, let target): srvT.append(target.text); srvP.append("\(port)")
            case .txt(let strings): txt.append(contentsOf: strings.map { DNSText.txtValue($0) })
            default: break
            }
        }
        return TSVRow(response: m.isResponse ? "1" : "0",
                      questionNames: m.questions.map(\.name.text).joined(separator: ","),
                      questionTypes: m.questions.map { "\($0.type)" }.joined(separator: ","),
                      ptrTargets: ptr.joined(separator: ","), srvTargets: srvT.joined(separator: ","),
                      srvPorts: srvP.joined(separator: ","), txt: txt.joined(separator: ","))
    }

    /// Differences between a TSV reference row and ours ("" when they agree).
    static func diffTSV(_ ref: TSVRow, _ ours: TSVRow) -> [String] {
        var d: [String] = []
        func cmp(_ what: String, _ a: String, _ b: String) { if a != b { d.append("\(what): tshark [\(a)] ours [\(b)]") } }
        cmp("response", ref.response, ours.response)
        cmp("qry.name", ref.questionNames, ours.questionNames)
        cmp("qry.type", ref.questionTypes, ours.questionTypes)
        cmp("ptr", ref.ptrTargets, ours.ptrTargets)
        cmp("srv.target", ref.srvTargets, ours.srvTargets)
        cmp("srv.port", ref.srvPorts, ours.srvPorts)
        cmp("txt", ref.txt, ours.txt)
        return d
    }

    static let typeNumbers: [String: Int] = {
        var m: [String: Int] = [:]
        for t in 0 ... 65535 { m[DNSType.mnemonic(UInt16(t))] = t }
        return m
    }()

    /// A `peerscope decode` message in the reference's terms (the same reading as the integration test).
    static func messageView(_ m: DecodedMessage) -> (records: [String], row: TSVRow) {
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
        let row = TSVRow(
            response: j["response"]?.boolValue == true ? "1" : "0",
            questionNames: qs.map { $0["name"]?.stringValue ?? "?" }.joined(separator: ","),
            questionTypes: qs.map { q in q["type"]?.stringValue.flatMap { typeNumbers[$0] }.map { "\($0)" } ?? "?" }
                .joined(separator: ","),
            ptrTargets: ptr.joined(separator: ","), srvTargets: srvT.joined(separator: ","),
            srvPorts: srvP.joined(separator: ","), txt: txt.joined(separator: ","))
        return (records, row)
    }
}
