import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

@Suite struct CloudTests {
    /// Two stores sharing one master key (as `init --remote --passphrase-file` arranges) and a file remote.
    final class Setup {
        let directory: String
        let remote: FileRemote
        let a: DiskManager
        let b: DiskManager

        /// `clockB`: store B's clock (a test's `ManualClock`); the system's by default.
        init(clockB: any StoreClock = SystemClock()) throws {
            directory = NSTemporaryDirectory() + "darkdisk-cloud-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory + "/remote", withIntermediateDirectories: true)
            remote = FileRemote(root: directory + "/remote")
            let passphrase = Array("shared secret".utf8)
            a = try DiskManager.create(at: StoreLocation(directory: directory + "/a"), passphrase: passphrase, passphraseCost: .weakest)
            let keyFile = try MasterKeyFile.contents(at: a.location.keyPath)
            b = try DiskManager.create(at: StoreLocation(directory: directory + "/b"), passphrase: passphrase, adoptingKeyFile: keyFile,
                                       clock: clockB)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// Store A pushes `data` as node `id`; store B pulls the outline (no data).
        func pushedAndPulled(_ data: Data, as id: String) async throws -> NodeID {
            let node = try NodeID(id)
            try await CloudSync(manager: a, remote: remote).push(dataFile: file(id, data), nodeID: node)
            _ = try await CloudSync(manager: b, remote: remote).pull()
            return node
        }

        /// The key of the cloud file version node `id`'s record names now, as store A (which pushed it) knows it.
        func cloudKey(_ id: NodeID) throws -> String {
            CloudLayout.cloudFile(of: try #require(try a.outline.entry(id)), with: a)
        }

        /// The length of the node's cloud file, without its padding: what a download moves.
        func downloadLength(_ id: NodeID) throws -> Int {
            try CloudFileLength.ofObject(at: remote.root + "/" + cloudKey(id))
        }

        /// The node's content key, as store B's outline gives it.
        func key(of id: NodeID) throws -> SymmetricKey {
            try b.keys.unwrap(try #require(try b.outline.entry(id)).wrappedKey, for: .node(id))
        }

        /// The size of the node's cloud file in the remote.
        func cloudFileSize(_ id: NodeID) async throws -> Int {
            Int(try #require(try await remote.info(try cloudKey(id))).size)
        }

        /// Store B's downloads through a remote that takes `microseconds` per 64 KiB, in parts of 256 KiB,
        /// two at a time (a download slow enough to read from while it runs), and that remote.
        func slowDownloads(microsecondsPer64KiB microseconds: Int) -> (DownloadManager, FaultyRemote) {
            let slow = FaultyRemote(remote)
            slow.delayPer64KiB.store(microseconds, ordering: .relaxed)
            return (DownloadManager(manager: b, remote: slow, partSize: 256 * 1024, parallelParts: 2, checkpointBytes: 64 * 1024), slow)
        }

        func file(_ name: String, _ data: Data) throws -> String {
            let path = directory + "/" + name
            try data.write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    static func bytes(_ count: Int, seed: UInt64) -> Data {
        Data(SplitMix64.bytes(count, seed: seed))
    }

    func plaintext(_ export: DiskExport) throws -> Data {
        let reader = try export.reader()
        return Data(try reader.read(section: reader.dataSection, offset: 0, count: Int(reader.plaintextSize(ofSection: reader.dataSection))))
    }

    @Test func pushOnOneStorePullAndReadOnAnother() async throws {
        let setup = try Setup()
        let data = Self.bytes(3_000_000, seed: 1)
        let entry = try await CloudSync(manager: setup.a, remote: setup.remote)
            .push(dataFile: setup.file("d", data), nodeID: NodeID("n1"), name: "photo.jpg", thumbnail: Data("thumb".utf8), metadata: Data("{}".utf8))
        #expect(entry.entry.dataSize == 3_000_000 && entry.entry.thumbnailSize == 5 && entry.entry.metadataSize == 2)

        let result = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(result.added == 1)
        let outline = try #require(try await setup.b.outline.entry(NodeID("n1")))
        #expect(outline.name == "photo.jpg" && outline.dataSize == 3_000_000)
        await #expect(try setup.b.files.nodeFile(NodeID("n1")) == nil, "pull downloads no data")

        let downloads = DownloadManager(manager: setup.b, remote: setup.remote, partSize: 256 * 1024)
        let export = try await downloads.nodeData(NodeID("n1"))
        #expect(try plaintext(export) == data)
        #expect(export.mode == .cache)
        await #expect(try setup.b.files.partialDownload(NodeID("n1")) == nil)
    }

    @Test func resumeTransfersOnlyTheMissingBytes() async throws {
        let setup = try Setup()
        let data = Self.bytes(4_000_000, seed: 2)
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("d", data), nodeID: NodeID("big"))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()

        let flaky = FaultyRemote(setup.remote)
        flaky.failAfterReads.store(6, ordering: .relaxed)
        let partSize: UInt64 = 256 * 1024
        await #expect(throws: RemoteError.self) {
            _ = try await DownloadManager(manager: setup.b, remote: flaky, partSize: partSize, parallelParts: 1).nodeData(NodeID("big"))
        }
        let partial = try await #require(try setup.b.files.partialDownload(NodeID("big")))
        #expect(partial.receivedBytes == 6 * partSize, "the parts that arrived are recorded")

        let counting = FaultyRemote(setup.remote)
        let export = try await DownloadManager(manager: setup.b, remote: counting, partSize: partSize).nodeData(NodeID("big"))
        #expect(try plaintext(export) == data)
        let total = try setup.downloadLength(NodeID("big"))
        #expect(counting.bytesRead.load(ordering: .relaxed) == total - 6 * Int(partSize), "only the missing bytes cross the wire")
    }

    /// A small object replaced between `readAll`'s HEAD and its GET (another machine writing a record while a
    /// pull reads it) is read again, whole and new, instead of failing the pull with "changed".
    @Test func readAllReadsAnObjectReplacedMidwayAgain() async throws {
        let setup = try Setup()
        _ = try await setup.remote.write("records/r.rec", data: Data("first".utf8))
        let racing = FaultyRemote(setup.remote)
        racing.replaceAfterReads.withLock { $0 = (0, "records/r.rec", Data("second, longer".utf8)) }
        #expect(try await racing.readAll("records/r.rec") == Data("second, longer".utf8))
        #expect(racing.reads.load(ordering: .relaxed) == 2, "read once more")
    }

    @Test func anotherVersionReplacingTheCloudFileMidDownloadIsRefused() async throws {
        let setup = try Setup()
        let old = Self.bytes(2_000_000, seed: 3)
        let new = Self.bytes(2_000_000, seed: 4)
        let id = try NodeID("changing")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("old", old), nodeID: id)
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        // Prepare the replacement cloud file (same node key, new content) and swap it in after two parts.
        let key = try setup.a.outline.contentKey(for: id).key
        let replacement = setup.directory + "/replacement.ddc"
        _ = try FileConversion.encryptCloudFile(metadata: nil, thumbnail: nil, dataFileAt: setup.file("new", new), key: key, to: replacement)
        let proxy = FaultyRemote(setup.remote)
        let replacedKey = try setup.cloudKey(id)
        proxy.replaceAfterReads.withLock { $0 = (2, replacedKey, try! Data(contentsOf: URL(fileURLWithPath: replacement))) }
        // Another version in the place of the one the record names: refused at the restart (its header's file
        // ID is not the record's), never served, never a mix of two.
        do {
            _ = try await DownloadManager(manager: setup.b, remote: proxy, partSize: 128 * 1024, parallelParts: 1).nodeData(id)
            Issue.record("another version was served")
        } catch let error as RemoteError {
            #expect(error.message.contains("not the version its record names"), "\(error)")
        }
        await #expect(try setup.b.files.nodeFile(id) == nil)
        await #expect(try setup.b.files.partialDownload(id) == nil)
    }

    @Test func truncatedBodiesAreRefused() async throws {
        let setup = try Setup()
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("d", Self.bytes(500_000, seed: 5)), nodeID: NodeID("t"))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let proxy = FaultyRemote(setup.remote)
        proxy.truncate.store(true, ordering: .relaxed)
        do {
            _ = try await DownloadManager(manager: setup.b, remote: proxy).nodeData(NodeID("t"))
            Issue.record("a truncated body was accepted")
        } catch let error as RemoteError {
            #expect(error.code == .invalidResponse)
        }
        await #expect(try setup.b.files.nodeFile(NodeID("t")) == nil)
    }

    @Test func concurrentRequestsShareOneTransfer() async throws {
        let setup = try Setup()
        let data = Self.bytes(1_000_000, seed: 6)
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("d", data), nodeID: NodeID("popular"))
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        let counting = FaultyRemote(setup.remote)
        let downloads = DownloadManager(manager: setup.b, remote: counting, partSize: 128 * 1024)
        let results = try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<20 { group.addTask { try self.plaintext(try await downloads.nodeData(NodeID("popular"))) } }
            return try await group.reduce(into: [Data]()) { $0.append($1) }
        }
        #expect(results.count == 20 && results.allSatisfy { $0 == data })
        let total = try setup.downloadLength(NodeID("popular"))
        #expect(counting.bytesRead.load(ordering: .relaxed) == total, "exactly one transfer")
    }

    @Test func pullFollowsChangesAndDeletionsButNotOutages() async throws {
        let setup = try Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let syncB = CloudSync(manager: setup.b, remote: setup.remote)
        try await syncA.push(dataFile: setup.file("1", Data("one".utf8)), nodeID: NodeID("keep"))
        try await syncA.push(dataFile: setup.file("2", Data("two".utf8)), nodeID: NodeID("gone"))
        _ = try await syncB.pull()
        _ = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(NodeID("keep"))
        await #expect(try setup.b.files.nodeFile(NodeID("keep")) != nil)

        // A new version of "keep" invalidates B's local copy; the next read gets the new bytes.
        try await syncA.push(dataFile: setup.file("1b", Data("one, changed".utf8)), nodeID: NodeID("keep"))
        try await syncA.deleteNode(NodeID("gone"))
        let result = try await syncB.pull()
        #expect(result.changed == 1 && result.deleted == 1)
        await #expect(try setup.b.files.nodeFile(NodeID("keep")) == nil, "the stale copy is gone")
        #expect(try await setup.b.outline.entry(NodeID("gone")) == nil)
        let fresh = try await DownloadManager(manager: setup.b, remote: setup.remote).nodeData(NodeID("keep"))
        #expect(try plaintext(fresh) == Data("one, changed".utf8))

        // An unreachable remote fails the pull and deletes nothing.
        let vanished = FileRemote(root: setup.directory + "/no-such-remote")
        await #expect(throws: RemoteError.self) { _ = try await CloudSync(manager: setup.b, remote: vanished).pull() }
        #expect(try await setup.b.outline.entry(NodeID("keep")) != nil)
        // Writes and deletes to a remote folder that is gone (an unmounted share) are unreachable too, and
        // make no new, empty folder in its place.
        for attempt in 0..<2 {
            do throws(RemoteError) {
                if attempt == 0 { _ = try await vanished.write("x", data: Data("x".utf8)) } else { try await vanished.delete("x") }
                Issue.record("attempt \(attempt) reached a remote that is not there")
            } catch {
                #expect(error.code == .unreachable, "\(error)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: setup.directory + "/no-such-remote"))
    }

    @Test func hostileRecordsAreRefused() async throws {
        let setup = try Setup()
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("1", Data("x".utf8)), nodeID: NodeID("real"))
        // A sealed record copied under another node's name does not open there (its AAD binds the node ID).
        let record = try #require(try await setup.remote.readAll(CloudLayout.record(NodeID("real"), with: setup.a)))
        _ = try await setup.remote.write(CloudLayout.record(NodeID("impostor"), with: setup.a), data: record)
        // Refused and skipped, with a line that says why; the good record is pulled.
        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        // (B does not know the impostor's node: the line names its object, the bucket knows no node ID.)
        let impostorKey = CloudLayout.record(try NodeID("impostor"), with: setup.a)
        #expect(pulled.skipped == ["the record \(impostorKey) does not authenticate (altered, moved from another node, or sealed under another key)"],
                "\(pulled.skipped)")
        #expect(pulled.added == 1)
        #expect(try await setup.b.outline.entry(NodeID("real")) != nil)
        #expect(try await setup.b.outline.entry(NodeID("impostor")) == nil, "a record for another node was accepted")
        try await setup.remote.delete(CloudLayout.record(NodeID("impostor"), with: setup.a))
        // Opened or sealed: a parent that is not a node ID, and a name no file system would take.
        let real = try NodeRecord.open(record, expected: NodeID("real"), with: setup.b)
        var plain = real
        for (field, value) in [("parent", "../../etc"), ("name", String(repeating: "n", count: 256)), ("name", "a\u{0}b")] {
            var hostile = plain
            if field == "parent" { hostile.parentID = value } else { hostile.name = value }
            #expect(throws: RemoteError.self, "\(field) \(value.debugDescription)") {
                _ = try NodeRecord.parse(hostile.encoded(), expected: NodeID("real"))
            }
            var sealed = real
            if field == "parent" { sealed.parentID = value } else { sealed.name = value }
            let bytes = try sealed.sealed(with: setup.a)
            #expect(throws: RemoteError.self, "sealed \(field) \(value.debugDescription)") {
                _ = try NodeRecord.open(bytes, expected: NodeID("real"), with: setup.b)
            }
        }
        plain.name = String(repeating: "é", count: 127)
        #expect(try NodeRecord.parse(plain.encoded(), expected: NodeID("real")).name == plain.name, "254 bytes of UTF-8 are a name")
        _ = try await setup.remote.write(CloudLayout.legacyRecord(NodeID("garbage")), data: Data("<xml/>".utf8))
        let again = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(again.skipped.count == 1 && again.skipped[0].contains("node 'garbage' is unsealed (plain JSON") && again.unchanged == 1, "\(again.skipped)")
        #expect(try await setup.b.outline.entry(NodeID("real")) != nil, "a skipped record deletes nothing")
        // Keys that escape the bucket are refused by the remote itself.
        await #expect(throws: RemoteError.self) { _ = try await setup.remote.info("../outside") }
        await #expect(throws: RemoteError.self) { _ = try await setup.remote.info("/etc/passwd") }
    }

    @Test func remoteURLs() throws {
        #expect(try RemoteURL.remote("file:///tmp/x").url == "file:///tmp/x")
        for bad in ["ftp://x/y", "file://relative", "not a url", "http:///no-host"] {
            #expect(throws: RemoteError.self, "\(bad)") { _ = try RemoteURL.remote(bad) }
        }
    }
}
