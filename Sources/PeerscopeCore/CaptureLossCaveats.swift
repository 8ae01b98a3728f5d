extension CaptureLoss {
    /// True when packets (not only their tails) are missing in the window: a silence there may be the
    /// capture's, not the peer's. A snaplen-truncated frame was still seen.
    public var hidesPackets: Bool { reason != .snaplen }

    /// True when the loss window and `start ... end` share a moment.
    public func overlaps(_ start: Nanos, _ end: Nanos) -> Bool { self.start <= end && start <= self.end }

    /// Marks drops (kernel, interface, queue) and unseen data: an input known to be incomplete.
    public var makesInputIncomplete: Bool {
        switch reason {
        case .kernelDrop, .interfaceDrop, .queueDrop, .unseenData: true
        case .snaplen, .gap, .oneSided: false
        }
    }

    /// One phrase for reports: `676 packets dropped by the kernel between 10:00:01.2Z and 10:00:05.0Z (en0)`.
    public var caveat: String {
        let n = count > 0 ? "\(count) " : "an unknown number of "
        let what: String
        switch reason {
        case .kernelDrop: what = "\(n)packets dropped by the kernel (capture buffer)"
        case .interfaceDrop: what = "\(n)packets dropped by the interface or driver"
        case .queueDrop: what = "\(n)packets dropped on the way to the capture"
        case .snaplen: what = "\(n)frames cut by the snapshot length"
        case .gap: what = "no capture at all (a gap in the input)"
        case .unseenData: what = "\(count > 0 ? "\(count) bytes" : "data") of TCP acknowledged but never captured"
        case .oneSided: what = "only one direction of a flow captured"
        }
        return "\(what) between \(CaptureTime.iso8601(start)) and \(CaptureTime.iso8601(end))" + (source.map { " (\($0))" } ?? "")
    }

    /// Drop counts that grow between successive interface statistics of one interface, as loss windows:
    /// each window runs from the previous reading (or `start`) to the reading that showed the drops.
    /// `readings` are (time, packets dropped by the interface, packets dropped by the OS) in time order.
    public static func fromDropCounters(_ readings: [(t: Nanos, ifDrop: UInt64?, osDrop: UInt64?)], start: Nanos?,
                              source: String?) -> [CaptureLoss] {
        var out: [CaptureLoss] = []
        var lastT = start
        var lastIf: UInt64 = 0, lastOS: UInt64 = 0
        for r in readings {
            let from = lastT ?? r.t
            if let v = r.ifDrop {
                if v > lastIf {
                    out.append(CaptureLoss(reason: .interfaceDrop, start: from, end: r.t, count: Int(clamping: v - lastIf), source: source))
                }
                lastIf = max(lastIf, v)
            }
            if let v = r.osDrop {
                if v > lastOS {
                    out.append(CaptureLoss(reason: .kernelDrop, start: from, end: r.t, count: Int(clamping: v - lastOS), source: source))
                }
                lastOS = max(lastOS, v)
            }
            lastT = r.t
        }
        return out
    }
}
