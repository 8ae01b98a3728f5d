/// A stretch of capture time in which packets are known to be missing, and why.
public struct CaptureLoss: Sendable, Hashable {
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        case kernelDrop = "kernel-drop", interfaceDrop = "interface-drop", queueDrop = "queue-drop"
        case snaplen, gap, unseenData = "unseen-data", oneSided = "one-sided"
    }
    public var reason: Reason
    /// Capture-time window (ns since the epoch) in which the loss happened; start <= end.
    public var start: Nanos
    public var end: Nanos
    /// Packets known lost (bytes for `unseenData`); 0 when unknown.
    public var count: Int
    /// The interface (live) or input file the loss belongs to, when known.
    public var source: String?
    public init(reason: Reason, start: Nanos, end: Nanos, count: Int, source: String? = nil) {
        self.reason = reason; self.start = min(start, end); self.end = max(start, end); self.count = count; self.source = source
    }
}
