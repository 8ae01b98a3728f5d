import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Samples this process's anonymous resident memory (/proc/self/status `RssAnon`) every few
/// milliseconds on its own thread, keeping the peak since the last `take()` (see `AnonPeak`). A
/// stage's peak between two samples can be missed by what it allocates and frees within one period.
/// Linux only: elsewhere `take()` gives nil.
final class AnonSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = AnonPeak()
    private var stopped = false
    private let heapInUse: () -> Double?
    static let period: useconds_t = 5_000

    init(heapInUse: @escaping () -> Double?) { self.heapInUse = heapInUse }

    /// Anonymous resident memory now, MiB (Linux; nil elsewhere). Reads into a fixed buffer and
    /// allocates nothing. The heap probe that `AnonPeak.offer` calls at each rise of 1 MiB does
    /// allocate (and `malloc_info` takes the allocator's locks): the stages' "CPU s" (RUSAGE_SELF, all
    /// threads) include this thread's small share.
    static func anonNow(_ buffer: UnsafeMutableBufferPointer<UInt8>) -> Double? {
        #if os(Linux)
        let fd = open("/proc/self/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let n = read(fd, buffer.baseAddress, buffer.count)
        guard n > 0 else { return nil }
        return AnonSampler.rssAnonKiB(UnsafeBufferPointer(rebasing: buffer[0 ..< n])).map { Double($0) / 1024 }
        #else
        return nil
        #endif
    }

    /// The `RssAnon:` figure (KiB) of a /proc status text.
    static let rssAnonKey: [UInt8] = Array("RssAnon:".utf8)

    static func rssAnonKiB(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        let key = rssAnonKey
        var i = 0
        while i + key.count <= text.count {
            if (i == 0 || text[i - 1] == 0x0A), text[i ..< i + key.count].elementsEqual(key) {
                var j = i + key.count
                while j < text.count, text[j] == 0x20 || text[j] == 0x09 { j += 1 }
                var v = 0, digits = 0
                while j < text.count, text[j] >= 0x30, text[j] <= 0x39, digits < 18 {
                    v = v * 10 + Int(text[j] - 0x30)
                    j += 1
                    digits += 1
                }
                return digits > 0 ? v : nil
            }
            i += 1
        }
        return nil
    }

    func start() {
        #if os(Linux)
        let t = Thread { [self] in
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 14)
            defer { buffer.deallocate() }
            while true {
                lock.lock()
                if stopped { lock.unlock(); return }
                if let a = AnonSampler.anonNow(buffer) { peak.offer(anon: a, heap: heapInUse) }
                lock.unlock()
                usleep(AnonSampler.period)
            }
        }
        t.name = "bench-anon-sampler"
        t.start()
        #endif
    }

    /// The peak since the last call (or `start`), then starts a new one from the memory held now.
    func take() -> AnonPeak? {
        #if os(Linux)
        lock.lock()
        defer { lock.unlock() }
        let p = peak
        peak = AnonPeak()
        return p.anon > 0 ? p : nil
        #else
        return nil
        #endif
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}
