import DarkDiskSync
import Foundation
import Testing

@Suite struct BlockingPoolTests {
    struct Refused: Error, Equatable { let code: Int }

    @Test func runReturnsTheResultAndTheTypedError() async throws {
        let pool = BlockingPool(threadCount: 2)
        #expect(await pool.run { 6 * 7 } == 42)
        await #expect(throws: Refused(code: 5)) {
            try await pool.run { () throws(Refused) -> Int in throw Refused(code: 5) }
        }
    }

    @Test func neverRunsMoreThanItsThreadsAtOnce() async {
        let pool = BlockingPool(threadCount: 3)
        let running = Locked((now: 0, most: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    await pool.run {
                        running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        usleep(20_000)  // blocking work, as the pool is for
                        running.withLock { $0.now -= 1 }
                    }
                }
            }
        }
        let most = running.withLock { $0.most }
        #expect(most == 3, "12 blocking jobs on a 3-thread pool ran \(most) at once")
        #expect(pool.backlog == 0)
    }

    @Test func aLaneRunsItsJobsOneAtATimeInOrder() async {
        let lane = BlockingLane(pool: BlockingPool(threadCount: 4))
        let log = Locked((order: [Int](), overlapping: false, inside: false))
        for i in 0..<50 {
            lane.submit {
                log.withLock { if $0.inside { $0.overlapping = true }; $0.inside = true }
                if i % 10 == 0 { usleep(2_000) }
                log.withLock { $0.order.append(i); $0.inside = false }
            }
        }
        let last = await lane.run { log.withLock { $0.order.count } }
        #expect(last == 50, "run waits for every job submitted before it")
        let (order, overlapping, _) = log.withLock { $0 }
        #expect(order == Array(0..<50))
        #expect(!overlapping)
    }
}
