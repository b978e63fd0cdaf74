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
///
/// Debug builds use an error-checking mutex and check every return code (as swift-nio's `NIOLock` does), so
/// a thread that takes a lock it already holds stops at once with a message instead of hanging.
///
/// The body must not do I/O, call user code, or release the last reference to an object with a `deinit`
/// that does either (Docs/ARCHITECTURE.md, "Threads, blocking work and locks"): take what is needed under the lock, act after it.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ initialValue: sending Value) {
        value = initialValue
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        #if DEBUG
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let rc = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        let rc = pthread_mutex_init(mutex, nil)
        #endif
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        let rc = pthread_mutex_destroy(mutex)
        assert(rc == 0, "pthread_mutex_destroy failed: \(rc) (a lock destroyed while held)")
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value; the lock is held until `body` returns or throws.
    @inline(__always)
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        let locked = pthread_mutex_lock(mutex)
        assert(locked == 0, "pthread_mutex_lock failed: \(locked) (EDEADLK: this thread already holds the lock)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            assert(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        return try body(&value)
    }
}
