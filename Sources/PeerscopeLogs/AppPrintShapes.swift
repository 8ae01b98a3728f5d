import Foundation
import PeerscopeCore

// App prints in the shapes real apps write them (issue #11): MCSessionState changes, browser found/lost
// and invitations, worded by each app in its own way. The seeds' exact format strings stay in
// `AppLogPlugins.swift` (they match first); these plugins read the rest.
//
// Accepted shapes (a line must name the peer and carry an MPC word, so "Wi-Fi connected" is not read):
//
// * the peer: `[Bob]`, `"Bob"`, `'Bob'`, MCPeerID's description `<MCPeerID: 0x… DisplayName = Bob>`, or a
//   bare name after `peer`, `peerID`, `Peer ID`, `peer:` or a delegate method name
//   (`session(_:peer:didChange:) Bob -> …`), or before `changed state`, `didChange`, `->`, `is`;
// * the state, at the end of the line: `connected`, `connecting`, `not connected`, `notConnected`,
//   `disconnected`, `.connected` (any case), `MCSessionState.connected`, the raw values `0`, `1`, `2`
//   after `state`, `:` or `->`, or `MCSessionState(rawValue: 2)`; or at the start:
//   `Connected: Bob`, `Not Connected: Bob`, `Connecting: Bob`, `Connected to Bob`, `Disconnected from Bob`;
// * browser: `Browser found Bob`, `Found peer Bob`, `Found peer with ID: <MCPeerID …>`, `found peer: Bob`,
//   `Lost peer Bob`, `Browser lost Bob`;
// * invitations: `Invited Bob`, `Sent invitation to Bob`, `Inviting peer Bob`, `Received invitation
//   from Bob`, `didReceiveInvitationFromPeer Bob`, `Accepted invitation from Bob`, `Declined invitation
//   from Bob`, `Invitation from Bob accepted/declined`.
//
// `--show-unknown` lists the lines none of these (nor any other plugin) understood.

/// Reading peers and states out of free-form app prints.
enum AppPrint {
    /// The state a word or raw value names, as the timeline spells it; nil when it names none.
    static func state(_ raw: Substring) -> String? {
        var s = raw.trimmingCharacters(in: .whitespaces).lowercased()
        if s.hasPrefix("mcsessionstate(rawvalue:"), s.hasSuffix(")") {
            s = String(s.dropFirst("mcsessionstate(rawvalue:".count).dropLast()).trimmingCharacters(in: .whitespaces)
        }
        if s.hasPrefix("mcsessionstate.") { s = String(s.dropFirst("mcsessionstate.".count)) }
        if s.hasPrefix(".") { s.removeFirst() }
        switch s.filter({ $0.isLetter || $0.isNumber }) {
        case "connected", "2": return "Connected"
        case "connecting", "1": return "Connecting"
        case "notconnected", "disconnected", "0": return "Not Connected"
        default: return nil
        }
    }

    static let stateAtEnd: NSRegularExpression? = try? NSRegularExpression(
        pattern: #"(?i)(MCSessionState\(rawValue:\s*[0-2]\)|MCSessionState\.[a-z]+|\.?not ?connected|\.?notConnected|\.?disconnected|\.?connecting|\.?connected|(?<=[:=>]\s?)[0-2]|(?<=\bstate\s)[0-2]|(?<=\bto\s)[0-2])[\s.!]*$"#)
    static let peerIDDescription: NSRegularExpression? = try? NSRegularExpression(
        pattern: #"<MCPeerID:\s*0x[0-9a-fA-F]+\s+DisplayName\s*=\s*([^>]+)>"#)

    static func firstMatch(_ re: NSRegularExpression?, _ s: String) -> (whole: Range<String.Index>, group: Range<String.Index>?)? {
        guard let re else { return nil }
        let ns = s as NSString
        guard let m = re.firstMatch(in: s, range: NSRange(location: 0, length: ns.length)),
              let whole = Range(m.range, in: s) else { return nil }
        let group = m.numberOfRanges > 1 ? Range(m.range(at: 1), in: s) : nil
        return (whole, group)
    }

    /// Words that tie a line to a peer session; a bare name needs one of them.
    static let keywords = ["peer", "changed state", "change state", "didchange", "->", "session"]

    /// The peer a fragment names: MCPeerID's description, a bracketed or quoted name, or a bare name
    /// once the keywords and connectors around it are taken away. Nil when nothing name-like is left.
    static func peerName(_ fragment: Substring) -> String? {
        let f = String(fragment)
        if let m = firstMatch(peerIDDescription, f), let g = m.group {
            return String(f[g]).trimmingCharacters(in: .whitespaces)
        }
        for (open, close) in [("[", "]"), ("\"", "\""), ("“", "”"), ("'", "'")] {
            guard let a = f.range(of: open), let b = f.range(of: close, range: a.upperBound ..< f.endIndex) else { continue }
            // An apostrophe inside a word (Bob's iPhone) opens no quote.
            if open == "'", a.lowerBound > f.startIndex, f[f.index(before: a.lowerBound)].isLetter { continue }
            let name = f[a.upperBound ..< b.lowerBound].trimmingCharacters(in: .whitespaces)
            if !name.isEmpty, name.count <= 63 { return name }
        }
        var s = f.trimmingCharacters(in: .whitespaces)
        // A delegate method name or a tag before the name: `session(_:peer:didChange:) Bob`, `SESS peer Bob`.
        if let close = s.range(of: ")", options: .backwards), s.contains("("), s[close.upperBound...].contains(where: { $0.isLetter }) {
            s = String(s[close.upperBound...]).trimmingCharacters(in: .whitespaces)
        }
        let lead = ["peer with id:", "peer id:", "peerid:", "peer id", "peerid", "peer:", "peer", "with", "from", "to", "for", "by", "-", ":"]
        let trail = ["changed state to", "changed state:", "changed state", "didchangestate:", "didchange state:", "did change state to",
                     "didchange", "state changed to", "state changed", "state:", "state", "is now", "is", "->", "=", ":", "to", "-", "and info: nil"]
        var changed = true
        while changed {
            changed = false
            let lower = s.lowercased()
            if let t = trail.first(where: { lower.hasSuffix(" " + $0) || lower == $0 }) {
                s = String(s.dropLast(t.count)).trimmingCharacters(in: .whitespaces)
                changed = true
            }
            let lower2 = s.lowercased()
            if let l = lead.first(where: { lower2.hasPrefix($0 + " ") || (($0.hasSuffix(":") || $0 == "-") && lower2.hasPrefix($0)) }) {
                s = String(s.dropFirst(l.count)).trimmingCharacters(in: .whitespaces)
                changed = true
            }
        }
        // Trailing punctuation of the sentence, not of the name.
        while let last = s.last, ",;".contains(last) { s.removeLast() }
        guard !s.isEmpty, s.count <= 63, s.contains(where: { $0.isLetter || $0.isNumber }) else { return nil }
        return s
    }

    static func hasKeyword(_ s: String) -> Bool {
        let lower = s.lowercased()
        return keywords.contains { lower.contains($0) } || lower.contains("<mcpeerid")
    }

    /// A state change: (peer, state) or nil.
    static func stateChange(_ message: String) -> (String, String)? {
        let m = message.trimmingCharacters(in: .whitespaces)
        // State first: `Connected: Bob`, `Not Connected: Bob`, `Connected to Bob`, `Disconnected from Bob`.
        for (prefix, state) in [("not connected:", "Not Connected"), ("notconnected:", "Not Connected"), ("disconnected:", "Not Connected"),
                                ("connecting:", "Connecting"), ("connected:", "Connected"), ("connecting to ", "Connecting"),
                                ("connected to ", "Connected"), ("disconnected from ", "Not Connected")] {
            guard m.lowercased().hasPrefix(prefix) else { continue }
            let rest = m.dropFirst(prefix.count)
            // `Connected to session` / `Connecting to session` name no peer.
            if rest.trimmingCharacters(in: .whitespaces).lowercased() == "session" { return nil }
            guard let name = peerName(rest) else { return nil }
            return (name, state)
        }
        guard let sm = firstMatch(stateAtEnd, m), let state = state(m[sm.whole].trimmingCharacters(in: CharacterSet(charactersIn: " .!")).dropFirst(0)) else {
            return nil
        }
        let head = m[..<sm.whole.lowerBound]
        // A bare name needs a word that ties the line to a peer session (`Bob's Wi-Fi connected` is not one).
        guard hasKeyword(String(head)) || head.contains("[") || head.contains("\"") else { return nil }
        // Raw values only after `state`, `:`/`=`/`->` (already required by the pattern) with a session word.
        guard let name = peerName(head) else { return nil }
        if ["session", "state", "peer", "mcsession"].contains(name.lowercased()) { return nil }
        return (name, state)
    }

    /// The name after one of `prefixes` (case-insensitive) at the start of the message.
    static func after(_ prefixes: [String], in message: String) -> String? {
        let m = message.trimmingCharacters(in: .whitespaces)
        let lower = m.lowercased()
        for p in prefixes where lower.hasPrefix(p) {
            if let n = peerName(m.dropFirst(p.count)) { return n }
        }
        return nil
    }

    /// `Invitation from Bob accepted`, `Invitation to Bob declined`: (name, verb).
    static func invitationOutcome(_ message: String) -> (String, String)? {
        let m = message.trimmingCharacters(in: CharacterSet(charactersIn: " .!"))
        let lower = m.lowercased()
        for prefix in ["invitation from ", "invitation to ", "invite from ", "invite to "] where lower.hasPrefix(prefix) {
            for verb in [" accepted", " declined", " rejected"] where lower.hasSuffix(verb) {
                let mid = m.dropFirst(prefix.count).dropLast(verb.count)
                if let n = peerName(mid) { return (n, String(verb.dropFirst())) }
            }
        }
        return nil
    }
}

/// MCSessionState changes printed by apps in their own words.
public struct AppStateShapesLogPlugin: LogPlugin {
    public init() {}
    public var descriptor: LogPluginDescriptor {
        LogPluginDescriptor(
            id: "log-app-state-shapes",
            summary: "MCSessionState changes as apps print them: peer bracketed, quoted, bare or MCPeerID's description; "
                + "state as a word (connected, notConnected, .connected...), raw 0/1/2 or MCSessionState(rawValue: 2)",
            matches: ["PEER … changed state to STATE", "PEER -> STATE", "peer PEER didChangeState: STATE", "STATE: PEER",
                      "Connected to PEER", "Disconnected from PEER", "Peer ID PEER connected"],
            example: "Peer [Bob's iPhone] changed state to Connected")
    }

    public var rules: [LogRule] {
        ["onnect", "rawValue", "tate", "->"].map { needle in
            LogRule(pattern: "^", needle: needle) { _, entry in
                guard let (name, state) = AppPrint.stateChange(entry.message) else { return nil }
                return LogMatch(kind: .stateChange, from: PeerHint(displayName: name), attrs: ["to": state, "via": "app"])
            }
        }
    }
}

/// The browser delegate's found and lost peers, as apps print them.
public struct AppBrowserShapesLogPlugin: LogPlugin {
    public init() {}
    public var descriptor: LogPluginDescriptor {
        LogPluginDescriptor(
            id: "log-app-browser-shapes",
            summary: "Browser found/lost prints in the apps' own words",
            matches: ["Browser found PEER", "Found peer PEER", "Found peer with ID: <MCPeerID … DisplayName = PEER>", "Lost peer PEER", "Browser lost PEER"],
            example: "Browser found Bob's iPhone")
    }

    static let found = ["browser found peer:", "browser found peer", "browser found", "found peer with id:", "found peer:", "found peer",
                        "foundpeer:", "foundpeer", "didfindpeer", "discovered peer:", "discovered peer"]
    static let lost = ["browser lost peer:", "browser lost peer", "browser lost", "lost peer with id:", "lost peer:", "lost peer",
                       "lostpeer:", "lostpeer"]

    public var rules: [LogRule] {
        [
            LogRule(pattern: "^", needle: "ound") { _, entry in
                AppPrint.after(Self.found, in: entry.message).map {
                    LogMatch(kind: .found, from: PeerHint(displayName: $0), attrs: ["via": "app"])
                }
            },
            LogRule(pattern: "^", needle: "iscovered") { _, entry in
                AppPrint.after(Self.found, in: entry.message).map {
                    LogMatch(kind: .found, from: PeerHint(displayName: $0), attrs: ["via": "app"])
                }
            },
            LogRule(pattern: "^", needle: "ost") { _, entry in
                AppPrint.after(Self.lost, in: entry.message).map {
                    LogMatch(kind: .lost, from: PeerHint(displayName: $0), attrs: ["via": "app"])
                }
            },
        ]
    }
}

/// Invitations sent, received, accepted and declined, as apps print them.
public struct AppInvitationShapesLogPlugin: LogPlugin {
    public init() {}
    public var descriptor: LogPluginDescriptor {
        LogPluginDescriptor(
            id: "log-app-invitation-shapes",
            summary: "Invitation prints in the apps' own words: sent, received, accepted, declined",
            matches: ["Invited PEER", "Sent invitation to PEER", "Inviting peer PEER", "Received invitation from PEER",
                      "didReceiveInvitationFromPeer PEER", "Accepted invitation from PEER", "Declined invitation from PEER",
                      "Invitation from PEER accepted|declined"],
            example: "Sent invitation to Bob's iPhone")
    }

    static let sent = ["sent invitation to", "sending invitation to", "send invitation to", "inviting peer:", "inviting peer", "invited peer:",
                       "invited peer", "invited", "invite peer:", "invite peer", "inviting"]
    static let received = ["received invitation from peer:", "received invitation from peer", "received invitation from",
                           "got invitation from", "invitation received from", "didreceiveinvitationfrompeer:", "didreceiveinvitationfrompeer"]
    static let accepted = ["accepted invitation from", "accepting invitation from"]
    static let declined = ["declined invitation from", "declining invitation from", "rejected invitation from"]

    public var rules: [LogRule] {
        [
            LogRule(pattern: "^", needle: "nvit") { _, entry in
                let m = entry.message
                if let n = AppPrint.after(Self.accepted, in: m) {
                    return LogMatch(kind: nil, from: PeerHint(displayName: n), context: .invitationRemoteIsFrom)
                }
                if let n = AppPrint.after(Self.declined, in: m) {
                    return LogMatch(kind: .connectionDecision, from: PeerHint(displayName: n), attrs: ["decision": "declined", "via": "app"])
                }
                if let (n, verb) = AppPrint.invitationOutcome(m) {
                    if verb == "accepted" { return LogMatch(kind: nil, from: PeerHint(displayName: n), context: .invitationRemoteIsFrom) }
                    return LogMatch(kind: .connectionDecision, from: PeerHint(displayName: n), attrs: ["decision": "declined", "via": "app"])
                }
                if let n = AppPrint.after(Self.received, in: m) {
                    return LogMatch(kind: nil, from: PeerHint(displayName: n), context: .invitationRemoteIsFrom)
                }
                if let n = AppPrint.after(Self.sent, in: m) {
                    return LogMatch(kind: .logInviting, to: PeerHint(displayName: n), attrs: ["via": "app"], context: .invitationRemoteIsTo)
                }
                return nil
            },
        ]
    }
}
