import DarkDiskStore
import DarkDiskTestSupport
import Foundation
import Testing

@Suite struct SafetyTests {
    @Test(arguments: ["", "../x", "a/b", String(repeating: "a", count: 300), "x\ny", "nul\u{0}", "..", "é"])
    func badNodeIDsAreRejected(id: String) {
        do {
            _ = try NodeID(id)
            Issue.record("accepted node ID \(id.debugDescription)")
        } catch {
            #expect(error.code == .invalidID)
            #expect(!error.message.contains("\n"))
        }
    }

    @Test func goodIDs() throws {
        _ = try NodeID(String(repeating: "a", count: 64))
        _ = try NodeID("A-z_09")
        _ = try IdentityID("auth0|5f2b.x@example.com")
        #expect(throws: DarkDiskError.self) { try IdentityID("..") }
        #expect(throws: DarkDiskError.self) { try UserID("a|b") }
    }

    @Test func deleteWaitsForTheLastRetainToken() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("held")
        try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(50_000)), nodeID: id)
        var export: DiskExport? = try manager.files.nodeFile(id)
        #expect(export != nil)
        let path = export!.cryptoFile.path
        try manager.deleteNode(id)
        #expect(try manager.files.nodeFile(id) == nil, "a deleted file is no longer handed out")
        #expect(FileManager.default.fileExists(atPath: path), "a retained file stays on disk")
        #expect(try decrypt(export!) == TemporaryStore.bytes(50_000))
        export = nil
        #expect(!FileManager.default.fileExists(atPath: path), "the last release completes the delete")
        #expect(try manager.files.storedNodeIDs().isEmpty)
    }

    @Test func retainTokensWorkAcrossStoreInstances() throws {
        // Two DiskManagers on one store stand in for two processes: locks are per open file, not per process.
        let store = try TemporaryStore()
        let first = try store.create()
        let second = try store.open()
        let id = try NodeID("shared")
        try first.importNodeFile(DiskImport(cleartextData: Data("x".utf8)), nodeID: id)
        var held: DiskExport? = try first.files.nodeFile(id)
        #expect(held != nil)
        let path = held!.cryptoFile.path
        try second.deleteNode(id)
        #expect(FileManager.default.fileExists(atPath: path))
        held = nil
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func purgedCacheFolderMeansNotLocal() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.importNodeFile(DiskImport(cleartextData: Data("cached".utf8)), nodeID: NodeID("c"))
        var persistent = DiskImport(cleartextData: Data("kept".utf8))
        persistent.storePersistently = true
        try manager.importNodeFile(persistent, nodeID: NodeID("p"))
        try FileManager.default.removeItem(atPath: store.location.cacheDirectory)
        #expect(try !manager.files.hasNodeFile(NodeID("c")))
        #expect(try manager.files.nodeFile(NodeID("c")) == nil)
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("p")))) == Data("kept".utf8))
        // The pool still works after the purge.
        try manager.importNodeFile(DiskImport(cleartextData: Data("again".utf8)), nodeID: NodeID("c"))
        #expect(try decrypt(try #require(try manager.files.nodeFile(NodeID("c")))) == Data("again".utf8))
    }

    @Test func expiredCacheFileIsNotExported() throws {
        let store = try TemporaryStore()
        let clock = ManualClock()
        let manager = try store.create(clock: clock)
        var expiring = DiskImport(cleartextData: Data("short-lived".utf8))
        expiring.expiration = 1
        try manager.importNodeFile(expiring, nodeID: NodeID("e"))
        var never = DiskImport(cleartextData: Data("forever".utf8))
        never.expiration = -1
        try manager.importNodeFile(never, nodeID: NodeID("f"))
        #expect(try manager.files.nodeFile(NodeID("e")) != nil)
        clock.advance(by: 1.2)
        #expect(try manager.files.nodeFile(NodeID("e")) == nil)
        #expect(try manager.files.nodeFile(NodeID("f")) != nil)
    }

    @Test func statusCountsPools() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        var persistent = DiskImport(cleartextData: TemporaryStore.bytes(10_000))
        persistent.storePersistently = true
        let p = try manager.importNodeFile(persistent, nodeID: NodeID("p"))
        let c = try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(20_000)), nodeID: NodeID("c"))
        let t = try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(300)), nodeID: NodeID("c"), kind: .thumbnail)
        let status = Dictionary(uniqueKeysWithValues: try manager.files.status().map { ($0.pool, $0) })
        let data = try #require(status[.data])
        #expect(data.persistentSize == p.storedSize)
        #expect(data.cachedSize == c.storedSize)
        #expect(data.size == p.storedSize + c.storedSize)
        #expect(data.settings.maxSize == 25 * 1024 * 1024)
        #expect(try #require(status[.thumbnails]).cachedSize == t.storedSize)
        #expect(try #require(status[.avatars]).settings.defaultExpiration == 7 * 24 * 3600)
    }
}
