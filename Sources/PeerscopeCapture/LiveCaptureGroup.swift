#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import PeerscopeCore

/// Why a `LiveCaptureGroup` stopped.
public enum LiveStopReason: String, Sendable, Equatable {
    /// `count` frames were analysed.
    case count
    /// `duration` elapsed.
    case duration
    /// SIGINT (Ctrl-C).
    case interrupt
    /// SIGTERM.
    case terminate
    /// `requestStop()` without a signal.
    case requested
    /// Every interface went away (link down, interface deleted) or failed.
    case interfaceGone = "interface-gone"

    fileprivate var code: UInt8 {
        switch self {
        case .requested: 1
        case .interrupt: 2
        case .terminate: 3
        case .count: 4
        case .duration: 5
        case .interfaceGone: 6
        }
    }

    fileprivate init(code: UInt8) {
        switch code {
        case 2: self = .interrupt
        case 3: self = .terminate
        case 4: self = .count
        case 5: self = .duration
        case 6: self = .interfaceGone
        default: self = .requested
        }
    }
}

/// Stops a running `LiveCaptureGroup` from any thread or from a signal handler: it only calls
/// `write(2)` on a non-blocking pipe (async-signal-safe). The pipe is never read while the capture
/// runs, so every reader thread sees it readable.
public struct LiveGroupStopHandle: Sendable {
    let fd: Int32

    /// Ends the capture; the first reason given wins.
    public func requestStop(_ reason: LiveStopReason = .requested) {
        var b = reason.code
        _ = write(fd, &b, 1)
    }
}

/// Settings of a capture on one or more interfaces.
public struct LiveGroupOptions: Sendable {
    /// One entry per interface (each becomes one libpcap handle and one reader thread).
    public var interfaces: [LiveCaptureOptions]
    /// Stop after this much elapsed (wall-clock) time.
    public var duration: Nanos?
    /// Stop after this many frames were analysed.
    public var count: UInt64?
    /// Most frames waiting per interface between its reader thread and the analysis; more are
    /// dropped and counted (`queueDropped`).
    public var queuePackets: Int
    /// Most captured bytes waiting per interface (bounds memory whatever the packet sizes).
    public var queueBytes: Int

    public static let defaultQueuePackets = 200_000
    public static let defaultQueueBytes = 64 << 20

    public init(interfaces: [LiveCaptureOptions], duration: Nanos? = nil, count: UInt64? = nil,
                queuePackets: Int = LiveGroupOptions.defaultQueuePackets, queueBytes: Int = LiveGroupOptions.defaultQueueBytes) {
        self.interfaces = interfaces
        self.duration = duration
        self.count = count
        self.queuePackets = max(1, queuePackets)
        self.queueBytes = max(1, queueBytes)
    }
}

/// What a finished group capture did.
public struct LiveGroupSummary: Sendable, Equatable {
    public var stopReason: LiveStopReason
    /// Frames handed to `onFrame`.
    public var frames: UInt64
    /// Per-interface counts and loss windows (`stats.capture` of the report).
    public var stats: LiveCaptureStats

    /// The final line on standard error: why it stopped, and per interface what was received and lost.
    public var line: String {
        var s = "stopped (\(stopReason.rawValue)) after \(frames) packet(s)"
        for i in stats.interfaces { s += "; " + i.line }
        if !stats.complete { s += "; capture incomplete" }
        return s
    }
}

/// Captures on several interfaces at once: one libpcap handle and one reader thread per interface,
/// each thread draining its kernel ring into a bounded queue (so a slow analysis never stalls the
/// kernel; a full queue drops and counts), and `run` merging the queues by capture time into one
/// stream of frames, numbered in that order.
///
/// Frames are released in time order: a frame waits until every other interface has either a later
/// frame queued or has shown, by finding its ring empty, that it holds nothing earlier (allowing for
/// the kernel's buffering delay). Kernel drops are read from `pcap_stats` after every drain and become
/// loss windows between the two reads; queue drops become windows spanning the dropped frames.
public final class LiveCaptureGroup {
    public let options: LiveGroupOptions
    /// The open handles, in the order of `options.interfaces`.
    public let captures: [LiveCapture]
    public let stopHandle: LiveGroupStopHandle

    private let stopRead: Int32
    private let stopWrite: Int32
    private let shared = NSCondition()
    private let readers: [Reader]

    /// Opens and activates every interface; throws the first that cannot be opened.
    public init(_ options: LiveGroupOptions) throws(CaptureError) {
        self.options = options
        var opened: [LiveCapture] = []
        for o in options.interfaces { opened.append(try LiveCapture(o)) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw .live(interface: options.interfaces.first?.interface ?? "?", message: "cannot create the stop pipe: \(ByteSource.describe(errno: errno))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        stopRead = fds[0]
        stopWrite = fds[1]
        stopHandle = LiveGroupStopHandle(fd: fds[1])
        captures = opened
        let lock = shared
        readers = opened.map { Reader(capture: $0, lock: lock, queuePackets: options.queuePackets, queueBytes: options.queueBytes) }
    }

    deinit {
        close(stopRead)
        close(stopWrite)
    }

    /// Captures until `count`, `duration`, a stop request or every interface going away, calling
    /// `onFrame` for each frame in capture-time order (numbered 1, 2, ... across interfaces, input 0)
    /// and `onIdle` about every `idleInterval` of wall-clock time (to flush files, print progress).
    public func run(idleInterval: Nanos = 200_000_000, onIdle: () -> Void = {}, onFrame: (RawFrame) -> Void) -> LiveGroupSummary {
        let threads = readers.map { r in
            let t = Thread { [stopRead] in r.loop(stopFD: stopRead) }
            t.name = "peerscope-capture-\(r.capture.options.interface)"
            t.stackSize = 1 << 20
            return t
        }
        for t in threads { t.start() }

        let start = LiveCapture.monotonicNanos()
        let deadline: Int64? = options.duration.map { d in
            let (v, o) = start.addingReportingOverflow(max(0, d))
            return o ? .max : v
        }
        var local: [[RawFrame]] = Array(repeating: [], count: readers.count)
        var heads = Array(repeating: 0, count: readers.count)
        var delivered: UInt64 = 0
        var number: UInt64 = 0
        var countReached = options.count == 0
        if countReached { stopHandle.requestStop(.count) }
        var lastIdle = start

        while true {
            // Take what the readers queued, and their progress marks.
            shared.lock()
            var marks: [Nanos] = []
            var done: [Bool] = []
            for (i, r) in readers.enumerated() {
                if !r.pending.isEmpty {
                    if heads[i] > 0 {
                        local[i].removeFirst(heads[i])
                        heads[i] = 0
                    }
                    local[i] += r.pending
                    r.pending.removeAll(keepingCapacity: true)
                    r.pendingBytes = 0
                }
                marks.append(r.watermark)
                done.append(r.finished)
            }
            shared.unlock()

            // Release every frame no interface can still precede.
            var released = 0
            while true {
                var best = -1
                for i in local.indices where heads[i] < local[i].count {
                    if best < 0 || local[i][heads[i]].info.t < local[best][heads[best]].info.t { best = i }
                }
                guard best >= 0 else { break }
                let t = local[best][heads[best]].info.t
                let safe = local.indices.allSatisfy { k in k == best || heads[k] < local[k].count || done[k] || t <= marks[k] }
                guard safe else { break }
                var frame = local[best][heads[best]]
                heads[best] += 1
                released += 1
                if countReached { continue }
                number &+= 1
                frame.info.number = number
                frame.info.input = 0
                onFrame(frame)
                delivered &+= 1
                if let c = options.count, delivered >= c {
                    countReached = true
                    stopHandle.requestStop(.count)
                }
            }

            let now = LiveCapture.monotonicNanos()
            if let deadline, now >= deadline { stopHandle.requestStop(.duration) }
            if now &- lastIdle >= idleInterval {
                lastIdle = now
                onIdle()
            }
            let empty = local.indices.allSatisfy { heads[$0] >= local[$0].count }
            if done.allSatisfy({ $0 }) && empty {
                // A reader may have queued its last frames after the snapshot: take them first.
                shared.lock()
                let more = readers.contains { !$0.pending.isEmpty }
                shared.unlock()
                if !more { break }
                continue
            }
            if released == 0 {
                shared.lock()
                if !readers.contains(where: { !$0.pending.isEmpty || ($0.finished && !$0.seenFinished) }) {
                    _ = shared.wait(until: Date(timeIntervalSinceNow: 0.02))
                }
                for r in readers where r.finished { r.seenFinished = true }
                shared.unlock()
            }
        }
        for t in threads { while !t.isFinished { usleep(1000) } }

        // The first stop request names the reason; none means every interface went away.
        var b: UInt8 = 0
        let reason: LiveStopReason = read(stopRead, &b, 1) == 1 ? LiveStopReason(code: b) : .interfaceGone
        var sink = [UInt8](repeating: 0, count: 64)
        while read(stopRead, &sink, sink.count) > 0 {}

        var interfaces: [InterfaceCaptureStats] = []
        var losses: [CaptureLoss] = []
        shared.lock()
        for r in readers {
            interfaces.append(r.stats)
            losses += r.losses
        }
        shared.unlock()
        losses.sort { ($0.start, $0.end, $0.source ?? "") < ($1.start, $1.end, $1.source ?? "") }
        return LiveGroupSummary(stopReason: reason, frames: delivered,
                                stats: LiveCaptureStats(interfaces: interfaces, stopReason: reason.rawValue, losses: losses))
    }
}

/// One interface's reader thread and its queue. Everything but `capture` is guarded by `lock`.
private final class Reader: @unchecked Sendable {
    let capture: LiveCapture
    let lock: NSCondition
    let queuePackets: Int
    let queueBytes: Int
    var pending: [RawFrame] = []
    var pendingBytes = 0
    /// No frame captured before this time (ns since the epoch) is still to come.
    var watermark: Nanos = .min
    var finished = false
    var seenFinished = false
    var stats: InterfaceCaptureStats
    var losses: [CaptureLoss] = []
    /// The queue-drop run in progress.
    private var dropRun: CaptureLoss?
    static let maxLossWindows = 4096

    init(capture: LiveCapture, lock: NSCondition, queuePackets: Int, queueBytes: Int) {
        self.capture = capture
        self.lock = lock
        self.queuePackets = queuePackets
        self.queueBytes = queueBytes
        stats = InterfaceCaptureStats(interface: capture.options.interface, linkType: capture.linkType)
    }

    /// The thread body: drain the ring into the queue, wait on the descriptor, until a stop request
    /// (then drain what the kernel still holds) or an error.
    func loop(stopFD: Int32) {
        let name = capture.options.interface
        // Buffered (not immediate) delivery may hold a packet this long before the ring shows it.
        let holdBack: Nanos = (capture.options.immediate ? 0 : Nanos(LiveCaptureOptions.bufferTimeoutMilliseconds) * 1_000_000) + 20_000_000
        var lastStatsT = LiveCapture.realtimeNanos()
        var last = (received: UInt64(0), dropped: UInt64(0), interfaceDropped: UInt64(0))
        var stopAt: Int64?
        var fds = [pollfd(fd: capture.pollDescriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
        var batch: [RawFrame] = []
        batch.reserveCapacity(1024)
        var ended: String?

        func readCounters() {
            let now = LiveCapture.realtimeNanos()
            guard let c = capture.counters() else { return }
            // Counters only grow; a reset (none expected) is taken as a new start.
            if c.dropped > last.dropped {
                add(CaptureLoss(reason: .kernelDrop, start: lastStatsT, end: now, count: Int(clamping: c.dropped &- last.dropped), source: name))
            }
            if c.interfaceDropped > last.interfaceDropped {
                add(CaptureLoss(reason: .interfaceDrop, start: lastStatsT, end: now,
                                count: Int(clamping: c.interfaceDropped &- last.interfaceDropped), source: name))
            }
            last = c
            lastStatsT = now
            lock.lock()
            stats.kernelDropped = c.dropped
            stats.interfaceDropped = c.interfaceDropped
            stats.pcapReceived = c.received
            lock.unlock()
        }

        while true {
            var emptied = false
            var rounds = 0
            while !emptied && rounds < 16 {
                batch.removeAll(keepingCapacity: true)
                let started = LiveCapture.realtimeNanos()
                do {
                    let n = try capture.drain(max: 1024) { batch.append($0) }
                    emptied = n < 1024
                } catch {
                    if case .live(_, let message) = error { ended = message } else { ended = error.description }
                    emptied = true
                }
                push(batch, emptyAt: emptied ? started &- holdBack : nil)
                rounds += 1
            }
            readCounters()
            if let e = ended {
                let why = LiveCapture.goneReason(name, fallback: e)
                finish(ended: why == e ? e : "\(why) (\(e))")
                return
            }
            let now = LiveCapture.monotonicNanos()
            if let s = stopAt, now >= s, emptied {
                finish(ended: nil)
                return
            }
            if !emptied { continue }
            fds[0].revents = 0
            fds[1].revents = 0
            let wait: Int32 = stopAt == nil ? 100 : 20
            let rc = poll(&fds, stopAt == nil ? 2 : 1, wait)
            if rc < 0 && errno != EINTR {
                finish(ended: "poll failed: \(ByteSource.describe(errno: errno))")
                return
            }
            if stopAt == nil, fds[1].revents & Int16(POLLIN) != 0 {
                // Packets the kernel still holds in a block not yet handed over come within its timeout.
                stopAt = now &+ holdBack &+ 30_000_000
            }
            if fds[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                // Take what is left; the next drain reports the error (or the loop ends it here).
                batch.removeAll(keepingCapacity: true)
                _ = try? capture.drain(max: Int.max) { batch.append($0) }
                push(batch, emptyAt: nil)
                readCounters()
                finish(ended: LiveCapture.goneReason(name, fallback: "the capture descriptor reported an error"))
                return
            }
        }
    }

    private func add(_ loss: CaptureLoss) {
        lock.lock()
        defer { lock.unlock() }
        appendLoss(loss)
    }

    /// Caller holds `lock`.
    private func appendLoss(_ loss: CaptureLoss) {
        if losses.count >= Reader.maxLossWindows, var lastLoss = losses.popLast() {
            // Memory stays bounded over hours of loss: the last window absorbs the rest.
            lastLoss.end = max(lastLoss.end, loss.end)
            lastLoss.count = lastLoss.count.addingReportingOverflow(loss.count).overflow ? .max : lastLoss.count + loss.count
            losses.append(lastLoss)
        } else {
            losses.append(loss)
        }
    }

    private func push(_ frames: [RawFrame], emptyAt: Nanos?) {
        lock.lock()
        defer { lock.unlock() }
        for f in frames {
            stats.received &+= 1
            if pending.count >= queuePackets || pendingBytes &+ f.data.count > queueBytes {
                stats.queueDropped &+= 1
                if var run = dropRun {
                    run.end = max(run.end, f.info.t)
                    run.count += 1
                    dropRun = run
                } else {
                    dropRun = CaptureLoss(reason: .queueDrop, start: f.info.t, end: f.info.t, count: 1, source: capture.options.interface)
                }
                continue
            }
            if let run = dropRun {
                appendLoss(run)
                dropRun = nil
            }
            pending.append(f)
            pendingBytes &+= f.data.count
            if f.info.t > watermark { watermark = f.info.t }
        }
        if let e = emptyAt, e > watermark { watermark = e }
        if !frames.isEmpty || emptyAt != nil { lock.broadcast() }
    }

    private func finish(ended: String?) {
        lock.lock()
        if let run = dropRun {
            appendLoss(run)
            dropRun = nil
        }
        stats.ended = ended
        finished = true
        lock.broadcast()
        lock.unlock()
    }
}
