@testable import DarkDiskCloud
import Foundation
import Testing

/// The wake-up of the uploader's and the pin keeper's loops: a wait ends at its time or at a kick, and is
/// never lost (a lost one stopped the loop until the next kick).
@Suite struct AsyncWakeupTests {
    /// With no time to wait, the timer often runs before the wait has begun: each wait still ends.
    /// (500 waits: the old wake-up lost one within the first few; each costs a task, slow under a sanitizer.)
    @Test(.timeLimit(.minutes(3))) func aWaitWhoseTimeRunsOutFirstStillEnds() async {
        let wake = AsyncWakeup()
        for _ in 0..<500 { await wake.wait(seconds: 0) }
    }

    /// (The waits are of an hour, so what ends them is the kick, however long a busy cooperative pool takes
    /// to run the task that kicks: early in the suite that was over 30 s once, on CI.)
    @Test(.timeLimit(.minutes(10))) func aKickEndsTheWaitAndOneMadeBeforeIsKept() async {
        let wake = AsyncWakeup()
        wake.kick()
        await wake.wait(seconds: 3600)
        #expect(wake.takeKick() && !wake.takeKick(), "the kick is seen once")
        Task { try? await Task.sleep(for: .milliseconds(50)); wake.kick() }
        await wake.wait(seconds: 3600)
        #expect(wake.takeKick(), "the second wait ended by its kick")
    }
}
