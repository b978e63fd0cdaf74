#if canImport(Glibc)
import Glibc
#endif

/// A bounded set of threads for blocking work: SQLite transactions, `fdatasync`, `flock`, file copies,
/// eviction, image decoding. Swift's cooperative pool has one thread per core; a task that blocks one of them
/// on a disk or on another process' lock stalls every other task behind it, so async code hands such work to
/// this pool instead (swift-nio's `NIOThreadPool` is the model). Work runs in submission order on the first
/// free thread; threads start on demand, up to `threadCount`, and live as long as the pool.
package final class BlockingPool: @unchecked Sendable {
    /// The pool every darkdisk module uses: four threads per core, at least 16. Most of its jobs wait (on a
    /// disk, on another process' transaction) rather than compute, so it is wider than the core count: a
    /// handful of downloads waiting on a busy index must not hold up image loading or another store's work.
    package static let shared = BlockingPool(threadCount: max(16, 4 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    /// The most threads the pool runs at once.
    package let threadCount: Int

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    // Guarded by `mutex`.
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0

    package init(threadCount: Int) {
        precondition(threadCount > 0, "a BlockingPool needs at least one thread")
        self.threadCount = threadCount
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(condition, nil) == 0)
    }

    // A pool is never deallocated while its threads run: each thread holds it (see `startThread`).

    /// Runs `body` on a pool thread, later; it must not wait on other work of this pool.
    package func submit(_ body: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        queue.append(body)
        let start = idle == 0 && threads < threadCount
        if start { threads += 1 }
        if idle > 0 { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
        if start { startThread() }
    }

    /// Runs `body` on a pool thread and returns its result; the calling task is suspended, not blocked,
    /// meanwhile. Once started, `body` runs to its end even if the task is cancelled (as with
    /// `NIOThreadPool.runIfActive`).
    package func run<Value: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> Value) async throws(Failure) -> Value {
        try await awaitingResult(of: body, submit: submit)
    }

    /// Jobs waiting for a free thread (for tests and status).
    package var backlog: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return queue.count - head
    }

    private func startThread() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let pool = Unmanaged<BlockingPool>.fromOpaque(argument!).takeRetainedValue()
            pool.work()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(thread)
    }

    private func work() {
        pthread_mutex_lock(mutex)
        while true {
            if head < queue.count {
                let job = queue[head]
                head += 1
                if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
                pthread_mutex_unlock(mutex)
                job()
                pthread_mutex_lock(mutex)
            } else {
                idle += 1
                pthread_cond_wait(condition, mutex)
                idle -= 1
            }
        }
    }
}

/// Work that must run one job at a time, in order, on a `BlockingPool` (a partial download's checkpoints):
/// a serial queue that holds no thread while it is empty.
package final class BlockingLane: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var draining = false
    }

    private let pool: BlockingPool
    private let state = Locked(State())

    package init(pool: BlockingPool = .shared) {
        self.pool = pool
    }

    /// Queues `body` after every job submitted before it.
    package func submit(_ body: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(body)
            defer { state.draining = true }
            return !state.draining
        }
        if start { pool.submit { self.drain() } }
    }

    /// Runs `body` after every job submitted before it and returns its result.
    package func run<Value: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> Value) async throws(Failure) -> Value {
        try await awaitingResult(of: body, submit: submit)
    }

    private func drain() {
        while let job = state.withLock({ state -> (@Sendable () -> Void)? in
            guard !state.jobs.isEmpty else { state.draining = false; return nil }
            return state.jobs.removeFirst()
        }) {
            job()
        }
    }
}

/// Hands `body` to `submit` and suspends until it has run, then returns its result or throws its error.
func awaitingResult<Value: Sendable, Failure: Error>(of body: @escaping @Sendable () throws(Failure) -> Value,
                                                     submit: (@escaping @Sendable () -> Void) -> Void) async throws(Failure) -> Value {
    let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
        submit {
            do throws(Failure) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
