/// Stream framing owned by the pipeline, in the manner of swift-nio's `ByteToMessageDecoder`: the
/// pipeline keeps one bounded buffer per TCP stream direction, a plugin's framer (one per direction,
/// made by the plugin) says where the next frame ends, and the pipeline hands each frame, with the
/// value the framer parsed, to the plugin's `decode`. Limits, TCP gaps and the end of a stream are
/// the pipeline's business; what they mean for a protocol is the framer's.

/// The unconsumed bytes of one TCP stream direction, kept by the pipeline.
///
/// A delivery that arrives while nothing is pending is not copied: the buffer views the delivery's own
/// storage (most deliveries carry whole frames and are consumed at once). Bytes are copied only when a
/// partial frame waits for more (`detach`): into storage of the buffer's own, which later deliveries
/// append to.
public struct StreamBuffer: Sendable {
    private var storage: [UInt8] = []
    /// The unconsumed bytes are `storage[start ..< end]`.
    private var start = 0
    private var end = 0
    /// True when `storage` is the buffer's own (appendable); false while it views a delivery's storage.
    private var owned = false
    /// Stream offset (in this direction) of the first unconsumed byte.
    public private(set) var offset = 0
    /// The frame that brought the latest bytes (evidence once the connection is gone).
    public var lastFrame: FrameInfo?

    public init() {}

    /// The unconsumed bytes (a view; no copy).
    public var bytes: Bytes { Bytes(storage: storage, lower: start, count: end - start) }
    public var count: Int { end - start }
    public var isEmpty: Bool { start == end }
    /// True while the buffer views a delivery's storage instead of a copy (for tests).
    public var isViewingDelivery: Bool { !owned && start != end }

    public mutating func append(_ b: Bytes) {
        guard !b.isEmpty else { return }
        if start == end {
            // Nothing pending: view the delivery in place.
            storage = b.storage
            start = b.lower
            end = b.lower + b.count
            owned = false
            return
        }
        if !owned {
            // A partial frame in a delivery's storage: copy what is pending into storage of our own.
            detach()
        } else if start > 0 && start >= 4096 {
            // Drop consumed bytes before growing, once they are a fair share of the storage.
            storage.removeFirst(start)
            end -= start
            start = 0
        }
        storage.append(contentsOf: b.storage[b.lower ..< b.lower + b.count])
        end = storage.count
    }

    /// Copies what is pending into storage of the buffer's own when it still views a delivery: a
    /// delivery's storage is the capture reader's whole read block, which a partial frame waiting for
    /// more bytes must not keep alive. The pipeline calls this once it has framed a delivery.
    public mutating func detach() {
        guard !owned, start != end else { return }
        storage = Array(storage[start ..< end])
        start = 0
        end = storage.count
        owned = true
    }

    /// Consumes `n` bytes (at most what is buffered); returns how many were consumed.
    @discardableResult
    public mutating func consume(_ n: Int) -> Int {
        let k = max(0, min(n, count))
        start += k
        offset += k
        if start == end { release() }
        return k
    }

    /// Counts `n` bytes that went past without being buffered (skipped).
    public mutating func advance(by n: Int) { offset += max(0, n) }

    /// Drops everything buffered (counted as consumed).
    public mutating func clear() {
        offset += count
        release()
    }

    /// Nothing is pending: let go of the storage (a delivery's, or ours).
    private mutating func release() {
        storage = []
        start = 0
        end = 0
        owned = false
    }
}

/// What a framer makes of the buffered bytes.
public enum FrameResult {
    /// No whole frame yet: wait for more bytes.
    case needMore
    /// The next `length` bytes are one frame. `payload` (a range within the frame; nil: all of it) is
    /// handed to `decode` with `parsed`, the value the framer already read from the bytes.
    case frame(length: Int, payload: Range<Int>? = nil, parsed: (any Sendable)? = nil)
    /// Discard `n` bytes; when more than are buffered, the rest is discarded as it arrives.
    case skip(Int)
    /// Stop decoding this direction (the framer has said why).
    case giveUp
}

/// Cuts frames from one stream direction; it may keep state between calls (scanner position, resync
/// mode) and report diagnostics through `ctx` (the current plugin and input are set).
public protocol StreamFramer: AnyObject {
    /// Looks at the front of `buffer`: one frame, a skip, or a wait. Called again after each frame or
    /// skip until it asks for more bytes or gives up.
    func frame(_ buffer: StreamBuffer, _ ctx: PluginContext) -> FrameResult
    /// Bytes were lost before the capture point. Return true to have the pipeline drop what is
    /// buffered (it cannot line up with what comes next); false to go on as if nothing was lost.
    func gap(_ buffer: StreamBuffer, _ ctx: PluginContext) -> Bool
    /// The stream is over (`atEndOfInput`: the capture ended) with `buffer` not framed. No input is
    /// current: `buffer.lastFrame` is the evidence.
    func end(_ buffer: StreamBuffer, atEndOfInput: Bool, _ ctx: PluginContext)
}

extension StreamFramer {
    public func gap(_ buffer: StreamBuffer, _ ctx: PluginContext) -> Bool { false }
    public func end(_ buffer: StreamBuffer, atEndOfInput: Bool, _ ctx: PluginContext) {}
}

/// How much a framed stream direction may buffer without a frame, and what to call an overflow.
public struct StreamLimits: Sendable, Hashable {
    /// Most unframed bytes per direction; beyond it the direction is given up.
    public var maxBuffered: Int
    /// The plugin's declared diagnostic for an overflow (`<plugin>.<problem>`).
    public var overflowProblem: String
    public init(maxBuffered: Int, overflowProblem: String) {
        self.maxBuffered = maxBuffered
        self.overflowProblem = overflowProblem
    }
}

/// A plugin whose TCP streams the pipeline frames: `decode` receives one frame per call, with
/// `delivery == .stream`, `payload` the frame's payload, `parsed` the framer's value and
/// `streamOffset` where the payload starts in its direction's stream. Datagrams and hand-offs still
/// come to `decode` as they are.
public protocol StreamFramingPlugin: DecoderPlugin {
    static var streamLimits: StreamLimits { get }
    /// A fresh framer for one direction of a connection this plugin took.
    func makeFramer(_ connection: TCPConnectionInfo, _ direction: TCPDirection) -> any StreamFramer
}
