import DarkDiskSync
import Foundation
import Testing

/// `Locked`'s wait for a change: a waiter sees the value that made its condition true, a deadline ends a
/// wait that nothing satisfies, and a broadcast before the wait begins is not needed (the condition is
/// looked at first).
@Suite struct LockedTests {
    @Test func aWaiterWakesForTheChangeItWaitsForAndNotBefore() async throws {
        let counter = Locked(0)
        let seen = Locked<[Int]>([])
        let waiter = Thread {
            let value = counter.withLock(when: { $0 >= 3 }) { value, satisfied in satisfied ? value : -1 }
            seen.withLock { $0.append(value) }
        }
        waiter.start()
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(20))
            #expect(seen.withLock { $0.isEmpty }, "woken before its condition held")
            counter.withLock { $0 += 1 }
            counter.broadcast()
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while seen.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(seen.withLock { $0 } == [3])
    }

    @Test func aDeadlineEndsAWaitNothingSatisfies() {
        let never = Locked(false)
        let start = ContinuousClock.now
        let satisfied = never.withLock(when: { $0 }, before: .now + .milliseconds(200)) { _, satisfied in satisfied }
        let waited = ContinuousClock.now - start
        #expect(!satisfied)
        #expect(waited >= .milliseconds(190), "returned after \(waited)")
        #expect(waited < .seconds(20), "returned after \(waited)")
        // A condition that holds already is not waited for, with or without a deadline in the past.
        #expect(Locked(true).withLock(when: { $0 }, before: .now - .seconds(1)) { _, satisfied in satisfied })
    }
}
