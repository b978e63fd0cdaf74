#if canImport(Glibc)
import Glibc
#endif

/// A value that threads share behind a lock: `Synchronization.Mutex`'s API on a `pthread_mutex_t`.
///
/// darkdisk uses this rather than `Mutex` so that ThreadSanitizer checks its locking. On Linux, `Mutex`
/// unlocks inside the Synchronization library, which is not instrumented, so TSan never sees the lock
/// order and reports every value it protects as raced (a two-thread counter under `Mutex` is enough to
/// show it). TSan intercepts `pthread_mutex_lock`, so with this lock its reports are real ones. An
/// uncontended lock and unlock costs about the same as `Mutex`'s (both are a futex-backed atomic).
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: sending Value) {
        value = initialValue
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value; the lock is held until `body` returns or throws.
    @inline(__always)
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
