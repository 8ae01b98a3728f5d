import PeerscopeCore

/// Decodes captured frames from the link layer up to UDP datagrams, in-order TCP bytes, TCP
/// connection events and ICMP errors.
///
/// Single-threaded: one decoder per run. Time is capture time: flows and fragments are evicted on
/// the timestamps of the frames (and of `advance(to:)`), never on the wall clock. Memory is bounded by
/// the number of active flows and the buffer limits of `PacketOptions`, not by the input size.
///
/// Hot state is `@exclusivity(unchecked)` (here and in `TCPConn`): the decoder is single-threaded and
/// never forms overlapping accesses (the whole test suite, fuzz test included, passed with the dynamic
/// checks on before they were turned off); skipping them saves about a quarter of the per-frame time.
/// Never pass `&conn.c2s` to code that also reaches `conn.c2s`.
public final class PacketDecoder {
    public let options: PacketOptions
    @exclusivity(unchecked) public internal(set) var counters = PacketCounters()

    /// Units and diagnostics produced by the current call, handed out at its end.
    @exclusivity(unchecked) var out: [TransportUnit] = []
    @exclusivity(unchecked) var diags: [Diagnostic] = []
    /// The frame being decoded.
    @exclusivity(unchecked) var cur = FrameInfo(input: 0, number: 0, t: 0, capturedLength: 0, originalLength: 0, linkType: 0)
    /// Scope for IPv6 link-local addresses of the current frame (interface name).
    @exclusivity(unchecked) var scope: String?
    /// Whether the current frame was cut by the snap length.
    @exclusivity(unchecked) var snapped = false
    /// Latest capture time seen.
    @exclusivity(unchecked) var now: Nanos = .min
    @exclusivity(unchecked) var nextSweep: Nanos = .min

    @exclusivity(unchecked) var reportedLinkTypes: Set<UInt32> = []
    /// Where diagnostics are counted and the per-id limit applied (the engine's, shared by every stage).
    public let diagnostics: DiagnosticCollector
    @exclusivity(unchecked) var pktapNameBytes: [UInt8] = []
    @exclusivity(unchecked) var pktapName: String?

    // TCP state (TCPStreams.swift).
    @exclusivity(unchecked) var conns: [FlowKey: TCPConn] = [:]
    @exclusivity(unchecked) var nextConnID: UInt64 = 1
    /// When each connection could next be due for the sweep (see `sweepTCP`), and the sweeps so far.
    @exclusivity(unchecked) var sweepQueue = TCPSweepQueue()
    @exclusivity(unchecked) var sweepRound: UInt64 = 0
    @exclusivity(unchecked) var bufferedTotal = 0
    /// Parked connections (TCPParking.swift): their records by key, their deadlines, the writer's room.
    @exclusivity(unchecked) var parked: [TCPParkKey: [UInt8]] = [:]
    @exclusivity(unchecked) var parkQueue = TCPParkQueue()
    @exclusivity(unchecked) var parkWriter = TCPParkWriter()
    /// TCP data acknowledged or skipped but never captured, per connection id (see `unseenDataLosses`).
    @exclusivity(unchecked) var unseenData: [UInt64: CaptureLoss] = [:]
    /// TCP connections of which only one direction was captured, per connection id.
    @exclusivity(unchecked) var oneSided: [UInt64: CaptureLoss] = [:]

    // IP reassembly state (Fragments.swift).
    @exclusivity(unchecked) var frags: [FragKey: FragBuffer] = [:]
    @exclusivity(unchecked) var fragOrder: UInt64 = 0

    /// `diagnostics`: the run's collector (its per-id limit applies); by default one of the decoder's
    /// own, keeping `options.maxDiagnosticsPerID` of each id.
    public init(options: PacketOptions = .init(), diagnostics: DiagnosticCollector? = nil) {
        self.options = options
        self.diagnostics = diagnostics ?? DiagnosticCollector(keptPerID: options.maxDiagnosticsPerID)
        out.reserveCapacity(16)
    }

    /// TCP connections currently tracked (open or recently closed), parked ones included.
    public var activeConnections: Int { conns.count + parked.count }
    /// TCP data the capture missed, one loss per connection (count = bytes; the source names the
    /// connection), in connection order: holes given up on and acknowledgements of bytes never seen.
    public var unseenDataLosses: [CaptureLoss] { unseenData.keys.sorted().compactMap { unseenData[$0] } }
    /// TCP connections of which only one direction was captured while the other side evidently sent
    /// (its data acknowledged), one loss each with the connection's flow, in connection order.
    public var oneSidedLosses: [CaptureLoss] { oneSided.keys.sorted().compactMap { oneSided[$0] } }
    /// Out-of-order TCP bytes currently buffered, all connections.
    public var bufferedBytes: Int { bufferedTotal }
    /// IP datagrams currently being reassembled.
    public var pendingReassemblies: Int { frags.count }

    /// Decodes one frame. Units come out in order through `emit`; anomalies through `diagnose`.
    /// Idle flows whose timeout passed before this frame's time are evicted first.
    public func decode(_ frame: RawFrame, _ emit: (TransportUnit) -> Void, _ diagnose: (Diagnostic) -> Void) {
        counters.frames += 1
        if frame.info.t > now { now = frame.info.t }
        if now >= nextSweep { sweep() }
        cur = frame.info
        scope = frame.info.interfaceName
        snapped = frame.info.capturedLength < frame.info.originalLength || frame.data.count < frame.info.originalLength
        link(frame.info.linkType, frame.data, 0, depth: 0)
        flush(emit, diagnose)
    }

    /// Moves capture time forward: evicts idle connections, gives up on held FINs and stale fragments.
    public func advance(to t: Nanos, _ emit: (TransportUnit) -> Void, _ diagnose: (Diagnostic) -> Void = { _ in }) {
        if t > now { now = t }
        if now >= nextSweep { sweep() }
        flush(emit, diagnose)
    }

    /// End of input: delivers what is buffered (after `.gap`s for holes), pending FINs, reports
    /// unfinished reassemblies, and forgets every flow.
    public func finish(at t: Nanos, _ emit: (TransportUnit) -> Void, _ diagnose: (Diagnostic) -> Void = { _ in }) {
        if t > now { now = t }
        finishTCP()
        finishFragments()
        flush(emit, diagnose)
    }

    func flush(_ emit: (TransportUnit) -> Void, _ diagnose: (Diagnostic) -> Void) {
        if !diags.isEmpty {
            for d in diags { diagnose(d) }
            diags.removeAll(keepingCapacity: true)
        }
        if !out.isEmpty {
            for u in out { emit(u) }
            out.removeAll(keepingCapacity: true)
        }
    }

    func sweep() {
        nextSweep = now == .min ? .min : now &+ max(1, options.sweepInterval)
        sweepTCP()
        sweepFragments()
    }

    /// Records a diagnostic about the current frame; `offset` is the byte offset in the frame.
    /// Past the collector's per-id limit it is only counted (the message is not even built).
    func diag(_ id: String, _ severity: Severity, _ message: @autoclosure () -> String, _ offset: Int?) {
        diag(id, severity, message(), offset, evidence: cur.evidence, t: cur.t)
    }

    /// Records a diagnostic with its own evidence and time (a datagram that timed out).
    func diag(_ id: String, _ severity: Severity, _ message: @autoclosure () -> String, _ offset: Int?, evidence: Evidence?, t: Nanos) {
        counters.diagnostics += 1
        guard diagnostics.admit(id) else {
            counters.diagnosticsSuppressed += 1
            return
        }
        diags.append(Diagnostic(id: id, severity: severity, message: message(), evidence: evidence, offset: offset, t: t))
    }

    // MARK: link layers

    /// Decodes the link layer `lt` of `d`, which starts at frame offset `off`.
    func link(_ lt: UInt32, _ d: Bytes, _ off: Int, depth: Int) {
        switch lt {
        case LinkType.ethernet:
            ethernet(d, off)
        case LinkType.raw, LinkType.raw12, LinkType.raw14:
            guard let b = d.byte(0) else { return truncated("raw.truncated", "raw IP frame is empty", off) }
            switch b >> 4 {
            case 4: ipv4(d, off)
            case 6: ipv6(d, off)
            default: diag("raw.bad_version", .warning, "raw IP frame with version \(b >> 4)", off)
            }
        case LinkType.ipv4:
            ipv4(d, off)
        case LinkType.ipv6:
            ipv6(d, off)
        case LinkType.null, LinkType.loop:
            guard let le = d.u32le(0), let be = d.u32be(0) else {
                return truncated("null.truncated", "loopback header needs 4 bytes, \(d.count) captured", off)
            }
            // NULL is in the capturing host's byte order: a family fits in 16 bits either way.
            let family = lt == LinkType.loop ? be : (le & 0xFFFF_0000 == 0 ? le : be)
            switch family {
            case 2: ipv4(d.suffix(from: 4), off + 4)
            case 24, 28, 30: ipv6(d.suffix(from: 4), off + 4)
            default: counters.nonIP += 1
            }
        case LinkType.linuxSLL:
            guard let proto = d.u16be(14) else {
                return truncated("sll.truncated", "Linux cooked header needs 16 bytes, \(d.count) captured", off)
            }
            ethertype(proto, d.suffix(from: 16), off + 16, depth: 0)
        case LinkType.linuxSLL2:
            guard d.count >= 20, let proto = d.u16be(0) else {
                return truncated("sll2.truncated", "Linux cooked v2 header needs 20 bytes, \(d.count) captured", off)
            }
            ethertype(proto, d.suffix(from: 20), off + 20, depth: 0)
        case LinkType.pktap:
            pktap(d, off, depth: depth)
        case LinkType.ieee80211:
            ieee80211(d, off, fcs: false)
        case LinkType.radiotap:
            radiotap(d, off)
        case LinkType.ppp, LinkType.pppHDLC:
            ppp(d, off)
        default:
            counters.unsupportedLinkFrames[lt, default: 0] += 1
            if reportedLinkTypes.insert(lt).inserted {
                diag("link.unsupported", .warning,
                     "link type \(lt) (\(LinkType.name(lt))) is not decoded; its frames are counted and skipped", nil)
            }
        }
    }

    /// A header cut short: a warning when the snap length explains it, an error otherwise.
    func truncated(_ id: String, _ message: @autoclosure () -> String, _ off: Int?) {
        diag(id, snapped ? .info : .warning, message() + (snapped ? " (cut by the snap length)" : ""), off)
    }

    func ethernet(_ d: Bytes, _ off: Int) {
        guard let type = d.u16be(12) else {
            return truncated("eth.truncated", "Ethernet header needs 14 bytes, \(d.count) captured", off)
        }
        ethertype(type, d.suffix(from: 14), off + 14, depth: 0)
    }

    /// Dispatches on an EtherType (or an 802.3 length followed by LLC/SNAP); VLAN tags may be stacked.
    func ethertype(_ type: UInt16, _ d: Bytes, _ off: Int, depth: Int) {
        switch type {
        case 0x0800:
            ipv4(d, off)
        case 0x86DD:
            ipv6(d, off)
        case 0x8100, 0x88A8, 0x9100, 0x9200:
            guard depth < 8 else {
                return diag("vlan.too_deep", .warning, "more than 8 stacked VLAN tags", off)
            }
            guard let inner = d.u16be(2) else {
                return truncated("vlan.truncated", "VLAN tag needs 4 bytes, \(d.count) captured", off)
            }
            ethertype(inner, d.suffix(from: 4), off + 4, depth: depth + 1)
        case 0x8864:
            // PPPoE session: version/type, code, session id, length, then the PPP protocol.
            guard let proto = d.u16be(6) else {
                return truncated("pppoe.truncated", "PPPoE header needs 8 bytes, \(d.count) captured", off)
            }
            switch proto {
            case 0x0021: ipv4(d.suffix(from: 8), off + 8)
            case 0x0057: ipv6(d.suffix(from: 8), off + 8)
            default: counters.nonIP += 1
            }
        case 0 ..< 0x0600:
            // 802.3 length: LLC, maybe SNAP with an EtherType.
            llc(d, off, depth: depth)
        default:
            counters.nonIP += 1
        }
    }

    /// LLC; SNAP (AA AA 03, OUI 0) carries an EtherType.
    func llc(_ d: Bytes, _ off: Int, depth: Int) {
        guard d.byte(0) == 0xAA, d.byte(1) == 0xAA, d.byte(2) == 0x03 else {
            counters.nonIP += 1
            return
        }
        guard let type = d.u16be(6) else {
            return truncated("llc.truncated", "SNAP header needs 8 bytes, \(d.count) captured", off)
        }
        ethertype(type, d.suffix(from: 8), off + 8, depth: depth + 1)
    }

    /// Apple PKTAP: little-endian header; length at 0, record type at 4, inner DLT at 8, interface
    /// name at 12 (24 bytes, NUL-padded). The interface name scopes IPv6 link-local addresses.
    func pktap(_ d: Bytes, _ off: Int, depth: Int) {
        guard let hlen32 = d.u32le(0), let dlt = d.u32le(8), d.count >= 36 else {
            return truncated("pktap.truncated", "PKTAP header needs 36 bytes, \(d.count) captured", off)
        }
        let hlen = Int(hlen32)
        guard hlen >= 36, hlen <= d.count else {
            if hlen > d.count && hlen <= 4096 {
                return truncated("pktap.truncated", "PKTAP header of \(hlen) bytes, \(d.count) captured", off)
            }
            return diag("pktap.bad_length", .warning, "PKTAP header length \(hlen) is invalid", off)
        }
        guard depth == 0, dlt != LinkType.pktap else {
            return diag("pktap.nested", .warning, "PKTAP inside PKTAP", off)
        }
        if let name = pktapInterface(d) { scope = name }
        link(dlt, d.suffix(from: hlen), off + hlen, depth: depth + 1)
    }

    /// The PKTAP interface name, cached so repeated names cost no allocation.
    func pktapInterface(_ d: Bytes) -> String? {
        var n = 0
        while n < 24, let b = d.byte(12 + n), b != 0 { n += 1 }
        guard n > 0 else { return scope }
        if n == pktapNameBytes.count {
            var same = true
            for i in 0 ..< n where d.byte(12 + i) != pktapNameBytes[i] { same = false; break }
            if same { return pktapName }
        }
        pktapNameBytes = (d.slice(12, n) ?? .empty).array
        pktapName = String(decoding: pktapNameBytes, as: UTF8.self)
        return pktapName
    }

    /// IEEE 802.11 data frames with LLC/SNAP. `fcs`: the frame ends with a 4-byte FCS.
    func ieee80211(_ frame: Bytes, _ off: Int, fcs: Bool, pad: Bool = false) {
        var d = frame
        if fcs { d = d.prefix(d.count - 4) }
        guard let fc0 = d.byte(0), let fc1 = d.byte(1) else {
            return truncated("wlan.truncated", "802.11 header needs 2 bytes, \(d.count) captured", off)
        }
        let type = (fc0 >> 2) & 0x3
        let subtype = fc0 >> 4
        guard type == 2 else { counters.nonIP += 1; return }  // management, control: not IP
        guard subtype & 0x4 == 0 else { counters.nonIP += 1; return }  // null data: no body
        var hlen = 24
        if fc1 & 0x03 == 0x03 { hlen += 6 }  // to-DS and from-DS: four addresses
        let qos = subtype & 0x8 != 0
        if qos {
            hlen += 2
            if fc1 & 0x80 != 0 { hlen += 4 }  // +HTC
        }
        if pad { hlen = (hlen + 3) & ~3 }
        guard d.count >= hlen else {
            return truncated("wlan.truncated", "802.11 data header needs \(hlen) bytes, \(d.count) captured", off)
        }
        if fc1 & 0x40 != 0 {  // protected
            counters.encrypted80211 += 1
            return
        }
        llc(d.suffix(from: hlen), off + hlen, depth: 0)
    }

    /// Radiotap in front of 802.11: little-endian length at 2; the Flags field says FCS and padding.
    func radiotap(_ d: Bytes, _ off: Int) {
        guard let len16 = d.u16le(2), let present = d.u32le(4) else {
            return truncated("radiotap.truncated", "radiotap header needs 8 bytes, \(d.count) captured", off)
        }
        let len = Int(len16)
        guard len >= 8, len <= d.count else {
            if len > d.count { return truncated("radiotap.truncated", "radiotap header of \(len) bytes, \(d.count) captured", off) }
            return diag("radiotap.bad_length", .warning, "radiotap length \(len) is invalid", off)
        }
        // Skip extended presence words.
        var o = 8
        var p = present
        while p & 0x8000_0000 != 0 {
            guard let next = d.u32le(o), o + 4 <= len else {
                return diag("radiotap.bad_length", .warning, "radiotap presence words run past its length", off + o)
            }
            p = next
            o += 4
        }
        var flags: UInt8 = 0
        if present & 0x2 != 0 {
            if present & 0x1 != 0 { o = (o + 7) & ~7; o += 8 }  // TSFT, 8-aligned
            if o < len, let f = d.byte(o) { flags = f }
        }
        ieee80211(d.suffix(from: len), off + len, fcs: flags & 0x10 != 0, pad: flags & 0x20 != 0)
    }

    /// PPP: optional HDLC address/control (FF 03), then a 1- or 2-byte protocol.
    func ppp(_ d: Bytes, _ off: Int) {
        var o = 0
        if d.byte(0) == 0xFF, d.byte(1) == 0x03 { o = 2 }
        guard let first = d.byte(o) else {
            return truncated("ppp.truncated", "PPP header needs a protocol, \(d.count) captured", off)
        }
        var proto = UInt16(first)
        if first & 1 == 0 {
            guard let p = d.u16be(o) else {
                return truncated("ppp.truncated", "PPP protocol needs 2 bytes", off + o)
            }
            proto = p
            o += 2
        } else {
            o += 1
        }
        switch proto {
        case 0x0021: ipv4(d.suffix(from: o), off + o)
        case 0x0057: ipv6(d.suffix(from: o), off + o)
        default: counters.nonIP += 1
        }
    }
}
