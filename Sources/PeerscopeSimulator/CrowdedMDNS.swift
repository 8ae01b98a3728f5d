// The mDNS-heavy capture (the bench's, and the fast-path tests'): a crowded network (a conference, a classroom of iPads) where mDNS
// refreshes dominate. Written deterministically from a seed: many hosts with realistic names, the
// services Apple devices, printers and TVs announce (PTR/SRV/TXT/A/AAAA/NSEC with name compression),
// TXT records, per-host refresh intervals, browsers' queries with known answers, and rare changes
// (a TXT update, a new address, a goodbye and a return). Between the mDNS packets runs ordinary
// traffic (TCP 443 with handshakes and FINs, QUIC, DNS) that analysis must pass over.
import Foundation

extension SimRandom {
    /// Uniform in 0 ..< n (0 when n < 1).
    mutating func below(_ n: Int) -> Int { n < 1 ? 0 : int(0 ... n - 1) }
    mutating func chance(_ perMille: Int) -> Bool { below(1000) < perMille }
    mutating func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
}

/// Classic pcap (microseconds, Ethernet) written in 8 MiB blocks.
final class CrowdPcapFile {
    let handle: FileHandle
    var buffer: [UInt8] = []
    private(set) var frames = 0
    private(set) var bytes = 24

    init(path: String) throws {
        FileManager.default.createFile(atPath: path, contents: nil)
        guard let h = FileHandle(forWritingAtPath: path) else { throw NSError(domain: "bench", code: 1) }
        handle = h
        buffer.reserveCapacity(9 << 20)
        for v: UInt32 in [0xA1B2_C3D4] { le32(v) }
        le16(2); le16(4); le32(0); le32(0); le32(262_144); le32(1)
    }

    func le16(_ v: UInt16) { buffer.append(UInt8(v & 0xFF)); buffer.append(UInt8(v >> 8)) }
    func le32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { buffer.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) } }

    func write(micros: Int64, _ frame: [UInt8]) {
        le32(UInt32(truncatingIfNeeded: micros / 1_000_000))
        le32(UInt32(truncatingIfNeeded: micros % 1_000_000))
        le32(UInt32(frame.count))
        le32(UInt32(frame.count))
        buffer.append(contentsOf: frame)
        frames += 1
        bytes += 16 + frame.count
        if buffer.count > 8 << 20 { flush() }
    }

    func flush() {
        handle.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        flush()
        try handle.close()
    }
}

/// Ethernet frames around the simulator's IP layers.
enum CrowdFrames {
    static func ipv4(src: [UInt8], dst: [UInt8], proto: IPProto, id: UInt16, _ l4: [UInt8], srcMAC: [UInt8], dstMAC: [UInt8]) -> [UInt8] {
        dstMAC + srcMAC + [0x08, 0x00]
            + IPLayer.ipv4(src: src, dst: dst, proto: proto, ttl: dst[0] == 224 ? 255 : 64, id: id, dontFragment: true, payload: l4)
    }

    static func ipv6(src: [UInt8], dst: [UInt8], proto: IPProto, _ l4: [UInt8], srcMAC: [UInt8], dstMAC: [UInt8]) -> [UInt8] {
        dstMAC + srcMAC + [0x86, 0xDD] + IPLayer.ipv6(src: src, dst: dst, proto: proto, hopLimit: 255, flowLabel: 0, payload: l4)
    }
}

/// A DNS message writer with name compression (RFC 1035 §4.1.4), as mDNSResponder sends them.
struct CrowdDNSWriter {
    var out: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    /// Lower-cased name suffix -> offset where it was written.
    var offsets: [String: Int] = [:]

    init(response: Bool) {
        if !response { out[2] = 0 }
    }

    mutating func count(_ section: Int) {
        let o = 4 + section * 2
        let v = (Int(out[o]) << 8 | Int(out[o + 1])) + 1
        out[o] = UInt8(v >> 8)
        out[o + 1] = UInt8(v & 0xFF)
    }

    mutating func name(_ labels: [String]) {
        for i in labels.indices {
            let key = labels[i...].joined(separator: ".").lowercased()
            if let o = offsets[key] {
                out += [0xC0 | UInt8(o >> 8), UInt8(o & 0xFF)]
                return
            }
            if out.count < 0x3FFF { offsets[key] = out.count }
            let bytes = Array(labels[i].utf8.prefix(63))
            out.append(UInt8(bytes.count))
            out += bytes
        }
        out.append(0)
    }

    mutating func question(_ labels: [String], type: UInt16, qu: Bool = false) {
        name(labels)
        out += [UInt8(type >> 8), UInt8(type & 0xFF), qu ? 0x80 : 0, 1]
        count(0)
    }

    /// A record in `section` (1 answer, 3 additional); `rdata` writes the record data.
    mutating func record(_ section: Int, _ labels: [String], type: UInt16, flush: Bool, ttl: UInt32, _ rdata: (inout CrowdDNSWriter) -> Void) {
        name(labels)
        out += [UInt8(type >> 8), UInt8(type & 0xFF), flush ? 0x80 : 0, 1]
        out += [UInt8(ttl >> 24), UInt8(ttl >> 16 & 0xFF), UInt8(ttl >> 8 & 0xFF), UInt8(ttl & 0xFF)]
        let lenAt = out.count
        out += [0, 0]
        rdata(&self)
        let l = out.count - lenAt - 2
        out[lenAt] = UInt8(l >> 8)
        out[lenAt + 1] = UInt8(l & 0xFF)
        count(section)
    }

    mutating func txt(_ strings: [String]) {
        if strings.isEmpty { out.append(0); return }
        for s in strings {
            let b = Array(s.utf8.prefix(255))
            out.append(UInt8(b.count))
            out += b
        }
    }
}

public enum CrowdedMDNS {
    struct Service {
        var type: String          // `_airplay._tcp`
        var instance: String
        var port: UInt16
        var txt: [String]
    }

    struct Host {
        var hostLabel: String     // `Annas-iPhone`
        var v4: [UInt8]
        var v6: [UInt8]?
        var mac: [UInt8]
        var services: [Service]
        var interval: Int64       // refresh interval, microseconds
        var browses: [String]     // service types this host browses for
        var away = false
    }

    static let first = ["Anna", "Luca", "Mei", "Omar", "Sofia", "Jonas", "Priya", "Kenji", "Fatima", "Liam", "Chloé",
                        "Mateo", "Ingrid", "Tomás", "Aisha", "Noah", "Yuki", "Elif", "Pavel", "Zoë", "Ravi", "Hana",
                        "Lena", "Diego", "Amara", "Finn", "Sanne", "Jamal", "Olga", "Marco"]
    static let devices = ["iPhone", "iPad", "MacBook Pro", "MacBook Air", "iMac", "Apple Watch", "iPad Pro", "Mac mini"]
    static let printers = ["HP LaserJet Pro M404dn", "Brother HL-L2350DW series", "EPSON ET-2750 Series", "Canon TS5300 series",
                           "Xerox VersaLink C405"]
    static let tvs = ["Living Room", "Classroom 3B", "Meeting Room Oslo", "Lobby", "Hall B Stage"]
    static let mpcServices = ["_peerchat._tcp", "_mc-whiteboard._tcp", "_quiz-game._tcp"]

    static func base36(_ v: UInt64) -> String {
        let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz")
        var s: [Character] = []
        var x = v
        for _ in 0 ..< 13 { s.append(digits[Int(x % 36)]); x /= 36 }
        return String(s.reversed())
    }

    static func hex(_ b: [UInt8], _ sep: String = "") -> String { b.map { String(format: "%02X", $0) }.joined(separator: sep) }

    static func makeHost(_ i: Int, _ rng: inout SimRandom, _ used: inout [String: Int]) -> Host {
        // Names are unique as mDNS makes them: the second "Anna’s iPhone" becomes "Anna’s iPhone (2)".
        func unique(_ name: String, _ sep: String) -> String {
            let n = used[name, default: 0] + 1
            used[name] = n
            return n == 1 ? name : (sep == " " ? "\(name) (\(n))" : "\(name)-\(n)")
        }
        let mac: [UInt8] = [0x02, UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF), UInt8(rng.below(256)), UInt8(rng.below(256))]
        let v4: [UInt8] = [10, UInt8(20 + i / 60000), UInt8(i / 250 % 240), UInt8(i % 250 + 2)]
        let v6: [UInt8] = [0xFE, 0x80, 0, 0, 0, 0, 0, 0, mac[0] ^ 2, mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]]
        let kind = rng.below(100)
        let person = rng.pick(first)
        var services: [Service] = []
        var hostLabel: String
        var browses: [String] = []
        let deviceID = hex(Array(mac.reversed()), ":")
        if kind < 62 {
            // Apple devices: AirPlay, RAOP, companion link, device info; a third run an MPC app.
            let device = rng.pick(devices)
            let display = unique("\(person)’s \(device)", " ")
            hostLabel = unique("\(person)s-\(device.replacingOccurrences(of: " ", with: "-"))", "-")
            let model = device.hasPrefix("iP") ? "iPhone15,\(2 + rng.below(3))" : "Mac14,\(2 + rng.below(12))"
            if device != "Apple Watch" {
                services.append(Service(type: "_airplay._tcp", instance: display, port: 7000,
                                        txt: ["acl=0", "deviceid=\(deviceID)", "features=0x4A7FDFD5,0xBC157FDE", "flags=0x244",
                                              "model=\(model)", "pk=\(hex((0 ..< 32).map { _ in UInt8(rng.below(256)) }).lowercased())",
                                              "protovers=1.1", "srcvers=670.6.2", "osvers=17.\(rng.below(6)).\(rng.below(3))"]))
                services.append(Service(type: "_raop._tcp", instance: "\(hex(mac))@\(display)", port: 7000,
                                        txt: ["cn=0,1,2,3", "da=true", "et=0,3,5", "ft=0x4A7FDFD5,0xBC157FDE", "md=0,1,2",
                                              "am=\(model)", "sf=0x44", "tp=UDP", "vn=65537", "vs=670.6.2", "ov=17.4"]))
            }
            services.append(Service(type: "_companion-link._tcp", instance: display, port: UInt16(49152 + rng.below(16000)),
                                    txt: ["rpBA=\(hex((0 ..< 6).map { _ in UInt8(rng.below(256)) }, ":"))", "rpFl=0x20000", "rpHN=\(hex([UInt8(rng.below(256)), UInt8(rng.below(256))]))",
                                          "rpMac=0", "rpVr=510.60.4"]))
            services.append(Service(type: "_device-info._tcp", instance: display, port: 0, txt: ["model=\(model)", "osxvers=23"]))
            if rng.below(3) == 0 {
                let peer = base36(rng.next() % 0x7FFF_FFFF_FFFF_FFFF)
                services.append(Service(type: rng.pick(mpcServices), instance: peer, port: UInt16(49152 + rng.below(16000)),
                                        txt: ["_d=\(display)", "room=\(rng.below(40))", "__private=no"]))
                browses.append(services.last?.type ?? "_peerchat._tcp")
            }
            browses += ["_airplay._tcp", "_companion-link._tcp"]
        } else if kind < 80 {
            let model = rng.pick(printers)
            let display = "\(model) [\(hex([mac[3], mac[4], mac[5]]))]"
            hostLabel = "\(model.split(separator: " ").first ?? "PRN")-\(hex([mac[4], mac[5]]))-\(i)"
            let uuid = "\(hex((0 ..< 4).map { _ in UInt8(rng.below(256)) }))-0000-1000-8000-\(hex(mac))".lowercased()
            let common = ["txtvers=1", "qtotal=1", "ty=\(model)", "product=(\(model))", "note=Floor \(rng.below(5))",
                          "pdl=application/pdf,image/urf,image/pwg-raster", "UUID=\(uuid)", "Color=T", "Duplex=T", "URF=CP1,IS1-5-7,MT1-2-3-4-5-8-10-11-12-13,RS300,SRGB24,V1.4,W8,DM1"]
            services.append(Service(type: "_ipp._tcp", instance: display, port: 631, txt: common + ["rp=ipp/print"]))
            services.append(Service(type: "_printer._tcp", instance: display, port: 515, txt: common + ["rp=auto"]))
            services.append(Service(type: "_http._tcp", instance: display, port: 80, txt: []))
        } else if kind < 92 {
            let room = rng.pick(tvs)
            hostLabel = "Chromecast-\(hex((0 ..< 16).map { _ in UInt8(rng.below(256)) }).lowercased())"
            services.append(Service(type: "_googlecast._tcp", instance: hostLabel, port: 8009,
                                    txt: ["id=\(hex((0 ..< 16).map { _ in UInt8(rng.below(256)) }).lowercased())", "cd=\(hex((0 ..< 16).map { _ in UInt8(rng.below(256)) }))",
                                          "rm=", "ve=05", "md=Chromecast", "ic=/setup/icon.png", "fn=\(room) TV", "ca=201221", "st=0", "bs=FA8F\(hex([mac[4], mac[5]]))", "nf=1", "rs="]))
        } else {
            let person2 = rng.pick(first)
            hostLabel = "\(person2)-Desktop-\(i)"
            services.append(Service(type: "_smb._tcp", instance: "\(person2)’s Desktop \(i)", port: 445, txt: []))
            services.append(Service(type: "_sftp-ssh._tcp", instance: "\(person2)’s Desktop \(i)", port: 22, txt: []))
            browses.append("_smb._tcp")
        }
        // Refresh every 20-100 s: mDNSResponder answers queries and re-announces well within the TTLs.
        return Host(hostLabel: hostLabel, v4: v4, v6: rng.below(2) == 0 ? v6 : nil, mac: mac, services: services,
                    interval: Int64(20 + rng.below(80)) * 1_000_000, browses: browses)
    }

    static func split(_ type: String) -> [String] { type.split(separator: ".").map(String.init) }

    /// The announcement (or, with `ttlScale` 0, the goodbye) of all of `h`'s services and addresses.
    static func response(_ h: Host, goodbye: Bool = false) -> [UInt8] {
        var w = CrowdDNSWriter(response: true)
        let host = [h.hostLabel, "local"]
        let ttl: (UInt32) -> UInt32 = { goodbye ? 0 : $0 }
        for s in h.services {
            let st = split(s.type) + ["local"]
            let inst = [s.instance] + st
            w.record(1, st, type: 12, flush: false, ttl: ttl(4500)) { $0.name(inst) }
        }
        for s in h.services {
            let inst = [s.instance] + split(s.type) + ["local"]
            w.record(1, inst, type: 16, flush: true, ttl: ttl(4500)) { $0.txt(s.txt) }
            w.record(1, inst, type: 33, flush: true, ttl: ttl(120)) {
                $0.out += [0, 0, 0, 0, UInt8(s.port >> 8), UInt8(s.port & 0xFF)]
                $0.name(host)
            }
        }
        w.record(1, host, type: 1, flush: true, ttl: ttl(120)) { $0.out += h.v4 }
        if let v6 = h.v6 { w.record(1, host, type: 28, flush: true, ttl: ttl(120)) { $0.out += v6 } }
        if !goodbye {
            // NSEC: the host has A (and AAAA) only.
            w.record(3, host, type: 47, flush: true, ttl: 120) {
                $0.name(host)
                $0.out += [0, 4, 0x40, 0, 0, h.v6 == nil ? 0 : 0x08]
            }
        }
        return w.out
    }

    /// A browse query for `types` with the known answers `known` (instances of the first type).
    static func query(_ types: [String], known: [[String]]) -> [UInt8] {
        var w = CrowdDNSWriter(response: false)
        for t in types { w.question(split(t) + ["local"], type: 12) }
        if let first = types.first {
            for k in known.prefix(8) { w.record(1, split(first) + ["local"], type: 12, flush: false, ttl: 4000) { $0.name(k) } }
        }
        return w.out
    }

    struct Due: Comparable {
        var t: Int64
        var host: Int
        var isQuery: Bool
        static func < (a: Due, b: Due) -> Bool { (a.t, a.host, a.isQuery ? 1 : 0) < (b.t, b.host, b.isQuery ? 1 : 0) }
    }

    /// Ordinary traffic between the mDNS packets: TCP 443 connections (handshake, data, ACKs, FIN),
    /// QUIC and DNS.
    struct Filler {
        struct Conn {
            var client: [UInt8], server: [UInt8], cport: UInt16, mac: [UInt8]
            var cseq: UInt32, sseq: UInt32, step: Int, length: Int
        }
        var conns: [Conn] = []
        var rng: SimRandom
        var ipID: UInt16 = 1
        let router: [UInt8] = [0x02, 0xAA, 0, 0, 0, 1]

        mutating func next(_ hosts: [Host]) -> [UInt8] {
            ipID &+= 1
            let roll = rng.below(100)
            if roll < 12 {
                // QUIC / UDP 443, both ways.
                let h = hosts[rng.below(hosts.count)]
                let server: [UInt8] = [17, 253, UInt8(rng.below(200)), UInt8(1 + rng.below(250))]
                let n = rng.chance(150) ? 1200 + rng.below(150) : 40 + rng.below(60)
                let payload = [UInt8(0x40 | rng.below(64))] + (0 ..< n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                return rng.below(2) == 0
                    ? CrowdFrames.ipv4(src: h.v4, dst: server, proto: .udp, id: ipID,
                                       IPLayer.udp(src: h.v4, dst: server, sport: UInt16(50000 + rng.below(10000)), dport: 443, payload: payload),
                                       srcMAC: h.mac, dstMAC: router)
                    : CrowdFrames.ipv4(src: server, dst: h.v4, proto: .udp, id: ipID,
                                       IPLayer.udp(src: server, dst: h.v4, sport: 443, dport: UInt16(50000 + rng.below(10000)), payload: payload),
                                       srcMAC: router, dstMAC: h.mac)
            }
            if roll < 16 {
                let h = hosts[rng.below(hosts.count)]
                var w = CrowdDNSWriter(response: false)
                w.out[2] = 1
                w.question(["www", "example\(rng.below(500))", "com"], type: 1)
                return CrowdFrames.ipv4(src: h.v4, dst: [10, 0, 0, 1], proto: .udp, id: ipID,
                                        IPLayer.udp(src: h.v4, dst: [10, 0, 0, 1], sport: UInt16(30000 + rng.below(30000)), dport: 53, payload: w.out),
                                   srcMAC: h.mac, dstMAC: router)
            }
            if conns.count < 64 || rng.chance(20) {
                let h = hosts[rng.below(hosts.count)]
                conns.append(Conn(client: h.v4, server: [142, 250, UInt8(rng.below(256)), UInt8(1 + rng.below(250))],
                                  cport: UInt16(49152 + rng.below(16000)), mac: h.mac, cseq: UInt32(truncatingIfNeeded: rng.next()),
                                  sseq: UInt32(truncatingIfNeeded: rng.next()), step: 0, length: 20 + rng.below(200)))
            }
            let ci = rng.below(conns.count)
            var c = conns[ci]
            defer {
                if c.step > c.length + 4 { conns.remove(at: ci) } else { conns[ci] = c }
            }
            let id = ipID, router = self.router
            func up(_ bits: UInt8, _ p: [UInt8]) -> [UInt8] {
                let flags = IPLayer.TCPFlags(rawValue: bits)
                return CrowdFrames.ipv4(src: c.client, dst: c.server, proto: .tcp, id: id,
                                 IPLayer.tcp(src: c.client, dst: c.server, sport: c.cport, dport: 443, seq: c.cseq, ack: c.sseq,
                                             flags: flags, window: 0xFFFF, payload: p), srcMAC: c.mac, dstMAC: router)
            }
            func down(_ bits: UInt8, _ p: [UInt8]) -> [UInt8] {
                let flags = IPLayer.TCPFlags(rawValue: bits)
                return CrowdFrames.ipv4(src: c.server, dst: c.client, proto: .tcp, id: id,
                                 IPLayer.tcp(src: c.server, dst: c.client, sport: 443, dport: c.cport, seq: c.sseq, ack: c.cseq,
                                             flags: flags, window: 0xFFFF, payload: p), srcMAC: router, dstMAC: c.mac)
            }
            defer { c.step += 1 }
            switch c.step {
            case 0: let f = up(0x02, []); c.cseq &+= 1; return f
            case 1: let f = down(0x12, []); c.sseq &+= 1; return f
            case 2: return up(0x10, [])
            case 3:
                let hello = [0x16, 0x03, 0x01, 0x02, 0x00] + (0 ..< 512).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let f = up(0x18, hello); c.cseq &+= UInt32(hello.count); return f
            case c.length + 3: let f = up(0x11, []); c.cseq &+= 1; return f
            case c.length + 4: let f = down(0x11, []); c.sseq &+= 1; return f
            default:
                // Mostly ACKs and small segments, as on a busy Wi-Fi capture.
                if c.step % 4 != 0 { return up(0x10, []) }
                let data = (0 ..< (rng.chance(250) ? 1448 : 80 + rng.below(400))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let f = down(0x18, data)
                c.sseq &+= UInt32(data.count)
                return f
            }
        }
    }

    /// Writes about `packets` packets, `mdnsShare` percent of them mDNS. Returns (frames, bytes, mDNS frames).
    /// Writes a classic pcap of about `packets` packets to `path`, `mdnsShare` percent of them mDNS from
    /// `hostCount` hosts. The same arguments always give the same bytes. Returns (frames, bytes, mDNS frames).
    public static func write(path: String, packets: Int, hostCount: Int = 3000, mdnsShare: Int = 40, seed: UInt64 = 13) throws -> (frames: Int, bytes: Int, mdns: Int) {
        var rng = SimRandom(seed: seed)
        var used: [String: Int] = [:]
        var hosts = (0 ..< hostCount).map { makeHost($0, &rng, &used) }
        let file = try CrowdPcapFile(path: path)
        var filler = Filler(rng: SimRandom(seed: seed &+ 1))
        var due = MinHeap<Due>()
        let start: Int64 = 1_767_225_600 * 1_000_000  // 2026-01-01T00:00:00Z
        for i in hosts.indices {
            due.insert(Due(t: start + Int64(rng.below(Int(hosts[i].interval))), host: i, isQuery: false))
            if !hosts[i].browses.isEmpty { due.insert(Due(t: start + Int64(rng.below(120_000_000)), host: i, isQuery: true)) }
        }
        let mdnsMAC: [UInt8] = [0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB], mdns6MAC: [UInt8] = [0x33, 0x33, 0, 0, 0, 0xFB]
        let group4: [UInt8] = [224, 0, 0, 251]
        let group6: [UInt8] = [0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFB]
        // Cache of each host's announcement bytes: refreshes are byte-identical until something changes.
        var announcement: [Int: [UInt8]] = [:]
        var mdns = 0
        var carry = 0
        var ipID: UInt16 = 0
        var byType: [String: [[String]]] = [:]
        for h in hosts { for s in h.services { byType[s.type, default: []].append([s.instance] + split(s.type) + ["local"]) } }
        while file.frames < packets, let d = due.popMin() {
            var h = hosts[d.host]
            var payload: [UInt8]?
            if d.isQuery {
                due.insert(Due(t: d.t + Int64(60 + rng.below(120)) * 1_000_000, host: d.host, isQuery: true))
                if !h.away, let t = h.browses.first {
                    let known = Array((byType[t] ?? []).dropFirst(rng.below(max(1, (byType[t] ?? []).count))).prefix(rng.below(6)))
                    payload = query(h.browses, known: known)
                }
            } else {
                var next = d.t + h.interval + Int64(rng.below(2_000_000))
                let r = rng.below(1000)
                if h.away {
                    // Back after its sleep: announce again.
                    h.away = false
                    announcement[d.host] = nil
                } else if r < 4 {
                    // A goodbye (TTL 0), back after 5-15 minutes.
                    payload = response(h, goodbye: true)
                    h.away = true
                    next = d.t + Int64(300 + rng.below(600)) * 1_000_000
                } else if r < 12, !h.services.isEmpty {
                    // A TXT change: status, a new OS version, a room change.
                    let si = rng.below(h.services.count)
                    h.services[si].txt.append("seq=\(rng.below(1000))")
                    if h.services[si].txt.count > 14 { h.services[si].txt.removeFirst() }
                    announcement[d.host] = nil
                } else if r < 15 {
                    // A new address (DHCP renew on another subnet).
                    h.v4[2] = UInt8(truncatingIfNeeded: Int(h.v4[2]) + 1)
                    announcement[d.host] = nil
                } else if r < 18 {
                    // Gone without a goodbye: its records expire; back much later.
                    h.away = true
                    next = d.t + Int64(400 + rng.below(600)) * 1_000_000
                    payload = nil
                    hosts[d.host] = h
                    due.insert(Due(t: next, host: d.host, isQuery: false))
                    continue
                }
                if payload == nil {
                    if announcement[d.host] == nil { announcement[d.host] = response(h) }
                    payload = announcement[d.host]
                }
                hosts[d.host] = h
                due.insert(Due(t: next, host: d.host, isQuery: false))
            }
            guard let payload else { continue }
            ipID &+= 1
            let useV6 = h.v6 != nil && d.host % 2 == 0
            let frame = useV6
                ? CrowdFrames.ipv6(src: h.v6 ?? [], dst: group6, proto: .udp,
                                   IPLayer.udp(src: h.v6 ?? [], dst: group6, sport: 5353, dport: 5353, payload: payload), srcMAC: h.mac, dstMAC: mdns6MAC)
                : CrowdFrames.ipv4(src: h.v4, dst: group4, proto: .udp, id: ipID,
                                   IPLayer.udp(src: h.v4, dst: group4, sport: 5353, dport: 5353, payload: payload), srcMAC: h.mac, dstMAC: mdnsMAC)
            file.write(micros: d.t, frame)
            mdns += 1
            // Ordinary traffic in between, spread over the time to the next mDNS packet.
            carry += 100 - mdnsShare
            let nextT = due.min?.t ?? d.t + 1000
            var k = 0
            let count = carry / mdnsShare
            carry -= count * mdnsShare
            while k < count, file.frames < packets {
                k += 1
                let t = d.t + (nextT - d.t) * Int64(k) / Int64(count + 1)
                file.write(micros: t, filler.next(hosts))
            }
        }
        try file.close()
        return (file.frames, file.bytes, mdns)
    }
}

/// A binary min-heap (the simulator has no dependencies).
struct MinHeap<T: Comparable> {
    private var a: [T] = []
    var min: T? { a.first }

    mutating func insert(_ x: T) {
        a.append(x)
        var i = a.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard a[i] < a[p] else { break }
            a.swapAt(i, p)
            i = p
        }
    }

    mutating func popMin() -> T? {
        guard let top = a.first else { return nil }
        let last = a.removeLast()
        if !a.isEmpty {
            a[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < a.count, a[l] < a[m] { m = l }
                if r < a.count, a[r] < a[m] { m = r }
                if m == i { break }
                a.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
