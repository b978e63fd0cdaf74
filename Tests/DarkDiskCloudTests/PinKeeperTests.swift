import DarkDisk
import DarkDiskCloud
import Foundation
import Logging
import Testing

/// The mount's keeper of pinned files, on its own: what it does when a download fails.
@Suite struct PinKeeperTests {
    /// A failed download is tried again once its backoff has passed, with nothing else changing in the store.
    /// The keeper looked only when a pin, the outline or a stored file changed, or a download ended: the
    /// look right after a failure found the retry not yet due, and none came after it (a `fetch
    /// --background` that failed once was never finished).
    @Test func aFailedDownloadIsTriedAgainAfterItsBackoff() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(200_000, seed: 95)
        let id = try await setup.pushedAndPulled(data, as: "retried")
        let down = FaultyRemote(setup.remote)
        down.failAfterReads.store(0, ordering: .relaxed)
        let keeper = PinKeeper(manager: setup.b, downloads: DownloadManager(manager: setup.b, remote: down), interval: 0.05,
                               logger: Logger(label: "test"))
        defer { keeper.stop() }
        try setup.b.setPin(true, on: id)
        var waited = 0
        while down.reads.load(ordering: .relaxed) == 0 && waited < 400 {
            try await Task.sleep(for: .milliseconds(25))
            waited += 1
        }
        #expect(down.reads.load(ordering: .relaxed) > 0, "the first download was tried")
        try await Task.sleep(for: .milliseconds(200))
        #expect(try setup.b.storedFile(id, kind: .data) == nil)

        down.failAfterReads.store(Int.max, ordering: .relaxed)  // the remote answers again
        waited = 0
        while try setup.b.storedFile(id, kind: .data) == nil && waited < 600 {
            try await Task.sleep(for: .milliseconds(25))
            waited += 1
        }
        let stored = try #require(try setup.b.storedFile(id, kind: .data), "tried again within 15 s (the first backoff is 5 s)")
        #expect(stored.mode == .persistent)
    }
}
