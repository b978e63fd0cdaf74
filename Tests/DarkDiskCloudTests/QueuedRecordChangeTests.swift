import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import Foundation
import Testing

/// The drive's part of the upload queue: renames, moves and deletes are queued like content changes and
/// reach the remote as a record written anew (no download, no new cloud file version) or a tombstone, on
/// condition, merged or dropped as a user would expect when another machine changed the node meanwhile.
@Suite struct QueuedRecordChangeTests {
    /// The cloud file versions the bucket holds for a node.
    static func versions(_ setup: CloudTests.Setup, _ id: NodeID) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: setup.directory + "/remote/nodes/" + CloudLayout.nodeName(id, with: setup.a)).filter { $0.hasSuffix(".ddc") }
    }

    @Test func aQueuedRenameRewritesTheRecordOnlyAndReachesTheOtherStore() async throws {
        let setup = try CloudTests.Setup()
        let id = try await setup.pushedAndPulled(Data("the content".utf8), as: "n1")
        let syncA = CloudSync(manager: setup.a, remote: setup.remote), syncB = CloudSync(manager: setup.b, remote: setup.remote)
        let before = try Self.versions(setup, id)
        let etag = try #require(try await setup.a.outline.entry(id)).cloudETag
        await #expect(try setup.b.files.storedFile(id) == nil, "B holds nothing of the node")

        // B renames and moves it and changes its mode, without its data.
        let attributes = NodeAttributes(kind: .file, mode: 0o600, modifiedSeconds: 1_700_000_000)
        #expect(try setup.b.outline.setAttributes(attributes, of: id))
        try await setup.b.uploadQueue.addRecordChange(id, name: "renamed.txt", parentID: "folder-2")
        #expect(try await setup.b.uploadQueue.change(of: id)?.operation == .record)
        let drained = try await syncB.drainQueue()
        #expect(drained.uploaded == [id] && drained.failed.isEmpty && drained.conflicts.isEmpty, "\(drained)")
        #expect(try await setup.b.uploadQueue.all().isEmpty)
        #expect(try Self.versions(setup, id) == before, "no new cloud file version: the record alone was written")
        await #expect(try setup.b.files.storedFile(id) == nil, "still nothing downloaded")
        #expect(try await setup.b.records.generation(of: id) == 2)

        let pulled = try await syncA.pull()
        #expect(pulled.skipped.isEmpty)
        let entry = try #require(try await setup.a.outline.entry(id))
        #expect(entry.name == "renamed.txt" && entry.parentID == "folder-2" && entry.attributes == attributes)
        #expect(entry.cloudETag == etag, "the same version of the content")
    }

    @Test func aRenameOverAChangeMadeElsewhereIsMergedNotCopied() async throws {
        let setup = try CloudTests.Setup()
        let id = try await setup.pushedAndPulled(Data("version 1".utf8), as: "n2")
        let syncA = CloudSync(manager: setup.a, remote: setup.remote), syncB = CloudSync(manager: setup.b, remote: setup.remote)
        try await syncA.push(dataFile: setup.file("v2", Data("version 2".utf8)), nodeID: id, name: "a's name")
        let v2 = try #require(try await setup.a.outline.entry(id))

        try await setup.b.uploadQueue.addRecordChange(id, name: "b's name")
        let drained = try await syncB.drainQueue()
        #expect(drained.uploaded == [id] && drained.conflicts.isEmpty, "\(drained)")
        let merged = try #require(try await setup.b.outline.entry(id))
        #expect(merged.name == "b's name" && merged.cloudETag == v2.cloudETag, "A's content, B's name")
        #expect(try await setup.b.records.generation(of: id) == 3)
        _ = try await syncA.pull()
        #expect(try await setup.a.outline.entry(id)?.name == "b's name")
        #expect(try setup.b.outline.conflictCopies().isEmpty)
    }

    @Test func aRenameOfANodeDeletedElsewhereIsDropped() async throws {
        let setup = try CloudTests.Setup()
        let id = try await setup.pushedAndPulled(Data("doomed".utf8), as: "n3")
        try await CloudSync(manager: setup.a, remote: setup.remote).deleteNode(id)
        try await setup.b.uploadQueue.addRecordChange(id, name: "too late")
        let drained = try await CloudSync(manager: setup.b, remote: setup.remote).drainQueue()
        #expect(drained.uploaded.isEmpty && drained.failed.map(\.error) == ["node 'n3' was deleted in \(setup.remote.url); its rename was dropped and it is deleted here too"],
                "\(drained)")
        #expect(try await setup.b.uploadQueue.all().isEmpty, "not retried forever")
        #expect(try await setup.b.outline.entry(id) == nil)
    }

    @Test func aQueuedDeleteWritesATombstoneUnlessTheNodeChangedMeanwhile() async throws {
        let setup = try CloudTests.Setup()
        let gone = try await setup.pushedAndPulled(Data("delete me".utf8), as: "n4")
        let kept = try await setup.pushedAndPulled(Data("keep me".utf8), as: "n5")
        let syncA = CloudSync(manager: setup.a, remote: setup.remote), syncB = CloudSync(manager: setup.b, remote: setup.remote)
        try await syncA.push(dataFile: setup.file("k2", Data("keep me, changed".utf8)), nodeID: kept)

        try await setup.b.uploadQueue.addDelete(gone)
        try await setup.b.uploadQueue.addDelete(kept)
        let drained = try await syncB.drainQueue()
        #expect(drained.uploaded == [gone], "\(drained)")
        #expect(drained.failed.map(\.error) == ["node 'n5' changed in \(setup.remote.url) before its delete reached it: it is kept, and the next pull brings its new version back"])
        #expect(try await setup.b.uploadQueue.all().isEmpty)
        #expect(try await setup.b.outline.entry(gone) == nil)

        let pulledA = try await syncA.pull()
        #expect(pulledA.deleted == 1, "the tombstone reached A")
        #expect(try await setup.a.outline.entry(gone) == nil)
        _ = try await syncB.pull()
        let newer = try await setup.a.outline.entry(kept)?.cloudETag
        #expect(try await setup.b.outline.entry(kept)?.cloudETag == newer, "B has A's newer version")
    }

    /// How queued changes combine: a content change writes the record too, so a rename queued on top of it
    /// stays a content change with the new name; a content change replaces a queued rename; a delete
    /// replaces anything.
    @Test func queuedChangesCombine() throws {
        let setup = try CloudTests.Setup()
        let id = try NodeID("n6")
        try setup.b.uploadQueue.add(id, name: "first")
        try setup.b.uploadQueue.addRecordChange(id, name: "second")
        #expect(try setup.b.uploadQueue.change(of: id).map { ($0.operation, $0.name) } ?? (.delete, nil) == (.content, "second"))
        try setup.b.uploadQueue.addDelete(id)
        #expect(try setup.b.uploadQueue.change(of: id)?.operation == .delete)
        try setup.b.uploadQueue.addRecordChange(id, name: "third")
        #expect(try setup.b.uploadQueue.change(of: id)?.operation == .record)
        try setup.b.uploadQueue.add(id)
        #expect(try setup.b.uploadQueue.change(of: id)?.operation == .content)
    }
}
