import DarkDiskTestSupport
import DarkDiskStore
import Foundation
import Testing

/// Files move between the persistent folder and the cache pool, intact; retained files
/// are copied; avatars migrate per user; the upload hooks migrate or delete.
@Suite struct MigrationTests {
    @Test func nodeFileMovesToPersistentAndBack() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("n")
        let size = 150_000
        let cached = try importFile(manager, "n", size: size)
        #expect(cached.path.hasPrefix(store.location.cacheFiles + "/"))

        #expect(try manager.files.makeNodeFilePersistent(true, nodeID: id))
        let persistent = try #require(try manager.files.nodeFile(id))
        #expect(persistent.cryptoFile.path.hasPrefix(store.location.persistentFiles + "/"))
        #expect(persistent.mode == .persistent && persistent.isStoredPersistently)
        #expect(try manager.files.storedFile(id)?.mode == .persistent)
        #expect(try decrypt(persistent) == contents("n", size: size))
        #expect(!fileExists(cached.path), "the cache copy is gone")
        var status = try poolStatus(manager, .data)
        #expect(status.cachedSize == 0 && status.persistentSize == cached.storedSize)
        let persistentPath = persistent.cryptoFile.path
        _ = consume persistent

        #expect(try manager.files.makeNodeFilePersistent(false, nodeID: id))
        let back = try #require(try manager.files.nodeFile(id))
        #expect(back.cryptoFile.path.hasPrefix(store.location.cacheFiles + "/"))
        #expect(back.mode == .cache)
        #expect(try decrypt(back) == contents("n", size: size))
        #expect(!fileExists(persistentPath), "the persistent copy is gone")
        status = try poolStatus(manager, .data)
        #expect(status.cachedSize == cached.storedSize && status.persistentSize == 0)
    }

    @Test func migrationSurvivesARestart() throws {
        let store = try TemporaryStore()
        do {
            let manager = try store.create()
            try importFile(manager, "n")
            try manager.files.makeNodeFilePersistent(true, nodeID: NodeID("n"))
        }
        let reopened = try store.open()
        let export = try #require(try reopened.files.nodeFile(NodeID("n")))
        #expect(export.isStoredPersistently)
        #expect(try decrypt(export) == contents("n"))
    }

    @Test func unknownFileIsNotMigrated() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try importFile(manager, "n")
        #expect(try !manager.files.makeNodeFilePersistent(true, nodeID: NodeID("other")))
        #expect(try !manager.files.makeNodeFilePersistent(true, nodeID: NodeID("n"), kind: .thumbnail))
        #expect(try manager.files.storedFile(NodeID("n"))?.mode == .cache)
    }

    @Test func onlyTheGivenKindMigrates() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try importFile(manager, "n")
        try importFile(manager, "n", size: 2_000, kind: .thumbnail)
        try manager.files.makeNodeFilePersistent(true, nodeID: NodeID("n"), kind: .thumbnail)
        #expect(try manager.files.storedFile(NodeID("n"), kind: .thumbnail)?.mode == .persistent)
        #expect(try manager.files.storedFile(NodeID("n"), kind: .data)?.mode == .cache)
        #expect(try poolStatus(manager, .thumbnails).persistentSize > 0)
    }

    @Test func retainedFileIsCopiedAndTheOriginalDeletedOnRelease() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("r")
        var diskImport = DiskImport(cleartextData: contents("r", size: 80_000))
        diskImport.storePersistently = true
        var held: DiskExport? = try manager.importNodeFile(diskImport, nodeID: id)
        let original = held!.cryptoFile.path
        #expect(original.hasPrefix(store.location.persistentFiles + "/"))

        try manager.files.makeNodeFilePersistent(false, nodeID: id)
        do {
            let moved = try #require(try manager.files.nodeFile(id))
            #expect(moved.cryptoFile.path.hasPrefix(store.location.cacheFiles + "/"))
            #expect(try decrypt(moved) == contents("r", size: 80_000))
        }
        #expect(fileExists(original), "the retained original stays until released")
        #expect(try decrypt(held!) == contents("r", size: 80_000))
        #expect(try poolStatus(manager, .data).persistentSize == 0, "the old copy no longer counts")
        held = nil
        #expect(!fileExists(original), "the original is deleted when released")
    }

    @Test func originalGoesOnReleaseEvenWhileTheMigratedFileIsRead() async throws {
        // A reader keeps the old export, migrates, reads the migrated file, then lets the old export go: the
        // original must go with it (whoever reads the new file is no reason to keep the old name).
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("r")
        try importFile(manager, "r", size: 50_000)
        var held: DiskExport? = try await manager.files.nodeFile(id)
        let original = held!.cryptoFile.path
        try await manager.files.makeNodeFilePersistent(true, nodeID: id)
        var migrated: DiskExport? = try await manager.files.nodeFile(id)
        #expect(migrated?.cryptoFile.path.hasPrefix(store.location.persistentFiles + "/") == true)
        #expect(try decrypt(held!) == contents("r", size: 50_000))
        held = nil
        #expect(!fileExists(original), "the original is deleted when its last token is released")
        #expect(regularFiles(under: store.location.cacheFiles).isEmpty, "no file is left in the cache folder")
        #expect(try decrypt(migrated!) == contents("r", size: 50_000))
        migrated = nil
        let gone = await eventually(within: 60) { !fileExists(original) }
        #expect(gone, "at the latest, the original goes once nobody holds either name")
    }

    @Test func userAvatarsMigrateTogether() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let user = try UserID("u")
        let other = try UserID("o")
        let identities = try [IdentityID("google|1"), IdentityID("me@example.com")]
        for (i, identity) in identities.enumerated() {
            try manager.importUserAvatar(DiskImport(cleartextData: Data("avatar \(i)".utf8)), userID: user, identityID: identity)
        }
        try manager.importUserAvatar(DiskImport(cleartextData: Data("other".utf8)), userID: other, identityID: identities[0])

        try manager.files.makeUserAvatarsPersistent(true, userID: user)
        for (i, identity) in identities.enumerated() {
            let export = try #require(try manager.files.userAvatar(user, identityID: identity))
            #expect(export.cryptoFile.path.hasPrefix(store.location.persistentFiles + "/"))
            #expect(try decrypt(export) == Data("avatar \(i)".utf8))
        }
        #expect(try manager.files.storedAvatars(user).allSatisfy { $0.mode == .persistent })
        #expect(try manager.files.storedAvatars(other).allSatisfy { $0.mode == .cache }, "another user's avatars stay put")

        try manager.files.makeUserAvatarsPersistent(false, userID: user)
        for (i, identity) in identities.enumerated() {
            let export = try #require(try manager.files.userAvatar(user, identityID: identity))
            #expect(export.cryptoFile.path.hasPrefix(store.location.cacheFiles + "/"))
            #expect(try decrypt(export) == Data("avatar \(i)".utf8))
        }
        #expect(try poolStatus(manager, .avatars).persistentSize == 0)
    }

    @Test func migrateToCacheAfterUpload() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("up")
        var diskImport = DiskImport(cleartextData: contents("up", size: 40_000))
        diskImport.storePersistently = true
        diskImport.migrateToCacheAfterUpload = true
        let imported = try manager.importNodeFile(diskImport, nodeID: id)
        #expect(imported.isStoredPersistently, "persistent until uploaded")
        _ = consume imported
        try manager.files.setMaxSize(1, for: .data)
        #expect(try manager.files.hasNodeFile(id), "a file waiting for its upload is not evicted")
        try manager.files.setMaxSize(Pool.data.defaultMaxSize, for: .data)

        try manager.files.didUploadNodeFile(id)
        let export = try #require(try manager.files.nodeFile(id))
        #expect(export.mode == .cache, "after the upload it is a cache file")
        #expect(export.cryptoFile.path.hasPrefix(store.location.cacheFiles + "/"))
        #expect(try decrypt(export) == contents("up", size: 40_000))
        _ = consume export
        // A second upload report changes nothing, and the file is now evictable.
        try manager.files.didUploadNodeFile(id)
        #expect(try manager.files.storedFile(id)?.mode == .cache)
        try manager.files.setMaxSize(0, for: .data)
        #expect(try !manager.files.hasNodeFile(id))
    }

    @Test func plainPersistentFileStaysPersistentAfterUpload() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try importFile(manager, "p", persistent: true)
        try manager.files.didUploadNodeFile(NodeID("p"))
        #expect(try manager.files.storedFile(NodeID("p"))?.mode == .persistent)
        try manager.files.didUploadNodeFile(NodeID("nothing-here"))
    }

    @Test func deleteAfterUpload() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("once")
        var diskImport = DiskImport(cleartextData: contents("once"))
        diskImport.storePersistently = true
        diskImport.deleteAfterUpload = true
        let path = try manager.importNodeFile(diskImport, nodeID: id).cryptoFile.path
        try importFile(manager, "once", size: 500, kind: .thumbnail)
        #expect(try manager.files.hasNodeFile(id))
        try manager.files.didUploadNodeFile(id)
        #expect(try manager.files.nodeFile(id) == nil, "deleted once uploaded")
        #expect(!fileExists(path))
        #expect(try manager.files.hasNodeFile(id, kind: .thumbnail), "only the uploaded kind is deleted")
    }
}
