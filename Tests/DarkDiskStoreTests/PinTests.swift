import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// Pins in the store, without a mount: which nodes a pin covers (its own setting, else the
/// nearest folder's above it, else the top's), what the keeper is asked to fetch or keep, what unpinning
/// frees, and what an eviction refuses.
@Suite struct PinTests {
    /// An outline entry for node `id` in folder `parent`: a folder, or a file of `size` bytes.
    private func entry(_ manager: DiskManager, _ id: String, in parent: String?, folder: Bool = false, size: UInt64 = 10) throws -> OutlineEntry {
        var entry = OutlineEntry(nodeID: try NodeID(id), name: id, parentID: parent, metadataSize: 0, thumbnailSize: 0,
                                 dataSize: folder ? 0 : size, wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(try NodeID(id))), cloudETag: "e-" + id)
        entry.attributes = NodeAttributes(kind: folder ? .folder : .file, mode: folder ? 0o755 : 0o644)
        return entry
    }

    /// top/ { a, sub/ { b, deep/ { c } } }, and d at the top.
    private func tree(_ manager: DiskManager) throws {
        try manager.outline.update([
            try entry(manager, "top", in: nil, folder: true), try entry(manager, "a", in: "top"),
            try entry(manager, "sub", in: "top", folder: true), try entry(manager, "b", in: "sub"),
            try entry(manager, "deep", in: "sub", folder: true), try entry(manager, "c", in: "deep"),
            try entry(manager, "d", in: nil),
        ])
    }

    private func toKeep(_ manager: DiskManager) throws -> [String] {
        try manager.outline.pinnedNodesToKeep().map(\.nodeID.rawValue).sorted()
    }

    @Test func aPinCoversWhatIsBelowItUntilAnotherSettingSaysOtherwise() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try tree(manager)
        #expect(try toKeep(manager) == [], "nothing is pinned unless asked")
        let clock = try manager.outline.pinClock()

        try manager.outline.setPin(true, on: NodeID("top"))
        #expect(try manager.outline.pinClock() != clock, "a pin moves the clock a mount watches")
        #expect(try toKeep(manager) == ["a", "b", "c"])
        #expect(try manager.outline.isPinned(NodeID("c")) && !manager.outline.isPinned(NodeID("d")))
        #expect(try manager.outline.pinSetting(NodeID("c")) == nil, "c inherits: it has no setting of its own")

        // An unpinned folder inside stops the pin; a pin below that starts it again.
        try manager.outline.setPin(false, on: NodeID("sub"))
        #expect(try toKeep(manager) == ["a"])
        try manager.outline.setPin(true, on: NodeID("deep"))
        #expect(try toKeep(manager) == ["a", "c"])
        #expect(try !manager.outline.isPinned(NodeID("b")) && manager.outline.isPinned(NodeID("c")))

        // Clearing below the top folder makes everything follow it again; the top's own setting covers the rest.
        try manager.outline.setPin(true, on: NodeID("top"), clearingBelow: true)
        #expect(try toKeep(manager) == ["a", "b", "c"])
        try manager.outline.setPin(true, on: nil)
        #expect(try toKeep(manager) == ["a", "b", "c", "d"])
        #expect(try manager.outline.isPinned(NodeID("d")))
        try manager.outline.setPin(nil, on: nil)
        #expect(try !manager.outline.isPinned(NodeID("d")))
        // A file that arrives in a pinned folder is pinned.
        try manager.outline.update(try entry(manager, "e", in: "deep"))
        #expect(try toKeep(manager) == ["a", "b", "c", "e"])
        #expect(throws: DarkDiskError.self) { try manager.outline.setPin(true, on: NodeID("nowhere")) }
    }

    @Test func storedFilesAreKeptWhilePinnedAndFreedWhenUnpinned() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try tree(manager)
        try manager.importNodeFile(DiskImport(cleartextData: Data("a's data".utf8)), nodeID: NodeID("a"))
        try manager.outline.setPin(true, on: NodeID("top"))
        let keep = try manager.outline.pinnedNodesToKeep()
        #expect(keep.first { $0.nodeID.rawValue == "a" }?.stored == true, "a cached file is there, to be made persistent")
        #expect(keep.filter { !$0.stored }.map(\.size) == [10, 10], "b and c are to download")
        try manager.files.makeNodeFilePersistent(true, nodeID: NodeID("a"))
        #expect(try toKeep(manager) == ["b", "c"])

        // Evicting a pinned file is refused; unpinning moves it to the cache pool, then it can go.
        #expect(throws: DarkDiskError(.busy, "node a is pinned; unpin it first")) { try manager.outline.evictNodeData(NodeID("a")) }
        try manager.outline.setPin(false, on: NodeID("top"))
        #expect(try manager.files.storedFile(NodeID("a"))?.mode == .cache)
        #expect(try manager.outline.evictNodeData(NodeID("a")))
        #expect(try manager.files.storedFile(NodeID("a")) == nil)
        #expect(try manager.outline.entry(NodeID("a")) != nil, "still in the outline: only the local copy went")
    }

    @Test func evictionNeverDropsWhatIsNotInTheRemote() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let node = try manager.createDriveNode(named: "draft", in: nil, attributes: NodeAttributes(kind: .file, mode: 0o644))
        let content = try manager.stagedContent(for: node.id, base: nil, isNew: true)
        try Data("not uploaded".utf8).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(node.id, content: content)
        #expect(throws: DarkDiskError(.busy, "node \(node.id) has a change that is not uploaded yet; it stays")) {
            try manager.outline.evictNodeData(node.id)
        }
        #expect(try manager.files.storedFile(node.id) != nil)
    }
}
