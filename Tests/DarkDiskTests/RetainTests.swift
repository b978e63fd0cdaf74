import DarkDisk
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 3, part 2: a file whose export (retain token) is alive survives eviction, expiry, delete and
/// migration, stays readable through the token's descriptor, and goes away once released.
@Suite struct RetainTests {
    /// A reader or a chunk sequence made from an export keeps the export's token: the caller may drop the
    /// export, and a delete waits for the reader to go (it used to borrow the descriptor, which then closed
    /// under it and could be reused by another file).
    @Test func aReaderMadeFromAnExportKeepsTheFile() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var reader: CryptoFileReader?
        var chunks: CryptoFileChunks?
        let path: String
        do {
            let export = try await manager.importNodeFile(DiskImport(cleartextData: contents("r", size: 200_000)), nodeID: NodeID("r"))
            path = export.cryptoFile.path
            reader = try export.reader()
            chunks = export.chunks()
        }
        try await manager.deleteNode(NodeID("r"))
        #expect(fileExists(path), "the reader's token holds the file")
        let bytes = try reader!.read(section: reader!.dataSection, offset: 0, count: 200_000)
        #expect(Data(bytes) == contents("r", size: 200_000))
        reader = nil
        #expect(fileExists(path), "the chunk sequence holds it too")
        var streamed = Data()
        for try await piece in chunks! { streamed += piece }
        #expect(streamed == contents("r", size: 200_000))
        chunks = nil
        #expect(!fileExists(path), "gone with the last holder")
    }

    @Test func retainedFileIsSkippedByEvictionAndGoesAfterRelease() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var held: DiskExport? = try await manager.importNodeFile(DiskImport(cleartextData: contents("a0")), nodeID: NodeID("a0"))
        let heldPath = held!.cryptoFile.path
        let unit = held!.storedSize
        try manager.setMaxSize(unit * 7 / 2, for: .data) // 3.5 files
        try importFile(manager, "a1")
        try importFile(manager, "a2")
        // Let the evictions queued by the releases above finish (two at once over-evict: ConcurrentEvictionTests).
        manager.waitForMaintenance()
        try importFile(manager, "a3")
        // 4 units > 3.5: a0 is the least recently accessed but held, so a1 goes instead.
        #expect(try isStored(manager, "a0"), "a retained file is skipped by eviction")
        #expect(try !isStored(manager, "a1"), "the next least recently accessed file is evicted instead")
        #expect(try isStored(manager, "a2") && isStored(manager, "a3"))

        try manager.setMaxSize(0, for: .data)
        #expect(try !isStored(manager, "a2") && !isStored(manager, "a3"))
        #expect(fileExists(heldPath))
        #expect(try poolStatus(manager, .data).cachedSize == unit, "the held file still counts while held")
        #expect(try decrypt(held!) == contents("a0"), "the token's descriptor stays readable")

        held = nil
        // The release kicked an eviction on the store's maintenance queue; once that has run, the file is gone.
        manager.waitForMaintenance()
        #expect(try poolStatus(manager, .data).cachedSize == 0, "the pool is back under its max after the release")
        #expect(!fileExists(heldPath), "the released file is evicted from disk")
        #expect(try manager.storedFile(NodeID("a0")) == nil)
    }

    @Test func retainedFileSurvivesExpiry() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        var diskImport = DiskImport(cleartextData: contents("e"))
        diskImport.expiration = 1
        var held: DiskExport? = try await manager.importNodeFile(diskImport, nodeID: NodeID("e"))
        let path = held!.cryptoFile.path
        clock.advance(by: 1.2)
        _ = try manager.expireFiles()
        await #expect(try manager.nodeFile(NodeID("e")) == nil, "an expired file is not handed out")
        #expect(try !manager.hasNodeFile(NodeID("e")))
        #expect(fileExists(path), "an expired but retained file stays on disk")
        #expect(try decrypt(held!) == contents("e"))
        held = nil
        #expect(try await eventually(within: 3) { !fileExists(path) }, "the release completes the expiry")
    }

    @Test func retainedFileSurvivesDeleteAndLastTokenCompletesIt() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("d")
        try importFile(manager, "d", size: 100_000)
        var first: DiskExport? = try manager.nodeFile(id)
        var second: DiskExport? = try manager.nodeFile(id)
        let path = try #require(first).cryptoFile.path
        try manager.deleteNode(id)
        #expect(try manager.nodeFile(id) == nil)
        #expect(try poolStatus(manager, .data).cachedSize == 0, "a deleted file no longer counts in the pool")
        #expect(try decrypt(first!) == contents("d", size: 100_000))
        first = nil
        #expect(fileExists(path), "another token still holds the file")
        #expect(try decrypt(second!) == contents("d", size: 100_000), "the other token still reads it")
        second = nil
        #expect(!fileExists(path), "the last release deletes the file")
    }

    @Test func retainedFileSurvivesMigrationAndTheOriginalGoesOnRelease() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("m")
        try importFile(manager, "m", size: 30_000)
        var held: DiskExport? = try manager.nodeFile(id)
        let oldPath = held!.cryptoFile.path
        #expect(try manager.makeNodeFilePersistent(true, nodeID: id))
        do {
            let moved = try #require(try manager.nodeFile(id))
            #expect(moved.cryptoFile.path != oldPath)
            #expect(moved.cryptoFile.path.hasPrefix(store.location.persistentFiles + "/"))
            #expect(try decrypt(moved) == contents("m", size: 30_000))
        }
        #expect(fileExists(oldPath), "a retained file keeps its old name until released")
        #expect(try decrypt(held!) == contents("m", size: 30_000))
        held = nil
        #expect(!fileExists(oldPath), "the original is deleted when its token is released")
        #expect(try decrypt(try #require(try manager.nodeFile(id))) == contents("m", size: 30_000))
    }

    @Test func tokenDescriptorReadsAfterTheFileIsGoneFromItsFolder() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let held = try manager.importNodeFile(DiskImport(cleartextData: contents("x", size: 70_000)), nodeID: NodeID("x"))
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        #expect(try manager.nodeFile(NodeID("x")) == nil)
        var st = stat()
        #expect(fstat(held.retainToken.fileDescriptor, &st) == 0)
        #expect(try decrypt(held) == contents("x", size: 70_000), "an open token keeps reading even after a purge")
    }
}

/// The README's Swift example, as written there.
@Suite struct ReadmeExampleTests {
    @Test func theStoreExampleRuns() async throws {
        let temporary = try TemporaryStore()
        let photo = temporary.directory + "/photo.jpg"
        try contents("photo", size: 10_000).write(to: URL(fileURLWithPath: photo))
        let store = try DiskManager.create(at: StoreLocation(directory: temporary.directory + "/srv"))
        let export = try await store.importNodeFile(DiskImport(cleartextFilePath: photo), nodeID: NodeID("photo1"))
        let reader = try export.reader()
        let head = try reader.read(section: reader.dataSection, offset: 0, count: 4096)
        #expect(Data(head) == contents("photo", size: 10_000).prefix(4096))
    }
}
