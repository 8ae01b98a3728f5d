// A binary property list writer (`bplist00`), enough for MPC's invitation dictionaries:
// dictionaries, strings, integers, booleans and data. Keys are written in sorted order so the
// output is deterministic.

public indirect enum PlistValue: Sendable, Equatable {
    case bool(Bool)
    case int(Int64)
    case string(String)
    case data([UInt8])
    case dict([(String, PlistValue)])
    case array([PlistValue])

    public static func == (lhs: PlistValue, rhs: PlistValue) -> Bool {
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.data(a), .data(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.dict(a), .dict(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }
}

public enum BinaryPlistWriter {
    public static func encode(_ root: PlistValue) -> [UInt8] {
        // Flatten objects: index 0 is the root.
        var objects: [[UInt8]] = []
        var pending: [(PlistValue, Int)] = []

        func reserve(_ v: PlistValue) -> Int {
            objects.append([])
            pending.append((v, objects.count - 1))
            return objects.count - 1
        }
        _ = reserve(root)
        // Reference size is decided up front: one byte is enough below 256 objects; count first.
        let total = countObjects(root)
        let refSize = total < 256 ? 1 : 2
        func ref(_ i: Int, into w: inout ByteWriter) {
            if refSize == 1 { w.u8(UInt8(i)) } else { w.u16(UInt16(i)) }
        }
        var cursor = 0
        while cursor < pending.count {
            let (value, index) = pending[cursor]
            cursor += 1
            var w = ByteWriter()
            switch value {
            case .bool(let b): w.u8(b ? 0x09 : 0x08)
            case .int(let i):
                if i >= 0 && i <= 0xFF { w.u8(0x10); w.u8(UInt8(i)) }
                else if i >= 0 && i <= 0xFFFF { w.u8(0x11); w.u16(UInt16(i)) }
                else if i >= 0 && i <= 0xFFFF_FFFF { w.u8(0x12); w.u32(UInt32(i)) }
                else { w.u8(0x13); w.u64(UInt64(bitPattern: i)) }
            case .string(let s):
                if s.utf8.allSatisfy({ $0 < 0x80 }) {
                    header(0x50, s.utf8.count, &w); w.utf8(s)
                } else {
                    let units = Array(s.utf16)
                    header(0x60, units.count, &w)
                    for u in units { w.u16(u) }
                }
            case .data(let d): header(0x40, d.count, &w); w.append(d)
            case .array(let items):
                header(0xA0, items.count, &w)
                for item in items { ref(reserve(item), into: &w) }
            case .dict(let pairs):
                let sorted = pairs.sorted { $0.0 < $1.0 }
                header(0xD0, sorted.count, &w)
                let keyRefs = sorted.map { reserve(.string($0.0)) }
                let valueRefs = sorted.map { reserve($0.1) }
                for k in keyRefs { ref(k, into: &w) }
                for v in valueRefs { ref(v, into: &w) }
            }
            objects[index] = w.bytes
        }

        var out = ByteWriter()
        out.utf8("bplist00")
        var offsets: [Int] = []
        for o in objects { offsets.append(out.count); out.append(o) }
        let tableOffset = out.count
        let offsetSize = tableOffset <= 0xFF ? 1 : (tableOffset <= 0xFFFF ? 2 : 4)
        for off in offsets {
            switch offsetSize {
            case 1: out.u8(UInt8(off))
            case 2: out.u16(UInt16(off))
            default: out.u32(UInt32(off))
            }
        }
        // Trailer: 5 unused bytes, sort version, offset int size, object ref size, counts.
        out.zeros(5)
        out.u8(0)
        out.u8(UInt8(offsetSize))
        out.u8(UInt8(refSize))
        out.u64(UInt64(objects.count))
        out.u64(0)
        out.u64(UInt64(tableOffset))
        return out.bytes
    }

    private static func header(_ marker: UInt8, _ count: Int, _ w: inout ByteWriter) {
        if count < 15 { w.u8(marker | UInt8(count)); return }
        w.u8(marker | 0x0F)
        if count <= 0xFF { w.u8(0x10); w.u8(UInt8(count)) }
        else if count <= 0xFFFF { w.u8(0x11); w.u16(UInt16(count)) }
        else { w.u8(0x12); w.u32(UInt32(count)) }
    }

    private static func countObjects(_ v: PlistValue) -> Int {
        switch v {
        case .array(let items): return 1 + items.reduce(0) { $0 + countObjects($1) }
        case .dict(let pairs): return 1 + pairs.reduce(0) { $0 + 1 + countObjects($1.1) }
        default: return 1
        }
    }
}
