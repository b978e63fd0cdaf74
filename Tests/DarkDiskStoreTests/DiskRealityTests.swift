import DarkDiskTestSupport
import DarkDiskStore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What is on disk wins. A purged cache folder means "not local"; orphan files are swept
/// at start-up (unless someone holds them); a full disk fails an import cleanly; the free-space floor evicts.
@Suite struct DiskRealityTests {
    @Test func purgedCacheFolderMakesCacheFilesNotLocal() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for i in 0..<3 { try importFile(manager, "c\(i)", size: 20_000) }
        try importFile(manager, "c0", size: 3_000, kind: .thumbnail)
        try importFile(manager, "p", persistent: true)
        #expect(try poolStatus(manager, .data).cachedSize > 0)
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)

        #expect(try !manager.files.hasNodeFile(NodeID("c0")))
        for i in 0..<3 {
            #expect(try manager.files.nodeFile(NodeID("c\(i)")) == nil, "a purged cache file is not local")
            #expect(try manager.files.storedFile(NodeID("c\(i)")) == nil, "and its index row is dropped")
        }
        #expect(try manager.files.nodeFile(NodeID("c0"), kind: .thumbnail) == nil)
        #expect(try poolStatus(manager, .data).cachedSize == 0)
        #expect(try poolStatus(manager, .thumbnails).cachedSize == 0)
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("p")))) == contents("p"), "persistent files are untouched")
        #expect(try manager.files.storedNodeIDs().map(\.rawValue) == ["p"])
    }

    @Test func purgedCacheFolderDoesNotBreakEvictionOrMigration() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for i in 0..<4 { try importFile(manager, "c\(i)", size: 20_000) }
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        try manager.files.makeNodeFilePersistent(true, nodeID: NodeID("c0"))
        #expect(try manager.files.nodeFile(NodeID("c0")) == nil, "there was nothing left to migrate")
        try manager.files.setMaxSize(0, for: .data)
        #expect(try poolStatus(manager, .data).cachedSize == 0, "eviction drops rows of files that are gone")
        #expect(try manager.files.storedNodeIDs().isEmpty)
        // The pool works again afterwards.
        try manager.files.setMaxSize(1 << 20, for: .data)
        try importFile(manager, "again")
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("again")))) == contents("again"))
    }

    @Test func orphanFilesAreRemovedWhenTheStoreOpens() async throws {
        let store = try TemporaryStore()
        do {
            let manager = try store.create()
            try importFile(manager, "cached")
            try importFile(manager, "kept", persistent: true)
        }
        let cacheOrphan = store.location.cacheFiles + "/ab/" + randomFileName()
        let persistentOrphan = store.location.persistentFiles + "/cd/" + randomFileName()
        let lockedOrphan = store.location.cacheFiles + "/ef/" + randomFileName()
        let lockedStaging = store.location.cacheStaging + "/" + randomFileName()
        for path in [cacheOrphan, persistentOrphan, lockedOrphan, lockedStaging] {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try TemporaryStore.bytes(4_096).write(to: URL(fileURLWithPath: path))
        }
        // Someone (an import in flight in another process) holds these two.
        let locks = [lockedOrphan, lockedStaging].compactMap(lockShared)
        defer { for fd in locks { close(fd) } }
        #expect(locks.count == 2)

        let manager = try store.open()
        let swept = await eventually(within: 60) { !fileExists(cacheOrphan) && !fileExists(persistentOrphan) }
        #expect(swept, "files no index row knows are removed by the start-up sweep")
        #expect(fileExists(lockedOrphan), "a locked file is not an orphan")
        #expect(fileExists(lockedStaging), "a locked staging file is not removed")
        await #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("cached")))) == contents("cached"))
        await #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("kept")))) == contents("kept"))
    }

    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs (mount -t tmpfs)"))
    func fullDiskFailsTheImportCleanly() throws {
        let store = try TmpfsStore(cacheMiB: 1)
        let manager = try store.create()
        let id = try NodeID("big")
        do {
            try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(3_000_000)), nodeID: id)
            Issue.record("a 3 MB import into a 1 MiB cache folder succeeded")
        } catch {
            #expect(error.code == .io)
            #expect(error.errno == ENOSPC, "errno is \(String(describing: error.errno)): \(error.message)")
            #expect(!error.message.contains("\n"))
        }
        #expect(regularFiles(under: store.location.cacheFiles).isEmpty, "no partial file is left in files/")
        #expect(regularFiles(under: store.location.cacheStaging).isEmpty, "no partial file is left in tmp/")
        #expect(try manager.files.storedFile(id) == nil, "the index has no row for the failed import")
        #expect(try manager.files.nodeFile(id) == nil)
        #expect(try poolStatus(manager, .data).cachedSize == 0)
        #expect(freeFraction(of: store.mount.path) > 0.9, "the space is given back")

        try importFile(manager, "small", size: 100_000)
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("small")))) == contents("small", size: 100_000))
    }

    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs (mount -t tmpfs)"))
    func freeSpaceFloorEvictsLeastRecentlyAccessedFiles() throws {
        let store = try TmpfsStore(cacheMiB: 8)
        let manager = try store.create()
        try manager.files.setMaxSize(1 << 30, for: .data) // the pool limit is not what evicts here
        try manager.files.setMinimumFreeFraction(0) // fill first, then turn the floor on
        var paths: [String] = []
        while freeFraction(of: store.mount.path) >= 0.03 && paths.count < 60 {
            paths.append(try importFile(manager, "f\(paths.count)", size: 200_000).path)
        }
        #expect(freeFraction(of: store.mount.path) < 0.10)
        #expect(try manager.files.enforceFreeSpace() == 0, "a floor of 0 evicts nothing")
        #expect(paths.allSatisfy(fileExists))
        try touch(manager, "f0")

        try manager.files.setMinimumFreeFraction(0.10)
        #expect(freeFraction(of: store.mount.path) >= 0.10, "free space is back above the floor")
        #expect(fileExists(paths[0]), "the touched file is the most recently accessed and stays")
        #expect(!fileExists(paths[1]), "the least recently accessed goes first")
        #expect(fileExists(paths[paths.count - 1]), "the newest file stays")
        let present = paths.indices.dropFirst().map { fileExists(paths[$0]) }
        let firstKept = try #require(present.firstIndex(of: true))
        #expect(present[firstKept...].allSatisfy { $0 }, "files go in LRU order: \(present)")
        #expect(firstKept < 10, "no more than needed is evicted (\(firstKept) files went)")
    }

    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs (mount -t tmpfs)"))
    func enforceFreeSpaceBringsFreeSpaceAboveTheFloor() throws {
        let store = try TmpfsStore(cacheMiB: 8)
        let manager = try store.create()
        try manager.files.setMaxSize(1 << 30, for: .data)
        #expect(try manager.files.minimumFreeFraction() == 0.10)
        var paths: [String] = []
        while freeFraction(of: store.mount.path) >= 0.05 && paths.count < 60 {
            paths.append(try importFile(manager, "f\(paths.count)", size: 300_000).path)
        }
        try manager.files.enforceFreeSpace()
        #expect(freeFraction(of: store.mount.path) >= 0.10, "enforceFreeSpace frees space down to the floor")
        #expect(!fileExists(paths[0]), "the least recently accessed file went")
        #expect(fileExists(paths[paths.count - 1]), "the most recent file stayed")
        let status = try poolStatus(manager, .data)
        let onDisk = regularFiles(under: store.location.cacheFiles).count
        #expect(status.fileCount == onDisk, "index and disk agree after eviction")
    }

    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root to mount a tmpfs (mount -t tmpfs)"))
    func migrationAcrossFileSystemsRemovesTheOriginalAtOnce() throws {
        // Persistent files live under the data folder, cache files on the tmpfs: a migration must copy.
        let store = try TmpfsStore(cacheMiB: 4)
        let manager = try store.create()
        let id = try NodeID("x")
        let persistentPath = try importFile(manager, "x", size: 60_000, persistent: true).path
        try manager.files.makeNodeFilePersistent(false, nodeID: id)
        let cached = try #require(try manager.files.nodeFile(id))
        #expect(cached.cryptoFile.path.hasPrefix(store.location.cacheFiles + "/"))
        #expect(try decrypt(cached) == contents("x", size: 60_000))
        #expect(!fileExists(persistentPath), "the persistent original is deleted when the migration returns")
        _ = consume cached

        let cachePath = try #require(try manager.files.nodeFile(id)).cryptoFile.path
        try manager.files.makeNodeFilePersistent(true, nodeID: id)
        #expect(try decrypt(try #require(try manager.files.nodeFile(id))) == contents("x", size: 60_000))
        #expect(!fileExists(cachePath), "the cache original is deleted when the migration returns")
    }

    private func randomFileName() -> String {
        String(format: "%016llx%016llx.ddf", UInt64.random(in: 0...UInt64.max), UInt64.random(in: 0...UInt64.max))
    }
}
