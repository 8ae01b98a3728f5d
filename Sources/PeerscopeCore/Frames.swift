/// One captured frame as read from an input: where it came from, when, and its bytes.
public struct FrameInfo: Sendable, Hashable {
    /// Index of the input (file or interface) in the run, 0-based.
    public var input: Int
    /// Frame number within that input, 1-based, as tshark numbers them.
    public var number: UInt64
    /// Capture time, nanoseconds since the Unix epoch.
    public var t: Nanos
    public var capturedLength: Int
    public var originalLength: Int
    /// LINKTYPE_* value of the interface the frame was captured on.
    public var linkType: UInt32
    /// Interface name when known (pcapng `if_name`, the live interface); scopes IPv6 link-local addresses.
    public var interfaceName: String?

    public init(input: Int, number: UInt64, t: Nanos, capturedLength: Int, originalLength: Int,
                linkType: UInt32, interfaceName: String? = nil) {
        self.input = input
        self.number = number
        self.t = t
        self.capturedLength = capturedLength
        self.originalLength = originalLength
        self.linkType = linkType
        self.interfaceName = interfaceName
    }

    public var evidence: Evidence { .frame(input: input, frame: number) }
}

public struct RawFrame: Sendable {
    public var info: FrameInfo
    public var data: Bytes

    public init(info: FrameInfo, data: Bytes) {
        self.info = info
        self.data = data
    }
}

/// Names of the link types peerscope knows, for stats and messages.
public enum LinkType {
    public static let null: UInt32 = 0
    public static let ethernet: UInt32 = 1
    public static let raw: UInt32 = 101
    public static let ieee80211: UInt32 = 105
    public static let loop: UInt32 = 108
    public static let linuxSLL: UInt32 = 113
    public static let radiotap: UInt32 = 127
    public static let ipv4: UInt32 = 228
    public static let ipv6: UInt32 = 229
    public static let pktap: UInt32 = 258
    public static let linuxSLL2: UInt32 = 276
    public static let ppp: UInt32 = 9
    public static let pppHDLC: UInt32 = 50
    public static let raw12: UInt32 = 12
    public static let raw14: UInt32 = 14

    public static func name(_ lt: UInt32) -> String {
        switch lt {
        case null: "NULL"
        case ethernet: "EN10MB"
        case raw, raw12, raw14: "RAW"
        case ieee80211: "IEEE802_11"
        case loop: "LOOP"
        case linuxSLL: "LINUX_SLL"
        case radiotap: "IEEE802_11_RADIO"
        case ipv4: "IPV4"
        case ipv6: "IPV6"
        case pktap: "PKTAP"
        case linuxSLL2: "LINUX_SLL2"
        case ppp: "PPP"
        case pppHDLC: "PPP_SERIAL"
        default: "LINKTYPE_\(lt)"
        }
    }
}
