extension DecodedMessage {
    /// `json(includeInput:)` as compact JSON text and a newline, appended straight to `out`: the same bytes
    /// as `json(includeInput:).write(to:indent: nil, level: 0)`, without building the object first
    /// (`peerscope decode` writes one per message).
    public func writeJSONLine(to out: inout [UInt8], includeInput: Bool) {
        out.append(0x7B)
        var first = true
        func member(_ k: String, _ v: JSONValue) {
            if !first { out.append(0x2C) }
            first = false
            JSONValue.escape(k, into: &out)
            out.append(0x3A)
            v.write(to: &out, indent: nil, level: 0)
        }
        if includeInput { member("input", .int(Int64(frame.input))) }
        member("frame", .uint(frame.number))
        member("t", .int(frame.t))
        member("plugin", .string(plugin))
        member("type", .string(type))
        if let flow {
            member("proto", .string(flow.proto.rawValue))
            member("src", .string(flow.src.description))
            member("dst", .string(flow.dst.description))
        }
        for (k, v) in fields { member(k, v) }
        out.append(0x7D)
        out.append(0x0A)
    }
}
