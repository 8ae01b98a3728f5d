import PeerscopeCore

extension PacketDecoder {
    // MARK: IPv4

    /// `p` starts at the IPv4 header, at frame offset `off`.
    func ipv4(_ p: Bytes, _ off: Int) {
        counters.ipv4 += 1
        guard p.count >= 20, let b0 = p.byte(0), let total16 = p.u16be(2), let ff = p.u16be(6),
              let proto = p.byte(9), let s = p.u32be(12), let t = p.u32be(16), let id = p.u16be(4)
        else {
            return truncated("ipv4.truncated", "IPv4 header needs 20 bytes, \(p.count) captured", off)
        }
        guard b0 >> 4 == 4 else {
            return diag("ipv4.bad_version", .warning, "IPv4 header with version \(b0 >> 4)", off)
        }
        let ihl = Int(b0 & 0xF) * 4
        guard ihl >= 20 else {
            return diag("ipv4.bad_ihl", .warning, "IPv4 header length \(ihl) is below 20", off)
        }
        guard ihl <= p.count else {
            if snapped { return truncated("ipv4.truncated", "IPv4 header of \(ihl) bytes, \(p.count) captured", off) }
            return diag("ipv4.bad_ihl", .warning, "IPv4 header length \(ihl) exceeds the \(p.count) bytes of the packet", off)
        }
        if options.verifyIPv4Checksum {
            var sum: UInt32 = 0
            var i = 0
            while i < ihl, let w = p.u16be(i) { sum &+= UInt32(w); i += 2 }
            while sum > 0xFFFF { sum = (sum & 0xFFFF) &+ (sum >> 16) }
            if sum != 0xFFFF {
                diag("ipv4.bad_checksum", .info, "IPv4 header checksum does not match (checksum offload on the capturing host?)", off + 10)
            }
        }
        var total = Int(total16)
        if total == 0 {
            // Segmentation offload on the capturing host leaves the length zero: use what is there.
            diag("ipv4.zero_total_length", .info, "IPv4 total length 0 (segmentation offload?); using the captured length", off + 2)
            total = p.count
        }
        guard total >= ihl else {
            return diag("ipv4.bad_total_length", .warning, "IPv4 total length \(total) is below the header length \(ihl)", off + 2)
        }
        var missing = 0
        if total > p.count {
            guard snapped else {
                return diag("ipv4.bad_total_length", .warning,
                            "IPv4 total length \(total) exceeds the \(p.count) bytes of the packet", off + 2)
            }
            missing = total - p.count
            total = p.count
        }
        let src = IPAddress.v4(s), dst = IPAddress.v4(t)
        let body = p.slice(ihl, total - ihl) ?? .empty
        let more = ff & 0x2000 != 0
        let fragOffset = Int(ff & 0x1FFF) * 8
        if more || fragOffset != 0 {
            counters.fragments += 1
            guard missing == 0 else {
                return diag("ipv4.frag.truncated", .warning,
                            "IPv4 fragment cut by the snap length (\(missing) bytes missing); not reassembled", off)
            }
            let key = FragKey(src: src, dst: dst, id: UInt32(id), proto: proto, v6: false)
            guard let whole = addFragment(key, offset: fragOffset, data: body, more: more, off: off + ihl) else { return }
            transport(proto, src, dst, whole, nil, missing: 0, v6: false)
            return
        }
        transport(proto, src, dst, body, off + ihl, missing: missing, v6: false)
    }

    // MARK: IPv6

    func ipv6(_ p: Bytes, _ off: Int) {
        counters.ipv6 += 1
        guard p.count >= 40, let b0 = p.byte(0), let plen16 = p.u16be(4), let nh = p.byte(6),
              let src = IPAddress(v6: p, at: 8, scope: scope), let dst = IPAddress(v6: p, at: 24, scope: scope)
        else {
            return truncated("ipv6.truncated", "IPv6 header needs 40 bytes, \(p.count) captured", off)
        }
        guard b0 >> 4 == 6 else {
            return diag("ipv6.bad_version", .warning, "IPv6 header with version \(b0 >> 4)", off)
        }
        var total = 40 + Int(plen16)
        if plen16 == 0 {
            if nh != 0 && p.count > 40 {
                diag("ipv6.zero_payload_length", .info, "IPv6 payload length 0 (jumbogram or offload); using the captured length", off + 4)
            }
            total = p.count
        }
        var missing = 0
        if total > p.count {
            guard snapped else {
                return diag("ipv6.bad_payload_length", .warning,
                            "IPv6 payload length \(plen16) exceeds the \(p.count - 40) bytes of the packet", off + 4)
            }
            missing = total - p.count
            total = p.count
        }
        ipv6Chain(nh, p.prefix(total), 40, src, dst, off, missing: missing, fragmentsAllowed: true)
    }

    /// Walks IPv6 extension headers of `p` from `start` (frame offset of `p` is `off`, nil for a
    /// reassembled datagram) and hands the upper layer on.
    func ipv6Chain(_ first: UInt8, _ p: Bytes, _ start: Int, _ src: IPAddress, _ dst: IPAddress,
                   _ off: Int?, missing: Int, fragmentsAllowed: Bool) {
        var nh = first
        var o = start
        var hops = 0
        while true {
            hops += 1
            guard hops <= 32 else {
                return diag("ipv6.ext.too_many", .warning, "more than 32 IPv6 extension headers", off.map { $0 + o })
            }
            switch nh {
            case 0, 43, 60, 51, 135, 139, 140:  // hop-by-hop, routing, destination, AH, mobility, HIP, shim6
                guard let next = p.byte(o), let l = p.byte(o + 1) else {
                    return truncated("ipv6.ext.truncated", "IPv6 extension header \(nh) cut short", off.map { $0 + o })
                }
                let len = nh == 51 ? (Int(l) + 2) * 4 : (Int(l) + 1) * 8
                guard o + len <= p.count else {
                    return truncated("ipv6.ext.truncated", "IPv6 extension header \(nh) of \(len) bytes runs past the packet",
                                     off.map { $0 + o })
                }
                nh = next
                o += len
            case 44:
                guard let next = p.byte(o), let fo = p.u16be(o + 2), let id = p.u32be(o + 4) else {
                    return truncated("ipv6.ext.truncated", "IPv6 fragment header cut short", off.map { $0 + o })
                }
                let fragOffset = Int(fo & 0xFFF8)
                let more = fo & 1 != 0
                if fragOffset == 0 && !more {  // atomic fragment
                    nh = next
                    o += 8
                    continue
                }
                counters.fragments += 1
                guard fragmentsAllowed else {
                    return diag("ipv6.frag.nested", .warning, "IPv6 fragment header inside a reassembled datagram", nil)
                }
                guard missing == 0 else {
                    return diag("ipv6.frag.truncated", .warning,
                                "IPv6 fragment cut by the snap length (\(missing) bytes missing); not reassembled", off)
                }
                let key = FragKey(src: src, dst: dst, id: id, proto: next, v6: true)
                let body = p.suffix(from: o + 8)
                guard let whole = addFragment(key, offset: fragOffset, data: body, more: more, off: off.map { $0 + o + 8 }) else { return }
                return ipv6Chain(next, whole, 0, src, dst, nil, missing: 0, fragmentsAllowed: false)
            case 59:
                counters.otherIP += 1
                return
            default:
                return transport(nh, src, dst, p.suffix(from: o), off.map { $0 + o }, missing: missing, v6: true)
            }
        }
    }

    // MARK: transport

    /// `body` is the IP payload (as captured); `missing` bytes of it were cut by the snap length.
    func transport(_ proto: UInt8, _ src: IPAddress, _ dst: IPAddress, _ body: Bytes, _ off: Int?,
                   missing: Int, v6: Bool) {
        switch proto {
        case 17: udp(src, dst, body, off, missing: missing)
        case 6: tcp(src, dst, body, off, missing: missing)
        case 1 where !v6: icmp(src, body, off, v6: false)
        case 58 where v6: icmp(src, body, off, v6: true)
        default: counters.otherIP += 1
        }
    }

    func udp(_ src: IPAddress, _ dst: IPAddress, _ body: Bytes, _ off: Int?, missing: Int) {
        guard let sp = body.u16be(0), let dp = body.u16be(2), let len16 = body.u16be(4), body.count >= 8 else {
            return truncated("udp.truncated", "UDP header needs 8 bytes, \(body.count) captured", off)
        }
        let ipLen = body.count + missing
        var len = Int(len16)
        if len == 0 && ipLen > 65535 { len = ipLen }  // IPv6 jumbogram
        guard len >= 8, len <= ipLen else {
            return diag("udp.bad_length", .warning,
                        "UDP length \(len) does not fit the \(ipLen)-byte IP payload", off.map { $0 + 4 })
        }
        let payload: Bytes
        if len > body.count {
            payload = body.suffix(from: 8)
            diag("udp.truncated", .info,
                 "UDP datagram cut by the snap length: \(body.count - 8) of \(len - 8) payload bytes captured", off)
        } else {
            payload = body.slice(8, len - 8) ?? .empty
        }
        counters.udp += 1
        out.append(.udp(frame: cur, flow: FlowKey(.udp, Endpoint(src, sp), Endpoint(dst, dp)), payload: payload))
    }

    // MARK: ICMP

    func icmp(_ reporter: IPAddress, _ body: Bytes, _ off: Int?, v6: Bool) {
        guard let type = body.byte(0), let code = body.byte(1) else {
            return truncated(v6 ? "icmpv6.truncated" : "icmp.truncated", "ICMP header cut short", off)
        }
        let isError = v6 ? (1 ... 4).contains(type) : (type == 3 || type == 11 || type == 12)
        guard isError else { counters.otherIP += 1; return }
        guard body.count >= 8 else {
            return truncated(v6 ? "icmpv6.truncated" : "icmp.truncated", "ICMP error header needs 8 bytes", off)
        }
        let quote = body.suffix(from: 8)
        let quoted = v6 ? quotedV6(quote) : quotedV4(quote)
        if quoted == nil && quote.count < (v6 ? 44 : 24) {
            diag(v6 ? "icmpv6.quote.truncated" : "icmp.quote.truncated", .info,
                 "ICMP error quotes \(quote.count) bytes: too few to name the flow", off.map { $0 + 8 })
        }
        counters.icmpErrors += 1
        out.append(.icmpError(frame: cur, info: ICMPErrorInfo(reporter: reporter, isV6: v6, type: type, code: code, quoted: quoted)))
    }

    func quotedFlow(_ proto: UInt8, _ src: IPAddress, _ dst: IPAddress, _ t: Bytes) -> FlowKey? {
        guard proto == 6 || proto == 17, let sp = t.u16be(0), let dp = t.u16be(2) else { return nil }
        return FlowKey(proto == 6 ? .tcp : .udp, Endpoint(src, sp), Endpoint(dst, dp))
    }

    func quotedV4(_ q: Bytes) -> FlowKey? {
        guard let b0 = q.byte(0), b0 >> 4 == 4, let proto = q.byte(9), let s = q.u32be(12), let d = q.u32be(16),
              let ff = q.u16be(6), ff & 0x1FFF == 0 else { return nil }
        let ihl = Int(b0 & 0xF) * 4
        guard ihl >= 20 else { return nil }
        return quotedFlow(proto, .v4(s), .v4(d), q.suffix(from: ihl))
    }

    func quotedV6(_ q: Bytes) -> FlowKey? {
        guard let b0 = q.byte(0), b0 >> 4 == 6, var nh = q.byte(6),
              let src = IPAddress(v6: q, at: 8, scope: scope), let dst = IPAddress(v6: q, at: 24, scope: scope) else { return nil }
        var o = 40
        for _ in 0 ..< 16 {
            switch nh {
            case 0, 43, 60, 51:
                guard let next = q.byte(o), let l = q.byte(o + 1) else { return nil }
                o += nh == 51 ? (Int(l) + 2) * 4 : (Int(l) + 1) * 8
                nh = next
            case 44:
                guard let next = q.byte(o), let fo = q.u16be(o + 2), fo & 0xFFF8 == 0 else { return nil }
                o += 8
                nh = next
            default:
                return quotedFlow(nh, src, dst, q.suffix(from: o))
            }
        }
        return nil
    }
}
