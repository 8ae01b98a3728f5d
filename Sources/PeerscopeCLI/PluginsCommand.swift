import ArgumentParser
import Foundation
import Peerscope
import PeerscopeCore

struct Plugins: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the decoder and log plugins and what they bind to.",
        discussion: """
        Decoder plugins are tried in the order listed: for a payload several plugins could take, the \
        earlier one probes first. `udp/N` and `tcp/N` are port bindings (either side's port), `heuristic` \
        means the plugin's probe looks at any payload no port binding took, `inside X` means it decodes \
        payloads another plugin hands on.

        Examples:
          peerscope plugins
          peerscope plugins --json | jq '.decoders[].id'
        """
    )

    @Flag(name: .customLong("json"), help: "Print one JSON document instead of a table.")
    var json = false

    func run() throws {
        let decoders = PeerscopeInfo.decoderPlugins
        if json {
            let doc: JSONValue = .object([
                ("decoders", .array(decoders.map { d in
                    .object([
                        ("id", .string(d.id)),
                        ("summary", .string(d.summary)),
                        ("claims", .array(d.claims.map { .string($0.description) })),
                        ("messageTypes", .array(d.messageTypes.map { .string($0) })),
                    ])
                })),
            ])
            print(doc.prettyText)
            return
        }
        let idWidth = max(8, decoders.map(\.id.count).max() ?? 0)
        print("Decoder plugins (\(decoders.count)), in dispatch order:")
        for d in decoders {
            let id = d.id.padding(toLength: idWidth, withPad: " ", startingAt: 0)
            print("  \(id)  \(d.summary)")
            print("  \(String(repeating: " ", count: idWidth))  binds: \(d.claims.map(\.description).joined(separator: ", "))")
            if !d.messageTypes.isEmpty {
                print("  \(String(repeating: " ", count: idWidth))  types: \(d.messageTypes.joined(separator: ", "))")
            }
        }
    }
}
