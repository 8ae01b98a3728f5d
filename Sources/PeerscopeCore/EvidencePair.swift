/// A first `Evidence` and an optional last one, stored compactly: events and timeline entries keep
/// both ends of a run, and a large capture keeps millions of them. Two `Evidence?` take 48 bytes with
/// their tags and padding; the pair takes 25 (two 8-byte values, two 4-byte input-and-kind words, a
/// tag). Input indexes below 2^31 - 1 are packed inline; anything else (an event trace may name any
/// input) is boxed, so the pair always gives back exactly what it was given.
public struct EvidencePair: Sendable, Hashable {
    @usableFromInline enum Storage: Sendable, Hashable {
        /// Values (frame number, or line as its bit pattern) and metas (`input << 1 | isLine`; the
        /// last meta `EvidencePair.none` when there is no last evidence).
        case packed(first: UInt64, last: UInt64, firstMeta: UInt32, lastMeta: UInt32)
        case boxed(Shared<Boxed>)
    }

    @usableFromInline struct Boxed: Sendable, Hashable {
        var first: Evidence
        var last: Evidence?
    }

    @usableFromInline var storage: Storage

    @usableFromInline static let none: UInt32 = .max

    public init(_ first: Evidence, _ last: Evidence? = nil) {
        if let f = EvidencePair.pack(first) {
            if let last {
                if let l = EvidencePair.pack(last) {
                    storage = .packed(first: f.value, last: l.value, firstMeta: f.meta, lastMeta: l.meta)
                    return
                }
            } else {
                storage = .packed(first: f.value, last: 0, firstMeta: f.meta, lastMeta: EvidencePair.none)
                return
            }
        }
        storage = .boxed(Shared(Boxed(first: first, last: last)))
    }

    /// The value and meta word of `e`, or nil when its input does not fit (boxed instead).
    @inline(__always) static func pack(_ e: Evidence) -> (value: UInt64, meta: UInt32)? {
        switch e {
        case .frame(let input, let frame):
            guard input >= 0, input < Int(Int32.max) else { return nil }
            return (frame, UInt32(truncatingIfNeeded: input) << 1)
        case .logLine(let input, let line):
            guard input >= 0, input < Int(Int32.max) else { return nil }
            return (UInt64(UInt(bitPattern: line)), UInt32(truncatingIfNeeded: input) << 1 | 1)
        }
    }

    @inline(__always) static func unpack(_ value: UInt64, _ meta: UInt32) -> Evidence {
        let input = Int(meta >> 1)
        return meta & 1 == 0 ? .frame(input: input, frame: value)
            : .logLine(input: input, line: Int(bitPattern: UInt(truncatingIfNeeded: value)))
    }

    public var first: Evidence {
        get {
            switch storage {
            case .packed(let fv, _, let fm, _): EvidencePair.unpack(fv, fm)
            case .boxed(let b): b.value.first
            }
        }
        set { self = EvidencePair(newValue, last) }
    }

    /// The last evidence of a run (nil for a single occurrence).
    public var last: Evidence? {
        get {
            switch storage {
            case .packed(_, let lv, _, let lm): lm == EvidencePair.none ? nil : EvidencePair.unpack(lv, lm)
            case .boxed(let b): b.value.last
            }
        }
        set { self = EvidencePair(first, newValue) }
    }
}
