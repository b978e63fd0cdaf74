#if canImport(Glibc)
import Glibc
#endif

/// A serial queue on a thread of its own that runs at a lower CPU priority (`nice` more than its creator, +10
/// by default): for a daemon's upkeep (writing its journal into the index, making files ahead) that must
/// not take a core from the requests a user waits on (a `tar x` into the drive on 2 cores: 7 % faster,
/// Docs/PERFORMANCE.md). The thread yields to other work but is never starved of it: at +10 it still gets
/// about a tenth of a busy core, and all of an idle one. Jobs run one at a time, in the order of their start
/// times (then of submission); the thread ends once the queue is released and its jobs have run.
public final class BackgroundQueue: @unchecked Sendable {
    /// How much nicer than its creator the thread runs (at most 19 in all).
    public let nice: Int32
    private let core: Core

    /// `label` names the thread (its first 15 bytes: `top -H`, `perf`).
    public init(label: String, nice: Int32 = 10) {
        self.nice = nice
        core = Core()
        let start = Unmanaged.passRetained(Start(core: core, label: label, nice: nice)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            start.run()
            return nil
        }, start)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(thread)
    }

    deinit {
        core.close()
    }

    /// Runs `body` on the queue's thread after the jobs already due.
    public func async(_ body: @escaping @Sendable () -> Void) {
        core.add(at: Core.now(), body)
    }

    /// Runs `body` on the queue's thread once `delay` has passed (and the jobs due before it have run).
    public func asyncAfter(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        core.add(at: Core.now() &+ UInt64(max(seconds, 0)) &* 1_000_000_000 &+ UInt64(max(attoseconds, 0) / 1_000_000_000), body)
    }

    /// Returns once every job due by now has run (jobs set for later are not waited for), as
    /// `DispatchQueue.sync {}` does. Never call it from a job of this queue: it would wait for itself.
    public func sync() {
        let done = Core.Flag()
        core.add(at: Core.now()) { done.set() }
        done.wait()
    }

    private final class Start {
        let core: Core
        let label: String
        let nice: Int32

        init(core: Core, label: String, nice: Int32) {
            self.core = core
            self.label = label
            self.nice = nice
        }

        func run() {
            // (glibc's `pthread_setname_np` and `gettid` are not visible to Swift: /proc/thread-self gives both.)
            let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                let name = Array(label.utf8.prefix(15))
                _ = name.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            // Per thread on Linux: `setpriority` of a thread ID changes that thread alone.
            if let id = Self.threadID() {
                let which = __priority_which_t(PRIO_PROCESS.rawValue)
                _ = setpriority(which, id, min(getpriority(which, id) + nice, 19))
            }
            core.work()
        }

        /// The calling thread's ID, from the link /proc/thread-self ("PID/task/TID").
        static func threadID() -> id_t? {
            var buffer = [CChar](repeating: 0, count: 64)
            let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
            guard count > 0 else { return nil }
            let text = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return text.split(separator: "/").last.flatMap { id_t($0) }
        }
    }

    /// The state the thread and the queue share; it outlives the queue until the thread has finished.
    final class Core: @unchecked Sendable {
        private struct Job {
            let due: UInt64
            let order: UInt64
            let body: @Sendable () -> Void
        }

        private let mutex: UnsafeMutablePointer<pthread_mutex_t>
        private let condition: UnsafeMutablePointer<pthread_cond_t>
        // Guarded by `mutex`; sorted by (due, order).
        private var jobs: [Job] = []
        private var nextOrder: UInt64 = 0
        private var closed = false

        init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            condition = .allocate(capacity: 1)
            condition.initialize(to: pthread_cond_t())
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(condition, &attributes) == 0)
            pthread_condattr_destroy(&attributes)
        }

        deinit {
            pthread_cond_destroy(condition)
            pthread_mutex_destroy(mutex)
            condition.deallocate()
            mutex.deallocate()
        }

        /// Nanoseconds on the monotonic clock.
        static func now() -> UInt64 {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        }

        func add(at due: UInt64, _ body: @escaping @Sendable () -> Void) {
            pthread_mutex_lock(mutex)
            let job = Job(due: due, order: nextOrder, body: body)
            nextOrder += 1
            // Jobs mostly arrive in order of their start times: look from the end.
            var index = jobs.count
            while index > 0, jobs[index - 1].due > due { index -= 1 }
            jobs.insert(job, at: index)
            if index == 0 { pthread_cond_signal(condition) }
            pthread_mutex_unlock(mutex)
        }

        func close() {
            pthread_mutex_lock(mutex)
            closed = true
            pthread_cond_signal(condition)
            pthread_mutex_unlock(mutex)
        }

        func work() {
            pthread_mutex_lock(mutex)
            while true {
                if let first = jobs.first {
                    let now = Self.now()
                    if first.due <= now {
                        jobs.removeFirst()
                        pthread_mutex_unlock(mutex)
                        first.body()
                        pthread_mutex_lock(mutex)
                    } else {
                        var until = timespec(tv_sec: Int(first.due / 1_000_000_000), tv_nsec: Int(first.due % 1_000_000_000))
                        _ = pthread_cond_timedwait(condition, mutex, &until)
                    }
                } else if closed {
                    break
                } else {
                    pthread_cond_wait(condition, mutex)
                }
            }
            pthread_mutex_unlock(mutex)
        }

        /// A one-time signal for `sync`.
        final class Flag: @unchecked Sendable {
            private let mutex: UnsafeMutablePointer<pthread_mutex_t>
            private let condition: UnsafeMutablePointer<pthread_cond_t>
            private var isSet = false

            init() {
                mutex = .allocate(capacity: 1)
                mutex.initialize(to: pthread_mutex_t())
                condition = .allocate(capacity: 1)
                condition.initialize(to: pthread_cond_t())
                precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(condition, nil) == 0)
            }

            deinit {
                pthread_cond_destroy(condition)
                pthread_mutex_destroy(mutex)
                condition.deallocate()
                mutex.deallocate()
            }

            func set() {
                pthread_mutex_lock(mutex)
                isSet = true
                pthread_cond_broadcast(condition)
                pthread_mutex_unlock(mutex)
            }

            func wait() {
                pthread_mutex_lock(mutex)
                while !isSet { pthread_cond_wait(condition, mutex) }
                pthread_mutex_unlock(mutex)
            }
        }
    }
}
