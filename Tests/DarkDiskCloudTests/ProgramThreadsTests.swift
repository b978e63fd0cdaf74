import DarkDiskSync
import DarkDiskTestTraits
import Foundation
import Testing

/// The tests' executor gives every job that blocks a thread of its own: more jobs than the machine has cores
/// (the cooperative pool's width) all block at once, each until every one has begun, and all finish.
@Suite struct ProgramThreadsTests {
    @Test func moreBlockingJobsThanCoresAllRunAtOnce() async {
        let jobs = ProcessInfo.processInfo.activeProcessorCount + 2
        let begun = Locked(0)
        let allMet = await withTaskExecutorPreference(ProgramThreads.shared) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<jobs {
                    group.addTask {
                        begun.withLock { $0 += 1 }
                        // Blocks its thread (as a waitpid does) until all have begun, for at most a minute.
                        for _ in 0..<6000 where begun.withLock({ $0 }) < jobs { usleep(10_000) }
                        return begun.withLock { $0 } == jobs
                    }
                }
                return await group.allSatisfy { $0 }
            }
        }
        #expect(allMet, "\(begun.withLock { $0 }) of \(jobs) blocking jobs ran at once")
    }
}
