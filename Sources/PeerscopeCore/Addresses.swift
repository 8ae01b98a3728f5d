/// An IPv4 or IPv6 address. IPv6 link-local addresses keep the interface scope they were seen on
/// (`fe80::1%awdl0`), because on `awdl0` and `en0` the same link-local address means different hosts.
public enum IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    case v4(UInt32)
    case v6(hi: UInt64, lo: UInt64, scope: String?)

    public init?(v4 b: Bytes, at o: Int = 0) {
        guard let v = b.u32be(o) else { return nil }
        self = .v4(v)
    }

    public init?(v6 b: Bytes, at o: Int = 0, scope: String? = nil) {
        guard let hi = b.u64be(o), let lo = b.u64be(o + 8) else { return nil }
        let linkLocal = (hi >> 54) == 0x3FA  // fe80::/10
        self = .v6(hi: hi, lo: lo, scope: linkLocal ? scope : nil)
    }

    /// Parses dotted IPv4 or RFC 4291 IPv6 text (with optional `%scope`).
    public init?(_ text: String) {
        if text.contains(":") {
            var scope: String? = nil
            var body = Substring(text)
            if let pct = text.firstIndex(of: "%") {
                scope = String(text[text.index(after: pct)...])
                body = text[..<pct]
            }
            var halves: [Substring] = []
            if let r = body.firstRange(of: "::") {
                halves = [body[..<r.lowerBound], body[r.upperBound...]]
                if halves[1].contains("::") { return nil }
            } else {
                halves = [body]
            }
            func groups(_ s: String) -> [UInt16]? {
                if s.isEmpty { return [] }
                var out: [UInt16] = []
                for g in s.split(separator: ":", omittingEmptySubsequences: false) {
                    guard g.count <= 4, let v = UInt16(g, radix: 16) else { return nil }
                    out.append(v)
                }
                return out
            }
            guard let a = groups(String(halves[0])) else { return nil }
            var all: [UInt16]
            if halves.count == 2 {
                guard let b = groups(String(halves[1])), a.count + b.count <= 7 else { return nil }
                all = a + Array(repeating: 0, count: 8 - a.count - b.count) + b
            } else {
                guard a.count == 8 else { return nil }
                all = a
            }
            var hi: UInt64 = 0, lo: UInt64 = 0
            for i in 0 ..< 4 { hi = hi << 16 | UInt64(all[i]) }
            for i in 4 ..< 8 { lo = lo << 16 | UInt64(all[i]) }
            let linkLocal = (hi >> 54) == 0x3FA
            self = .v6(hi: hi, lo: lo, scope: linkLocal ? scope : nil)
        } else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var v: UInt32 = 0
            for p in parts {
                guard let o = UInt8(p) else { return nil }
                v = v << 8 | UInt32(o)
            }
            self = .v4(v)
        }
    }

    public var isV4: Bool { if case .v4 = self { return true } else { return false } }

    public var isLinkLocal: Bool {
        switch self {
        case .v4(let v): return v >> 16 == 0xA9FE
        case .v6(let hi, _, _): return (hi >> 54) == 0x3FA
        }
    }

    public var isMulticast: Bool {
        switch self {
        case .v4(let v): return v >> 28 == 0xE
        case .v6(let hi, _, _): return hi >> 56 == 0xFF
        }
    }

    /// The same address without its interface scope.
    public var unscoped: IPAddress {
        if case .v6(let hi, let lo, _) = self { return .v6(hi: hi, lo: lo, scope: nil) }
        return self
    }

    /// Dotted quad for IPv4 (written as bytes: at most 15, a string kept inline without an allocation;
    /// `AddressDescriptionTests` compares it with the interpolation it replaced), RFC 5952 for IPv6.
    public var description: String {
        switch self {
        case .v4(let v):
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 15) { buf in
                String(decoding: UnsafeBufferPointer(rebasing: buf[..<Self.writeV4(v, into: buf, at: 0)]), as: UTF8.self)
            }
        case .v6(let hi, let lo, let scope):
            var b: [UInt8] = []
            b.reserveCapacity(39)
            Self.appendIPv6Groups(hi, lo, to: &b)
            var s = String(decoding: b, as: UTF8.self)
            if let scope { s += "%" + scope }
            return s
        }
    }

    /// Writes `v` as a dotted quad into `buf` from `at` (room for 15 bytes needed); returns the end.
    @inline(__always) static func writeV4(_ v: UInt32, into buf: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var n = start
        for k in 0 ..< 4 {
            if k > 0 {
                buf[n] = 0x2E
                n &+= 1
            }
            let o = UInt8(truncatingIfNeeded: v >> UInt32(24 - 8 * k))
            if o >= 100 {
                buf[n] = 0x30 &+ o / 100
                n &+= 1
            }
            if o >= 10 {
                buf[n] = 0x30 &+ (o / 10) % 10
                n &+= 1
            }
            buf[n] = 0x30 &+ o % 10
            n &+= 1
        }
        return n
    }

    /// Writes decimal `v` into `buf` from `at` (room for 5 bytes needed); returns the end.
    @inline(__always) static func writePort(_ v: UInt16, into buf: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        let digits = v >= 10000 ? 5 : v >= 1000 ? 4 : v >= 100 ? 3 : v >= 10 ? 2 : 1
        var x = v, i = start &+ digits
        while i > start {
            i &-= 1
            buf[i] = 0x30 &+ UInt8(truncatingIfNeeded: x % 10)
            x /= 10
        }
        return start &+ digits
    }

    /// The eight groups of an IPv6 address in lowercase hex, the longest run (at least two, the first
    /// of equals) of zero groups as `::` (RFC 5952): `description` and `JSONBytes` both write with it.
    static func appendIPv6Groups(_ hi: UInt64, _ lo: UInt64, to bytes: inout [UInt8]) {
        @inline(__always) func group(_ k: Int) -> UInt16 {
            UInt16(truncatingIfNeeded: (k < 4 ? hi : lo) >> (UInt64(3 - (k & 3)) * 16))
        }
        var bestStart = -1, bestLen = 0, i = 0
        while i < 8 {
            if group(i) == 0 {
                var j = i
                while j < 8 && group(j) == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else {
                i += 1
            }
        }
        let start = bytes.count
        var k = 0
        while k < 8 {
            if k == bestStart {
                bytes.append(0x3A)
                bytes.append(0x3A)
                k += bestLen
                continue
            }
            if bytes.count > start, bytes[bytes.count - 1] != 0x3A { bytes.append(0x3A) }
            let g = group(k)
            var shift = 12
            while shift > 0 && (g >> UInt16(shift)) & 0xF == 0 { shift -= 4 }
            while shift >= 0 {
                bytes.append(Bytes.hexDigit(UInt8(truncatingIfNeeded: (g >> UInt16(shift)) & 0xF)))
                shift -= 4
            }
            k += 1
        }
    }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        switch (a, b) {
        case (.v4(let x), .v4(let y)): return x < y
        case (.v4, .v6): return true
        case (.v6, .v4): return false
        case (.v6(let h1, let l1, let s1), .v6(let h2, let l2, let s2)):
            if h1 != h2 { return h1 < h2 }
            if l1 != l2 { return l1 < l2 }
            return (s1 ?? "") < (s2 ?? "")
        }
    }
}

/// An address and port.
public struct Endpoint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(_ address: IPAddress, _ port: UInt16) {
        self.address = address
        self.port = port
    }

    /// `a.b.c.d:port`, `[v6]:port`; an IPv4 one written as bytes (at most 21, no interpolation).
    public var description: String {
        guard case .v4(let v) = address else { return "[\(address)]:\(port)" }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { buf in
            var n = IPAddress.writeV4(v, into: buf, at: 0)
            buf[n] = 0x3A
            n = IPAddress.writePort(port, into: buf, at: n &+ 1)
            return String(decoding: UnsafeBufferPointer(rebasing: buf[..<n]), as: UTF8.self)
        }
    }

    public static func < (a: Endpoint, b: Endpoint) -> Bool {
        a.address != b.address ? a.address < b.address : a.port < b.port
    }
}

public enum TransportProtocol: String, Sendable, Hashable, Codable {
    case udp, tcp
}

/// A directed flow: source to destination.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    public var proto: TransportProtocol
    public var src: Endpoint
    public var dst: Endpoint

    public init(_ proto: TransportProtocol, _ src: Endpoint, _ dst: Endpoint) {
        self.proto = proto
        self.src = src
        self.dst = dst
    }

    public var reversed: FlowKey { FlowKey(proto, dst, src) }

    /// The same key for both directions (smaller endpoint first).
    public var canonical: FlowKey { src <= dst ? self : reversed }

    public var description: String { "\(proto) \(src) > \(dst)" }
}
