#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPcap
import PeerscopeCore

/// How to capture from an interface.
public struct LiveCaptureOptions: Sendable, Equatable {
    /// Interface name (`eth0`, `en0`, `lo`, `lo0`, `any`).
    public var interface: String
    /// BPF filter (tcpdump syntax); nil captures everything.
    public var filter: String?
    /// Bytes kept per packet.
    public var snapLength: Int32
    /// Put the interface in promiscuous mode (see traffic not addressed to this host).
    public var promiscuous: Bool
    /// Deliver packets as they arrive instead of when the kernel buffer fills.
    public var immediate: Bool
    /// Kernel buffer size in bytes; nil keeps libpcap's default.
    public var bufferSize: Int32?
    /// Stop after this much elapsed time (a wall-clock deadline, by nature of live capture).
    public var duration: Nanos?
    /// Stop after this many frames.
    public var count: UInt64?
    /// Input index stamped on every frame (`FrameInfo.input`).
    public var input: Int

    /// Snap length kept by default: the largest packet MPC sends fits (IPv4/IPv6 datagrams are at most
    /// 65,535 bytes; libpcap's own default of 262,144 only wastes ring space).
    public static let defaultSnapLength: Int32 = 65_535
    /// Kernel buffer used by default, 32 MiB (libpcap's default is 2 MiB): see `peerscope capture --help`
    /// for the burst it was measured to hold.
    public static let defaultBufferSize: Int32 = 32 << 20
    /// How long the kernel may hold packets before handing them over (when not immediate), ms.
    public static let bufferTimeoutMilliseconds: Int32 = 100

    /// Options with burst-proof defaults: 65,535-byte snap length, promiscuous, a 32 MiB kernel
    /// buffer, buffered (not immediate) delivery, no limits.
    public init(interface: String, filter: String? = nil, snapLength: Int32 = LiveCaptureOptions.defaultSnapLength,
                promiscuous: Bool = true, immediate: Bool = false, bufferSize: Int32? = LiveCaptureOptions.defaultBufferSize, duration: Nanos? = nil, count: UInt64? = nil,
                input: Int = 0) {
        self.interface = interface
        self.filter = filter
        self.snapLength = snapLength
        self.promiscuous = promiscuous
        self.immediate = immediate
        self.bufferSize = bufferSize
        self.duration = duration
        self.count = count
        self.input = input
    }
}

/// What a finished live capture did.
public struct LiveCaptureSummary: Sendable, Equatable {
    /// Why `run` returned.
    public enum StopReason: String, Sendable {
        /// `count` frames were delivered.
        case count
        /// `duration` elapsed.
        case duration
        /// `requestStop()` was called (Ctrl-C).
        case requested
    }

    /// Why `run` returned.
    public var stopReason: StopReason
    /// Frames handed to `onFrame`.
    public var frames: UInt64
    /// libpcap's `ps_recv` (on Linux `lo` it counts every packet twice), nil when unavailable.
    public var received: UInt64?
    /// Packets dropped for lack of buffer space (`ps_drop`).
    public var dropped: UInt64?
    /// Packets dropped by the interface or driver (`ps_ifdrop`).
    public var interfaceDropped: UInt64?
}

/// A handle that stops a running `LiveCapture` from any thread, including a signal handler:
/// `requestStop()` only calls `write(2)` on a non-blocking pipe, which is async-signal-safe.
///
/// For Ctrl-C, keep the handle in a global the handler can read, e.g.
/// `nonisolated(unsafe) var stopHandle: LiveCaptureStopHandle?` (written once before `signal(SIGINT, …)`
/// is installed and only read by the handler), and call `stopHandle?.requestStop()` in the handler.
/// The handle is valid while its `LiveCapture` is alive.
public struct LiveCaptureStopHandle: Sendable {
    let fd: Int32

    /// Makes the running (or next) `run` return with `.requested`.
    public func requestStop() {
        var b: UInt8 = 1
        _ = write(fd, &b, 1)
    }
}

/// Captures frames from a network interface with libpcap.
///
/// The handle is opened and activated in `init` (so packets arriving before `run` are buffered by the
/// kernel); `run` delivers frames until the count, the duration or a stop request. It uses
/// non-blocking libpcap and `poll(2)` on the selectable descriptor plus a self-pipe, because on Linux
/// `pcap_next_ex` can block forever on an idle interface. Not thread-safe apart from `requestStop()`
/// and `stopHandle`: call `run` from one thread.
public final class LiveCapture {
    /// The options the capture was opened with.
    public let options: LiveCaptureOptions
    /// LINKTYPE_* of the interface.
    public let linkType: UInt32
    /// A warning from `pcap_activate` (e.g. promiscuous mode not supported), if any.
    public let warning: String?
    /// Stops `run` from another thread or a signal handler.
    public let stopHandle: LiveCaptureStopHandle

    private let pcap: OpaquePointer
    private let selectableFD: Int32
    private let pipeRead: Int32
    private let pipeWrite: Int32
    private let nanoPrecision: Bool
    private var number: UInt64 = 0

    /// Opens and activates `options.interface` and installs the filter.
    public init(_ options: LiveCaptureOptions) throws(CaptureError) {
        self.options = options
        let name = options.interface
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let p = pcap_create(name, &errbuf) else {
            let msg = LiveCapture.string(errbuf)
            let available = LiveCapture.interfaces()
            if !available.contains(name) { throw .noSuchInterface(interface: name, available: available) }
            throw .live(interface: name, message: msg)
        }
        pcap_set_snaplen(p, options.snapLength)
        pcap_set_promisc(p, options.promiscuous ? 1 : 0)
        pcap_set_immediate_mode(p, options.immediate ? 1 : 0)
        pcap_set_timeout(p, LiveCaptureOptions.bufferTimeoutMilliseconds)
        if let size = options.bufferSize { pcap_set_buffer_size(p, size) }
        _ = pcap_set_tstamp_precision(p, Int32(PCAP_TSTAMP_PRECISION_NANO))  // falls back to µs if unsupported

        let rc = pcap_activate(p)
        if rc < 0 {
            let detail = LiveCapture.errorText(p, rc)
            pcap_close(p)
            switch rc {
            case PCAP_ERROR_PERM_DENIED, PCAP_ERROR_PROMISC_PERM_DENIED:
                // Without privileges libpcap may fail before it looks the name up: a wrong name is
                // the more useful thing to report.
                let available = LiveCapture.interfaces()
                if !available.isEmpty, !available.contains(name) {
                    throw .noSuchInterface(interface: name, available: available)
                }
                throw .permissionDenied(interface: name, message: detail)
            case PCAP_ERROR_NO_SUCH_DEVICE:
                throw .noSuchInterface(interface: name, available: LiveCapture.interfaces())
            default:
                let available = LiveCapture.interfaces()
                if !available.contains(name) { throw .noSuchInterface(interface: name, available: available) }
                throw .live(interface: name, message: detail)
            }
        }
        warning = rc > 0 ? LiveCapture.errorText(p, rc) : nil

        if let filter = options.filter {
            var prog = bpf_program()
            if pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) != 0 {
                let msg = LiveCapture.string(pcap_geterr(p))
                pcap_close(p)
                throw .badFilter(filter: filter, message: msg)
            }
            let set = pcap_setfilter(p, &prog)
            pcap_freecode(&prog)
            if set != 0 {
                let msg = LiveCapture.string(pcap_geterr(p))
                pcap_close(p)
                throw .badFilter(filter: filter, message: msg)
            }
        }
        if pcap_setnonblock(p, 1, &errbuf) != 0 {
            let msg = LiveCapture.string(errbuf)
            pcap_close(p)
            throw .live(interface: name, message: "cannot switch to non-blocking mode: \(msg)")
        }
        let sfd = pcap_get_selectable_fd(p)
        guard sfd >= 0 else {
            pcap_close(p)
            throw .live(interface: name, message: "libpcap gives no selectable descriptor for this interface")
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            pcap_close(p)
            throw .live(interface: name, message: "cannot create the stop pipe: \(ByteSource.describe(errno: errno))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        pcap = p
        selectableFD = sfd
        pipeRead = fds[0]
        pipeWrite = fds[1]
        stopHandle = LiveCaptureStopHandle(fd: fds[1])
        linkType = UInt32(bitPattern: pcap_datalink(p))
        nanoPrecision = pcap_get_tstamp_precision(p) == Int32(PCAP_TSTAMP_PRECISION_NANO)
    }

    deinit {
        pcap_close(pcap)
        close(pipeRead)
        close(pipeWrite)
    }

    /// Asks `run` to return soon; safe from any thread and from a signal handler.
    public func requestStop() { stopHandle.requestStop() }

    /// Captures until `count` frames, `duration`, or a stop request, calling `onFrame` for each frame
    /// (each with its own copy of the bytes). Throws when libpcap reports an error mid-capture.
    public func run(onFrame: (RawFrame) -> Void) throws(CaptureError) -> LiveCaptureSummary {
        let start = LiveCapture.monotonicNanos()
        let deadline: Int64? = options.duration.map { d in
            let (v, o) = start.addingReportingOverflow(max(0, d))
            return o ? .max : v
        }
        var delivered: UInt64 = 0
        var reason: LiveCaptureSummary.StopReason?
        var fds = [pollfd(fd: selectableFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: pipeRead, events: Int16(POLLIN), revents: 0)]
        if let c = options.count, c == 0 { reason = .count }

        while reason == nil {
            // Drain what is buffered, in bounded batches so a flood cannot starve the stop checks.
            let room = options.count.map { c in Int(clamping: c &- delivered) } ?? 512
            let batch = try drain(max: min(512, room)) { onFrame($0) }
            delivered &+= UInt64(batch)
            if let c = options.count, delivered >= c { reason = .count; break }
            let more = batch == 512

            var timeout: Int32 = more ? 0 : 1000
            if let deadline {
                let left = deadline &- LiveCapture.monotonicNanos()
                if left <= 0 { reason = .duration; break }
                if !more { timeout = Int32(min(1000, (left + 999_999) / 1_000_000)) }
            }
            fds[0].revents = 0
            fds[1].revents = 0
            let n = poll(&fds, 2, timeout)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw .live(interface: options.interface, message: "poll failed: \(ByteSource.describe(errno: e))")
            }
            if fds[1].revents != 0 { reason = .requested }
            if fds[0].revents & Int16(POLLERR | POLLNVAL) != 0 {
                throw .live(interface: options.interface, message: "the capture descriptor reported an error (interface gone?)")
            }
        }
        // Consume pending stop requests so a later `run` starts afresh.
        var sink = [UInt8](repeating: 0, count: 64)
        while read(pipeRead, &sink, sink.count) > 0 {}

        var st = pcap_stat()
        let haveStats = pcap_stats(pcap, &st) == 0
        return LiveCaptureSummary(
            stopReason: reason ?? .requested, frames: delivered,
            received: haveStats ? UInt64(st.ps_recv) : nil,
            dropped: haveStats ? UInt64(st.ps_drop) : nil,
            interfaceDropped: haveStats ? UInt64(st.ps_ifdrop) : nil)
    }

    /// Reads up to `max` frames that libpcap has ready without waiting (the descriptor is
    /// non-blocking), handing each to `body`; returns how many were read (fewer than `max`: the
    /// buffer is empty for now). Throws when libpcap reports an error (the interface went away).
    func drain(max: Int, _ body: (RawFrame) -> Void) throws(CaptureError) -> Int {
        var n = 0
        while n < max {
            var hdr: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            let rc = pcap_next_ex(pcap, &hdr, &data)
            if rc == 0 || rc == PCAP_ERROR_BREAK { break }
            if rc < 0 {
                let msg = rc == PCAP_ERROR_IFACE_NOT_UP ? "the interface went down" : LiveCapture.string(pcap_geterr(pcap))
                throw .live(interface: options.interface, message: msg)
            }
            n += 1
            guard let h = hdr?.pointee else { continue }
            body(frame(h, data))
        }
        return n
    }

    /// libpcap's counters (`ps_recv`, `ps_drop`, `ps_ifdrop`), nil when it cannot give them.
    func counters() -> (received: UInt64, dropped: UInt64, interfaceDropped: UInt64)? {
        var st = pcap_stat()
        guard pcap_stats(pcap, &st) == 0 else { return nil }
        return (UInt64(st.ps_recv), UInt64(st.ps_drop), UInt64(st.ps_ifdrop))
    }

    /// The descriptor `poll(2)` waits on for packets.
    var pollDescriptor: Int32 { selectableFD }

    private func frame(_ h: pcap_pkthdr, _ data: UnsafePointer<UInt8>?) -> RawFrame {
        let cap = Int(h.caplen)
        let bytes: [UInt8] = data.map { Array(UnsafeBufferPointer(start: $0, count: cap)) } ?? []
        let sec = Int64(h.ts.tv_sec)
        let sub = Int64(h.ts.tv_usec)
        let (s, o1) = sec.multipliedReportingOverflow(by: CaptureTime.second)
        let (t, o2) = s.addingReportingOverflow(nanoPrecision ? sub : sub &* 1000)
        number &+= 1
        let info = FrameInfo(input: options.input, number: number, t: (o1 || o2) ? .max : t,
                             capturedLength: bytes.count, originalLength: Int(h.len),
                             linkType: linkType, interfaceName: options.interface)
        return RawFrame(info: info, data: Bytes(bytes))
    }

    /// Names of the interfaces libpcap can capture on, in its order.
    public static func interfaces() -> [String] {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        var list: UnsafeMutablePointer<pcap_if_t>?
        guard pcap_findalldevs(&list, &errbuf) == 0 else { return [] }
        defer { pcap_freealldevs(list) }
        var names: [String] = []
        var cur = list
        while let d = cur {
            if let n = d.pointee.name { names.append(String(cString: n)) }
            cur = d.pointee.next
        }
        return names
    }

    /// Why an interface stopped delivering: `interface deleted` when libpcap no longer lists it,
    /// `interface went down` when it is listed but not up, else `fallback`.
    static func goneReason(_ name: String, fallback: String) -> String {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        var list: UnsafeMutablePointer<pcap_if_t>?
        guard pcap_findalldevs(&list, &errbuf) == 0 else { return fallback }
        defer { pcap_freealldevs(list) }
        var cur = list
        while let d = cur {
            if let n = d.pointee.name, String(cString: n) == name {
                return d.pointee.flags & UInt32(PCAP_IF_UP) == 0 ? "interface went down" : fallback
            }
            cur = d.pointee.next
        }
        return "interface deleted"
    }

    static func string(_ buf: [CChar]) -> String {
        let bytes = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func string(_ p: UnsafeMutablePointer<CChar>?) -> String {
        guard let p else { return "unknown libpcap error" }
        return String(cString: p)
    }

    /// `pcap_geterr` when libpcap left a message, else `pcap_statustostr`.
    static func errorText(_ p: OpaquePointer, _ rc: Int32) -> String {
        let msg = string(pcap_geterr(p))
        if !msg.isEmpty { return msg }
        if let s = pcap_statustostr(rc) { return String(cString: s) }
        return "libpcap status \(rc)"
    }

    /// Wall-clock time (the clock packet timestamps use), in nanoseconds since the epoch.
    static func realtimeNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    static func monotonicNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }
}
