import DarkDiskSync
import Foundation
import Testing

@Suite struct BackgroundQueueTests {
    /// The names of this process's threads, from /proc.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .newlines) }
    }

    @Test func runsItsJobsOneAtATimeInOrderAndSyncWaitsForThem() {
        let queue = BackgroundQueue(label: "test-order")
        let log = Locked((order: [Int](), overlapping: false, inside: false))
        for i in 0..<200 {
            queue.async {
                log.withLock { if $0.inside { $0.overlapping = true }; $0.inside = true }
                if i % 50 == 0 { usleep(2_000) }
                log.withLock { $0.order.append(i); $0.inside = false }
            }
        }
        queue.sync()
        let (order, overlapping) = log.withLock { ($0.order, $0.overlapping) }
        #expect(order == Array(0..<200), "sync returned before the jobs queued ahead of it ran, or they ran out of order")
        #expect(!overlapping)
    }

    @Test func aDelayedJobRunsAfterItsDelayAndAfterTheJobsDueBeforeIt() {
        let queue = BackgroundQueue(label: "test-delay")
        let log = Locked([(String, Date)]())
        let start = Date()
        queue.asyncAfter(.milliseconds(150)) { log.withLock { $0.append(("late", Date())) } }
        queue.asyncAfter(.milliseconds(50)) { log.withLock { $0.append(("soon", Date())) } }
        queue.async { log.withLock { $0.append(("now", Date())) } }
        // `sync` waits for what is due, not for what is set for later.
        queue.sync()
        #expect(log.withLock { $0.map(\.0) } == ["now"])
        let deadline = Date(timeIntervalSinceNow: 10)
        while log.withLock({ $0.count }) < 3, Date() < deadline { usleep(5_000) }
        let entries = log.withLock { $0 }
        #expect(entries.map(\.0) == ["now", "soon", "late"])
        if entries.count == 3 {
            #expect(entries[1].1.timeIntervalSince(start) >= 0.05)
            #expect(entries[2].1.timeIntervalSince(start) >= 0.15)
        }
    }

    @Test func itsThreadRunsNicerThanTheProcessAndIsNamed() {
        let queue = BackgroundQueue(label: "test-nice-thread-long-name", nice: 7)
        let seen = Locked<(nice: Int32, name: String)?>(nil)
        let mine = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        queue.async {
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            errno = 0
            // 0 here: the calling thread (on Linux, PRIO_PROCESS with who 0 is the caller, a thread).
            let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            seen.withLock { $0 = (nice, name.trimmingCharacters(in: .newlines)) }
        }
        queue.sync()
        let result = seen.withLock { $0 }
        #expect(result?.name == "test-nice-threa", "the thread's name is the label's first 15 bytes")
        // Raising one's niceness is always allowed; 19 is the most there is.
        #expect(result?.nice == min(mine + 7, 19), "the queue's thread runs at the process's niceness + 7")
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == mine, "the caller's own priority is untouched")
    }

    @Test func itsThreadEndsOnceTheQueueIsReleasedAndItsJobsHaveRun() {
        let label = "test-ends-\(Int.random(in: 100...999))"
        let ran = Locked(false)
        do {
            let queue = BackgroundQueue(label: label)
            queue.asyncAfter(.milliseconds(100)) { ran.withLock { $0 = true } }
            queue.sync()
            #expect(Self.threadNames().contains(label))
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while Self.threadNames().contains(label), Date() < deadline { usleep(5_000) }
        #expect(ran.withLock { $0 }, "a job set for later still ran after its queue was released")
        #expect(!Self.threadNames().contains(label), "the queue's thread outlived the queue")
    }
}
