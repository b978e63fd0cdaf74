@testable import DarkDiskStore
import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A file whose export (retain token) is alive survives eviction, expiry, delete and
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

    /// Only a cache file's release can let an eviction go further: letting go of a persistent file (every
    /// drive file until it is uploaded; `tar x` closes thousands a second) measures no pool.
    @Test func onlyACacheFilesReleaseMeasuresThePool() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var persistent = DiskImport(cleartextData: contents("p"))
        persistent.storePersistently = true
        var held: DiskExport? = try await manager.importNodeFile(persistent, nodeID: NodeID("p"))
        manager.files.waitForMaintenance()
        // Released on the maintenance queue, the due evictions are seen before any can run (or the timer's).
        let afterPersistent = manager.files.maintenanceQueue.sync { () -> Set<Pool> in
            held = nil
            return manager.files.evictionsDue.withLock { $0.pools }
        }
        #expect(afterPersistent.isEmpty, "a persistent file's release")

        held = try await manager.importNodeFile(DiskImport(cleartextData: contents("c")), nodeID: NodeID("c"))
        manager.files.waitForMaintenance()
        let afterCache = manager.files.maintenanceQueue.sync { () -> Set<Pool> in
            held = nil
            return manager.files.evictionsDue.withLock { $0.pools }
        }
        #expect(afterCache == [.data], "a cache file's release")
        manager.files.waitForMaintenance()
        _ = held
    }

    /// A held file next in LRU order counts as going: it stays while held, no newer file goes in its place
    /// (the pool may exceed its max meanwhile, as the seeds say), and its release evicts it.
    @Test func retainedFileIsKeptWhileHeldAndGoesAfterRelease() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var held: DiskExport? = try await manager.importNodeFile(DiskImport(cleartextData: contents("a0")), nodeID: NodeID("a0"))
        let heldPath = held!.cryptoFile.path
        let unit = held!.storedSize
        try manager.files.setMaxSize(unit * 7 / 2, for: .data) // 3.5 files
        try importFile(manager, "a1")
        try importFile(manager, "a2")
        try importFile(manager, "a3")
        // 4 units > 3.5: a0 is the least recently accessed; held, it stays, and a1 does not go in its place.
        #expect(try isStored(manager, "a0"), "a retained file is never evicted")
        #expect(try isStored(manager, "a1") && isStored(manager, "a2") && isStored(manager, "a3"), "no newer file goes in the held one's place")
        #expect(try poolStatus(manager, .data).cachedSize == 4 * unit, "over the max while the file is held")

        try manager.files.setMaxSize(0, for: .data)
        #expect(try !isStored(manager, "a1") && !isStored(manager, "a2") && !isStored(manager, "a3"))
        #expect(fileExists(heldPath))
        #expect(try poolStatus(manager, .data).cachedSize == unit, "the held file still counts while held")
        #expect(try decrypt(held!) == contents("a0"), "the token's descriptor stays readable")

        try manager.files.setMaxSize(unit * 7 / 2, for: .data)
        held = nil
        // The release kicked an eviction on the store's maintenance queue; once that has run, the file is gone
        // if the pool is over its max. Here it is not: a0 stays.
        manager.files.waitForMaintenance()
        #expect(try isStored(manager, "a0"), "released under the max: kept")
        try manager.files.setMaxSize(0, for: .data)
        #expect(try poolStatus(manager, .data).cachedSize == 0)
        #expect(!fileExists(heldPath), "unheld, it is evicted from disk")
        await #expect(try manager.files.storedFile(NodeID("a0")) == nil)
    }

    /// A cache file that cannot be opened (replaced by a symbolic link behind the store's back) is not
    /// "held": no release would ever come for it, so eviction takes the next file instead of waiting.
    @Test func aFileThatCannotBeOpenedDoesNotHoldUpEviction() async throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let planted = try importFile(manager, "p0")
        try importFile(manager, "p1")
        try importFile(manager, "p2")
        try FileManager.default.removeItem(atPath: planted.path)
        try FileManager.default.createSymbolicLink(atPath: planted.path, withDestinationPath: "/etc/hostname")
        try manager.files.setMaxSize(planted.storedSize * 5 / 2, for: .data)  // 2.5 files
        #expect(try !isStored(manager, "p1"), "the next file goes in the unopenable one's place")
        #expect(try isStored(manager, "p2"))
    }

    /// Five held files, the least recently used, released together (in one go, as a client
    /// dropping an array of exports) while the pool is over its max: they go in LRU order, and no newer file
    /// goes in their place, however the releases and the evictions they kick interleave.
    @Test func leastRecentlyUsedGoesFirstWhenHeldFilesAreReleasedTogether() async throws {
        for round in 0..<5 {
            let store = try TemporaryStore()
            let manager = try store.create()
            var exports: [DiskExport] = []
            for i in 0..<5 {
                exports.append(try await manager.importNodeFile(DiskImport(cleartextData: contents("h\(i)")), nodeID: NodeID("h\(i)")))
            }
            let unit = exports[0].storedSize
            try manager.files.setMaxSize(unit * 8, for: .data)
            for i in 0..<5 { try importFile(manager, "n\(i)") }
            // 10 files for 8: h0, h1 and h2 (low water 7.92 files) are next but held; nothing else goes.
            for i in 0..<5 { #expect(try isStored(manager, "n\(i)"), "round \(round): n\(i) went in a held file's place") }
            #expect(try poolStatus(manager, .data).cachedSize == 10 * unit)

            // (An async import's result may still be held, for a moment, by the blocking-pool thread that made
            // it: the last release, and the eviction it kicks, can come just after the array is dropped.)
            exports = []
            let evicted = try await eventually(within: 30) {
                manager.files.waitForMaintenance()
                return try poolStatus(manager, .data).cachedSize <= 8 * unit
            }
            #expect(evicted, "round \(round): the pool stayed over its max after the held files were released")
            let order = (0..<5).map { "h\($0)" } + (0..<5).map { "n\($0)" }
            let stored = try order.map { try isStored(manager, $0) }
            // h0 and h1 go, and h2 as well if one pass saw all three released (it evicts down to the low water
            // mark); the n files all stay.
            let gone = stored.firstIndex(of: true) ?? stored.count
            #expect((2...3).contains(gone) && stored[gone...].allSatisfy { $0 },
                    "round \(round): \(zip(order, stored).map { "\($0)=\($1 ? "kept" : "gone")" })")
            #expect(try poolStatus(manager, .data).cachedSize <= 8 * unit)
        }
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
        _ = try manager.files.expireFiles()
        await #expect(try manager.files.nodeFile(NodeID("e")) == nil, "an expired file is not handed out")
        #expect(try !manager.files.hasNodeFile(NodeID("e")))
        #expect(fileExists(path), "an expired but retained file stays on disk")
        #expect(try decrypt(held!) == contents("e"))
        held = nil
        #expect(await eventually(within: 60) { !fileExists(path) }, "the release completes the expiry")
    }

    @Test func retainedFileSurvivesDeleteAndLastTokenCompletesIt() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("d")
        try importFile(manager, "d", size: 100_000)
        var first: DiskExport? = try manager.files.nodeFile(id)
        var second: DiskExport? = try manager.files.nodeFile(id)
        let path = try #require(first).cryptoFile.path
        try manager.deleteNode(id)
        #expect(try manager.files.nodeFile(id) == nil)
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
        var held: DiskExport? = try manager.files.nodeFile(id)
        let oldPath = held!.cryptoFile.path
        #expect(try manager.files.makeNodeFilePersistent(true, nodeID: id))
        do {
            let moved = try #require(try manager.files.nodeFile(id))
            #expect(moved.cryptoFile.path != oldPath)
            #expect(moved.cryptoFile.path.hasPrefix(store.location.persistentFiles + "/"))
            #expect(try decrypt(moved) == contents("m", size: 30_000))
        }
        #expect(fileExists(oldPath), "a retained file keeps its old name until released")
        #expect(try decrypt(held!) == contents("m", size: 30_000))
        held = nil
        #expect(!fileExists(oldPath), "the original is deleted when its token is released")
        #expect(try decrypt(try #require(try manager.files.nodeFile(id))) == contents("m", size: 30_000))
    }

    @Test func tokenDescriptorReadsAfterTheFileIsGoneFromItsFolder() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let held = try manager.importNodeFile(DiskImport(cleartextData: contents("x", size: 70_000)), nodeID: NodeID("x"))
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        #expect(try manager.files.nodeFile(NodeID("x")) == nil)
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
        let again = try await store.files.nodeFile(NodeID("photo1"))
        #expect(again != nil)
        try store.outline.setPin(true, on: NodeID("photo1"))
        #expect(try store.outline.isPinned(NodeID("photo1")))
    }
}
