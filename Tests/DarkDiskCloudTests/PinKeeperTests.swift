import DarkDiskStore
import DarkDiskCloud
import DarkDiskSync
import DarkDiskTestSupport
import Foundation
import Logging
import Testing

/// The mount's keeper of pinned files, on its own: what it does when a download fails. Store B's clock is a
/// manual one and the keeper looks when the test says (`runOnce`): nothing waits on real time but for the
/// downloads themselves.
@Suite struct PinKeeperTests {
    /// A failed download is tried again once its backoff has passed, with nothing else changing in the store.
    /// The keeper looked only when a pin, the outline or a stored file changed, or a download ended: the
    /// look right after a failure found the retry not yet due, and none came after it (a `fetch
    /// --background` that failed once was never finished).
    @Test func aFailedDownloadIsTriedAgainAfterItsBackoff() async throws {
        let clock = ManualClock()
        let setup = try CloudTests.Setup(clockB: clock)
        let data = CloudTests.bytes(200_000, seed: 95)
        let id = try await setup.pushedAndPulled(data, as: "retried")
        let down = FaultyRemote(setup.remote)
        down.failAfterReads.store(0, ordering: .relaxed)
        let records = Locked<[(level: Logger.Level, text: String)]>([])
        let downloads = DownloadManager(manager: setup.b, remote: down)
        let keeper = PinKeeper(manager: setup.b, downloads: downloads,
                               logger: Logger(label: "test") { _ in LogRecorder(records: records) }, manual: true)
        defer { keeper.stop() }
        try setup.b.outline.setPin(true, on: id)
        await keeper.runOnce()
        // The failure is noted (its backoff set) before it is logged.
        #expect(await eventually(within: 60) { records.withLock { $0.contains { $0.text.contains("could not be downloaded") } } },
                "the first download was tried and failed")
        #expect(await eventually(within: 60) { downloads.activeTransfers == 0 }, "the failed transfer ended")
        let readsAfterFailure = down.reads.load(ordering: .relaxed)
        #expect(readsAfterFailure > 0)
        // Looks before the backoff (5 s) has passed start nothing.
        await keeper.runOnce()
        clock.advance(by: 4)
        await keeper.runOnce()
        #expect(downloads.activeTransfers == 0 && down.reads.load(ordering: .relaxed) == readsAfterFailure, "tried again before its backoff")
        await #expect(try setup.b.files.storedFile(id, kind: .data) == nil)

        down.failAfterReads.store(Int.max, ordering: .relaxed)  // the remote answers again
        clock.advance(by: 2)
        await keeper.runOnce()
        #expect(await eventually(within: 60) { (try? setup.b.files.storedFile(id, kind: .data)) != nil }, "tried again once its backoff passed")
        await #expect(try setup.b.files.storedFile(id, kind: .data)?.mode == .persistent)
    }
}
