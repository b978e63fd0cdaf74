import DarkDiskStore
import DarkDiskCloud
import DarkDiskSync
import Foundation
import GRDB
import Testing

/// Blocking work (index transactions, fsync, lock files, imports) runs on the blocking pool, never on Swift's
/// cooperative threads: other tasks of the program go on while downloads wait on a busy index.
///
/// It measures latency, so it needs the test process to itself: `Scripts/test` runs it first, alone, with
/// `DARKDISK_TEST_ALONE=1`; in the whole parallel suite (where other tests keep the threads busy with their
/// own work) and under a sanitizer it does not run.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["DARKDISK_TEST_ALONE"] == "1"
                && ProcessInfo.processInfo.environment["DARKDISK_TEST_SANITIZER"] == nil,
                "measures latency: run alone by Scripts/test (DARKDISK_TEST_ALONE=1)"))
struct BlockingWorkTests {
    static let bound: Duration = .milliseconds(100)

    @Test func downloadsWaitingOnALockedIndexNeverHoldUpOtherTasks() async throws {
        let setup = try CloudTests.Setup()
        var nodes: [NodeID: Data] = [:]
        for i in 0..<4 {
            let data = CloudTests.bytes(400_000, seed: 900 + UInt64(i))
            nodes[try await setup.pushedAndPulled(data, as: "blocked\(i)")] = data
        }
        // Another connection holds the index's write lock for 3 s: every download's first index write waits.
        let holder = try DatabaseQueue(path: setup.b.location.indexPath)
        let locked = DispatchSemaphore(value: 0)
        let released = Locked(false)
        let thread = Thread {
            try? holder.inTransaction(.exclusive) { _ in
                locked.signal()
                Thread.sleep(forTimeInterval: 3)
                return .commit
            }
            released.withLock { $0 = true }
        }
        thread.start()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { locked.wait(); continuation.resume() }
        }
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote, partSize: 128 << 10)
        let tickets = nodes.keys.map { ($0, downloads.downloadNodeData($0, options: DownloadOptions(cacheToDiskManager: true))) }
        // Let the downloads reach the index and block on it (the pool's threads, not the cooperative ones).
        let slept = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(300))
        let overslept = ContinuousClock.now - slept - .milliseconds(300)
        #expect(overslept < Self.bound, "a sleeping task woke \(overslept) late: the cooperative threads were blocked")
        #expect(!released.withLock { $0 }, "the index is still locked while the tasks run")

        let cores = ProcessInfo.processInfo.activeProcessorCount
        let start = ContinuousClock.now
        let latencies = await withTaskGroup(of: Duration.self) { group in
            for _ in 0..<2 * cores { group.addTask { ContinuousClock.now - start } }
            return await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        let slowest = latencies.max()!
        #expect(slowest < Self.bound, "a trivial task waited \(slowest) for a cooperative thread while downloads waited on the index")
        #expect(!released.withLock { $0 }, "measured while the index was locked")

        for (node, ticket) in tickets {
            let export = try #require(try await ticket.value.export)
            #expect(try CloudTests().plaintext(export) == nodes[node], "each download completes once the index is free")
        }
    }
}
