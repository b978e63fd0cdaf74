import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// A kept (persistent) file whose node changes in the remote is replaced by the new
/// version, never silently dropped: a pull deletes the stale copy (open handles keep reading it) and the
/// next time the node's file is stored, by any path, it is stored persistently.
@Suite struct KeptVersionTests {
    private func outline(_ manager: DiskManager, _ id: NodeID, etag: String) -> OutlineEntry {
        OutlineEntry(nodeID: id, name: nil, parentID: nil, metadataSize: 0, thumbnailSize: 0, dataSize: 10,
                     wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(id)), cloudETag: etag)
    }

    @Test func theNewVersionOfAKeptFileIsKeptToo() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let kept = try NodeID("kept"), cached = try NodeID("cached")
        try manager.outline.update([outline(manager, kept, etag: "v1"), outline(manager, cached, etag: "v1")])
        var persistent = DiskImport(cleartextData: Data("old kept".utf8))
        persistent.storePersistently = true
        let held = try manager.importNodeFile(persistent, nodeID: kept)
        try manager.importNodeFile(DiskImport(cleartextData: Data("old cached".utf8)), nodeID: cached)

        // A pull learns of new versions of both.
        try manager.outline.update([outline(manager, kept, etag: "v2"), outline(manager, cached, etag: "v2")])
        #expect(try manager.files.storedFile(kept) == nil && manager.files.storedFile(cached) == nil, "stale copies go")
        #expect(try FileConversion.decryptIntoMemory(path: held.cryptoFile.path, key: held.cryptoFile.key) == Data("old kept".utf8),
                "a holder of the old version keeps reading it")
        #expect(try manager.outline.keptVersionsToReplace().map(\.nodeID) == [kept])

        // The new versions arrive as plain cache imports (a read on the mount, a fetch): the kept one is kept.
        try manager.importNodeFile(DiskImport(cleartextData: Data("new kept".utf8)), nodeID: kept)
        try manager.importNodeFile(DiskImport(cleartextData: Data("new cached".utf8)), nodeID: cached)
        #expect(try manager.files.storedFile(kept)?.mode == .persistent)
        #expect(try manager.files.storedFile(cached)?.mode == .cache)
        #expect(try manager.outline.keptVersionsToReplace().isEmpty)

        // Unkeeping it, or deleting the node's local files, forgets the wish.
        try manager.outline.update(outline(manager, kept, etag: "v3"))
        #expect(try manager.outline.keptVersionsToReplace().count == 1)
        try manager.files.makeNodeFilePersistent(false, nodeID: kept)
        #expect(try manager.outline.keptVersionsToReplace().isEmpty)
        try manager.importNodeFile(DiskImport(cleartextData: Data("v3".utf8)), nodeID: kept)
        #expect(try manager.files.storedFile(kept)?.mode == .cache)
    }
}
