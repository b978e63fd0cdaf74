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
/// that does either (Docs/ARCHITECTURE.md, "Locks"): take what is needed under the lock, act after it.
///
/// A thread may also wait for the value to change (`withLock(when:before:_:)`), woken by `broadcast()`: the
/// lock's own condition variable, so a value and the wait for it need no second lock (and no lock order).
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled by `broadcast()`; measured on the monotonic clock, so a change of the wall clock moves no deadline.
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    package init(_ initialValue: sending Value) {
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
        changed = .allocate(capacity: 1)
        changed.initialize(to: pthread_cond_t())
        var conditionAttributes = pthread_condattr_t()
        pthread_condattr_init(&conditionAttributes)
        pthread_condattr_setclock(&conditionAttributes, CLOCK_MONOTONIC)
        let condition = pthread_cond_init(changed, &conditionAttributes)
        pthread_condattr_destroy(&conditionAttributes)
        precondition(condition == 0, "pthread_cond_init failed: \(condition)")
    }

    deinit {
        let rc = pthread_mutex_destroy(mutex)
        assert(rc == 0, "pthread_mutex_destroy failed: \(rc) (a lock destroyed while held)")
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        pthread_cond_destroy(changed)
        changed.deinitialize(count: 1)
        changed.deallocate()
    }

    /// Runs `body` with exclusive access to the value; the lock is held until `body` returns or throws.
    @inline(__always)
    package func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        let locked = pthread_mutex_lock(mutex)
        assert(locked == 0, "pthread_mutex_lock failed: \(locked) (EDEADLK: this thread already holds the lock)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            assert(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        return try body(&value)
    }

    /// Waits until `condition` holds for the value, or until `deadline` (`ContinuousClock`) passes, then runs
    /// `body` with exclusive access, told whether the condition holds. The lock is let go while waiting; the
    /// value is looked at again after each `broadcast()`. Never wait on a thread whose work would make the
    /// condition true (the cooperative pool's, a queue's that the change runs on).
    package func withLock<Result, E: Error>(when condition: (borrowing Value) -> Bool, before deadline: ContinuousClock.Instant? = nil,
                                           _ body: (inout sending Value, _ satisfied: Bool) throws(E) -> sending Result) throws(E) -> sending Result {
        let locked = pthread_mutex_lock(mutex)
        assert(locked == 0, "pthread_mutex_lock failed: \(locked) (EDEADLK: this thread already holds the lock)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            assert(unlocked == 0, "pthread_mutex_unlock failed: \(unlocked)")
        }
        var satisfied = condition(value)
        while !satisfied {
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { break }
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let (seconds, attoseconds) = left.components
                var nanoseconds = Int64(now.tv_nsec) + attoseconds / 1_000_000_000
                let carry = nanoseconds / 1_000_000_000
                nanoseconds %= 1_000_000_000
                var until = timespec(tv_sec: now.tv_sec + Int(clamping: seconds) + Int(carry), tv_nsec: Int(nanoseconds))
                let waited = pthread_cond_timedwait(changed, mutex, &until)
                assert(waited == 0 || waited == ETIMEDOUT, "pthread_cond_timedwait failed: \(waited)")
            } else {
                let waited = pthread_cond_wait(changed, mutex)
                assert(waited == 0, "pthread_cond_wait failed: \(waited)")
            }
            satisfied = condition(value)
        }
        return try body(&value, satisfied)
    }

    /// Wakes every thread waiting in `withLock(when:before:_:)` to look at the value again: call it after a
    /// change one may wait for (inside `withLock` or after it).
    package func broadcast() {
        let woken = pthread_cond_broadcast(changed)
        assert(woken == 0, "pthread_cond_broadcast failed: \(woken)")
    }
}
