import DarkDiskStore
import Foundation
import Testing

/// Deleting nodes, node files and user avatars, and `deleteFileIfUnmanaged`.
@Suite struct NodeAndUserDeletionTests {
    @Test func deleteNodeRemovesDataMetadataAndThumbnail() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("n")
        let paths = [try importFile(manager, "n", kind: .data).path,
                     try importFile(manager, "n", size: 300, kind: .metadata, persistent: true).path,
                     try importFile(manager, "n", size: 2_000, kind: .thumbnail).path]
        try importFile(manager, "other")
        try manager.deleteNode(id)

        for kind in [FileKind.data, .metadata, .thumbnail] {
            #expect(try !manager.files.hasNodeFile(id, kind: kind), "\(kind) is gone")
            #expect(try manager.files.nodeFile(id, kind: kind) == nil)
        }
        for path in paths { #expect(!fileExists(path), "\(path) is removed from disk") }
        #expect(try manager.files.storedFiles(id).isEmpty)
        #expect(try manager.files.storedNodeIDs().map(\.rawValue) == ["other"])
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("other")))) == contents("other"))
        #expect(try poolStatus(manager, .thumbnails).size == 0)
        #expect(try poolStatus(manager, .data).persistentSize == 0)
    }

    @Test func deleteNodesRemovesOnlyTheGivenNodes() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for name in ["a", "b", "c"] {
            try importFile(manager, name)
            try importFile(manager, name, size: 500, kind: .thumbnail)
        }
        try manager.deleteNodes([NodeID("a"), NodeID("b")])
        #expect(try manager.files.storedNodeIDs().map(\.rawValue) == ["c"])
        #expect(try manager.files.hasNodeFile(NodeID("c")) && manager.files.hasNodeFile(NodeID("c"), kind: .thumbnail))
        #expect(regularFiles(under: store.location.cacheFiles).count == 2)
    }

    @Test func deleteNodeFilesRemovesOneKind() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var thumbnails: [String] = []
        for name in ["a", "b", "c"] {
            try importFile(manager, name)
            thumbnails.append(try importFile(manager, name, size: 500, kind: .thumbnail).path)
        }
        #expect(try manager.files.deleteNodeFiles([NodeID("a"), NodeID("b"), NodeID("none")], kind: .thumbnail) == 2)
        #expect(try !manager.files.hasNodeFile(NodeID("a"), kind: .thumbnail))
        #expect(try !manager.files.hasNodeFile(NodeID("b"), kind: .thumbnail))
        #expect(!fileExists(thumbnails[0]) && !fileExists(thumbnails[1]))
        #expect(try manager.files.hasNodeFile(NodeID("c"), kind: .thumbnail))
        for name in ["a", "b", "c"] { #expect(try manager.files.hasNodeFile(NodeID(name), kind: .data), "data of \(name) stays") }
        #expect(try manager.files.deleteNodeFile(NodeID("c"), kind: .thumbnail))
        #expect(try !manager.files.deleteNodeFile(NodeID("c"), kind: .thumbnail), "nothing left to delete")
        #expect(try manager.files.deleteNodeFiles([NodeID("a")], kind: .metadata) == 0)
    }

    @Test func deleteOneAvatarOfAUser() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let user = try UserID("u")
        let first = try IdentityID("google|1"), second = try IdentityID("me@example.com")
        let path = try manager.importUserAvatar(DiskImport(cleartextData: Data("one".utf8)), userID: user, identityID: first).cryptoFile.path
        try manager.importUserAvatar(DiskImport(cleartextData: Data("two".utf8)), userID: user, identityID: second)

        #expect(try manager.files.deleteUserAvatar(user, identityID: first))
        #expect(!fileExists(path))
        #expect(try !manager.files.hasUserAvatar(user, identityID: first))
        #expect(try manager.files.userAvatar(user, identityID: first) == nil)
        #expect(try manager.files.hasUserAvatar(user, identityID: second))
        #expect(try manager.files.hasUserAvatar(user), "the user still has an avatar")
        #expect(try !manager.files.deleteUserAvatar(user, identityID: first), "nothing left to delete")
    }

    @Test func deleteUserAvatarsForUsers() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for name in ["u1", "u2", "u3"] {
            for identity in ["a", "b"] {
                try manager.importUserAvatar(DiskImport(cleartextData: Data("\(name)-\(identity)".utf8)), userID: UserID(name), identityID: IdentityID(identity))
            }
        }
        try manager.files.deleteUserAvatars(forUsers: [UserID("u1"), UserID("u3")])
        #expect(try manager.files.storedAvatarUsers().map(\.rawValue) == ["u2"])
        #expect(try !manager.files.hasUserAvatar(UserID("u1")))
        #expect(try !manager.files.hasUserAvatar(UserID("u3")))
        #expect(try manager.files.hasUserAvatar(UserID("u2")))
        #expect(try poolStatus(manager, .avatars).fileCount == 2)
        #expect(regularFiles(under: store.location.cacheFiles).count == 2)
    }

    @Test func nodeAndUserWithTheSameIDAreSeparate() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try importFile(manager, "same")
        try manager.importUserAvatar(DiskImport(cleartextData: Data("face".utf8)), userID: UserID("same"), identityID: IdentityID("i"))
        try manager.deleteNode(NodeID("same"))
        #expect(try manager.files.hasUserAvatar(UserID("same")), "deleting a node keeps the user's avatar of the same ID")
        try importFile(manager, "same")
        try manager.files.deleteUserAvatars(forUsers: [UserID("same")])
        #expect(try manager.files.hasNodeFile(NodeID("same")), "deleting avatars keeps the node of the same ID")
    }

    @Test func userAvatarWithoutIdentityReturnsSomeAvatar() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let user = try UserID("u")
        #expect(try manager.files.userAvatar(user) == nil)
        #expect(try !manager.files.hasUserAvatar(user))
        try manager.importUserAvatar(DiskImport(cleartextData: Data("older".utf8)), userID: user, identityID: IdentityID("z-first"))
        try manager.importUserAvatar(DiskImport(cleartextData: Data("newer".utf8)), userID: user, identityID: IdentityID("a-second"))
        #expect(try manager.files.hasUserAvatar(user))
        #expect(try manager.files.hasUserAvatar(user, identityID: nil))
        #expect(try !manager.files.hasUserAvatar(user, identityID: IdentityID("unknown")))
        let any = try #require(try manager.files.userAvatar(user, identityID: nil))
        #expect(try decrypt(any) == Data("newer".utf8), "the most recently modified avatar")
        #expect(any.pool == .avatars)

        // With the newest one gone from disk, another one is returned.
        try manager.files.deleteUserAvatar(user, identityID: IdentityID("a-second"))
        #expect(try decrypt(try #require(try manager.files.userAvatar(user))) == Data("older".utf8))
    }

    @Test func deleteFileIfUnmanagedDeletesOnlyOutsideFiles() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let outside = store.directory + "/download.tmp"
        try Data("temp".utf8).write(to: URL(fileURLWithPath: outside))
        manager.files.deleteFileIfUnmanaged(outside)
        #expect(!fileExists(outside), "a file the store does not manage is deleted")

        let cached = try importFile(manager, "c").path
        let persistent = try importFile(manager, "p", persistent: true).path
        manager.files.deleteFileIfUnmanaged(cached)
        manager.files.deleteFileIfUnmanaged(persistent)
        #expect(fileExists(cached) && fileExists(persistent), "managed files are left alone")
        // Also when the path takes a detour through another folder.
        try FileManager.default.createDirectory(atPath: store.directory + "/elsewhere", withIntermediateDirectories: true)
        let detour = store.directory + "/elsewhere/../store/" + String(cached.dropFirst((store.directory + "/store/").count))
        #expect(FileManager.default.fileExists(atPath: detour), "the detour names the managed file")
        manager.files.deleteFileIfUnmanaged(detour)
        #expect(fileExists(cached), "a managed file reached through '..' is left alone")
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("c")))) == contents("c"))
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("p")))) == contents("p"))
        manager.files.deleteFileIfUnmanaged(store.directory + "/never-existed")
    }

    /// The store's own files are never deleted, whatever path names them; a download the
    /// store handed to its caller is.
    @Test func deleteFileIfUnmanagedNeverDeletesTheStoresOwnFiles() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        _ = try importFile(manager, "c")
        let location = store.location
        try FileManager.default.createDirectory(atPath: location.cacheDirectory + "/partial", withIntermediateDirectories: true)
        let partial = location.cacheDirectory + "/partial/live.part"
        try Data("partial".utf8).write(to: URL(fileURLWithPath: partial))
        try Data("log".utf8).write(to: URL(fileURLWithPath: location.logPath))
        let own = [location.indexPath, location.indexPath + "-wal", location.keyPath, location.logPath, partial]
        for path in own {
            #expect(FileManager.default.fileExists(atPath: path), "\(path) exists to begin with")
            #expect(!manager.files.deleteFileIfUnmanaged(path))
            // By a detour and through a symbolic link from outside.
            let detour = location.temporaryDownloads + "/../" + String(path.dropFirst(store.directory.count + 1)).replacingOccurrences(of: "cache/", with: "")
            _ = manager.files.deleteFileIfUnmanaged(detour)
            let link = store.directory + "/link-\(UUID().uuidString)"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
            #expect(!manager.files.deleteFileIfUnmanaged(link))
            #expect(FileManager.default.fileExists(atPath: path), "\(path) is the store's own: kept")
        }
        #expect(!manager.files.deleteFileIfUnmanaged(location.dataDirectory) && !manager.files.deleteFileIfUnmanaged(location.configDirectory))
        let reopened = try DiskManager(location: location)
        #expect(try decrypt(try #require(try reopened.files.nodeFile(NodeID("c")))) == contents("c"), "the store still opens and reads")
        // A download handed to the caller is theirs to delete.
        try FileManager.default.createDirectory(atPath: location.temporaryDownloads, withIntermediateDirectories: true)
        let download = location.temporaryDownloads + "/handed-out.ddc"
        try Data("download".utf8).write(to: URL(fileURLWithPath: download))
        #expect(manager.files.deleteFileIfUnmanaged(download))
        #expect(!FileManager.default.fileExists(atPath: download))
    }
}
