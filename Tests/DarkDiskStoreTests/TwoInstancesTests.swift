import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing

/// Two DiskManagers on one store stand in for two processes; a token held by one keeps the
/// file from eviction, expiry, deletion and migration by the other.
@Suite struct TwoInstancesTests {
    @Test func tokenInOneInstanceBlocksEvictionByTheOther() async throws {
        let store = try TemporaryStore()
        let holder = try store.create()
        let other = try store.open()
        for i in 0..<3 { try importFile(holder, "n\(i)") }
        var held: DiskExport? = try await holder.files.nodeFile(NodeID("n1"))
        let path = held!.cryptoFile.path

        try other.files.setMaxSize(0, for: .data)
        #expect(try !isStored(other, "n0") && !isStored(other, "n2"))
        #expect(try isStored(other, "n1"), "the other instance skips the held file")
        #expect(fileExists(path))
        #expect(try decrypt(held!) == contents("n1"))

        held = nil
        let gone = try await eventually(within: 60) { try poolStatus(other, .data).cachedSize == 0 }
        #expect(gone, "once released, the pool is trimmed to its max (0)")
        #expect(!fileExists(path))
    }

    @Test func tokenInOneInstanceBlocksDeletionByTheOther() throws {
        let store = try TemporaryStore()
        let holder = try store.create()
        let other = try store.open()
        try importFile(holder, "d", size: 40_000, persistent: true)
        var held: DiskExport? = try holder.files.nodeFile(NodeID("d"))
        let path = held!.cryptoFile.path
        try other.deleteNodes([NodeID("d")])
        #expect(try holder.files.nodeFile(NodeID("d")) == nil, "the delete is seen by both instances")
        #expect(fileExists(path), "the file waits for the other instance's token")
        #expect(try decrypt(held!) == contents("d", size: 40_000))
        held = nil
        #expect(!fileExists(path), "the holder's release completes the other instance's delete")
    }

    @Test func tokenInOneInstanceBlocksExpiryByTheOther() async throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let holder = try store.create(clock: clock)
        let other = try store.open(clock: clock)
        var diskImport = DiskImport(cleartextData: contents("e"))
        diskImport.expiration = 1
        var held: DiskExport? = try await holder.importNodeFile(diskImport, nodeID: NodeID("e"))
        let path = held!.cryptoFile.path
        clock.advance(by: 1.2)
        try other.files.expireFiles() // (or a maintenance timer did it already)
        await #expect(try other.files.nodeFile(NodeID("e")) == nil)
        #expect(fileExists(path))
        #expect(try decrypt(held!) == contents("e"))
        held = nil
        #expect(await eventually(within: 60) { !fileExists(path) })
    }

    @Test func tokenInOneInstanceMakesTheOtherCopyOnMigration() throws {
        let store = try TemporaryStore()
        let holder = try store.create()
        let other = try store.open()
        try importFile(holder, "m", size: 25_000)
        var held: DiskExport? = try holder.files.nodeFile(NodeID("m"))
        let path = held!.cryptoFile.path
        try other.files.makeNodeFilePersistent(true, nodeID: NodeID("m"))
        #expect(fileExists(path), "the held original stays")
        do {
            let migrated = try #require(try holder.files.nodeFile(NodeID("m")), "the holder sees the migrated file")
            #expect(migrated.isStoredPersistently)
            #expect(try decrypt(migrated) == contents("m", size: 25_000))
        }
        #expect(try decrypt(held!) == contents("m", size: 25_000))
        held = nil
        #expect(!fileExists(path))
    }

    @Test func deleteDeferredByAHolderThatDiedIsCompletedAtTheNextStart() throws {
        // A process that held a file and was killed never calls back; its lock goes with it.
        let store = try TemporaryStore()
        let path: String
        var foreignLock: Int32?
        do {
            let manager = try store.create()
            path = try importFile(manager, "d", persistent: true).path
            foreignLock = lockShared(path)
            #expect(foreignLock != nil)
            try manager.deleteNode(NodeID("d"))
            #expect(fileExists(path), "the holder keeps the file for now")
        }
        if let fd = foreignLock { close(fd) } // the holder dies
        let reopened = try store.open()
        #expect(!fileExists(path), "opening the store finishes the delete nobody was left to finish")
        #expect(try reopened.files.storedNodeIDs().isEmpty)
    }

    @Test func importByOneIsSeenByTheOtherAndCountsInItsPool() throws {
        let store = try TemporaryStore()
        let first = try store.create()
        let second = try store.open()
        let stored = try importFile(first, "shared", size: 12_345)
        #expect(try poolStatus(second, .data).cachedSize == stored.storedSize)
        #expect(try decrypt(try #require(try second.files.nodeFile(NodeID("shared")))) == contents("shared", size: 12_345))
        try second.files.setMaxSize(500_000, for: .data)
        #expect(try first.files.settings(for: .data).maxSize == 500_000, "settings are shared through the index")
    }
}
