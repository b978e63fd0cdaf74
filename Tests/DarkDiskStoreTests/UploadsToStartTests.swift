import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing

/// `UploadQueue.hasChangesToStart(restedSince:)`, the question the mount's uploader asks every second: a change that has
/// rested long enough and that no running process is uploading. A change a live process claimed is not
/// one; a claim left by a process that died is.
@Suite struct UploadsToStartTests {
    @Test func onlyRestedChangesThatNoLiveProcessHoldsAreDue() throws {
        let store = try TemporaryStore()
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let manager = try store.create(clock: clock)
        let first = try NodeID("first"), second = try NodeID("second")
        #expect(try !manager.uploadQueue.hasChangesToStart(restedSince: clock.now), "an empty queue")

        try manager.uploadQueue.add(first)
        clock.advance(by: 10)
        try manager.uploadQueue.add(second)
        #expect(try !manager.uploadQueue.hasChangesToStart(restedSince: clock.now.addingTimeInterval(-20)), "nothing has rested 20 s")
        #expect(try manager.uploadQueue.hasChangesToStart(restedSince: clock.now.addingTimeInterval(-5)), "the first has rested 10 s")

        // This (live) process uploads the first: not due while it does.
        #expect(try manager.uploadQueue.claim(first) != nil)
        #expect(try !manager.uploadQueue.hasChangesToStart(restedSince: clock.now.addingTimeInterval(-5)))
        #expect(try manager.uploadQueue.hasChangesToStart(restedSince: clock.now), "the second, rested 0 s")

        // A claim by a process that is gone is free to take again.
        try manager.uploadQueue.release(first)
        #expect(try manager.uploadQueue.claim(first, for: Self.deadProcess()) != nil)
        #expect(try manager.uploadQueue.hasChangesToStart(restedSince: clock.now.addingTimeInterval(-5)))

        try manager.uploadQueue.remove(first)
        try manager.uploadQueue.remove(second)
        #expect(try !manager.uploadQueue.hasChangesToStart(restedSince: clock.now.addingTimeInterval(3600)))
    }

    /// The process ID of a process that has ended.
    private static func deadProcess() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }
}
