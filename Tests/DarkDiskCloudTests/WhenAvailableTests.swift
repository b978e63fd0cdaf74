import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation
import Testing

/// `whenAvailable`: readers of a node's bytes while it downloads (what the mount's reads use).
@Suite struct WhenAvailableTests {
    func answer(_ downloads: DownloadManager, _ id: NodeID, _ range: Range<UInt64>, ticket: DownloadTicket<NodeDataDownload>? = nil,
                timeout: Duration? = nil) async -> Result<NodeDataSource, any Error> {
        await withCheckedContinuation { continuation in
            downloads.whenAvailable(id, range: range, ticket: ticket, timeout: timeout) { continuation.resume(returning: $0) }
        }
    }

    /// Plaintext [offset, offset+count) of the data section, read through a source.
    func read(_ source: NodeDataSource, key: SymmetricKey, offset: UInt64, count: Int) throws -> Data {
        let reader = switch source {
        case .stored(let export): try export.reader()
        case .downloading(let descriptor): try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor)
        }
        return Data(try reader.read(section: CloudFileSection.data.rawValue, offset: offset, count: count))
    }

    @Test func aReadDeepInADownloadIsAnsweredFirst() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(6_000_000, seed: 61)
        let id = try await setup.pushedAndPulled(data, as: "deep")
        let key = try setup.key(of: id)
        let total = try await setup.cloudFileSize(id)
        let (downloads, slow) = setup.slowDownloads(microsecondsPer64KiB: 15_000)
        let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
        // The header first (what a reader needs to map plaintext to ciphertext), then a range near the end.
        let header = try await answer(downloads, id, 0..<UInt64(CryptoFormat.headerSize), ticket: ticket).get()
        guard case .downloading(let descriptor) = header else { Issue.record("answered from a stored file"); return }
        let fileHeader = try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor).header
        let wanted = fileHeader.ciphertextRange(section: CloudFileSection.data.rawValue, offset: 5_800_000, count: 4096)
        let source = try await answer(downloads, id, wanted, ticket: ticket).get()
        let sent = slow.bytesRead.load(ordering: .relaxed)
        #expect(sent < total / 2, "answered after \(sent) of \(total) bytes: the part it needs came first")
        #expect(try read(source, key: key, offset: 5_800_000, count: 4096) == data[5_800_000..<5_804_096])

        // Once the node is stored, answers come from the store.
        _ = try await ticket.value
        guard case .stored = try await answer(downloads, id, 0..<10).get() else { Issue.record("not stored"); return }
    }

    @Test func noBytesWithinTheTimeoutIsUnreachable() async throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("stuck")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("stuck", CloudTests.bytes(300_000, seed: 62)), nodeID: id)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let stuck = FaultyRemote(setup.remote)
        stuck.delayPer64KiB.store(10_000_000, ordering: .relaxed)
        let downloads = DownloadManager(manager: setup.b, remote: stuck)
        let ticket = downloads.downloadNodeData(id)
        let result = await answer(downloads, id, 0..<100, ticket: ticket, timeout: .milliseconds(300))
        #expect(throws: RemoteError.self) { try result.get() }
        ticket.cancel()

        // A node neither stored nor in the outline is an error at once, not after the timeout.
        let unknown = await answer(downloads, try NodeID("nowhere"), 0..<1, timeout: .seconds(60))
        #expect(throws: RemoteError.self) { try unknown.get() }
    }

    /// Another process downloading the node holds its download lock: this instance's reader is served from
    /// that process's partial file as far as its index row records it (it used to wait for the whole
    /// download: a mount's read of a large node that `darkdisk fetch` was downloading failed after 30 s),
    /// and from the stored file once it lands. The node crosses the network once.
    @Test func aReaderOfANodeAnotherProcessDownloadsReadsItsPartialFileThenTheStoredOne() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(2_000_000, seed: 63)
        let id = try await setup.pushedAndPulled(data, as: "elsewhere")
        let key = try setup.key(of: id)
        // Another downloader of the same store (another process, in real life) holds the node's download lock.
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(100_000, ordering: .relaxed)
        let other = DownloadManager(manager: setup.b, remote: slow, partSize: 256 * 1024, parallelParts: 2, checkpointBytes: 64 * 1024)
        let theirs = other.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
        var waited = 0
        while await (try setup.b.files.partialDownload(id)?.ranges.isEmpty ?? true) && waited < 1000 {
            try await Task.sleep(nanoseconds: 5_000_000)
            waited += 1
        }

        let counting = FaultyRemote(setup.remote)
        let mine = DownloadManager(manager: setup.b, remote: counting)
        let early = try await answer(mine, id, 0..<UInt64(CryptoFormat.headerSize), timeout: .seconds(60)).get()
        #expect(!theirs.isFinished, "answered while the other process still downloads")
        guard case .downloading = early else {
            Issue.record("answered from the stored file: the reader waited for the whole download")
            return
        }
        #expect(try read(early, key: key, offset: 0, count: 1000) == data[0..<1000])

        _ = try await theirs.value
        guard case .stored(let export) = try await answer(mine, id, 0..<UInt64(CryptoFormat.headerSize), timeout: .seconds(60)).get() else {
            Issue.record("the landed download is read from the store")
            return
        }
        #expect(try CloudTests().plaintext(export) == data)
        #expect(counting.bytesRead.load(ordering: .relaxed) == 0, "the node came once, by the other downloader")
    }

    /// A reader of bytes the other process has not reached yet waits for them, and is answered once its
    /// index row records them, or with the stored file.
    @Test func aReaderAheadOfAnotherProcesssDownloadIsAnsweredWhenItGetsThere() async throws {
        let setup = try CloudTests.Setup()
        let data = CloudTests.bytes(1_500_000, seed: 64)
        let id = try await setup.pushedAndPulled(data, as: "ahead")
        let key = try setup.key(of: id)
        let slow = FaultyRemote(setup.remote)
        slow.delayPer64KiB.store(30_000, ordering: .relaxed)
        let other = DownloadManager(manager: setup.b, remote: slow, partSize: 256 * 1024, parallelParts: 2, checkpointBytes: 64 * 1024)
        let theirs = other.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
        while slow.bytesRead.load(ordering: .relaxed) == 0 { try await Task.sleep(nanoseconds: 5_000_000) }

        let counting = FaultyRemote(setup.remote)
        let mine = DownloadManager(manager: setup.b, remote: counting)
        let header = try await answer(mine, id, 0..<UInt64(CryptoFormat.headerSize), timeout: .seconds(60)).get()
        let fileHeader = switch header {
        case .stored(let export): try export.reader().header
        case .downloading(let descriptor): try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor).header
        }
        let wanted = fileHeader.ciphertextRange(section: CloudFileSection.data.rawValue, offset: 1_499_000, count: 1000)
        let late = try await answer(mine, id, wanted, timeout: .seconds(60)).get()
        #expect(try read(late, key: key, offset: 1_499_000, count: 1000) == data[1_499_000..<1_500_000])
        _ = try await theirs.value
        #expect(counting.bytesRead.load(ordering: .relaxed) == 0, "the node came once, by the other downloader")
    }

    /// A transfer ends its stream a moment before it resolves its tickets. A reader that came in between got a
    /// new stream that no transfer would ever end, and waited out its whole timeout (a `cat` of a node larger
    /// than the cache pool failed with EIO near its end, in CI). Readers that keep asking through the end
    /// of several downloads are each answered with the bytes, never by the timeout.
    @Test func aReaderArrivingAsTheDownloadEndsIsAnsweredAtOnce() async throws {
        let setup = try CloudTests.Setup()
        try setup.b.files.setMaxSize(100_000, for: .data)  // each node lands as a temporary file its ticket keeps
        for round in 0..<8 {
            let data = CloudTests.bytes(400_000, seed: 90 + UInt64(round))
            let id = try await setup.pushedAndPulled(data, as: "ending-\(round)")
            let (downloads, _) = setup.slowDownloads(microsecondsPer64KiB: 2_000)
            let ticket = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
            let timedOut = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var failures = 0
                        var last = false
                        while !last {
                            last = ticket.isFinished
                            // Answered from the partial file or the ticket's temporary file within moments; the
                            // reader left on a stream nobody ends heard only the deadline.
                            let result = await answer(downloads, id, 0..<UInt64(CryptoFormat.headerSize), ticket: ticket, timeout: .seconds(30))
                            if case .failure = result { failures += 1 }
                        }
                        return failures
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(timedOut == 0, "round \(round): \(timedOut) reads waited out their timeout for bytes that were on disk")
            #expect(try await ticket.value.export == nil)
        }
    }
    /// A file closed and opened again at once: the first transfer, cancelled, still winds down (it holds the
    /// node's lock) when the second starts and waits for the lock. A read in that moment waited on the first
    /// one's stream, whose queue of parts was closed; when it ended, the read waited for the second transfer's
    /// whole download (in the mount: `EIO` after 30 s for a large node). It now waits on the stream the
    /// second transfer takes up, which fetches the read's bytes first.
    @Test func aReadBetweenACancelledTransferAndTheNextFollowsTheNext() async throws {
        let setup = try CloudTests.Setup()
        for round in 0..<3 {
            let data = CloudTests.bytes(4_000_000, seed: 97 + UInt64(round))
            let id = try await setup.pushedAndPulled(data, as: "reopened-\(round)")
            let key = try setup.key(of: id)
            let total = try await setup.cloudFileSize(id)
            let (downloads, slow) = setup.slowDownloads(microsecondsPer64KiB: 20_000)
            let first = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
            let header = try await answer(downloads, id, 0..<UInt64(CryptoFormat.headerSize), ticket: first).get()
            guard case .downloading(let descriptor) = header else { Issue.record("answered from a stored file"); return }
            let fileHeader = try CryptoFileReader(fileDescriptor: descriptor.fileDescriptor, key: key, owner: descriptor).header
            let deep = fileHeader.ciphertextRange(section: CloudFileSection.data.rawValue, offset: 3_900_000, count: 4096)

            // Closed, and opened again at once.
            first.cancel()
            let sentBefore = slow.bytesRead.load(ordering: .relaxed)
            let second = downloads.downloadNodeData(id, options: DownloadOptions(cacheToDiskManager: true))
            let source = try await answer(downloads, id, deep, ticket: second).get()
            let sent = slow.bytesRead.load(ordering: .relaxed) - sentBefore
            #expect(sent < (total - sentBefore) / 2, "round \(round): answered after \(sent) more bytes of \(total): the read's part came first")
            #expect(try read(source, key: key, offset: 3_900_000, count: 4096) == data[3_900_000..<3_904_096])
            _ = try await second.value
        }
    }
}
