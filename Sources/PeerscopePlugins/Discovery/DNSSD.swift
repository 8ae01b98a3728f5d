import PeerscopeCore

/// DNS-SD meaning of names and TXT records (RFC 6763), with the MultipeerConnectivity conventions
/// (spec §1.1): the instance label is the peer's 13-character base-36 ID, TXT `_d` is its display name,
/// other keys are the app's discovery info with a leading `_` escaped as `__`.
public enum DNSSD {
    /// `_services._dns-sd._udp.local`: the service-type enumeration name.
    public static let enumerationName = ["_services", "_dns-sd", "_udp"]
    /// `enumerationName` in `.local` (built once, not per record).
    static let localEnumerationName = enumerationName + ["local"]

    /// A service type such as `_chat._tcp.local`: the last labels `_<type>`, `_tcp|_udp`, then a domain.
    public struct ServiceType: Sendable, Hashable, CustomStringConvertible {
        /// `_chat._tcp`
        public var type: String
        /// `local`
        public var domain: String
        /// `_chat._tcp.local`
        public var description: String { domain.isEmpty ? type : "\(type).\(domain)" }
        public var isTCP: Bool { type.hasSuffix("._tcp") }
    }

    /// Reads `labels` as `[<sub>._sub.]_<type>._tcp|_udp.<domain>` starting at label `from`.
    public static func serviceType(_ name: DNSName, from: Int = 0) -> ServiceType? {
        guard let i = serviceTypeStart(name.labels, from: from) else { return nil }
        let l = name.labels
        return ServiceType(type: "\(l[i]).\(l[i + 1])", domain: l[(i + 2)...].joined(separator: "."))
    }

    /// Whether `name` is a service type (`serviceType(name) != nil`, without building its strings).
    static func isServiceType(_ name: DNSName) -> Bool { serviceTypeStart(name.labels, from: 0) != nil }

    /// The label where `serviceType` finds `_<type>` (after a subtype's `<sub>._sub`), nil when none.
    private static func serviceTypeStart(_ l: [String], from: Int) -> Int? {
        var i = from
        // Subtype browse: <sub>._sub._type._tcp.local
        if i + 1 < l.count, DNSName.foldedEqual(l[i + 1], "_sub") { i += 2 }
        guard i + 1 < l.count else { return nil }
        let svc = l[i], udp = DNSName.foldedEqual(l[i + 1], "_udp")
        guard svc.hasPrefix("_"), svc.count > 1, udp || DNSName.foldedEqual(l[i + 1], "_tcp") else { return nil }
        if udp, DNSName.foldedEqual(svc, "_services") { return nil }
        return i
    }

    /// A service instance name: `<instance>._<type>._tcp.<domain>`.
    public struct InstanceName: Sendable, Hashable, CustomStringConvertible {
        /// The instance label as display text (may contain dots and spaces).
        public var instance: String
        public var service: ServiceType
        public var description: String { "\(instance).\(service)" }

        /// The MPC peer ID when the instance label is a 13-character base-36 idString.
        public var peerID: UInt64? { DNSSD.mpcPeerID(instance) }
    }

    public static func instanceName(_ name: DNSName) -> InstanceName? {
        // `<sub>._sub._svc._tcp` is a subtype browse name, not an instance.
        guard name.labels.count >= 3, !DNSName.foldedEqual(name.labels[1], "_sub"),
              let st = serviceType(name, from: 1) else { return nil }
        return InstanceName(instance: name.labels[0], service: st)
    }

    /// MCPeerID idString: exactly 13 characters of [0-9a-z] (upper case accepted, mDNS names are
    /// case-insensitive) that fit 64 bits.
    public static func mpcPeerID(_ label: String) -> UInt64? {
        guard label.utf8.count == 13 else { return nil }
        for c in label.utf8 {
            switch c {
            case 0x30 ... 0x39, 0x61 ... 0x7A, 0x41 ... 0x5A: continue
            default: return nil
            }
        }
        return PeerIdentity.parse(idString: label)
    }

    /// A TXT record read as DNS-SD key/value pairs.
    public struct TXTRecord: Sendable, Equatable {
        public struct Entry: Sendable, Equatable {
            public var key: String
            /// nil for a boolean key (no `=`).
            public var value: String?
            public var rawValue: Bytes?
        }

        /// Every string, in order, as tshark gives `dns.txt` values (`key=value`).
        public var strings: [String]
        public var entries: [Entry]

        public init(_ raw: [Bytes]) {
            strings = raw.map { DNSText.txtValue($0) }
            entries = []
            for s in raw where s.count > 0 {
                var eq: Int? = nil
                for i in 0 ..< s.count where s.byte(i) == 0x3D { eq = i; break }
                if let eq {
                    let v = s.suffix(from: eq + 1)
                    entries.append(Entry(key: DNSText.format(s.prefix(eq)), value: utf8(v), rawValue: v))
                } else {
                    entries.append(Entry(key: DNSText.format(s), value: nil, rawValue: nil))
                }
            }
        }

        /// The first value for `key` (keys compare case-insensitively, RFC 6763 §6.4).
        public func value(_ key: String) -> String? {
            entries.first(where: { DNSName.foldedEqual($0.key, key) })?.value
        }

        public var keys: [String] { entries.map(\.key) }

        /// MPC display name (`_d`).
        public var displayName: String? { value("_d") }

        /// MPC discovery info: every key but `_d`, with the leading-underscore escape undone
        /// (`__private` -> `_private`). Boolean keys map to "".
        public var discoveryInfo: [(key: String, value: String)] {
            var out: [(String, String)] = []
            for e in entries where !DNSName.foldedEqual(e.key, "_d") {
                out.append((DNSSD.unescapeKey(e.key), e.value ?? ""))
            }
            return out
        }

        private func utf8(_ b: Bytes) -> String {
            b.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// MPC escapes app keys that begin with `_` by prefixing another `_`; undo it.
    public static func unescapeKey(_ key: String) -> String {
        key.hasPrefix("__") ? String(key.dropFirst()) : key
    }

    /// The identity an MPC advertisement carries.
    public struct MPCIdentity: Sendable, Hashable {
        public var peerID: UInt64
        public var idString: String { PeerIdentity.idString(peerID) }
        public var participantID: UInt32 { PeerIdentity.participantID(peerID) }
        /// `[%08X]` as GCK logs print it.
        public var participantHex: String { PeerIdentity.participantHex(participantID) }
        public var displayName: String?
        public var discoveryInfo: [String: String]
    }

    /// Reads an MPC identity from an instance name and (when seen) its TXT record. Nil when the
    /// instance label is not a base-36 idString or the service is not `_tcp`.
    public static func mpcIdentity(instance: InstanceName, txt: TXTRecord?) -> MPCIdentity? {
        guard instance.service.isTCP, let id = instance.peerID else { return nil }
        var info: [String: String] = [:]
        for (k, v) in txt?.discoveryInfo ?? [] where info[k] == nil { info[k] = v }
        return MPCIdentity(peerID: id, displayName: txt?.displayName, discoveryInfo: info)
    }
}
