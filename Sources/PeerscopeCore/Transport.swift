/// A TCP connection as the stream reassembler knows it. `client` sent the SYN (or, when the SYN was
/// not captured, the first segment seen).
public struct TCPConnectionInfo: Hashable, Sendable, CustomStringConvertible {
    /// Unique within a run; a reused 4-tuple after close gets a new id.
    public var id: UInt64
    public var client: Endpoint
    public var server: Endpoint
    /// Whether the three-way handshake was seen (false for connections picked up mid-stream).
    public var sawSYN: Bool

    public init(id: UInt64, client: Endpoint, server: Endpoint, sawSYN: Bool) {
        self.id = id
        self.client = client
        self.server = server
        self.sawSYN = sawSYN
    }

    public func flow(_ d: TCPDirection) -> FlowKey {
        d == .toServer ? FlowKey(.tcp, client, server) : FlowKey(.tcp, server, client)
    }

    public var description: String { "tcp#\(id) \(client) > \(server)" }
}

public enum TCPDirection: String, Sendable, Hashable {
    case toServer, toClient
    public var reversed: TCPDirection { self == .toServer ? .toClient : .toServer }
}

/// Connection-level happenings the reassembler reports.
public enum TCPEvent: String, Sendable, Hashable {
    case syn            // client sent SYN
    case established    // SYN-ACK seen (or data both ways)
    case refused        // RST answering a SYN
    case reset          // RST on an established connection; the direction says who sent it
    case fin            // FIN; the direction says who sent it
    case closed         // both FINs seen, or RST: the connection is over
    case gap            // bytes missing that will never arrive (lost before capture, buffer bound hit)
    case idleEvicted = "idle_evicted"  // no traffic for the idle timeout (capture time)
}

/// An ICMP or ICMPv6 error, with the flow of the packet it quotes when that could be read.
public struct ICMPErrorInfo: Sendable, Hashable {
    public var reporter: IPAddress
    public var isV6: Bool
    public var type: UInt8
    public var code: UInt8
    /// The quoted packet's flow, as the original sender sent it.
    public var quoted: FlowKey?

    public init(reporter: IPAddress, isV6: Bool, type: UInt8, code: UInt8, quoted: FlowKey?) {
        self.reporter = reporter
        self.isV6 = isV6
        self.type = type
        self.code = code
        self.quoted = quoted
    }

    /// Destination unreachable (any code).
    public var isUnreachable: Bool { isV6 ? type == 1 : type == 3 }

    public var summary: String {
        if isV6 {
            switch (type, code) {
            case (1, 0): return "no route to destination"
            case (1, 1): return "administratively prohibited"
            case (1, 3): return "address unreachable"
            case (1, 4): return "port unreachable"
            case (1, _): return "destination unreachable (code \(code))"
            case (2, _): return "packet too big"
            case (3, _): return "time exceeded"
            case (4, _): return "parameter problem"
            default: return "ICMPv6 type \(type) code \(code)"
            }
        }
        switch (type, code) {
        case (3, 0): return "network unreachable"
        case (3, 1): return "host unreachable"
        case (3, 2): return "protocol unreachable"
        case (3, 3): return "port unreachable"
        case (3, 4): return "fragmentation needed"
        case (3, 9), (3, 10), (3, 13): return "administratively prohibited"
        case (3, _): return "destination unreachable (code \(code))"
        case (11, _): return "time exceeded"
        case (12, _): return "parameter problem"
        default: return "ICMP type \(type) code \(code)"
        }
    }
}

/// What the packet layer hands to the plugin pipeline.
public enum TransportUnit: Sendable {
    /// A whole UDP datagram (after IP reassembly).
    case udp(frame: FrameInfo, flow: FlowKey, payload: Bytes)
    /// The next in-order bytes of one direction of a TCP connection.
    case tcpData(frame: FrameInfo, connection: TCPConnectionInfo, direction: TCPDirection, payload: Bytes)
    /// A connection-level event; `direction` says who sent the segment that caused it.
    case tcpEvent(frame: FrameInfo, connection: TCPConnectionInfo, direction: TCPDirection, event: TCPEvent)
    /// An ICMP/ICMPv6 error.
    case icmpError(frame: FrameInfo, info: ICMPErrorInfo)

    public var frame: FrameInfo {
        switch self {
        case .udp(let f, _, _), .tcpData(let f, _, _, _), .tcpEvent(let f, _, _, _), .icmpError(let f, _): f
        }
    }
}

/// The ports MPC uses.
public enum MPCPorts {
    /// GCK (and its ICE/DTLS) binds UDP 16402 down to 16384.
    public static let gck: ClosedRange<UInt16> = 16384 ... 16402

    /// True when either end of `flow` is on a GCK port.
    public static func touchesGCK(_ flow: FlowKey) -> Bool { gck.contains(flow.src.port) || gck.contains(flow.dst.port) }

    /// True when both ends of `flow` are on GCK ports.
    public static func bothGCK(_ flow: FlowKey) -> Bool { gck.contains(flow.src.port) && gck.contains(flow.dst.port) }
}
