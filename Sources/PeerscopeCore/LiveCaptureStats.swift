/// What one live interface delivered and lost in a capture (JSON `stats.capture.interfaces`).
///
/// Every packet the kernel accepted through the filter ends in exactly one of: analysed
/// (`received - queueDropped`), dropped by the kernel buffer (`kernelDropped`), or dropped at the
/// bounded queue between the reader thread and the analysis (`queueDropped`). `interfaceDropped` is
/// what the driver reports it never handed to the kernel (often unsupported: 0).
public struct InterfaceCaptureStats: Sendable, Equatable {
    /// Interface name as given (`en0`, `awdl0`, `any`, `vB`).
    public var interface: String
    /// LINKTYPE_* of the interface.
    public var linkType: UInt32
    /// Packets the reader thread got from libpcap (analysed + queue-dropped).
    public var received: UInt64
    /// libpcap's `ps_drop`: packets lost because the kernel buffer was full.
    public var kernelDropped: UInt64
    /// libpcap's `ps_ifdrop`: packets the interface or driver dropped.
    public var interfaceDropped: UInt64
    /// Packets lost because the queue to the analysis was full.
    public var queueDropped: UInt64
    /// libpcap's raw `ps_recv` (platform-dependent meaning; on Linux `lo` it counts packets twice).
    public var pcapReceived: UInt64
    /// Why this interface stopped delivering before the capture ended (`interface went down`), nil
    /// when it ran to the end.
    public var ended: String?

    public init(interface: String, linkType: UInt32, received: UInt64 = 0, kernelDropped: UInt64 = 0,
                interfaceDropped: UInt64 = 0, queueDropped: UInt64 = 0, pcapReceived: UInt64 = 0, ended: String? = nil) {
        self.interface = interface
        self.linkType = linkType
        self.received = received
        self.kernelDropped = kernelDropped
        self.interfaceDropped = interfaceDropped
        self.queueDropped = queueDropped
        self.pcapReceived = pcapReceived
        self.ended = ended
    }

    /// Packets known lost on this interface.
    public var lost: UInt64 { kernelDropped &+ interfaceDropped &+ queueDropped }
    /// Packets handed to the analysis.
    public var analysed: UInt64 { received >= queueDropped ? received &- queueDropped : 0 }

    /// `vB: 16410 received, 0 dropped by the kernel, 0 by the interface, 0 at the queue`.
    public var line: String {
        var s = "\(interface): \(received) received, \(kernelDropped) dropped by the kernel, \(interfaceDropped) by the interface, \(queueDropped) at the queue"
        if let ended { s += "; \(ended)" }
        return s
    }

    /// The report's input problem for this interface when it lost packets or went away: `live:` and
    /// `line`. The text report says it once, in its "live capture" block (JSON: in both places).
    public var inputProblem: String { "live:" + line }
}

/// A live capture's account of itself (JSON `stats.capture`); absent for files.
public struct LiveCaptureStats: Sendable, Equatable {
    public var interfaces: [InterfaceCaptureStats]
    /// Why the capture stopped (`count`, `duration`, `interrupt`, `terminate`, `interface-gone`, `requested`).
    public var stopReason: String
    /// Capture-time windows with known loss, in time order.
    public var losses: [CaptureLoss]

    public init(interfaces: [InterfaceCaptureStats], stopReason: String, losses: [CaptureLoss] = []) {
        self.interfaces = interfaces
        self.stopReason = stopReason
        self.losses = losses
    }

    /// Packets known lost on all interfaces.
    public var lost: UInt64 { interfaces.reduce(0) { $0 &+ $1.lost } }
    /// True when nothing was lost and no interface went away.
    public var complete: Bool { lost == 0 && interfaces.allSatisfy { $0.ended == nil } }
}
