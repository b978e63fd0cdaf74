import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Dispatch
import Foundation
import DarkDiskSync
import Testing

/// Tickets: results with and without caching, progress, cancellation, completion callbacks, and the
/// bookkeeping that lets an interrupted transfer resume inside a part.
@Suite struct DownloadTicketTests {
    func cloudPlaintext(_ file: CryptoFile) throws -> Data {
        try FileConversion.decryptIntoMemory(path: file.path, key: file.key, section: CloudFileSection.data.rawValue)
    }

    @Test func uncachedDataIsATemporaryFileThatGoesWithItsLastHolder() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(700_000, seed: 31)
        let id = try await setup.pushedAndPulled(data, as: "plain")
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote, partSize: 128 * 1024)
        var download: NodeDataDownload? = try await downloads.downloadNodeData(id).value
        let path = try #require(download?.cryptoFile.path)
        #expect(download?.export == nil, "the seeds' default for data: not cached")
        #expect(try cloudPlaintext(download!.cryptoFile) == data)
        await #expect(try setup.b.files.nodeFile(id) == nil, "nothing entered the store")
        #expect(FileManager.default.fileExists(atPath: path))
        download = nil
        #expect(!FileManager.default.fileExists(atPath: path), "released with its last holder")
        await #expect(try setup.b.files.partialDownload(id) == nil)
    }

    @Test func cachedDataEntersTheCachePoolAndLaterRequestsAreLocal() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(300_000, seed: 32)
        let id = try await setup.pushedAndPulled(data, as: "cached")
        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting)
        let download = try await downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true)).value
        #expect(download.export?.mode == .cache)
        #expect(try CloudTests().plaintext(try #require(download.export)) == data)
        let before = counting.bytesRead.load(ordering: .relaxed)
        let again = downloads.downloadNodeData(id)
        #expect(again.isFinished, "a local node is answered at once")
        #expect(try await again.value.export != nil)
        #expect(counting.bytesRead.load(ordering: .relaxed) == before)
    }

    @Test func progressAndCompletionCallbacks() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(2_000_000, seed: 33)
        let id = try await setup.pushedAndPulled(data, as: "progress")
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote, partSize: 256 * 1024, checkpointBytes: 64 * 1024)
        let ticket = downloads.downloadNodeData(id)
        let seen = Locked<[DownloadProgress]>([])
        ticket.onProgress { progress in seen.withLock { $0.append(progress) } }
        let queue = DispatchQueue(label: "completion")
        let completed: Bool = await withCheckedContinuation { continuation in
            ticket.onCompletion(queue: queue) { result in
                dispatchPrecondition(condition: .onQueue(queue))
                continuation.resume(returning: (try? result.get()) != nil)
            }
        }
        #expect(completed)
        let updates = seen.withLock { $0 }
        #expect(updates.count >= 5, "\(updates.count) updates")
        #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes }, "monotonic")
        let last = try #require(updates.last)
        #expect(last.completedBytes == last.totalBytes && last.fractionCompleted == 1)
        #expect(last.throughput > 0 && last.estimatedTimeRemaining == 0)
    }

    /// An observer added after the transfer ended still learns how far it got: the latest progress, once.
    @Test func anObserverAddedLateGetsTheLatestProgressAtOnce() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(600_000, seed: 35)
        let id = try await setup.pushedAndPulled(data, as: "late")
        let downloads = DownloadManager(manager: setup.b, remote: setup.remote, partSize: 256 * 1024)
        let ticket = downloads.downloadNodeData(id)
        _ = try await ticket.value
        let seen = Locked<[DownloadProgress]>([])
        ticket.onProgress { progress in seen.withLock { $0.append(progress) } }
        // (Told on the ticket's queue: a minute for a loaded machine to run it.)
        for _ in 0..<600 where seen.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(100)) }
        try await Task.sleep(for: .milliseconds(200))
        let reports = seen.withLock { $0 }
        #expect(reports.count == 1, "one report, the transfer being over: \(reports)")
        let first = try #require(reports.first)
        #expect(first.totalBytes > 0 && first.completedBytes == first.totalBytes, "\(first)")
    }

    @Test func cancellingOneTicketLeavesTheTransferToTheOthers() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(3_000_000, seed: 34)
        let id = try await setup.pushedAndPulled(data, as: "shared")
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(20_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: slow, partSize: 512 * 1024, parallelParts: 2, checkpointBytes: 64 * 1024)
        let first = downloads.downloadNodeData(id)
        let second = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
        #expect(downloads.activeTransfers == 1, "identical requests share one transfer")
        try await Task.sleep(nanoseconds: 100_000_000)
        first.cancel()
        await #expect(throws: CancellationError.self) { _ = try await first.value }
        let export = try #require(try await second.value.export)
        #expect(try CloudTests().plaintext(export) == data)
        let total = try setup.downloadLength(id)
        #expect(slow.bytesRead.load(ordering: .relaxed) == total, "one transfer, not restarted by the cancel")
    }

    @Test func cancellingTheLastTicketStopsTheTransferAndKeepsWhatArrived() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(4_000_000, seed: 35)
        let id = try await setup.pushedAndPulled(data, as: "abandoned")
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(10_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: slow, partSize: 1 << 20, parallelParts: 2, checkpointBytes: 64 * 1024)
        let ticket = downloads.downloadNodeData(id)
        while slow.bytesRead.load(ordering: .relaxed) < 600_000 { try await Task.sleep(nanoseconds: 10_000_000) }
        ticket.cancel()
        await #expect(throws: CancellationError.self) { _ = try await ticket.value }
        while downloads.activeTransfers > 0 { try await Task.sleep(nanoseconds: 10_000_000) }
        // Wait for the abandoned transfer's task to record what it received and let go of its lock.
        var partial: PartialDownload?
        for _ in 0..<500 {
            partial = try await setup.b.files.partialDownload(id)
            if let partial, partial.receivedBytes > 0, !FileManager.default.fileExists(atPath: setup.b.location.cacheDirectory + "/partial/abandoned.lock") { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let received = try #require(partial).receivedBytes
        let sent = UInt64(slow.bytesRead.load(ordering: .relaxed))
        #expect(received > 0 && received < UInt64(4_000_000), "partial: \(received) of \(sent) sent")
        #expect(sent - received < 2 * 64 * 1024 + 65536, "at most a checkpoint per part in flight is lost: \(sent - received)")

        let counting = FaultyRemote(setup.remote)
        let export = try await DownloadManager(manager: setup.b, remote: counting).nodeData(id)
        #expect(try CloudTests().plaintext(export) == data)
        let total = try setup.downloadLength(id)
        #expect(counting.bytesRead.load(ordering: .relaxed) == total - Int(received), "resumed inside the parts")
    }

    @Test func aCutMidPartKeepsTheBytesBeforeTheCut() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(3_000_000, seed: 36)
        let id = try await setup.pushedAndPulled(data, as: "cut")
        let flaky = FaultyRemote(setup.remote)
        flaky.failAfterBytes.store(1_300_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: flaky, partSize: 1 << 20, parallelParts: 1, checkpointBytes: 64 * 1024)
        await #expect(throws: RemoteError.self) { _ = try await downloads.nodeData(id) }
        let partial = try await #require(try setup.b.files.partialDownload(id))
        #expect(partial.receivedBytes == 1_300_000, "everything before the cut is kept, not just whole parts")
        let counting = FaultyRemote(setup.remote)
        _ = try await DownloadManager(manager: setup.b, remote: counting, partSize: 1 << 20).nodeData(id)
        let total = try setup.downloadLength(id)
        #expect(counting.bytesRead.load(ordering: .relaxed) == total - 1_300_000)
    }

    @Test func twoManagersOnOneStoreDownloadOnce() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(2_000_000, seed: 37)
        let id = try await setup.pushedAndPulled(data, as: "twice")
        let one = FaultyRemote(setup.remote)
        let two = FaultyRemote(setup.remote)
        one.delayPer64KiB.store(2_000, ordering: .relaxed)
        two.delayPer64KiB.store(2_000, ordering: .relaxed)
        let first = DownloadManager(manager: setup.b, remote: one, partSize: 256 * 1024)
        let second = DownloadManager(manager: setup.b, remote: two, partSize: 256 * 1024)
        async let a = first.nodeData(id)
        async let b = second.nodeData(id)
        let (exportA, exportB) = try await (a, b)
        #expect(try CloudTests().plaintext(exportA) == data && CloudTests().plaintext(exportB) == data)
        let total = try setup.downloadLength(id)
        #expect(one.bytesRead.load(ordering: .relaxed) + two.bytesRead.load(ordering: .relaxed) == total,
                "the second downloader waits for the first (a lock on the node's download) instead of fetching again")
    }

    @Test func aFlippedByteOnTheServerIsNeverDelivered() async throws {
        let setup = try CloudTests.Setup()
        let id = try await setup.pushedAndPulled(CloudTests.bytes(500_000, seed: 38), as: "rot")
        let rotten = FaultyRemote(setup.remote)
        rotten.corruptOffset.store(300_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: rotten)
        let download = try await downloads.downloadNodeData(id).value
        // The header and length authenticate; the damaged chunk fails when read, never as wrong bytes.
        #expect(throws: CryptoError.self) { _ = try cloudPlaintext(download.cryptoFile) }
    }
}
