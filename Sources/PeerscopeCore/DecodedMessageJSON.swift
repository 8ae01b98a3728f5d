/// A message's fields that can write themselves as JSON, straight into the output bytes: what a
/// plugin hands `PluginContext.message(_:writing:)` on a hot path (mDNS), instead of building a
/// `[(String, JSONValue)]` tree per message. `fields` is the reference: the bytes written must be
/// those of `JSONValue.object(fields)`'s members (`DecodeOutputTests` checks it on every sample).
public protocol MessageFieldsWriter: Sendable {
    /// The fields as `DecodedMessage.fields` lists them (tests, the JSON tree).
    var fields: [(String, JSONValue)] { get }
    /// The same members written into `out`, each as `,"key":value` (a leading comma before each).
    func writeMembers(to out: inout JSONBytes)
}

/// Compact JSON written into one growing byte buffer: keys from static strings, numbers without
/// Foundation or `String`, strings escaped as `JSONValue` escapes them. `peerscope decode` writes every
/// message into one of these, reused from message to message.
public struct JSONBytes {
    public var bytes: [UInt8]

    public init(capacity: Int = 1 << 16) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always) public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// `,"key":` (the key must need no escaping: plain ASCII names).
    @inline(__always) public mutating func key(_ k: StaticString) {
        bytes.append(0x2C)
        bytes.append(0x22)
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
        bytes.append(0x3A)
    }

    /// `"key":` without the comma: the first member of an object.
    @inline(__always) public mutating func firstKey(_ k: StaticString) {
        bytes.append(0x22)
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
        bytes.append(0x3A)
    }

    /// A static string value (plain ASCII): `"value"`.
    @inline(__always) public mutating func literal(_ s: StaticString) {
        bytes.append(0x22)
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(0x22)
    }

    @inline(__always) public mutating func string(_ s: String) { JSONValue.escape(s, into: &bytes) }

    /// A string from UTF-8 bytes (valid UTF-8, e.g. plain ASCII), escaped as `string(_:)` escapes it.
    @inline(__always) public mutating func string(utf8 buf: UnsafeBufferPointer<UInt8>) {
        JSONValue.escape(utf8: buf, into: &bytes)
    }

    public mutating func uint(_ v: UInt64) {
        if v < 10 { bytes.append(0x30 &+ UInt8(truncatingIfNeeded: v)); return }
        JSONValue.appendDecimal(v, to: &bytes)
    }

    public mutating func int(_ v: Int64) {
        if v < 0 { bytes.append(0x2D) }
        uint(v < 0 ? UInt64(bitPattern: 0 &- v) : UInt64(v))
    }

    public mutating func bool(_ b: Bool) {
        if b {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65] as [UInt8])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65] as [UInt8])
        }
    }

    /// `JSONValue.write(to:indent: nil, level: 0)` of any value (the rare members without a writer of their own).
    public mutating func value(_ v: JSONValue) { v.write(to: &bytes, indent: nil, level: 0) }

    /// An address as `IPAddress.description` spells it, quoted (IPv4 without building a string).
    public mutating func address(_ a: IPAddress) {
        guard case .v4(let v) = a else { return string(a.description) }
        bytes.append(0x22)
        dottedQuad(v)
        bytes.append(0x22)
    }

    /// An endpoint as `Endpoint.description` spells it, quoted: `1.2.3.4:5353`, `[fe80::1]:5353`.
    public mutating func endpoint(_ e: Endpoint) {
        guard case .v4(let v) = e.address else { return string(e.description) }
        bytes.append(0x22)
        dottedQuad(v)
        bytes.append(0x3A)
        uint(UInt64(e.port))
        bytes.append(0x22)
    }

    private mutating func dottedQuad(_ v: UInt32) {
        uint(UInt64(v >> 24))
        bytes.append(0x2E)
        uint(UInt64((v >> 16) & 0xFF))
        bytes.append(0x2E)
        uint(UInt64((v >> 8) & 0xFF))
        bytes.append(0x2E)
        uint(UInt64(v & 0xFF))
    }
}

extension DecodedMessage {
    /// `json(includeInput:)` as compact JSON text and a newline, appended straight to `out`: the same bytes
    /// as `json(includeInput:).write(to:indent: nil, level: 0)`, without building the object first
    /// (`peerscope decode` writes one per message). A message made with a `MessageFieldsWriter` writes
    /// its fields itself; the others write their field list.
    public func writeJSONLine(to out: inout JSONBytes, includeInput: Bool) {
        out.byte(0x7B)
        if includeInput {
            out.firstKey("input")
            out.int(Int64(frame.input))
            out.key("frame")
        } else {
            out.firstKey("frame")
        }
        out.uint(frame.number)
        out.key("t")
        out.int(frame.t)
        out.key("plugin")
        out.string(plugin)
        out.key("type")
        out.string(type)
        if let flow {
            out.key("proto")
            out.literal(flow.proto == .udp ? "udp" : "tcp")
            out.key("src")
            out.endpoint(flow.src)
            out.key("dst")
            out.endpoint(flow.dst)
        }
        if let writer {
            writer.writeMembers(to: &out)
        } else {
            for (k, v) in fields {
                out.byte(0x2C)
                out.string(k)
                out.byte(0x3A)
                out.value(v)
            }
        }
        out.byte(0x7D)
        out.byte(0x0A)
    }

    /// The same line appended to a plain byte array.
    public func writeJSONLine(to out: inout [UInt8], includeInput: Bool) {
        var b = JSONBytes(capacity: 0)
        swap(&b.bytes, &out)
        writeJSONLine(to: &b, includeInput: includeInput)
        swap(&b.bytes, &out)
    }
}
