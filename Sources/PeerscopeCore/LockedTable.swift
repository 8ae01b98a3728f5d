#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A dictionary behind a mutex, for the few process-wide tables that may grow while analyses run
/// on several threads (kinds registered by plugins from outside the library).
final class LockedTable<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private var table: [Key: Value] = [:]
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R>(_ body: (inout [Key: Value]) -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&table)
    }
}
