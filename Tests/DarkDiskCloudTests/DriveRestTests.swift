import DarkDiskStore
import DarkDiskCloud
import DarkDiskSync
import DarkDiskTestSupport
import Foundation
import Logging
import Testing

/// The uploader waits for the drive to rest, not only each file (`QueueUploader`): a burst of writes across
/// many files uploads after the burst, and a drive written without a pause still uploads, `longestHold`
/// behind. The store's clock is a manual one, and the uploader runs a round when the test says
/// (`runOnce`): nothing waits on real time.
@Suite struct DriveRestTests {
    /// A store on a manual clock, an uploader with 10 s of rest and 100 s of longest hold (or the default,
    /// twelve times the rest), and the queue.
    final class Rig {
        let setup: CloudTests.Setup
        let clock = ManualClock()
        let store: DiskManager
        let sync: CloudSync
        let uploader: QueueUploader

        init(longestHold: Double? = 100) throws {
            setup = try CloudTests.Setup()
            store = try DiskManager.create(at: StoreLocation(directory: setup.directory + "/clocked"), clock: clock)
            sync = CloudSync(manager: store, remote: setup.remote)
            uploader = QueueUploader(sync: sync, writeBack: 10, longestHold: longestHold, pullAfterUploads: false,
                                     logger: Logger(label: "test"), manual: true)
        }

        deinit { uploader.stop() }

        func change(_ name: String) async throws -> NodeID {
            let id = try NodeID(name)
            try await sync.queuePush(dataFile: setup.file(name, Data(name.utf8)), nodeID: id)
            return id
        }

        func isQueued(_ id: NodeID) throws -> Bool { try store.uploadQueue.change(of: id) != nil }

        /// One round of the uploader; whether `id` went up in it (or before).
        func uploads(_ id: NodeID) async throws -> Bool {
            await uploader.runOnce()
            return try !isQueued(id)
        }
    }

    @Test func aFileThatRestedWaitsWhileTheDriveIsBusyThenUploadsAfterTheBurst() async throws {
        let rig = try Rig()
        let first = try await rig.change("first")
        rig.clock.advance(by: 11)
        // `first` has rested 11 s by itself; the drive has not: `second` was written just now.
        let second = try await rig.change("second")
        await rig.uploader.runOnce()
        #expect(try rig.isQueued(first), "uploaded beside the burst: the rest is the drive's")
        rig.clock.advance(by: 9)
        await rig.uploader.runOnce()
        #expect(try rig.isQueued(first) && rig.isQueued(second), "9 s after the latest change, both wait")
        rig.clock.advance(by: 2)
        #expect(try await rig.uploads(first), "the drive rested 11 s")
        #expect(try await rig.uploads(second))
        #expect(try await rig.setup.remote.info(CloudLayout.record(first, with: rig.store)) != nil)
    }

    /// A change that leaves nothing new in the queue (an entry made and removed again before any upload, as an
    /// `rm -rf` of a tree just extracted does) is a change of the drive all the same: uploads wait for its rest.
    @Test func aChangeThatQueuesNothingStillKeepsTheDriveBusy() async throws {
        let rig = try Rig()
        let first = try await rig.change("first")
        rig.clock.advance(by: 11)
        let folder = try rig.store.createDriveNode(named: "scratch", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        try rig.store.deleteDriveNode(folder.id)
        #expect(try await rig.store.uploadQueue.all().map(\.nodeID) == [first], "the folder came and went: nothing of it is queued")
        await rig.uploader.runOnce()
        #expect(try rig.isQueued(first), "the drive changed a moment ago")
        rig.clock.advance(by: 11)
        #expect(try await rig.uploads(first), "the drive rested 11 s")
    }

    @Test func aDriveWrittenWithoutAPauseStillUploadsWhatWaitedTheLongestHold() async throws {
        let rig = try Rig()
        let first = try await rig.change("first")
        var latest = first
        // A change every 5 s, for 100 s: never 10 s of rest.
        for step in 1...20 {
            rig.clock.advance(by: 5)
            latest = try await rig.change("busy\(step)")
        }
        // (A second past the hold: sums of the clock's steps are not exact.)
        rig.clock.advance(by: 1)
        #expect(try await rig.uploads(first), "waited 101 s behind a busy drive")
        await rig.uploader.runOnce()
        #expect(try rig.isQueued(latest), "the change made a moment ago waits for its own rest")
        #expect(try await rig.store.uploadQueue.all().count == 20, "only what waited the longest hold went up")
    }

    @Test func theLongestHoldIsTwelveTimesTheRestUnlessSaid() async throws {
        let rig = try Rig(longestHold: nil)
        let first = try await rig.change("first")
        // A change every 5 s, for 115 s: never 10 s of rest, and `first` waits less than 120 s.
        for step in 1...23 {
            rig.clock.advance(by: 5)
            _ = try await rig.change("busy\(step)")
        }
        await rig.uploader.runOnce()
        #expect(try rig.isQueued(first), "115 s is within twelve times 10 s")
        rig.clock.advance(by: 6)
        #expect(try await rig.uploads(first), "121 s is past it")
    }

    @Test func aDrainPausesOnceItsConditionSaysSoAndLeavesTheRestQueued() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        for name in ["one", "two", "three"] {
            try await sync.queuePush(dataFile: setup.file(name, Data(name.utf8)), nodeID: try NodeID(name))
        }
        let asked = Locked(0)
        let result = try await sync.drainQueue(pauseWhen: { asked.withLock { $0 += 1; return $0 > 1 } })
        let one = try NodeID("one")
        #expect(result.paused && result.uploaded == [one] && result.failed.isEmpty)
        let expected = [try NodeID("two"), try NodeID("three")]
        #expect(try await setup.a.uploadQueue.all().map(\.nodeID) == expected)
        #expect(try await sync.drainQueue().uploaded.count == 2)
    }

    @Test func theQueuesTimesAreItsLatestChangeAndItsOldestWaitingOne() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000_000))
        let setup = try CloudTests.Setup()
        let store = try DiskManager.create(at: StoreLocation(directory: setup.directory + "/clocked"), clock: clock)
        #expect(try await store.uploadQueue.times() == nil)
        try await store.uploadQueue.addDelete(try NodeID("a"))
        clock.advance(by: 3)
        try await store.uploadQueue.addDelete(try NodeID("b"))
        #expect(try await store.uploadQueue.times() == UploadQueueTimes(newestChange: Date(timeIntervalSince1970: 1_000_003),
                                                                 oldestWaiting: Date(timeIntervalSince1970: 1_000_000)))
        _ = try await store.uploadQueue.claim(try NodeID("a"))
        #expect(try await store.uploadQueue.times()?.oldestWaiting == Date(timeIntervalSince1970: 1_000_003), "one being uploaded does not wait")
        let b = try #require(try await store.uploadQueue.claim(try NodeID("b")))
        #expect(try await store.uploadQueue.times() == UploadQueueTimes(newestChange: Date(timeIntervalSince1970: 1_000_003), oldestWaiting: nil))
        try await store.uploadQueue.fail(b.nodeID, sequence: b.sequence, error: "the remote is down")
        #expect(try await store.uploadQueue.times()?.oldestWaiting == nil, "a failed one waits for its retry, not for the drive")

        let now = Date(timeIntervalSince1970: 2_000_000)
        let busy = UploadQueueTimes(newestChange: now.addingTimeInterval(-4), oldestWaiting: now.addingTimeInterval(-50))
        #expect(!busy.allowUploads(at: now, writeBack: 5, longestHold: 60))
        #expect(busy.allowUploads(at: now, writeBack: 4, longestHold: 60), "rested exactly writeBack")
        #expect(busy.allowUploads(at: now, writeBack: 5, longestHold: 50), "waited exactly the longest hold")
        #expect(!UploadQueueTimes(newestChange: now, oldestWaiting: nil).allowUploads(at: now, writeBack: 5, longestHold: 0))
    }
}
