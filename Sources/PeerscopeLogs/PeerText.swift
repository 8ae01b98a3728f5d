import Foundation
import PeerscopeCore

/// Reading peers out of the text logs print for them.
public enum PeerText {
    /// A `%08X` participant ID (1...8 hex digits, 31 bits).
    public static func participant(_ s: some StringProtocol) -> UInt32? {
        let t = s.trimmingSpaces
        guard !t.isEmpty, t.count <= 8, let v = UInt32(t, radix: 16) else { return nil }
        return v & 0x7FFF_FFFF
    }

    /// An MCPeerID's idString: 13 base-36 digits that fit 64 bits (a random 64-bit ID always begins
    /// with 0-3 in base 36), with at least one digit so that a 13-letter display name is not taken for one.
    public static func looksLikeIDString(_ s: some StringProtocol) -> Bool {
        guard s.count == 13, let f = s.first, ("0"..."3").contains(f) else { return false }
        guard s.allSatisfy({ $0.isASCII && ($0.isNumber || ($0.isLetter && $0.isLowercase)) }) else { return false }
        return PeerIdentity.parse(idString: s) != nil
    }

    /// `displayNameAndPID` (`Name,2308149F`).
    public static func displayNameAndPID(_ s: some StringProtocol) -> (name: String, participant: UInt32)? {
        let t = String(s).trimmingSpaces
        guard let comma = t.lastIndex(of: ",") else { return nil }
        let hex = t[t.index(after: comma)...].trimmingSpaces
        guard hex.count == 8, let p = participant(hex) else { return nil }
        return (String(t[..<comma]), p)
    }

    /// Whatever a `%@` that printed a peer says about it:
    /// `<MCPeerID: 0x… DisplayName = Name>`, `<MCPeerID: 0x…> idString[…] pid64[…] displayName[…]`,
    /// `Name,2308149F`, an idString, a bare participant ID, or a display name.
    public static func hint(_ raw: some StringProtocol) -> PeerHint {
        let s = String(raw).trimmingSpaces
        if s.isEmpty || s == "(null)" || s == "nil" { return .unknown }
        if s.hasPrefix("<MCPeerID:") {
            if let r = s.range(of: "DisplayName = ") {
                var name = s[r.upperBound...]
                if name.hasSuffix(">") { name = name.dropLast() }
                return PeerHint(displayName: String(name))
            }
            var h = PeerHint()
            if let id = bracketed(s, after: "idString["), let v = PeerIdentity.parse(idString: id) {
                h = PeerHint(peerID: v)
            }
            if let n = bracketed(s, after: "displayName[") { h.displayName = n }
            return h
        }
        if let (n, p) = displayNameAndPID(s) { return PeerHint(participantID: p, displayName: n) }
        if looksLikeIDString(s), let v = PeerIdentity.parse(idString: s) { return PeerHint(peerID: v) }
        if s.count == 8, s.allSatisfy({ $0.isHexDigit && !$0.isLowercase }), let p = participant(s) {
            return PeerHint(participantID: p)
        }
        return PeerHint(displayName: s)
    }

    /// A hint for a line that names a participant ID.
    public static func participantHint(_ s: some StringProtocol) -> PeerHint {
        guard let p = participant(s) else { return .unknown }
        return PeerHint(participantID: p)
    }

    static func bracketed(_ s: String, after key: String) -> String? {
        guard let r = s.range(of: key), let e = s[r.upperBound...].firstIndex(of: "]") else { return nil }
        return String(s[r.upperBound..<e])
    }

    /// MCSession's state names, and the seeds' prints of them, in one spelling.
    public static func sessionState(_ s: some StringProtocol) -> String {
        let t = String(s).trimmingSpaces
        switch t.lowercased().replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "_", with: "") {
        case "notconnected", "0", ".notconnected", "disconnected": return "Not Connected"
        case "connecting", "1", ".connecting": return "Connecting"
        case "connected", "2", ".connected": return "Connected"
        default: return t
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
