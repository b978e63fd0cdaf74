import Foundation

/// The task executor of the tests (`OwnThreads`, `ProcessSlots`): a job that finds no idle thread gets a new one (up to
/// `limit`), so a test that blocks holds a thread of its own and never one of the two of Swift's cooperative
/// pool on a 2-core machine. Before it, tests that blocked held that whole pool for half a minute, and every
/// other test's wake-up waited (CI, 2026-11-27: a 50 ms sleep not over within 30 s).
public final class ProgramThreads: TaskExecutor, @unchecked Sendable {
    /// The one instance the test process shares; its threads stay, idle, once made.
    public static let shared = ProgramThreads()
    /// Beyond this many threads, jobs wait for one (a task group of thousands must not make thousands).
    static let limit = 64

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var threads = 0
    /// Threads waiting for a job, and how many of them were woken for one and have not yet run.
    private var waiting = 0
    private var promised = 0

    private init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        var start = false
        if waiting > promised {
            promised += 1
            condition.signal()
        } else if threads < Self.limit {
            threads += 1
            start = true
        }
        condition.unlock()
        if start {
            let thread = Thread { [self] in work() }
            thread.stackSize = 8 << 20
            thread.name = "test thread"
            thread.start()
        }
    }

    private func work() {
        condition.lock()
        while true {
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            waiting += 1
            while promised == 0 { condition.wait() }
            promised -= 1
            waiting -= 1
        }
    }
}
