import DarkDiskStore
import Foundation
import Testing

/// Symbolic links planted inside the store (by an attacker, or by mistake) never lead the store to read,
/// write or delete anything outside it: the sweeps skip them, folders the store writes into refuse them,
/// and a link in place of a stored file is an error, not someone else's bytes.
@Suite struct PlantedLinkTests {
    /// A folder outside the store holding a file that must survive.
    private func outsideFolder(_ store: TemporaryStore) throws -> (folder: String, victim: String) {
        let folder = store.directory + "/outside"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let victim = folder + "/precious.ddf"
        try Data("do not delete".utf8).write(to: URL(fileURLWithPath: victim))
        return (folder, victim)
    }

    @Test func theOrphanSweepDoesNotFollowALinkedShard() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(1_000)), nodeID: NodeID("kept"))
        let (outside, victim) = try outsideFolder(store)
        let files = store.location.cacheDirectory + "/files"
        try FileManager.default.createSymbolicLink(atPath: files + "/zz", withDestinationPath: outside)
        // A real orphan next to it, so we can tell when the sweep (run in the background at open) is done.
        try FileManager.default.createDirectory(atPath: files + "/yy", withIntermediateDirectories: true)
        let orphan = files + "/yy/orphan.ddf"
        try Data("debris".utf8).write(to: URL(fileURLWithPath: orphan))

        let reopened = try store.open()
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: orphan), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!FileManager.default.fileExists(atPath: orphan), "the sweep ran and removed the real orphan")
        Thread.sleep(forTimeInterval: 0.5)  // the sweep may visit the linked shard after the real one
        #expect(FileManager.default.fileExists(atPath: victim), "the file behind the planted link is untouched")
        #expect(try reopened.files.nodeFile(NodeID("kept")) != nil)
    }

    @Test func aLinkedStagingFolderIsRefusedWithAClearError() throws {
        let store = try TemporaryStore()
        _ = try store.create()
        let (outside, victim) = try outsideFolder(store)
        let staging = store.location.persistentStaging
        try FileManager.default.removeItem(atPath: staging)
        try FileManager.default.createSymbolicLink(atPath: staging, withDestinationPath: outside)
        do {
            _ = try store.open()
            Issue.record("a store with a linked staging folder was opened")
        } catch let error as DarkDiskError {
            #expect(error.code == .io && error.message.contains("symbolic link") && !error.message.contains("\n"), "\(error.message)")
        }
        #expect(FileManager.default.fileExists(atPath: victim))
    }

    @Test func aLinkInPlaceOfAStoredFileIsAnErrorAndDeletingItLeavesTheTarget() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("n")
        let export = try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(5_000)), nodeID: id)
        let path = export.cryptoFile.path
        let (_, victim) = try outsideFolder(store)
        // Replace the stored file by a link to a valid encrypted file outside the store (its own copy).
        try FileManager.default.copyItem(atPath: path, toPath: victim + ".copy")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim + ".copy")
        do {
            _ = try manager.files.nodeFile(id)
            Issue.record("a link in place of a stored file was opened")
        } catch {
            #expect(error.message.contains("symbolic links") && !error.message.contains("\n"), "\(error.message)")
        }
        try manager.deleteNode(id)
        #expect(FileManager.default.fileExists(atPath: victim + ".copy"), "delete removed the link, not what it points to")
        #expect(FileManager.default.fileExists(atPath: victim))
    }

    @Test(arguments: ["", ".", "..", "../outside", "a/b"])
    func aCacheSubfolderNameCannotLeaveTheCache(name: String) throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        do {
            _ = try manager.files.cacheSubfolder(name)
            Issue.record("cache folder name \(name.debugDescription) was accepted")
        } catch {
            #expect(error.code == .invalidArgument && !error.message.contains("\n"))
        }
    }
}
