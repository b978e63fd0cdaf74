import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

@Suite struct ImportExportTests {
    @Test(arguments: [0, 1, Int(CryptoFormat.defaultChunkSize) - 1, Int(CryptoFormat.defaultChunkSize), Int(CryptoFormat.defaultChunkSize) + 1, 3 * 1024 * 1024 + 5])
    func roundTripFromData(size: Int) throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let plaintext = TemporaryStore.bytes(size, seed: UInt64(size))
        let id = try NodeID("node-\(size)")
        let imported = try manager.importNodeFile(DiskImport(cleartextData: plaintext), nodeID: id)
        #expect(imported.plaintextSize == UInt64(size))
        #expect(imported.mode == .cache)
        #expect(try manager.files.hasNodeFile(id))
        let export = try #require(try manager.files.nodeFile(id))
        #expect(try decrypt(export) == plaintext)
        // The store never keeps plaintext: the stored bytes do not contain it.
        if size >= 64 {
            let stored = try Data(contentsOf: URL(fileURLWithPath: export.cryptoFile.path))
            #expect(stored.range(of: plaintext.prefix(64)) == nil)
        }
    }

    @Test func importFromFileAndStream() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let plaintext = TemporaryStore.bytes(200_000, seed: 7)
        let source = store.directory + "/plain.bin"
        try plaintext.write(to: URL(fileURLWithPath: source))

        var fromFile = DiskImport(cleartextFilePath: source)
        fromFile.storePersistently = true
        try manager.importNodeFile(fromFile, nodeID: NodeID("file"))
        #expect(FileManager.default.fileExists(atPath: source), "a cleartext file is read, not moved")

        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writeEnd = fds[1]
        let writer = Thread {
            plaintext.withUnsafeBytes { buffer in
                var done = 0
                while done < buffer.count { done += write(writeEnd, buffer.baseAddress! + done, min(4096, buffer.count - done)) }
            }
            close(writeEnd)
        }
        writer.start()
        try manager.importNodeFile(DiskImport(.cleartextStream(fileDescriptor: fds[0])), nodeID: NodeID("stream"))
        close(fds[0])

        let fileExport = try #require(try manager.files.nodeFile(NodeID("file")))
        #expect(fileExport.isStoredPersistently)
        #expect(fileExport.cryptoFile.path.hasPrefix(store.location.persistentFiles))
        #expect(try decrypt(fileExport) == plaintext)
        let streamExport = try #require(try manager.files.nodeFile(NodeID("stream")))
        #expect(streamExport.cryptoFile.path.hasPrefix(store.location.cacheFiles))
        #expect(try decrypt(streamExport) == plaintext)
    }

    @Test func importCryptoFileMovesIt() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let plaintext = TemporaryStore.bytes(100_000, seed: 3)
        let key = SymmetricKey.random()
        let outside = store.directory + "/outside.ddf"
        _ = try FileConversion.encrypt(plaintext, key: key, to: outside)
        let imported = try manager.importNodeFile(DiskImport(cryptoFile: CryptoFile(path: outside, format: .cacheFile, key: key)), nodeID: NodeID("moved"))
        #expect(!FileManager.default.fileExists(atPath: outside), "a CryptoFile is moved, not copied")
        #expect(imported.cryptoFile.key == key)
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("moved")))) == plaintext)
    }

    /// The seeds' flow (download without caching, then import persistently) with the
    /// download on another file system than the store (a tmpfs): the move is a copy, into the staging
    /// file the import already created and locked (it failed with EEXIST).
    @Test(arguments: [true, false]) func importCryptoFileFromAnotherFileSystem(persistent: Bool) throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let elsewhere = "/dev/shm/darkdisk-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        var here = stat(), there = stat()
        #expect(stat(store.directory, &here) == 0 && stat(elsewhere, &there) == 0)
        try #require(here.st_dev != there.st_dev, "the test needs /dev/shm on another file system than \(store.directory)")
        let plaintext = TemporaryStore.bytes(300_000, seed: 17)
        let key = SymmetricKey.random()
        let outside = elsewhere + "/downloaded.ddf"
        _ = try FileConversion.encrypt(plaintext, key: key, to: outside)
        var importing = DiskImport(cryptoFile: CryptoFile(path: outside, format: .cacheFile, key: key))
        importing.storePersistently = persistent
        let imported = try manager.importNodeFile(importing, nodeID: NodeID("across"))
        #expect(!FileManager.default.fileExists(atPath: outside), "the source is gone after the move")
        #expect(imported.cryptoFile.path.hasPrefix(persistent ? store.location.persistentFiles : store.location.cacheFiles))
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("across")))) == plaintext)
        let check = try manager.check()
        #expect(check.isHealthy && check.orphans == 0 && check.stagingFiles == 0, "the index and the disk agree: \(check.problems)")
    }

    @Test func importOfDamagedCryptoFileLeavesItInPlace() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let key = SymmetricKey.random()
        let outside = store.directory + "/outside.ddf"
        _ = try FileConversion.encrypt(TemporaryStore.bytes(10_000), key: key, to: outside)
        #expect(throws: DarkDiskError.self) {
            try manager.importNodeFile(DiskImport(cryptoFile: CryptoFile(path: outside, format: .cacheFile, key: SymmetricKey.random())), nodeID: NodeID("bad"))
        }
        #expect(FileManager.default.fileExists(atPath: outside))
        #expect(try manager.files.nodeFile(NodeID("bad")) == nil)
    }

    @Test func reimportReplacesAndDeletesTheOldFile() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("n")
        let first = try manager.importNodeFile(DiskImport(cleartextData: Data("one".utf8)), nodeID: id)
        let firstPath = first.cryptoFile.path
        let firstID = try #require(try manager.files.storedFile(id)).fileID
        // While the first export is alive its file stays, even though it was replaced.
        try manager.importNodeFile(DiskImport(cleartextData: Data("two".utf8)), nodeID: id)
        #expect(FileManager.default.fileExists(atPath: firstPath))
        #expect(try decrypt(first) == Data("one".utf8))
        #expect(try decrypt(try #require(try manager.files.nodeFile(id))) == Data("two".utf8))
        #expect(try #require(try manager.files.storedFile(id)).fileID != firstID)
        _ = consume first
        #expect(!FileManager.default.fileExists(atPath: firstPath))
    }

    @Test func kindsAreSeparate() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("n")
        try manager.importNodeFile(DiskImport(cleartextData: Data("data".utf8)), nodeID: id, kind: .data)
        try manager.importNodeFile(DiskImport(cleartextData: Data("{\"a\":1}".utf8)), nodeID: id, kind: .metadata)
        try manager.importNodeFile(DiskImport(cleartextData: Data("png".utf8)), nodeID: id, kind: .thumbnail)
        #expect(try decrypt(try #require(try manager.files.nodeFile(id, kind: .metadata))) == Data("{\"a\":1}".utf8))
        #expect(try decrypt(try #require(try manager.files.nodeFile(id, kind: .thumbnail))) == Data("png".utf8))
        #expect(try manager.files.storedFiles(id).map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.data, .metadata, .thumbnail])
        #expect(throws: DarkDiskError.self) { try manager.importNodeFile(DiskImport(cleartextData: Data()), nodeID: id, kind: .avatar) }
    }

    @Test func avatars() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let user = try UserID("u1")
        try manager.importUserAvatar(DiskImport(cleartextData: Data("a".utf8)), userID: user, identityID: IdentityID("google|123"))
        try manager.importUserAvatar(DiskImport(cleartextData: Data("b".utf8)), userID: user, identityID: IdentityID("me@example.com"))
        #expect(try manager.files.storedAvatars(user).map(\.identityID) == ["google|123", "me@example.com"])
        #expect(try decrypt(try #require(try manager.files.userAvatar(user, identityID: IdentityID("google|123")))) == Data("a".utf8))
        #expect(try manager.files.storedNodeIDs().isEmpty, "avatars are not nodes")
        try manager.files.deleteUserAvatars(user)
        #expect(try manager.files.storedAvatars(user).isEmpty)
    }
}
