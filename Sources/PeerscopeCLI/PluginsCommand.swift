import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs

struct Plugins: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the decoder plugins, log plugins and detectors, and what they bind to.",
        discussion: """
        Decoder plugins are tried in the order listed: for a payload several plugins could take, the \
        earlier one probes first. `udp/N` and `tcp/N` are port bindings (either side's port), `heuristic` \
        means the plugin's probe looks at any payload no port binding took, `inside X` means it decodes \
        payloads another plugin hands on. Each plugin lists the diagnostics it may report (id, severity, \
        meaning, like Wireshark's expert info); the capture readers, packet layers, log reading and the \
        analysis list theirs by layer. Log plugins are listed with the lines they understand; \
        --patterns adds your own from a YAML file. Detectors are listed with their thresholds and \
        defaults (override with --threshold NAME=VALUE or --config FILE).

        Examples:
          peerscope plugins
          peerscope plugins --patterns my-patterns.yml
          peerscope plugins --json | jq '.decoders[].id'
        """
    )

    @Flag(name: .customLong("json"), help: "Print one JSON document instead of a table.")
    var json = false

    @Option(help: ArgumentHelp("Also list the log patterns loaded from this YAML file.", valueName: "file"))
    var patterns: String?

    func run() throws {
        let decoders = PeerscopeInfo.decoderPlugins
        let logPlugins = LogPluginRegistry.plugins
        var userPatterns: [LogPluginDescriptor] = []
        if let patterns {
            do {
                let loaded = try UserPatternPlugin.load(path: patterns)
                userPatterns = loaded.plugins.map(\.descriptor)
                for p in loaded.problems { printError(p.line) }
            } catch {
                throw CommandFailure(message: error.description, status: ExitStatus.usage)
            }
        }
        if json {
            func logJSON(_ d: LogPluginDescriptor) -> JSONValue {
                .object([("id", .string(d.id)), ("summary", .string(d.summary)),
                         ("matches", .array(d.matches.map { .string($0) })), ("example", .string(d.example))])
            }
            let doc: JSONValue = .object([
                ("decoders", .array(decoders.map { d in
                    .object([
                        ("id", .string(d.id)),
                        ("summary", .string(d.summary)),
                        ("claims", .array(d.claims.map { .string($0.description) })),
                        ("priority", .string(d.priority == .fallback ? "fallback" : "normal")),
                        ("messageTypes", .array(d.messageTypes.map { .string($0) })),
                        ("diagnostics", .array(d.diagnostics.map { x in
                            .object([("id", .string(x.fullID(plugin: d.id))), ("severity", .string(x.severity.rawValue)),
                                      ("meaning", .string(x.meaning))])
                        })),
                    ])
                })),
                ("logPlugins", .array(logPlugins.map(logJSON))),
                ("diagnosticLayers", .array(PeerscopeInfo.diagnosticLayers.map { l in
                    .object([("name", .string(l.name)), ("summary", .string(l.summary)),
                             ("diagnostics", .array(l.diagnostics.map { x in
                                 .object([("id", .string(x.problem)), ("severity", .string(x.severity.rawValue)),
                                          ("meaning", .string(x.meaning))])
                             }))])
                })),
                ("userPatterns", .array(userPatterns.map(logJSON))),
                ("detectors", .array(DetectorSuite.all.map { d in
                    .object([
                        ("kind", .string(d.kind)),
                        ("summary", .string(d.summary)),
                        ("thresholds", .array(d.thresholds.map { t in
                            .object([("name", .string(t.name)), ("default", .double(t.defaultValue)),
                                     ("unit", .string(t.unit)), ("summary", .string(t.summary))])
                        })),
                    ])
                })),
            ])
            print(doc.prettyText)
            return
        }
        let idWidth = max(8, (decoders.map(\.id.count) + logPlugins.map(\.id.count)).max() ?? 0)
        let pad = String(repeating: " ", count: idWidth)
        func id(_ s: String) -> String { s.padding(toLength: idWidth, withPad: " ", startingAt: 0) }
        print("Decoder plugins (\(decoders.count)); claimants of the same traffic are asked by priority, then id:")
        for d in decoders {
            print("  \(id(d.id))  \(d.summary)")
            print("  \(pad)  binds: \(d.claims.map(\.description).joined(separator: ", "))" + (d.priority == .fallback ? " (fallback)" : ""))
            if !d.messageTypes.isEmpty { print("  \(pad)  types: \(d.messageTypes.joined(separator: ", "))") }
            for x in d.diagnostics { print("  \(pad)  diagnostic \(x.fullID(plugin: d.id)) (\(x.severity.rawValue)): \(x.meaning)") }
        }
        print("")
        print("Log plugins (\(logPlugins.count)), in matching order:")
        for d in logPlugins {
            print("  \(id(d.id))  \(d.summary)")
            if let m = d.matches.first { print("  \(pad)  matches: \(m)\(d.matches.count > 1 ? " (+\(d.matches.count - 1) more)" : "")") }
        }
        if patterns != nil {
            print("")
            print("Log patterns loaded from \(patterns ?? "") (\(userPatterns.count)):")
            for d in userPatterns {
                print("  \(id(d.id))  \(d.summary)")
                for m in d.matches { print("  \(pad)  matches: \(m)") }
            }
        }
        print("")
        let layers = PeerscopeInfo.diagnosticLayers
        print("Diagnostics (\(layers.reduce(0) { $0 + $1.diagnostics.count })), by layer:")
        for l in layers {
            print("  \(id(l.name))  \(l.summary)")
            // Each plugin's are listed with it above.
            guard l.name != "plugins" else { continue }
            for x in l.diagnostics { print("  \(pad)  \(x.problem) (\(x.severity.rawValue)): \(x.meaning)") }
        }
        print("")
        print("Detectors (\(DetectorSuite.all.count)):")
        for d in DetectorSuite.all {
            print("  \(id(d.kind))  \(d.summary)")
            for t in d.thresholds {
                let v = t.unit == "s" ? "\(t.defaultValue)s" : "\(Int(t.defaultValue))"
                print("  \(pad)  \(t.name) = \(v)  \(t.summary)")
            }
        }
    }
}
