// The simulated world: devices, capture interfaces, frames and device logs, and the building blocks
// scenarios are made of (discovery, invitation channel, ICE, DTLS, GCK, app messages).

/// 2026-01-15T10:00:00Z in nanoseconds: every capture starts here, never at the wall clock.
public let simulationEpochNanos: Int64 = 1_768_471_200_000_000_000

final class SimDevice {
    let peer: SimPeerID
    let slug: String
    let platform: String
    var processID: Int
    var threadID: Int
    let mac: [UInt8]
    let ipv4: [UInt8]
    let ipv6: [UInt8]
    let hostName: String
    var srvPort: UInt16
    var interfaces: [Int]
    var nextUDPPort: UInt16 = 16402
    var ipID: UInt16
    var inviteCounter: Int64 = 0
    var logs: [(time: Int64, order: Int, line: String)] = []
    var pointerBase: UInt64
    var socketCounter = 11
    /// GCK neighbours currently up (for "My routing table: %d nodes.").
    var neighbors = 0

    init(peer: SimPeerID, slug: String, platform: String, processID: Int, threadID: Int, mac: [UInt8],
         ipv4: [UInt8], ipv6: [UInt8], hostName: String, srvPort: UInt16, interfaces: [Int], ipID: UInt16, pointerBase: UInt64) {
        self.peer = peer; self.slug = slug; self.platform = platform; self.processID = processID; self.threadID = threadID
        self.mac = mac; self.ipv4 = ipv4; self.ipv6 = ipv6; self.hostName = hostName; self.srvPort = srvPort
        self.interfaces = interfaces; self.ipID = ipID; self.pointerBase = pointerBase
    }

    var name: String { peer.displayName }
    var pidHex: String { peer.participantHex }
    var namePID: String { peer.displayNameAndPID }

    /// A plausible `%p` value; successive calls give successive heap addresses.
    func pointer() -> String {
        pointerBase &+= 0x1A0
        return "0x" + String(pointerBase, radix: 16)
    }

    func allocateUDPPort() -> UInt16 {
        let p = nextUDPPort
        nextUDPPort = nextUDPPort > 16384 ? nextUDPPort - 1 : 16402
        return p
    }

    func nextSocket() -> Int { socketCounter += 1; return socketCounter }
}

struct SimInterfaceSpec {
    var interface: SimInterface
    var family: IPFamily
    /// Index of the device on whose machine this interface is captured (for SLL packet types).
    var capturer: Int
}

final class TCPConnection {
    let client: SimDevice
    let server: SimDevice
    let clientPort: UInt16
    let serverPort: UInt16
    let interface: Int
    var clientNext: UInt32
    var serverNext: UInt32
    var clientFrameSeq: UInt32 = 0
    var serverFrameSeq: UInt32 = 0
    let clientPtr: String
    let serverPtr: String
    let clientStreams: (String, String)
    let serverStreams: (String, String)

    init(client: SimDevice, server: SimDevice, clientPort: UInt16, serverPort: UInt16, interface: Int, clientISN: UInt32, serverISN: UInt32) {
        self.client = client; self.server = server; self.clientPort = clientPort; self.serverPort = serverPort
        self.interface = interface; self.clientNext = clientISN; self.serverNext = serverISN
        clientPtr = client.pointer(); serverPtr = server.pointer()
        clientStreams = (client.pointer(), client.pointer()); serverStreams = (server.pointer(), server.pointer())
    }
}

final class GCKLink {
    let a: SimDevice   // inviter: ICE controlling, DTLS client
    let b: SimDevice
    let aPort: UInt16
    let bPort: UInt16
    let interface: Int
    let encrypted: Bool
    let aToken: UInt32
    let bToken: UInt32
    let helloWord: UInt32
    let iceWord: UInt32
    let channel = 0
    var serial: [ObjectIdentifier: UInt32] = [:]
    var heartbeatSN: [ObjectIdentifier: UInt16] = [:]
    var dtlsSeq: [ObjectIdentifier: UInt64] = [:]
    var aSocket = 0
    var bSocket = 0

    init(a: SimDevice, b: SimDevice, aPort: UInt16, bPort: UInt16, interface: Int, encrypted: Bool,
         aToken: UInt32, bToken: UInt32, helloWord: UInt32, iceWord: UInt32) {
        self.a = a; self.b = b; self.aPort = aPort; self.bPort = bPort; self.interface = interface
        self.encrypted = encrypted; self.aToken = aToken; self.bToken = bToken; self.helloWord = helloWord; self.iceWord = iceWord
    }

    func other(_ d: SimDevice) -> SimDevice { d === a ? b : a }
    func port(_ d: SimDevice) -> UInt16 { d === a ? aPort : bPort }
    func token(_ d: SimDevice) -> UInt32 { d === a ? aToken : bToken }
    func nextSerial(_ d: SimDevice) -> UInt32 {
        let k = ObjectIdentifier(d); let v = serial[k, default: 0]; serial[k] = v &+ 1; return v
    }
    func nextHeartbeat(_ d: SimDevice) -> UInt16 {
        let k = ObjectIdentifier(d); let v = heartbeatSN[k, default: 0]; heartbeatSN[k] = v &+ 1; return v
    }
    func nextDTLS(_ d: SimDevice, epochReset: Bool = false) -> UInt64 {
        let k = ObjectIdentifier(d)
        if epochReset { dtlsSeq[k] = 0 }
        let v = dtlsSeq[k, default: 0]; dtlsSeq[k] = v &+ 1; return v
    }
}

/// A reliable serial handed out when its data packet is built, for the acknowledgement built after it.
final class SerialBox {
    var value: UInt32 = 0
}

enum InviteOutcome {
    case accept
    case decline
    case resetBeforeResponse
}

final class World {
    var rng: SimRandom
    var interfaces: [SimInterfaceSpec] = []
    var devices: [SimDevice] = []
    var frames: [SimFrame] = []
    private var order = 0
    let serviceType = "chat-app"
    var serviceName: String { "_\(serviceType)._tcp.local" }
    /// SRV ports a device advertised before its current one (an app relaunch picks a new port).
    var earlierSRVPorts: [String: [UInt16]] = [:]
    func extraSRVPorts(_ d: SimDevice) -> [Int] { (earlierSRVPorts[d.slug] ?? []).map(Int.init) }
    /// Stretches in which the capturing machine dropped packets: frames for which `drops` is true are
    /// left out of the capture, and `extra` more (other traffic on the link) were dropped as well; the
    /// pcapng interface statistics record the count at the start and end of each.
    struct CaptureDrop {
        var interface: Int
        var start: Int64
        var end: Int64
        var extra: Int
        var drops: (SimFrame) -> Bool
    }
    var captureDrops: [CaptureDrop] = []

    /// Used for IPv4 /24 host numbers and IPv6 interface IDs.
    private var hostCounter = 10

    init(seed: UInt64) { rng = SimRandom(seed: seed) }

    // MARK: time

    func at(_ seconds: Double) -> Int64 { simulationEpochNanos + Int64((seconds * 1_000_000).rounded()) * 1000 }
    /// `ms` milliseconds, jittered by up to ±`spread` ms, at microsecond resolution.
    func ms(_ ms: Double, spread: Double = 0) -> Int64 {
        let base = Int64((ms * 1000).rounded())
        let s = Int64((spread * 1000).rounded())
        return (base + (s > 0 ? rng.int(-s ... s) : 0)) * 1000
    }

    // MARK: setup

    func addInterface(name: String, linkType: SimLinkType, family: IPFamily, description: String, capturer: Int = 0) -> Int {
        interfaces.append(SimInterfaceSpec(interface: SimInterface(name: name, linkType: linkType, description: description),
                                           family: family, capturer: capturer))
        return interfaces.count - 1
    }

    @discardableResult
    func addDevice(_ name: String, platform: String = "iOS", interfaces ifs: [Int], pid64: UInt64? = nil) -> SimDevice {
        hostCounter += rng.int(1 ... 9)
        let host = UInt8(truncatingIfNeeded: hostCounter)
        let pid = pid64 ?? rng.next()
        var mac = rng.bytes(6)
        mac[0] = (mac[0] & 0xFC) | 0x02  // locally administered, unicast
        var v6: [UInt8] = [0xFE, 0x80, 0, 0, 0, 0, 0, 0]
        v6.append(contentsOf: rng.bytes(8))
        let uuid = rng.bytes(16)
        let h = Hex.string(uuid)
        func part(_ a: Int, _ b: Int) -> String { String(h[h.index(h.startIndex, offsetBy: a) ..< h.index(h.startIndex, offsetBy: b)]) }
        let hostName = "\(part(0, 8))-\(part(8, 12))-\(part(12, 16))-\(part(16, 20))-\(part(20, 32)).local"
        var slug = Self.slug(name)
        let existing = devices.filter { $0.slug == slug || $0.slug.hasPrefix(slug + "-") }.count
        if existing > 0 { slug += "-\(existing + 1)" }
        let d = SimDevice(peer: SimPeerID(displayName: name, pid64: pid), slug: slug, platform: platform,
                          processID: rng.int(400 ... 2999), threadID: rng.int(20_000 ... 899_999), mac: mac,
                          ipv4: [192, 0, 2, host], ipv6: v6, hostName: hostName,
                          srvPort: UInt16(rng.int(49_152 ... 64_999)), interfaces: ifs,
                          ipID: rng.u16(), pointerBase: 0x2_8000_0000 &+ (UInt64(rng.u32()) & 0x0FFF_FFF0))
        // GCK binds from 16402 downwards on each machine; real pairs show 16401/16402.
        d.nextUDPPort = 16402 - UInt16(devices.count % 2)
        devices.append(d)
        return d
    }

    static func slug(_ name: String) -> String {
        var out = ""
        var dash = false
        for ch in name.lowercased() {
            if ch.isLetter && ch.isASCII || ch.isNumber && ch.isASCII { out.append(ch); dash = false }
            else if ch == "'" || ch == "\u{2019}" { continue }
            else if !dash && !out.isEmpty { out.append("-"); dash = true }
        }
        while out.hasSuffix("-") { out.removeLast() }
        return out.isEmpty ? "device" : out
    }

    func commonInterface(_ x: SimDevice, _ y: SimDevice) -> Int {
        x.interfaces.first { y.interfaces.contains($0) } ?? x.interfaces.first ?? 0
    }

    func address(_ d: SimDevice, _ iface: Int) -> [UInt8] { interfaces[iface].family == .v4 ? d.ipv4 : d.ipv6 }

    func addressString(_ d: SimDevice, _ iface: Int) -> String {
        Self.format(address(d, iface)) + (interfaces[iface].family == .v6 ? "%" + interfaces[iface].interface.name : "")
    }

    static func format(_ a: [UInt8]) -> String {
        if a.count == 4 { return a.map(String.init).joined(separator: ".") }
        var groups: [UInt16] = []
        for i in stride(from: 0, to: a.count - 1, by: 2) { groups.append(UInt16(a[i]) << 8 | UInt16(a[i + 1])) }
        // Compress the longest run of zero groups (at least two).
        var bestStart = -1, bestLen = 0, i = 0
        while i < groups.count {
            if groups[i] == 0 {
                var j = i
                while j < groups.count && groups[j] == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else { i += 1 }
        }
        let hex = groups.map { String($0, radix: 16) }
        if bestStart < 0 { return hex.joined(separator: ":") }
        let head = hex[0 ..< bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLen)...].joined(separator: ":")
        return head + "::" + tail
    }

    // MARK: emitting frames

    /// Devices whose app is frozen or dead from a time on: they send nothing and log nothing
    /// (their kernel still answers: ICMP and TCP resets pass with `kernel: true`).
    var muted: [ObjectIdentifier: Int64] = [:]
    func mute(_ d: SimDevice, from t: Int64) { muted[ObjectIdentifier(d)] = t }
    func unmute(_ d: SimDevice) { muted[ObjectIdentifier(d)] = nil }
    func isMuted(_ d: SimDevice, _ t: Int64) -> Bool {
        if let since = muted[ObjectIdentifier(d)], t >= since { return true }
        return false
    }

    private func emit(time: Int64, iface: Int, from: SimDevice, toMAC: [UInt8], toDevice: SimDevice?, ipPacket: [UInt8], kernel: Bool = false,
                      build: (() -> [UInt8])? = nil) {
        if !kernel && isMuted(from, time) { return }
        let spec = interfaces[iface]
        let capturer = devices.indices.contains(spec.capturer) ? devices[spec.capturer] : nil
        let packetType: UInt16
        if let c = capturer, c === from { packetType = 4 }
        else if toDevice == nil { packetType = 2 }
        else if let c = capturer, let t = toDevice, c === t { packetType = 0 }
        else { packetType = 3 }
        frames.append(SimFrame(time: time, order: order, interface: iface, ipPacket: ipPacket, family: spec.family,
                               sourceMAC: from.mac, destinationMAC: toMAC, sllPacketType: packetType, build: build))
        order += 1
    }

    /// An IP packet builder with its IPv4 identification taken now (generation order, as every other frame).
    private func ipBuilder(iface: Int, from: SimDevice, src: [UInt8], dst: [UInt8], proto: IPProto, hop: UInt8) -> ([UInt8]) -> [UInt8] {
        if interfaces[iface].family == .v4 {
            from.ipID &+= 1
            let id = from.ipID
            return { IPLayer.ipv4(src: src, dst: dst, proto: proto, ttl: hop, id: id, dontFragment: hop != 255, payload: $0) }
        }
        return { IPLayer.ipv6(src: src, dst: dst, proto: proto, hopLimit: hop, flowLabel: 0, payload: $0) }
    }

    /// A UDP datagram whose payload is made when the frames are put in time order (see `SimFrame.build`).
    @discardableResult
    func udpLater(_ time: Int64, iface: Int, from: SimDevice, sport: UInt16, to: SimDevice, dport: UInt16,
                  payload: @escaping () -> [UInt8]) -> LazyBytes {
        let src = address(from, iface), dst = address(to, iface)
        let ip = ipBuilder(iface: iface, from: from, src: src, dst: dst, proto: .udp, hop: 64)
        let box = LazyBytes()
        emit(time: time, iface: iface, from: from, toMAC: to.mac, toDevice: to, ipPacket: [], build: {
            box.bytes = ip(IPLayer.udp(src: src, dst: dst, sport: sport, dport: dport, payload: payload()))
            return box.bytes
        })
        return box
    }

    /// ICMP port unreachable quoting a datagram built later.
    func icmpUnreachable(_ time: Int64, iface: Int, from: SimDevice, to: SimDevice, original: LazyBytes) {
        let fam = interfaces[iface].family
        let src = address(from, iface), dst = address(to, iface)
        let ip = ipBuilder(iface: iface, from: from, src: src, dst: dst, proto: fam == .v4 ? .icmp : .icmpv6, hop: 64)
        emit(time: time, iface: iface, from: from, toMAC: to.mac, toDevice: to, ipPacket: [], kernel: true, build: {
            ip(IPLayer.icmpPortUnreachable(family: fam, src: src, dst: dst, original: original.bytes))
        })
    }

    private func ipPacket(iface: Int, from: SimDevice, src: [UInt8], dst: [UInt8], proto: IPProto, hop: UInt8, payload: [UInt8]) -> [UInt8] {
        if interfaces[iface].family == .v4 {
            from.ipID &+= 1
            return IPLayer.ipv4(src: src, dst: dst, proto: proto, ttl: hop, id: from.ipID, dontFragment: hop != 255, payload: payload)
        }
        return IPLayer.ipv6(src: src, dst: dst, proto: proto, hopLimit: hop, flowLabel: 0, payload: payload)
    }

    @discardableResult
    func udp(_ time: Int64, iface: Int, from: SimDevice, sport: UInt16, to: SimDevice, dport: UInt16, payload: [UInt8]) -> [UInt8] {
        let src = address(from, iface), dst = address(to, iface)
        let seg = IPLayer.udp(src: src, dst: dst, sport: sport, dport: dport, payload: payload)
        let pkt = ipPacket(iface: iface, from: from, src: src, dst: dst, proto: .udp, hop: 64, payload: seg)
        emit(time: time, iface: iface, from: from, toMAC: to.mac, toDevice: to, ipPacket: pkt)
        return pkt
    }

    func multicast(_ time: Int64, iface: Int, from: SimDevice, payload: [UInt8]) {
        let v4 = interfaces[iface].family == .v4
        let dst: [UInt8] = v4 ? [224, 0, 0, 251] : [0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFB]
        let mac: [UInt8] = v4 ? [0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB] : [0x33, 0x33, 0x00, 0x00, 0x00, 0xFB]
        let src = address(from, iface)
        let seg = IPLayer.udp(src: src, dst: dst, sport: 5353, dport: 5353, payload: payload)
        let pkt = ipPacket(iface: iface, from: from, src: src, dst: dst, proto: .udp, hop: 255, payload: seg)
        emit(time: time, iface: iface, from: from, toMAC: mac, toDevice: nil, ipPacket: pkt)
    }

    func icmpUnreachable(_ time: Int64, iface: Int, from: SimDevice, to: SimDevice, original: [UInt8]) {
        let fam = interfaces[iface].family
        let src = address(from, iface), dst = address(to, iface)
        let msg = IPLayer.icmpPortUnreachable(family: fam, src: src, dst: dst, original: original)
        let pkt = ipPacket(iface: iface, from: from, src: src, dst: dst, proto: fam == .v4 ? .icmp : .icmpv6, hop: 64, payload: msg)
        emit(time: time, iface: iface, from: from, toMAC: to.mac, toDevice: to, ipPacket: pkt, kernel: true)
    }

    func tcp(_ time: Int64, _ c: TCPConnection, fromClient: Bool, flags: IPLayer.TCPFlags, payload: [UInt8] = [], mss: UInt16? = nil, kernel: Bool = false) {
        let from = fromClient ? c.client : c.server
        let to = fromClient ? c.server : c.client
        let seq = fromClient ? c.clientNext : c.serverNext
        let ack = fromClient ? c.serverNext : c.clientNext
        let src = address(from, c.interface), dst = address(to, c.interface)
        let seg = IPLayer.tcp(src: src, dst: dst, sport: fromClient ? c.clientPort : c.serverPort,
                              dport: fromClient ? c.serverPort : c.clientPort, seq: seq, ack: ack, flags: flags,
                              window: flags.contains(.rst) ? 0 : 65535, mss: mss, payload: payload)
        var advance = UInt32(payload.count)
        if flags.contains(.syn) { advance &+= 1 }
        if flags.contains(.fin) { advance &+= 1 }
        if fromClient { c.clientNext &+= advance } else { c.serverNext &+= advance }
        let pkt = ipPacket(iface: c.interface, from: from, src: src, dst: dst, proto: .tcp, hop: 64, payload: seg)
        emit(time: time, iface: c.interface, from: from, toMAC: to.mac, toDevice: to, ipPacket: pkt, kernel: kernel)
    }

    // MARK: logs

    /// A framework line: `[Category] message`.
    func log(_ d: SimDevice, _ time: Int64, _ category: String, _ message: String) {
        append(d, time, "[\(category)] \(message)")
    }

    /// An app `print`/NSLog line.
    func app(_ d: SimDevice, _ time: Int64, _ message: String) { append(d, time, message) }

    private func append(_ d: SimDevice, _ time: Int64, _ text: String) {
        if isMuted(d, time) { return }
        let line = "\(LogTime.format(time)) ChatApp[\(d.processID):\(d.threadID)] \(text)"
        d.logs.append((time, order, line))
        order += 1
    }

    // MARK: discovery

    func mdnsQuery(_ d: SimDevice, _ time: Int64, iface: Int, unicastResponse: Bool) {
        let msg = DNSMessage(isResponse: false, questions: [DNSQuestion(name: serviceName, type: .ptr, unicastResponse: unicastResponse)])
        multicast(time, iface: iface, from: d, payload: msg.encode())
    }

    func serviceRecords(_ d: SimDevice, iface: Int, goodbye: Bool) -> [DNSRecord] {
        let instance = "\(d.peer.idString).\(serviceName)"
        var txt = ["_d=\(d.name)"]
        txt.append("platform=\(d.platform)")
        var records = [
            DNSRecord(name: serviceName, ttl: goodbye ? 0 : 4500, cacheFlush: false, data: .ptr(instance)),
            DNSRecord(name: instance, ttl: goodbye ? 0 : 120, cacheFlush: true,
                      data: .srv(priority: 0, weight: 0, port: d.srvPort, target: d.hostName)),
            DNSRecord(name: instance, ttl: goodbye ? 0 : 4500, cacheFlush: true, data: .txt(txt)),
        ]
        if !goodbye {
            records.append(interfaces[iface].family == .v4
                ? DNSRecord(name: d.hostName, ttl: 120, cacheFlush: true, data: .a(d.ipv4))
                : DNSRecord(name: d.hostName, ttl: 120, cacheFlush: true, data: .aaaa(d.ipv6)))
        }
        return records
    }

    func mdnsAnnounce(_ d: SimDevice, _ time: Int64, iface: Int) {
        multicast(time, iface: iface, from: d, payload: DNSMessage(isResponse: true, answers: serviceRecords(d, iface: iface, goodbye: false)).encode())
    }

    func mdnsGoodbye(_ d: SimDevice, _ time: Int64, iface: Int) {
        multicast(time, iface: iface, from: d, payload: DNSMessage(isResponse: true, answers: serviceRecords(d, iface: iface, goodbye: true)).encode())
    }

    /// Start advertising and browsing on every interface of `d`: two announcements one second apart and a query.
    func startAdvertisingAndBrowsing(_ d: SimDevice, _ time: Int64) {
        log(d, time, "MCNearbyServiceAdvertiser", "Start advertising peer [\(d.namePID)] type [\(serviceType)].")
        log(d, time + ms(0.4, spread: 0.1), "MCNearbyServiceBrowser", "Start discovering services of type [_\(serviceType)._tcp].")
        for iface in d.interfaces {
            mdnsQuery(d, time + ms(2, spread: 1), iface: iface, unicastResponse: true)
            mdnsAnnounce(d, time + ms(25, spread: 5), iface: iface)
            mdnsAnnounce(d, time + ms(1025, spread: 20), iface: iface)
        }
        log(d, time + ms(30, spread: 5), "MCNearbyServiceAdvertiser", "Server did publish.")
    }

    func stopAdvertising(_ d: SimDevice, _ time: Int64) {
        log(d, time, "MCNearbyServiceAdvertiser", "Stop advertising peer [\(d.namePID)] type [\(serviceType)].")
        for iface in d.interfaces { mdnsGoodbye(d, time + ms(1, spread: 0.5), iface: iface) }
        log(d, time + ms(3), "MCNearbyServiceAdvertiser", "Server stopped.")
    }

    /// The browser side of `observer` noticing `peer`'s announcement.
    func found(_ observer: SimDevice, _ peer: SimDevice, _ time: Int64) {
        log(observer, time, "MCNearbyServiceBrowser", "NetService found [\(peer.peer.idString)] moreComing [0].")
        log(observer, time + ms(0.3), "MCNearbyServiceBrowser", "NetService adding [\(peer.peer.idString)] to net services dictionary.")
        let tf = time + ms(4, spread: 1)
        log(observer, tf, "MCNearbyServiceBrowser",
            "Peer found: idString [\(peer.peer.idString)], displayNameAndPID [\(peer.namePID)], discoveryInfo [{ platform = \(peer.platform); }].")
        app(observer, tf + ms(0.5), "Browser found peer: \(peer.name)")
    }

    func lost(_ observer: SimDevice, _ peer: SimDevice, _ time: Int64) {
        log(observer, time, "MCNearbyServiceBrowser", "Peer lost: idString [\(peer.peer.idString)] moreComing [0].")
        log(observer, time + ms(0.2), "MCNearbyServiceBrowser", "Removing a peer [\(peer.namePID)] from peers dictionary.")
        app(observer, time + ms(1), "Browser lost peer: \(peer.name)")
    }

    // MARK: session state (MCSession + app delegate prints, as in the seeds)

    func stateChange(_ d: SimDevice, _ peer: SimDevice, _ time: Int64, from: String, to: String) {
        if to == "Connecting" {
            log(d, time, "MCSession", "PeerID [\(peer.namePID)] change state from [\(from)] to [\(to)].")
        } else {
            log(d, time, "MCSession", "Peer [\(peer.namePID)] changed state from [\(from)] to [\(to)]; pd(\(d.pointer())) d(\(d.pointer())) prop(0).")
        }
        let raw = to == "Connected" ? 2 : (to == "Connecting" ? 1 : 0)
        app(d, time + ms(0.2), "Peer \(peer.name) changed state: \(raw)")
        switch to {
        case "Connected": app(d, time + ms(0.4), "Peer connected: \(peer.name)")
        case "Connecting": app(d, time + ms(0.4), "Peer connecting: \(peer.name)")
        default: app(d, time + ms(0.4), "Peer disconnected: \(peer.name)")
        }
    }

    // MARK: invitation channel

    private func frameTrailer(_ c: TCPConnection, client: Bool) -> String {
        let other = client ? c.server : c.client
        let ptr = client ? c.clientPtr : c.serverPtr
        let s = client ? c.clientStreams : c.serverStreams
        return "ptr [\(ptr)] inputStream [\(s.0)] outputStream [\(s.1)] remote [\(other.peer.idString)+\(other.name)]."
    }

    /// Sends one framed message on the invitation channel and the receiver's receipt.
    /// Returns the time after the receipt.
    @discardableResult
    func sendFrame(_ t0: Int64, _ c: TCPConnection, fromClient: Bool, type: InvitationFrameType, body: [UInt8], rtt: Int64) -> Int64 {
        let seq = fromClient ? c.clientFrameSeq : c.serverFrameSeq
        if fromClient { c.clientFrameSeq += 1 } else { c.serverFrameSeq += 1 }
        let frame = InvitationFrame.encode(type: type, sequence: seq, body: body)
        let crc = Hex.upper8(UInt32(frame[8]) << 24 | UInt32(frame[9]) << 16 | UInt32(frame[10]) << 8 | UInt32(frame[11]))
        let sender = fromClient ? c.client : c.server
        log(sender, t0 - ms(0.2), "MCNearbyDiscoveryPeerConnection",
            "Made message #\(seq) with length [len=\(body.count)] and crc [=\(crc)] - \(frameTrailer(c, client: fromClient))")
        log(sender, t0 - ms(0.1), "MCNearbyDiscoveryPeerConnection",
            "Sending type [\(type.logName)] data [\(body.count)] - \(frameTrailer(c, client: fromClient))")
        tcp(t0, c, fromClient: fromClient, flags: [.psh, .ack], payload: frame)
        let t1 = t0 + rtt / 2
        let receipt = InvitationFrame.encode(type: type, receipt: true, sequence: seq, body: [])
        tcp(t1 + ms(0.3, spread: 0.1), c, fromClient: !fromClient, flags: [.psh, .ack], payload: receipt)
        let t2 = t1 + rtt / 2 + ms(0.3, spread: 0.1)
        log(sender, t2, "MCNearbyDiscoveryPeerConnection",
            "Got receipt #\(seq) for message #\(seq) with length [len=\(body.count)] and crc [=\(crc)] - \(frameTrailer(c, client: fromClient))")
        return t2 + ms(0.5, spread: 0.2)
    }

    func connectionData(_ d: SimDevice, link: GCKLink, preference: EncryptionPreference) -> [UInt8] {
        let iface = link.interface
        let ep = ConnectionEndpoint(address: address(d, iface), port: link.port(d), token: link.token(d))
        return ConnectionData.encode(participant: d.peer.participant, preference: preference, endpoints: [ep])
    }

    func plistDescription(_ id: Int, extra: String = "") -> String {
        "{ MCNearbyServiceMessageIDKey = \(id);\(extra) }"
    }

    /// The TCP invitation exchange from `browser` to `advertiser`'s SRV port.
    /// Returns the end time and, when accepted, the GCK link to set up.
    func invite(_ t0: Int64, browser a: SimDevice, advertiser b: SimDevice, outcome: InviteOutcome, encrypted: Bool,
                rtt: Int64, inviteLogPrefix: Bool = true, advertiserState: Int? = nil,
                declineReason: String? = nil, advertiserPreference: EncryptionPreference? = nil) -> (end: Int64, link: GCKLink?) {
        let iface = commonInterface(a, b)
        var t = t0
        if inviteLogPrefix { app(a, t - ms(1), "Inviting \(b.name)") }
        log(a, t, "MCNearbyServiceBrowser",
            "Requesting connection with netService with name [\(b.peer.idString)] ptr [\(a.pointer())] remote [\(b.peer.idString)].")
        let c = TCPConnection(client: a, server: b, clientPort: UInt16(rng.int(49_152 ... 65_000)), serverPort: b.srvPort,
                              interface: iface, clientISN: rng.u32(), serverISN: rng.u32())
        t += ms(1, spread: 0.3)
        tcp(t, c, fromClient: true, flags: [.syn], mss: 1460)
        t += rtt / 2
        tcp(t, c, fromClient: false, flags: [.syn, .ack], mss: 1460)
        log(b, t + ms(0.2), "MCNearbyServiceAdvertiser", "Accepted connection with inputStream [\(c.serverStreams.0)] outputStream [\(c.serverStreams.1)].")
        log(b, t + ms(0.3), "MCNearbyServiceAdvertiser", "PeerConnection (advertiser side) created (\(c.serverPtr)).")
        t += rtt / 2
        tcp(t, c, fromClient: true, flags: [.ack])
        t += ms(0.6, spread: 0.2)
        // Hellos both ways; the advertiser decides and sends Accept.
        t = sendFrame(t, c, fromClient: true, type: .hello, body: InvitationFrame.helloBody(a.peer), rtt: rtt)
        log(b, t - ms(0.4), "MCNearbyDiscoveryPeerConnection", "Got Hello (flags = 00000006) shouldDecide (1) - \(frameTrailer(c, client: false))")
        t = sendFrame(t, c, fromClient: false, type: .hello, body: InvitationFrame.helloBody(b.peer), rtt: rtt)
        log(a, t - ms(0.4), "MCNearbyDiscoveryPeerConnection", "Got Hello (flags = 00000006) shouldDecide (0) - \(frameTrailer(c, client: true))")
        log(b, t, "MCNearbyDiscoveryPeerConnection", "Peer approves. Will accept connection - \(frameTrailer(c, client: false))")
        t = sendFrame(t + ms(0.2), c, fromClient: false, type: .accept, body: [], rtt: rtt)
        log(a, t - ms(0.4), "MCNearbyDiscoveryPeerConnection", "Got Accept - \(frameTrailer(c, client: true))")
        log(a, t, "MCNearbyServiceBrowser", "PeerConnection connectedHandler (browser side), remote identifier [\(b.peer.idString)+\(b.name)].")
        log(b, t, "MCNearbyServiceAdvertiser", "PeerConnection [\(c.serverPtr)] connectedHandler (advertiser side), remote identifier [\(a.peer.idString)+\(a.name)].")
        if let state = advertiserState {
            log(b, t + ms(0.1), "MCNearbyServiceAdvertiser", "Peer [\(a.namePID)] (advertiser side) already in dictionary [state = \(state)], decision = 1.")
        } else {
            log(b, t + ms(0.1), "MCNearbyServiceAdvertiser", "Peer [\(a.namePID)] (advertiser side) not in dictionary, creating one, decision = YES.")
        }
        // Invite.
        a.inviteCounter += 1
        let inviteID = a.inviteCounter
        let invite = BinaryPlistWriter.encode(InvitationMessage.invite(sender: a.peer, recipient: b.peer, inviteID: inviteID))
        log(a, t + ms(0.5), "MCNearbyServiceBrowser", "Sending dictionary \(plistDescription(1, extra: " MCNearbyServiceInviteIDKey = \(inviteID);")) to peer \(b.namePID).")
        stateChange(a, b, t + ms(0.6), from: "Not Connected", to: "Connecting")
        let tInviteSent = t + ms(1, spread: 0.3)
        if outcome == .resetBeforeResponse {
            // The invite goes out; the advertiser's process dies and its kernel resets the connection.
            let seq = c.clientFrameSeq; c.clientFrameSeq += 1
            let frame = InvitationFrame.encode(type: .data, sequence: seq, body: invite)
            log(a, tInviteSent - ms(0.1), "MCNearbyDiscoveryPeerConnection", "Sending type [Data] data [\(invite.count)] - \(frameTrailer(c, client: true))")
            tcp(tInviteSent, c, fromClient: true, flags: [.psh, .ack], payload: frame)
            let tb = tInviteSent + rtt / 2
            log(b, tb + ms(0.2), "MCNearbyDiscoveryPeerConnection", "Got Data - \(frameTrailer(c, client: false))")
            log(b, tb + ms(0.4), "MCNearbyServiceAdvertiser", "Got invite from peer[\(a.namePID)] for peer[\(b.namePID)].")
            app(b, tb + ms(0.6), "Received invitation from \(a.name)")
            // Crash: nothing more in b's log.
            let tr = tb + ms(180, spread: 40)
            tcp(tr, c, fromClient: false, flags: [.rst, .ack], kernel: true)
            let ta = tr + rtt / 2
            log(a, ta + ms(0.3), "MCNearbyDiscoveryPeerConnection",
                "End of stream, error: Error Domain=NSPOSIXErrorDomain Code=54 \"Connection reset by peer\" - \(frameTrailer(c, client: true))")
            log(a, ta + ms(0.6), "MCNearbyServiceBrowser", "Peer [\(b.namePID)] connection closed.")
            app(a, ta + ms(0.9), "Connection error: Error Domain=MCErrorDomain Code=0 \"Unable to connect\"")
            stateChange(a, b, ta + ms(1.2), from: "Connecting", to: "Not Connected")
            return (ta + ms(2), nil)
        }
        t = sendFrame(tInviteSent, c, fromClient: true, type: .data, body: invite, rtt: rtt)
        let tb = t - rtt / 2
        log(b, tb, "MCNearbyDiscoveryPeerConnection", "Got Data - \(frameTrailer(c, client: false))")
        log(b, tb + ms(0.2), "MCNearbyServiceAdvertiser", "Got invite from peer[\(a.namePID)] for peer[\(b.namePID)].")
        app(b, tb + ms(0.4), "Received invitation from \(a.name)")
        log(b, tb + ms(0.6), "MCNearbyServiceAdvertiser", "Invitation handler called.")
        let tResp = t + ms(3, spread: 1)
        let accept = outcome == .accept
        var link: GCKLink?
        if accept {
            log(b, tResp - ms(0.5), "MCNearbyServiceAdvertiser", "Invitation accepted.")
            let l = GCKLink(a: a, b: b, aPort: a.allocateUDPPort(), bPort: b.allocateUDPPort(), interface: iface, encrypted: encrypted,
                            aToken: rng.u32(), bToken: rng.u32(), helloWord: rng.u32(), iceWord: rng.u32())
            link = l
            stateChange(b, a, tResp - ms(0.3), from: "Not Connected", to: "Connecting")
        } else {
            if let reason = declineReason { app(b, tResp - ms(0.8), reason) }
            log(b, tResp - ms(0.5), "MCNearbyServiceAdvertiser", "Invitation declined (accept=0, session=(null)).")
        }
        let pref: EncryptionPreference = encrypted ? .required : .none
        let respCD = link.map { connectionData(b, link: $0, preference: advertiserPreference ?? pref) }
        let response = BinaryPlistWriter.encode(InvitationMessage.response(sender: b.peer, recipient: a.peer, inviteID: inviteID,
                                                                          accept: accept, connectionData: respCD))
        t = sendFrame(tResp, c, fromClient: false, type: .data, body: response, rtt: rtt)
        let respDesc = plistDescription(2, extra: " MCNearbyServiceAcceptInviteKey = \(accept ? 1 : 0);")
        log(a, t - rtt / 2, "MCNearbyServiceBrowser", "Got invite response [\(respDesc)] from peer [\(b.namePID)].")
        guard let l = link else {
            log(a, t, "MCNearbyServiceBrowser", "Handle declined invitation from peer with peerID [\(b.namePID)].")
            app(a, t + ms(0.3), "Invitation to \(b.name) was declined")
            stateChange(a, b, t + ms(0.5), from: "Connecting", to: "Not Connected")
            // Browser closes.
            let tf = t + ms(2, spread: 0.5)
            closeTCP(tf, c, clientFirst: true, rtt: rtt)
            return (tf + rtt * 2, nil)
        }
        let connect = BinaryPlistWriter.encode(InvitationMessage.connect(sender: a.peer, recipient: b.peer, inviteID: inviteID,
                                                                        connectionData: connectionData(a, link: l, preference: pref)))
        t = sendFrame(t + ms(1, spread: 0.3), c, fromClient: true, type: .data, body: connect, rtt: rtt)
        log(b, t - rtt / 2, "MCNearbyServiceAdvertiser", "Got invite connect [\(plistDescription(3))] from peer [\(a.namePID)].")
        // The advertiser closes the invitation channel.
        let tf = t + ms(2, spread: 0.5)
        closeTCP(tf, c, clientFirst: false, rtt: rtt)
        log(a, tf + rtt / 2 + ms(0.2), "MCNearbyDiscoveryPeerConnection", "End of stream, error: (null) - \(frameTrailer(c, client: true))")
        return (tf + rtt, l)
    }

    func closeTCP(_ t: Int64, _ c: TCPConnection, clientFirst: Bool, rtt: Int64) {
        tcp(t, c, fromClient: clientFirst, flags: [.fin, .ack])
        tcp(t + rtt / 2, c, fromClient: !clientFirst, flags: [.fin, .ack])
        tcp(t + rtt, c, fromClient: clientFirst, flags: [.ack])
    }

    /// A browser dialling a stale SRV port: SYN answered by RST (connection refused).
    func refusedDial(_ t: Int64, browser a: SimDevice, advertiser b: SimDevice, port: UInt16, rtt: Int64) {
        let iface = commonInterface(a, b)
        log(a, t, "MCNearbyServiceBrowser",
            "Requesting connection with netService with name [\(b.peer.idString)] ptr [\(a.pointer())] remote [\(b.peer.idString)].")
        let c = TCPConnection(client: a, server: b, clientPort: UInt16(rng.int(49_152 ... 65_000)), serverPort: port,
                              interface: iface, clientISN: rng.u32(), serverISN: 0)
        tcp(t + ms(1, spread: 0.3), c, fromClient: true, flags: [.syn], mss: 1460)
        // A refused SYN is answered with RST+ACK, sequence 0, acknowledging the SYN.
        c.serverNext = 0
        tcp(t + ms(1) + rtt, c, fromClient: false, flags: [.rst, .ack], kernel: true)
        let tt = t + ms(1) + rtt + ms(0.5)
        let ptr = a.pointer()
        log(a, tt, "MCNearbyDiscoveryPeerConnection",
            "End of stream, error: Error Domain=NSPOSIXErrorDomain Code=61 \"Connection refused\" - ptr [\(ptr)] inputStream [\(a.pointer())] outputStream [\(a.pointer())] remote [\(b.peer.idString)+\(b.name)].")
        log(a, tt + ms(0.3), "MCNearbyServiceBrowser", "Peer [\(b.namePID)] connection closed.")
    }

    // MARK: session transport

    func sendGCK(_ t: Int64, _ l: GCKLink, from d: SimDevice, packet: [UInt8]) {
        sendGCK(t, l, from: d, size: packet.count) { packet }
    }

    /// A GCK packet of `size` bytes made when the frames are put in time order (so reliable serials
    /// and DTLS record numbers follow sending order); encrypted, one application-data record.
    @discardableResult
    func sendGCK(_ t: Int64, _ l: GCKLink, from d: SimDevice, size: Int, packet: @escaping () -> [UInt8]) -> LazyBytes {
        let to = l.other(d)
        if l.encrypted {
            let fragment = rng.bytes(DTLSRecord.cbcSize(size))
            return udpLater(t, iface: l.interface, from: d, sport: l.port(d), to: to, dport: l.port(to)) {
                _ = packet()   // the plaintext's counters advance as they would
                return DTLSRecord.wrapped(.applicationData, epoch: 1, sequence: l.nextDTLS(d), fragment: fragment)
            }
        }
        return udpLater(t, iface: l.interface, from: d, sport: l.port(d), to: to, dport: l.port(to), payload: packet)
    }

    func listenLogs(_ t: Int64, _ l: GCKLink) {
        for d in [l.a, l.b] {
            let other = l.other(d)
            let ifname = interfaces[l.interface].interface.name
            let sock = d.nextSocket()
            if d === l.a { l.aSocket = sock } else { l.bSocket = sock }
            log(d, t, "GCKSession", "1 interfaces found for participant [\(other.pidHex)].")
            log(d, t + ms(0.2), "GCKSession", "For remoteID[\(other.pidHex)]: Start listening on \(addressString(d, l.interface)):\(l.port(d)) (\(ifname)) sock \(sock).")
            log(d, t + ms(0.4), "GCKSession", "Scheduling ICE connection timeout for participant [\(other.pidHex)] on channel [\(l.channel)].")
        }
    }

    private func stunRequest(_ l: GCKLink, from d: SimDevice, txid: [UInt8], nominate: Bool) -> [UInt8] {
        let other = l.other(d)
        var attrs = [STUN.username(destinationToken: l.token(other), sourceToken: l.token(d)),
                     STUN.u32(0x8001, 6), STUN.u32(0x8003, 0x3F2), STUN.u32(0x8004, l.iceWord)]
        var tie = ByteWriter(); tie.u32(d === l.a ? l.aToken ^ 0x5A5A_0000 : l.bToken ^ 0x0000_A5A5); tie.u32(0)
        attrs.append(STUNAttribute(d === l.a ? 0x802A : 0x8029, tie.bytes))
        if nominate { attrs.append(STUNAttribute(0x0025, [])); attrs.append(STUN.u32(0x8008, 0x601)) }
        return STUN.message(type: 0x0001, transactionID: txid, attributes: attrs)
    }

    private func stunResponse(_ l: GCKLink, from d: SimDevice, txid: [UInt8], nominated: Bool) -> [UInt8] {
        let other = l.other(d)
        var attrs = [STUN.username(destinationToken: l.token(d), sourceToken: l.token(other)),
                     STUN.mappedAddress(address: address(other, l.interface), port: l.port(other)),
                     STUN.u32(0x8001, 6), STUN.u32(0x8003, 0x3F2), STUN.u32(0x8004, l.iceWord),
                     STUN.u32(0x8005, nominated ? 5 : 8)]
        if nominated {
            var blob = ByteWriter()
            blob.u16(1)
            blob.append(Array(connectionData(d, link: l, preference: .none).dropFirst(4)))
            attrs.append(STUNAttribute(0x8009, blob.bytes))
        }
        return STUN.message(type: 0x0101, transactionID: txid, attributes: attrs)
    }

    private func txid() -> [UInt8] { [0x00, 0x01] + rng.bytes(10) }

    /// Successful ICE: checks both ways, then the controlling side nominates. Returns the end time.
    func iceConnect(_ t0: Int64, _ l: GCKLink, rtt: Int64) -> Int64 {
        var t = t0
        let tx1 = txid(), tx2 = txid(), tx3 = txid()
        udp(t, iface: l.interface, from: l.a, sport: l.aPort, to: l.b, dport: l.bPort, payload: stunRequest(l, from: l.a, txid: tx1, nominate: false))
        udp(t + ms(3, spread: 1), iface: l.interface, from: l.b, sport: l.bPort, to: l.a, dport: l.aPort, payload: stunRequest(l, from: l.b, txid: tx2, nominate: false))
        t += rtt / 2
        udp(t + ms(0.2), iface: l.interface, from: l.b, sport: l.bPort, to: l.a, dport: l.aPort, payload: stunResponse(l, from: l.b, txid: tx1, nominated: false))
        t += ms(3, spread: 1) + rtt / 2
        udp(t, iface: l.interface, from: l.a, sport: l.aPort, to: l.b, dport: l.bPort, payload: stunResponse(l, from: l.a, txid: tx2, nominated: false))
        t += ms(20, spread: 5)
        udp(t, iface: l.interface, from: l.a, sport: l.aPort, to: l.b, dport: l.bPort, payload: stunRequest(l, from: l.a, txid: tx3, nominate: true))
        t += rtt / 2
        udp(t + ms(0.2), iface: l.interface, from: l.b, sport: l.bPort, to: l.a, dport: l.aPort, payload: stunResponse(l, from: l.b, txid: tx3, nominated: true))
        t += rtt / 2 + ms(0.4)
        for d in [l.a, l.b] {
            log(d, t, "GCKSession", "ICE StopConnectivityCheck took (0.00\(rng.int(1000 ... 9999)) seconds) for participant [\(l.other(d).pidHex)].")
        }
        return t + ms(1)
    }

    /// ICE checks from `l.a` that nobody answers, retransmitted until the 10 s timer fires. Returns the timeout time.
    func iceUnanswered(_ t0: Int64, _ l: GCKLink) -> Int64 {
        var t = t0
        var interval: Int64 = 100_000_000
        let deadline = t0 + 10_000_000_000
        var tx = txid()
        var n = 0
        while t < deadline {
            udp(t, iface: l.interface, from: l.a, sport: l.aPort, to: l.b, dport: l.bPort, payload: stunRequest(l, from: l.a, txid: tx, nominate: false))
            n += 1
            if n % 4 == 0 { tx = txid() }
            t += interval + ms(0, spread: 3)
            interval = min(interval * 2, 1_600_000_000)
        }
        let b = l.b
        log(l.a, deadline, "GCKSession", "ICE timeout expired for participant [\(b.pidHex)] on channel [\(l.channel)] state [ICE].")
        log(l.a, deadline + ms(0.1), "GCKSession", "Not in connected state, so giving up for participant [\(b.pidHex)] on channel [\(l.channel)].")
        log(l.a, deadline + ms(0.3), "GCKSession", "Closing connection to participant [\(b.pidHex)] on channel [\(l.channel)].")
        log(l.a, deadline + ms(0.5), "GCKSession", "Disposing connection to participant \(b.pidHex). Stop ICE check.")
        return deadline
    }

    /// A ClientHello nobody answers, retransmitted 1, 2, 4 s apart, until the 10 s DTLS handshake timer fires.
    func dtlsUnanswered(_ t0: Int64, _ l: GCKLink) -> Int64 {
        for d in [l.a, l.b] { log(d, t0 - ms(0.3), "GCKSession", "DTLS Settings: authentication [0] encryption [1] certificate length [0].") }
        let hello = DTLSRecord.handshake(type: 1, messageSeq: 0, body: DTLSRecord.clientHello(random: rng.bytes(32)))
        var t = t0
        var gap: Int64 = 1_000_000_000
        let deadline = t0 + 10_000_000_000
        while t < deadline {
            udpLater(t, iface: l.interface, from: l.a, sport: l.aPort, to: l.b, dport: l.bPort) {
                DTLSRecord.wrapped(.handshake, epoch: 0, sequence: l.nextDTLS(l.a), fragment: hello)
            }
            t += gap + ms(0, spread: 5)
            gap *= 2
        }
        let b = l.b
        log(l.a, deadline, "GCKSession", "DTLS Handshake timeout expired for participant [\(b.pidHex)] on channel [\(l.channel)] DTLS state [DTLSNotConnected].")
        log(l.a, deadline + ms(0.1), "GCKSession", "Not in connected state, so giving up for participant [\(b.pidHex)] on channel [\(l.channel)].")
        log(l.a, deadline + ms(0.3), "GCKSession", "Closing connection to participant [\(b.pidHex)] on channel [\(l.channel)].")
        return deadline
    }

    /// DTLS 1.0 handshake behind the 0xD0 prefix (anonymous ECDH, suite c019). Returns the end time.
    func dtlsHandshake(_ t0: Int64, _ l: GCKLink, rtt: Int64) -> Int64 {
        let a = l.a, b = l.b
        var t = t0
        func send(_ d: SimDevice, _ type: DTLSContentType, epoch: UInt16, _ fragment: [UInt8], reset: Bool = false) {
            udpLater(t, iface: l.interface, from: d, sport: l.port(d), to: l.other(d), dport: l.port(l.other(d))) {
                DTLSRecord.wrapped(type, epoch: epoch, sequence: l.nextDTLS(d, epochReset: reset), fragment: fragment)
            }
        }
        for d in [a, b] { log(d, t - ms(0.3), "GCKSession", "DTLS Settings: authentication [0] encryption [1] certificate length [0].") }
        send(a, .handshake, epoch: 0, DTLSRecord.handshake(type: 1, messageSeq: 0, body: DTLSRecord.clientHello(random: rng.bytes(32))))
        t += rtt / 2 + ms(1, spread: 0.3)
        send(b, .handshake, epoch: 0, DTLSRecord.handshake(type: 2, messageSeq: 0, body: DTLSRecord.serverHello(random: rng.bytes(32))))
        t += ms(0.2)
        send(b, .handshake, epoch: 0, DTLSRecord.handshake(type: 12, messageSeq: 1, body: DTLSRecord.ecdhParams(point: [4] + rng.bytes(64))))
        t += ms(0.2)
        send(b, .handshake, epoch: 0, DTLSRecord.handshake(type: 14, messageSeq: 2, body: []))
        t += rtt / 2 + ms(2, spread: 0.5)
        var cke = ByteWriter(); cke.u8(65); cke.u8(4); cke.append(rng.bytes(64))
        send(a, .handshake, epoch: 0, DTLSRecord.handshake(type: 16, messageSeq: 1, body: cke.bytes))
        t += ms(0.2)
        send(a, .changeCipherSpec, epoch: 0, [1])
        t += ms(0.2)
        send(a, .handshake, epoch: 1, rng.bytes(DTLSRecord.cbcSize(24)), reset: true)
        t += rtt / 2 + ms(1, spread: 0.3)
        send(b, .changeCipherSpec, epoch: 0, [1])
        t += ms(0.2)
        send(b, .handshake, epoch: 1, rng.bytes(DTLSRecord.cbcSize(24)), reset: true)
        t += rtt / 2 + ms(0.3)
        for d in [a, b] {
            log(d, t, "GCKSession", "DTLSContext has been set up for participant [\(l.other(d).pidHex)] on channel [\(l.channel)] state [DTLSConnected].")
        }
        return t + ms(1)
    }

    /// OSPF-like bring-up: Hello both ways, DD both ways, one LSA and its LSAACK. Returns the end time.
    func gckBringUp(_ t0: Int64, _ l: GCKLink, rtt: Int64) -> Int64 {
        let a = l.a, b = l.b
        var t = t0
        let pa = a.peer.participant, pb = b.peer.participant
        sendGCK(t, l, from: a, packet: GCKPacket.hello(source: pa, destination: pb, token: l.helloWord))
        sendGCK(t + ms(2, spread: 0.5), l, from: b, packet: GCKPacket.hello(source: pb, destination: pa, token: l.helloWord))
        t += rtt + ms(3, spread: 1)
        sendGCK(t, l, from: a, packet: GCKPacket.dd(source: pa, destination: pb, sequence: 0x38))
        sendGCK(t + ms(1, spread: 0.3), l, from: b, packet: GCKPacket.dd(source: pb, destination: pa, sequence: 0x64))
        for d in [a, b] { log(d, t + ms(0.5), "GCKSession", "Sending DD with 27 bytes to participant \(l.other(d).pidHex).") }
        t += rtt + ms(2, spread: 0.5)
        log(a, t - ms(0.2), "GCKSession", "Sending LSA with SN [0] to participant [\(b.pidHex)].")
        sendGCK(t, l, from: a, packet: GCKPacket.lsa(source: pa, destination: pb, sequence: 0x38))
        t += rtt / 2 + ms(0.5)
        log(b, t - ms(0.1), "GCKSession", "Sending LSAACK with SN [0] to participant [\(a.pidHex)].")
        sendGCK(t, l, from: b, packet: GCKPacket.lsaAck(source: pb, destination: pa, sequence: 0))
        t += rtt / 2 + ms(0.5)
        for d in [a, b] {
            d.neighbors += 1
            log(d, t, "GCKSession", "Updated routing table.")
            log(d, t + ms(0.1), "GCKSession", "My routing table: \(d.neighbors + 1) nodes.")
        }
        return t + ms(1)
    }

    /// Full session setup after an accepted invitation, ending in Connected on both sides.
    func establish(_ t0: Int64, _ l: GCKLink, rtt: Int64, announce: Bool = true) -> Int64 {
        listenLogs(t0, l)
        var t = iceConnect(t0 + ms(5, spread: 2), l, rtt: rtt)
        if l.encrypted { t = dtlsHandshake(t + ms(2, spread: 1), l, rtt: rtt) }
        t = gckBringUp(t + ms(2, spread: 1), l, rtt: rtt)
        if announce {
            stateChange(l.a, l.b, t, from: "Connecting", to: "Connected")
            stateChange(l.b, l.a, t + ms(0.8, spread: 0.3), from: "Connecting", to: "Connected")
        }
        return t + ms(1)
    }

    func heartbeat(_ t: Int64, _ l: GCKLink, from d: SimDevice) -> [UInt8] {
        let sn = l.nextHeartbeat(d)
        let p = GCKPacket.heartbeat(source: d.peer.participant, destination: l.other(d).peer.participant, sequence: sn)
        sendGCK(t, l, from: d, packet: p)
        return p
    }

    /// Reliable app data plus the receiver's acknowledgement. Returns the receive time.
    @discardableResult
    func appData(_ t: Int64, _ l: GCKLink, from d: SimDevice, json: String, rtt: Int64) -> Int64 {
        let to = l.other(d)
        let payload = Array(json.utf8)
        log(d, t - ms(0.1), "MCSession", "Sending \(payload.count) bytes of data to participant \(to.peer.participant), mode=0.")
        // The serial is taken when the data is sent (frames in time order); the ack, later, echoes it.
        let serial = SerialBox()
        let src = d.peer.participant, dst = to.peer.participant
        sendGCK(t, l, from: d, size: GCKPacket.data(source: src, destination: dst, serial: 0, payload: payload).count) {
            let n = l.nextSerial(d)
            serial.value = n
            return GCKPacket.data(source: src, destination: dst, serial: n, payload: payload)
        }
        let tr = t + rtt / 2
        sendGCK(tr + ms(0.4, spread: 0.1), l, from: to, size: GCKPacket.dataAck(source: dst, destination: src, serial: 0).count) {
            GCKPacket.dataAck(source: dst, destination: src, serial: serial.value)
        }
        return tr
    }

    /// Tears down the session on both sides (app-initiated disconnect by `by`).
    func disconnect(_ t: Int64, _ l: GCKLink, by d: SimDevice, rtt: Int64, remoteNotices: Bool = true) {
        let other = l.other(d)
        d.neighbors = max(0, d.neighbors - 1)
        other.neighbors = max(0, other.neighbors - 1)
        log(d, t + ms(0.3), "GCKSession", "Disconnecting participant [\(other.pidHex)].")
        log(d, t + ms(0.5), "GCKSession", "Closing connection to participant [\(other.pidHex)] on channel [\(l.channel)].")
        stateChange(d, other, t + ms(1), from: "Connected", to: "Not Connected")
        if remoteNotices {
            log(other, t + rtt + ms(1), "GCKSession", "Deleting neighbor representing participant \(d.pidHex).")
            stateChange(other, d, t + rtt + ms(2), from: "Connected", to: "Not Connected")
        }
    }
}

enum AppJSON {
    static func escape(_ s: String, slash: Bool = true) -> String {
        var out = ""
        for ch in s.unicodeScalars {
            switch ch {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/": out += slash ? "\\/" : "/"
            case "\n": out += "\\n"
            default:
                if ch.value < 0x20 { out += "\\u" + String(repeating: "0", count: 4 - String(ch.value, radix: 16).count) + String(ch.value, radix: 16) }
                else { out.unicodeScalars.append(ch) }
            }
        }
        return out
    }

    static func seconds(_ t: Int64, sinceUnix: Bool) -> String {
        let micros = t / 1000 - (sinceUnix ? 0 : 978_307_200 * 1_000_000)
        let whole = micros / 1_000_000
        let frac = micros % 1_000_000
        let f = String(frac)
        return "\(whole)." + String(repeating: "0", count: 6 - f.count) + f
    }

    static func handshake(_ d: SimDevice) -> String {
        "{\"type\":\"handshake\",\"deviceId\":\"\(escape(d.name))\",\"platform\":\"\(d.platform)\"}"
    }
    static func handshakeResponse(_ d: SimDevice) -> String {
        "{\"type\":\"handshake_response\",\"status\":\"accepted\",\"deviceId\":\"\(escape(d.name))\"}"
    }
    static func keepAlive(_ d: SimDevice, _ t: Int64) -> String {
        "{\"type\":\"keep_alive\",\"timestamp\":\(seconds(t, sinceUnix: true)),\"deviceId\":\"\(escape(d.name))\"}"
    }
    /// JSONEncoder's default date encoding: seconds since 2001-01-01.
    static func chat(_ d: SimDevice, _ content: String, _ t: Int64) -> String {
        "{\"sender\":\"\(escape(d.name))\",\"content\":\"\(escape(content))\",\"timestamp\":\(seconds(t, sinceUnix: false))}"
    }

    /// How the seed app prints a received dictionary (`print("Received data from X: \(json)")`).
    static func swiftDescription(_ pairs: [(String, String)]) -> String {
        "[" + pairs.map { "\"\($0.0)\": " + (Double($0.1) == nil ? "\"\($0.1)\"" : $0.1) }.joined(separator: ", ") + "]"
    }
}

enum LogTime {
    /// `2026-01-15 10:00:01.234567+0000`
    static func format(_ nanos: Int64) -> String {
        let micros = nanos / 1000
        var secs = micros / 1_000_000
        let frac = micros % 1_000_000
        let days = secs / 86400
        secs %= 86400
        let (y, m, d) = civil(days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2)) \(pad(secs / 3600, 2)):\(pad(secs / 60 % 60, 2)):\(pad(secs % 60, 2)).\(pad(frac, 6))+0000"
    }

    /// `2026-01-15T10:00:01.234Z` (milliseconds).
    static func iso(_ nanos: Int64) -> String {
        let millis = nanos / 1_000_000
        var secs = millis / 1000
        let frac = millis % 1000
        let days = secs / 86400
        secs %= 86400
        let (y, m, d) = civil(days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secs / 3600, 2)):\(pad(secs / 60 % 60, 2)):\(pad(secs % 60, 2)).\(pad(frac, 3))Z"
    }

    static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// Days since 1970-01-01 to (year, month, day) — H. Hinnant's algorithm.
    static func civil(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
