import PeerscopeCore

/// Bounds and timeouts of the packet layer. All times are capture time.
public struct PacketOptions: Sendable {
    /// Out-of-order bytes buffered per TCP direction before the reassembler gives up on a hole.
    public var tcpBufferLimit: Int = 1 << 20
    /// Out-of-order segments buffered per TCP direction (bounds the bookkeeping of tiny segments).
    public var tcpMaxSegments: Int = 16_384
    /// An open TCP connection with no traffic for this long is evicted (`.idleEvicted`).
    public var tcpIdleTimeout: Nanos = 300 * CaptureTime.second
    /// A closed connection is kept this long so late retransmissions do not open a new one.
    public var tcpClosedTimeout: Nanos = 30 * CaptureTime.second
    /// A FIN waiting for missing bytes is delivered (after a `.gap`) when they have not come after this long.
    public var tcpFinHoldTimeout: Nanos = 10 * CaptureTime.second
    /// A connection with nothing held (no bytes waiting behind a hole, no FIN waiting for its bytes)
    /// and no packet for this long is parked: kept as a compact record until its next packet or
    /// deadline, which gives the same units (see TCPParking.swift). nil keeps every connection as an
    /// object. Only with `sweepByDeadlines`.
    public var tcpParkAfter: Nanos? = 30 * CaptureTime.second
    /// Most TCP connections tracked at once; past it the least recently seen are evicted.
    public var maxConnections: Int = 200_000
    /// An unfinished IP reassembly is dropped after this long.
    public var fragmentTimeout: Nanos = 30 * CaptureTime.second
    /// Most IP datagrams being reassembled at once; past it the oldest is dropped.
    public var maxReassemblies: Int = 1024
    /// Largest reassembled datagram (IP payload bytes).
    public var maxDatagram: Int = 65_535
    /// Check IPv4 header checksums (`ipv4.bad_checksum`, info). Off by default: captures taken on a
    /// sending host with checksum offload carry unfilled checksums.
    public var verifyIPv4Checksum = false
    /// Diagnostics kept per id and run when the decoder has a collector of its own (an engine shares
    /// its own, with its limit); the rest are counted.
    public var maxDiagnosticsPerID: Int = 1000
    /// How often (capture time) idle flows and stale fragments are looked for.
    public var sweepInterval: Nanos = CaptureTime.second
    /// The sweep looks only at connections whose time may have come (queued by deadline); false looks at
    /// every connection each time (the reference: both find the same ones, the tests compare them).
    public var sweepByDeadlines = true

    public init() {}
}

/// What the packet layer saw, for stats and the benchmark.
public struct PacketCounters: Sendable, Equatable {
    public var frames = 0
    /// Frames whose link layer was not IPv4/IPv6 (ARP, LLDP, management frames, ...).
    public var nonIP = 0
    /// Frames of link types the decoder does not know, per link type.
    public var unsupportedLinkFrames: [UInt32: Int] = [:]
    public var ipv4 = 0
    public var ipv6 = 0
    public var fragments = 0
    public var reassembled = 0
    public var udp = 0
    public var tcpSegments = 0
    public var icmpErrors = 0
    /// Packets of other IP protocols (or other ICMP types), encrypted (ESP) or with no next header.
    public var otherIP = 0
    /// 802.11 data frames with the protected bit set (payload not readable).
    public var encrypted80211 = 0
    public var connectionsOpened = 0
    public var tcpRetransmissions = 0
    public var tcpGaps = 0
    /// Segments that belong to no trackable connection (a lone RST, data after close).
    public var tcpIgnored = 0
    public var diagnostics = 0
    /// Diagnostics counted but not reported (past `maxDiagnosticsPerID`).
    public var diagnosticsSuppressed = 0
    public var maxBufferedBytes = 0

    public init() {}
}
