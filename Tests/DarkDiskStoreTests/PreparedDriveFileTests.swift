@testable import DarkDiskStore
import DarkDiskCrypto
import Foundation
import Testing

/// A drive file made in two steps (`prepareDriveFile`, then `insertDriveFile`), as the mount makes one for a
/// `creat`: prepared, it is checked and has its content but the index does not know it; inserted, it is
/// there with the attributes it was made with; an insert that can no longer land fails with a typed error
/// and stores nothing.
@Suite struct PreparedDriveFileTests {
    @Test func aPreparedFileIsInTheIndexOnlyOnceInserted() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let prepared = try manager.prepareDriveFile(named: "new.txt", in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o640))
        #expect(try manager.driveNode(prepared.node.id) == nil)
        #expect(try manager.driveListing(of: folder.id).isEmpty)

        try manager.insertDriveFile(prepared)
        let inserted = try #require(try manager.driveNode(prepared.node.id))
        #expect(inserted.name == "new.txt")
        #expect(inserted.parentID == folder.id)
        #expect(inserted.attributes.mode == 0o640)
        let bytes = TemporaryStore.bytes(5_000, seed: 2)
        try bytes.withUnsafeBytes { try prepared.content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(prepared.node.id, content: prepared.content)
        #expect(try manager.driveListing(of: folder.id).map(\.data?.plaintextSize) == [5_000])
    }

    @Test func badNamesAreRefusedBeforeAnythingIsMade() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        for name in ["", ".", "..", "a/b", String(repeating: "x", count: 256)] {
            #expect(throws: DarkDiskError.self) { _ = try manager.prepareDriveFile(named: name, in: nil, attributes: NodeAttributes(kind: .file)) }
        }
        #expect(throws: DarkDiskError.self) { _ = try manager.prepareDriveFile(named: "folder", in: nil, attributes: NodeAttributes(kind: .folder)) }
    }

    @Test func anInsertThatCannotLandStoresNothing() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "gone", in: nil, attributes: NodeAttributes(kind: .folder))
        let orphan = try manager.prepareDriveFile(named: "late.txt", in: folder.id, attributes: NodeAttributes(kind: .file))
        try manager.deleteDriveNode(folder.id)
        let error = #expect(throws: DarkDiskError.self) { try manager.insertDriveFile(orphan) }
        #expect(error?.code == .notFound)
        #expect(try manager.driveNode(orphan.node.id) == nil)

        // A name taken meanwhile: refused, unless the caller shows both (two makers of one name).
        _ = try manager.createDriveFile(named: "same.txt", in: nil, attributes: NodeAttributes(kind: .file))
        let second = try manager.prepareDriveFile(named: "same.txt", in: nil, attributes: NodeAttributes(kind: .file))
        #expect((#expect(throws: DarkDiskError.self) { try manager.insertDriveFile(second) })?.code == .exists)
        try manager.insertDriveFile(second, allowingDuplicate: true)
        #expect(try manager.driveChildren(of: nil, named: "same.txt").count == 2)
    }

    /// The mount's way for a `creat`: the row goes into the index with the file's first commit, in the commit's
    /// transaction (one transaction per new file where it was two).
    @Test func aFirstCommitInsertsThePreparedFileInItsTransaction() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o755))
        let bytes = TemporaryStore.bytes(5_000, seed: 3)

        let twoSteps = try manager.prepareDriveFile(named: "a.txt", in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o600))
        try bytes.withUnsafeBytes { try twoSteps.content.write(offset: 0, bytes: $0) }
        // (Counted on the maintenance queue, so that no round of the store's own upkeep commits meanwhile.)
        let twoCommits = try manager.files.maintenanceQueue.sync { () throws -> Int in
            let before = manager.indexStatistics
            try manager.insertDriveFile(twoSteps)
            try manager.commitDriveFile(twoSteps.node.id, content: twoSteps.content)
            return (manager.indexStatistics - before).commits
        }
        #expect(twoCommits == 2)

        let oneStep = try manager.prepareDriveFile(named: "b.txt", in: folder.id, attributes: NodeAttributes(kind: .file, mode: 0o640))
        try bytes.withUnsafeBytes { try oneStep.content.write(offset: 0, bytes: $0) }
        let oneCommit = try manager.files.maintenanceQueue.sync { () throws -> Int in
            let before = manager.indexStatistics
            try manager.commitDriveFile(oneStep.node.id, content: oneStep.content, inserting: oneStep)
            return (manager.indexStatistics - before).commits
        }
        #expect(oneCommit == 1)

        let inserted = try #require(try manager.driveNode(oneStep.node.id))
        #expect(inserted.name == "b.txt")
        #expect(inserted.attributes.mode == 0o640)
        #expect(try manager.driveListing(of: folder.id).map(\.data?.plaintextSize) == [5_000, 5_000])
        #expect(try manager.uploadQueue.all().contains { $0.nodeID == oneStep.node.id })
        let export = try #require(try manager.files.nodeFile(oneStep.node.id))
        let reader = try export.reader()
        #expect(try Data(reader.read(section: reader.dataSection, offset: 0, count: 10_000)) == bytes)
    }

    @Test func aFirstCommitThatCannotInsertStoresNothing() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "gone", in: nil, attributes: NodeAttributes(kind: .folder))
        let orphan = try manager.prepareDriveFile(named: "late.txt", in: folder.id, attributes: NodeAttributes(kind: .file))
        try Data("late".utf8).withUnsafeBytes { try orphan.content.write(offset: 0, bytes: $0) }
        try manager.deleteDriveNode(folder.id)
        let queued = try manager.uploadQueue.all().count

        let error = #expect(throws: DarkDiskError.self) { try manager.commitDriveFile(orphan.node.id, content: orphan.content, inserting: orphan) }
        #expect(error?.code == .notFound)
        #expect(try manager.driveNode(orphan.node.id) == nil)
        #expect(try manager.files.nodeFile(orphan.node.id) == nil)
        #expect(try manager.uploadQueue.all().count == queued)

        // Another node's prepared file is refused before anything is written.
        let other = try manager.prepareDriveFile(named: "other.txt", in: nil, attributes: NodeAttributes(kind: .file))
        let mine = try manager.prepareDriveFile(named: "mine.txt", in: nil, attributes: NodeAttributes(kind: .file))
        let mismatch = #expect(throws: DarkDiskError.self) { try manager.commitDriveFile(mine.node.id, content: mine.content, inserting: other) }
        #expect(mismatch?.code == .invalidArgument)
        #expect(try manager.driveNode(mine.node.id) == nil)
        #expect(try manager.driveNode(other.node.id) == nil)
    }
}
