import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The durable upload queue: changes queued in the index, uploaded from the store's own
/// encrypted files, never evicted while queued, kept (failed, with the error) when an upload fails, and
/// turned into conflict copies when the remote changed first.
@Suite struct UploadQueueTests {
    func bytes(_ count: Int, _ seed: UInt64) -> Data { CloudTests.bytes(count, seed: seed) }

    @Test func aQueuedPushUploadsFromTheStoreAndThenMovesToTheCache() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        let id = try NodeID("queued")
        let data = bytes(2_500_000, 1)
        let path = try setup.file("plain", data)
        try await sync.queuePush(dataFile: path, nodeID: id, name: "movie.mkv", parentID: "folder", thumbnail: Data("thumb".utf8))
        // The store holds it persistently (maybe the only copy); the source file may go.
        try FileManager.default.removeItem(atPath: path)
        #expect(try await setup.a.uploadQueue.all().map(\.nodeID) == [id])
        #expect(try await setup.a.uploadQueue.change(of: id)?.state == .pending)
        await #expect(try setup.a.files.storedFiles(id).first { $0.kind == .data }?.mode == .persistent)
        #expect(try await setup.remote.list(prefix: "records/").isEmpty)

        let result = try await sync.drainQueue()
        #expect(result.uploaded == [id] && result.failed.isEmpty && result.conflicts.isEmpty)
        #expect(try await setup.a.uploadQueue.all().isEmpty)
        // Uploaded: the new content became a cache file (nothing is kept twice), the record names it.
        await #expect(try setup.a.files.storedFiles(id).first { $0.kind == .data }?.mode == .cache)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let entry = try #require(try await setup.b.outline.entry(id))
        #expect(entry.name == "movie.mkv" && entry.parentID == "folder" && entry.dataSize == 2_500_000 && entry.thumbnailSize == 5)
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote)
        #expect(try CloudTests().plaintext(try await downloads.nodeData(id)) == data)
    }

    /// A change made while a backlog drains goes before the backlog in the next drain (the uploader passes the
    /// moment its last drain began): a one-line edit after a 30,000-file copy waited for the whole copy.
    @Test func changesMadeSinceTheLastDrainBeganGoFirst() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        let backlog = try (1...3).map { try NodeID("old\($0)") }
        for (index, id) in backlog.enumerated() {
            try await sync.queuePush(dataFile: try setup.file(id.rawValue, bytes(1000, UInt64(index))), nodeID: id)
        }
        try await Task.sleep(nanoseconds: 20_000_000)
        let lastDrain = Date()
        try await Task.sleep(nanoseconds: 20_000_000)
        let edit = try NodeID("edit")
        try await sync.queuePush(dataFile: try setup.file("edit", Data("one line\n".utf8)), nodeID: edit)
        let result = try await sync.drainQueue(firstQueuedAfter: lastDrain)
        #expect(result.uploaded == [edit] + backlog, "\(result.uploaded)")
        #expect(try await setup.a.uploadQueue.all().isEmpty)
    }

    @Test func aQueuedCacheFileIsNeverEvictedOrExpired() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("only-copy")
        try await setup.a.importNodeFile(DiskImport(cleartextData: bytes(300_000, 2)), nodeID: id)
        try await setup.a.uploadQueue.add(id, name: "only.bin")
        try setup.a.files.setMaxSize(0, for: .data)
        try await setup.a.files.enforceLimits(of: .data)
        try setup.a.files.setDefaultExpiration(0.001, for: .data)
        try await Task.sleep(for: .milliseconds(20))
        _ = try setup.a.files.expireFiles()
        await #expect(try setup.a.files.storedFiles(id).count == 1, "a queued file was evicted or expired")

        // Once uploaded it is a cache file like any other.
        try await CloudSync(manager: setup.a, remote: setup.remote).uploadQueued(id)
        _ = try setup.a.files.expireFiles()
        try await setup.a.files.enforceLimits(of: .data)
        await #expect(try setup.a.files.storedFiles(id).isEmpty)
    }

    @Test func aFailedUploadStaysQueuedWithItsErrorAndIsRetried() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("later")
        let data = bytes(100_000, 3)
        // A folder that cannot exist (under a regular file): every write fails.
        let blocker = try setup.file("blocker", Data())
        let gone = FileRemote(root: blocker + "/bucket")
        try await CloudSync(manager: setup.a, remote: gone).queuePush(dataFile: setup.file("p", data), nodeID: id)
        let result = try await CloudSync(manager: setup.a, remote: gone).drainQueue()
        #expect(result.failed.map(\.nodeID) == [id] && result.uploaded.isEmpty)
        let failed = try #require(try await setup.a.uploadQueue.change(of: id))
        #expect(failed.state == .failed && failed.attempts == 1)
        #expect(failed.lastError?.contains(blocker) == true, "\(failed.lastError ?? "")")
        await #expect(try setup.a.files.storedFiles(id).count == 1)

        let retried = try await CloudSync(manager: setup.a, remote: setup.remote).drainQueue()
        #expect(retried.uploaded == [id])
        #expect(try await setup.a.uploadQueue.change(of: id) == nil)
    }

    /// A change queued while the previous one uploads is not cleared by that upload.
    @Test func aNewerChangeOutlivesTheUploadOfAnOlderOne() throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("busy")
        try setup.a.uploadQueue.add(id)
        let first = try #require(try setup.a.uploadQueue.claim(id))
        #expect(first.state == .uploading && first.claimedBy == getpid())
        try setup.a.uploadQueue.add(id, name: "renamed")
        try setup.a.uploadQueue.finish(id, sequence: first.sequence)
        let after = try #require(try setup.a.uploadQueue.change(of: id))
        #expect(after.state == .pending && after.name == "renamed" && after.sequence > first.sequence)
        try setup.a.uploadQueue.finish(id, sequence: after.sequence)
        #expect(try setup.a.uploadQueue.change(of: id) == nil)
    }

    /// A claim of a process that is no longer running is taken over (a `kill -9` mid-upload); one of a
    /// running process is not.
    @Test func aDeadUploadersClaimIsTakenOver() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("orphaned")
        try await setup.a.uploadQueue.add(id)
        let child = try ChildProcess.spawn("/bin/sleep", ["30"])
        #expect(try await setup.a.uploadQueue.claim(id, for: child)?.claimedBy == child)
        #expect(try await setup.a.uploadQueue.claim(id) == nil)
        kill(child, SIGKILL)
        _ = await ChildProcess.exitStatus(child)
        #expect(try await setup.a.uploadQueue.claim(id)?.claimedBy == getpid())
    }

    /// The mount daemon's uploader takes over a change whose uploader died (a daemon killed mid-upload).
    @Test func theBackgroundUploaderTakesOverADeadUploadersChange() async throws {
        let setup = try CloudTests.Setup()
        let sync = CloudSync(manager: setup.a, remote: setup.remote)
        let id = try NodeID("resumed")
        try await sync.queuePush(dataFile: setup.file("p", bytes(50_000, 4)), nodeID: id)
        let child = try ChildProcess.spawn("/bin/true", [])
        _ = await ChildProcess.exitStatus(child)
        #expect(try await setup.a.uploadQueue.claim(id, for: child)?.state == .uploading)
        let uploader = QueueUploader(sync: sync, checkInterval: 0.05, pullAfterUploads: false, logger: Logger(label: "test"))
        defer { uploader.stop() }
        var drained = false
        for _ in 0..<300 where !drained {
            try await Task.sleep(for: .milliseconds(50))
            drained = try await setup.a.uploadQueue.all().isEmpty
        }
        #expect(drained, "the uploader left a dead process' change queued")
        #expect(try await setup.remote.info(CloudLayout.record(id, with: setup.a)) != nil)
    }

    /// A queued change based on a record older than the bucket's: the node takes the remote's version,
    /// the change goes up as a conflict copy from the files the store held.
    @Test func aQueuedChangeThatLostBecomesAConflictCopy() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("doc")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("v1", Data("one".utf8)), nodeID: id, name: "doc.txt")
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("v2", Data("two from A".utf8)), nodeID: id, name: "doc.txt")

        let syncB = CloudSync(manager: setup.b, remote: setup.remote, host: "laptop")
        try await syncB.queuePush(dataFile: setup.file("v3", Data("three from B".utf8)), nodeID: id)
        let result = try await syncB.drainQueue()
        let copy = try #require(result.conflicts.first)
        #expect(copy.originalID == id && copy.name.hasPrefix("doc (conflict laptop ") && copy.name.hasSuffix(").txt"))
        #expect(try await setup.b.uploadQueue.all().isEmpty)
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote)
        #expect(try CloudTests().plaintext(try await downloads.nodeData(id)) == Data("two from A".utf8))
        #expect(try CloudTests().plaintext(try await downloads.nodeData(copy.nodeID)) == Data("three from B".utf8))
    }
}
