/// Counts for a run, as `stats` in the JSON report.
public struct CaptureStats: Sendable, Equatable {
    public var frames: UInt64 = 0
    /// Sum of the original (on-the-wire) lengths of all frames.
    public var bytes: UInt64 = 0
    /// Sum of captured lengths (less than `bytes` when the snap length cut frames).
    public var capturedBytes: UInt64 = 0
    public var firstT: Nanos?
    public var lastT: Nanos?
    /// Frames per link type name (`EN10MB`, `LINUX_SLL`, ...).
    public var linkTypes: [String: UInt64] = [:]
    /// Frames in which each plugin decoded at least one message.
    public var plugins: [String: UInt64] = [:]
    /// Frames that produced at least one diagnostic.
    public var framesWithDiagnostics: UInt64 = 0
    /// Frames whose payload no plugin claimed, by transport.
    public var undecoded: [String: UInt64] = [:]
    /// Frames cut short by the snap length.
    public var truncatedFrames: UInt64 = 0
    /// Log lines read (log inputs).
    public var logLines: UInt64 = 0
    /// Log inputs read, their entries (a multi-line entry counts once), entries no log plugin
    /// understood per log format (`xcode`, `log-ndjson`, ...), entries understood per log plugin.
    public var logInputs: UInt64 = 0
    public var logEntries: UInt64 = 0
    public var logUnknown: [String: UInt64] = [:]
    public var logRecognized: [String: UInt64] = [:]
    /// Live capture only: per-interface received and dropped counts, loss windows, why it stopped.
    public var capture: LiveCaptureStats?

    public init() {}

    public mutating func count(_ f: FrameInfo) {
        frames &+= 1
        bytes &+= UInt64(max(0, f.originalLength))
        capturedBytes &+= UInt64(max(0, f.capturedLength))
        if f.capturedLength < f.originalLength { truncatedFrames &+= 1 }
        if firstT.map({ f.t < $0 }) ?? true { firstT = f.t }
        if lastT.map({ f.t > $0 }) ?? true { lastT = f.t }
        linkTypes[LinkType.name(f.linkType), default: 0] &+= 1
    }
}
