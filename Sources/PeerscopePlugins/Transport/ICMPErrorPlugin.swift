import PeerscopeCore

/// ICMP and ICMPv6 errors. Destination/port unreachable for a flow becomes `.icmpUnreachable` with
/// `from` = the peer that sent the quoted packet and `to` = the destination it could not reach; the
/// event's flow is the quoted packet's (`PeerEvent.quotedFlow`).
public final class ICMPErrorPlugin: DecoderPlugin {
    public static let descriptor = PluginDescriptor(
        id: "icmp-error",
        summary: "ICMP/ICMPv6 errors: destination and port unreachable",
        claims: [.icmpErrors],
        messageTypes: ["unreachable", "error"],
        diagnostics: [DiagnosticSpec("no_quoted_flow", .info, "an ICMP error whose quoted packet cannot be read")])

    public init() {}

    public func decode(_ input: PluginInput, _ ctx: PluginContext) {
        guard case .icmpError(let info) = input.delivery else { return }
        var fields: [(String, JSONValue)] = [("reporter", .string(info.reporter.description)),
                                             ("icmp", .string(info.isV6 ? "icmpv6" : "icmp")),
                                             ("icmpType", .int(Int64(info.type))), ("code", .int(Int64(info.code))),
                                             ("summary", .string(info.summary))]
        if let q = info.quoted { fields.append(("quoted", .string(q.description))) }
        guard info.isUnreachable else {
            ctx.message("error", fields)
            return
        }
        var attrs: [String: String] = .typed([.summary: info.summary, .type: String(info.type), .code: String(info.code)])
        attrs[.reporter] = info.reporter
        var from = PeerHint.unknown, to = PeerHint.unknown
        if let q = info.quoted {
            attrs[.proto] = q.proto.rawValue
            from = ctx.directory.hint(for: q.src)
            to = ctx.directory.hint(for: q.dst)
            if let p = from.peerID { fields.append(("fromPeer", .string(PeerIdentity.idString(p)))) }
            if let p = to.peerID { fields.append(("toPeer", .string(PeerIdentity.idString(p)))) }
        } else {
            ctx.diagnose("no_quoted_flow", "\(info.summary) from \(info.reporter) without a readable quoted packet", severity: .info)
        }
        ctx.event(.icmpUnreachable, from: from, to: to, attrs: attrs)
        ctx.message("unreachable", fields)
    }
}
