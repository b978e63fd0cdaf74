import DarkDiskStore
import DarkDiskCloud
import DarkDiskTestSupport
import DarkDiskTestTraits
import Foundation
import Testing

/// Deletes reach the remote conditionally: a delete replaces the node's record with a
/// sealed tombstone only if the record is still the one the deleting store last saw, and a pull never drops
/// a local change that is still queued.
@Suite(.ownThreads) struct RemoteDeleteTests {
    typealias Kind = ConditionalWriteTests.Kind
    /// The remote's own conditional DELETE, not on Ceph RGW: RGW 16.2 ignores `If-Match` on DELETE
    /// (measured: a delete based on a replaced version went through), which is why a node's delete is a
    /// conditional write of a tombstone instead.
    static let kinds: [Kind] = [.file, .s3]

    /// What the bucket holds for a node's record now, as a store reads it.
    static func recordObject(_ id: NodeID, in bucket: ConditionalWriteTests.Bucket, with manager: DiskManager) async throws -> RecordObject? {
        guard let data = try await bucket.remote.readAll(CloudLayout.record(id, with: manager)) else { return nil }
        return try RecordObject.read(data, key: CloudLayout.record(id, with: manager), expected: id, with: manager).object
    }

    @Test(arguments: Self.kinds) func conditionalDeletesHonourTheirCondition(_ kind: Kind) async throws {
        let bucket = try await ConditionalWriteTests.Bucket(kind)
        let remote = bucket.remote
        let first = try await remote.write("records/d.rec", data: Data("one".utf8), condition: .absent)
        _ = try await remote.write("records/d.rec", data: Data("two".utf8), condition: .matches(first.etag))
        do {
            try await remote.delete("records/d.rec", condition: .matches(first.etag))
            Issue.record("a delete based on a replaced version went through")
        } catch {
            #expect(error.code == .preconditionFailed, "\(error)")
        }
        let current = try #require(try await remote.info("records/d.rec"))
        try await remote.delete("records/d.rec", condition: .matches(current.etag))
        #expect(try await remote.info("records/d.rec") == nil)
    }

    @Test(arguments: Kind.allCases) func aDeleteReachesTheOtherStoreUnlessTheNodeChangedMeanwhile(_ kind: Kind) async throws {
        let bucket = try await ConditionalWriteTests.Bucket(kind)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let gone = try NodeID("gone")
        let kept = try NodeID("kept")
        for id in [gone, kept] {
            try await bucket.sync(a).push(dataFile: bucket.setup.file(id.rawValue, Data("first \(id)".utf8)), nodeID: id)
        }
        _ = try await bucket.sync(b).pull()
        try await bucket.sync(b).deleteNode(gone)
        // The record is now a tombstone of the next generation, sealed: it names no file and no name.
        let object = try await Self.recordObject(gone, in: bucket, with: a)
        guard case .tombstone(let tombstone)? = object else { Issue.record("no tombstone: \(String(describing: object))"); return }
        #expect(tombstone.generation == 2)
        let raw = try #require(try await bucket.remote.readAll(CloudLayout.record(gone, with: a)))
        #expect(raw.range(of: Data("gone".utf8)) == nil && raw.range(of: Data("tombstone".utf8)) == nil)
        #expect(try await b.outline.entry(gone) == nil)
        let pulled = try await bucket.sync(a).pull()
        #expect(pulled.deleted == 1)
        #expect(try await a.outline.entry(gone) == nil)

        // A changed `kept` after B last saw it: B's delete is refused and deletes nothing.
        try await bucket.sync(a).push(dataFile: bucket.setup.file("kept2", Data("second".utf8)), nodeID: kept)
        do {
            try await bucket.sync(b).deleteNode(kept)
            Issue.record("a delete of a node changed meanwhile went through")
        } catch let error as RemoteError {
            #expect(error.code == .preconditionFailed && error.message.contains("changed"), "\(error)")
        }
        #expect(try await bucket.remote.info(CloudLayout.record(kept, with: a)) != nil)
        #expect(try await b.outline.entry(kept) != nil)
    }

    /// B has a change of a node queued when A deletes the node: B's pull keeps the node, and B's upload
    /// brings it back with B's content (a modification wins over a deletion; nothing is lost).
    @Test func aPullNeverDropsAQueuedChange() async throws {
        let bucket = try await ConditionalWriteTests.Bucket(.file)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let id = try NodeID("edited")
        try await bucket.sync(a).push(dataFile: bucket.setup.file("v1", Data("one".utf8)), nodeID: id, name: "edited.txt")
        // Another node, so that the bucket is not empty (a pull refuses an empty listing).
        try await bucket.sync(a).push(dataFile: bucket.setup.file("other", Data("other".utf8)), nodeID: NodeID("other"))
        _ = try await bucket.sync(b).pull()
        try await bucket.sync(b).queuePush(dataFile: bucket.setup.file("v2", Data("B's edit".utf8)), nodeID: id)
        try await bucket.sync(a).deleteNode(id)

        let pulled = try await bucket.sync(b).pull()
        #expect(pulled.deleted == 0)
        await #expect(try b.files.storedFiles(id).contains { $0.kind == .data })
        let drained = try await bucket.sync(b).drainQueue()
        #expect(drained.uploaded == [id], "\(drained)")
        _ = try await bucket.sync(a).pull()
        #expect(try await bucket.content(id, on: a) == Data("B's edit".utf8))
        #expect(try await a.outline.entry(id)?.name == "edited.txt")
    }

    /// The other store deletes a node between this store's read of the record and its write of the
    /// tombstone: the conditional write is refused (on RGW too, which ignores `If-Match` on DELETE), so the
    /// change is never deleted unseen.
    @Test(arguments: Kind.allCases) func aDeleteRacingAnEditIsRefusedByTheServer(_ kind: Kind) async throws {
        let bucket = try await ConditionalWriteTests.Bucket(kind)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let id = try NodeID("raced")
        try await bucket.sync(a).push(dataFile: bucket.setup.file("v1", Data("one".utf8)), nodeID: id)
        _ = try await bucket.sync(b).pull()
        // A's edit lands right before B's tombstone write, after B read the record.
        let (syncA, edit) = (bucket.sync(a), try bucket.setup.file("v2", Data("two".utf8)))
        let racing = InterceptingRemote(bucket.remote, beforeFirstRecordUpdate: {
            try await syncA.push(dataFile: edit, nodeID: id)
        })
        do {
            try await CloudSync(manager: b, remote: racing, host: "machine-b").deleteNode(id)
            Issue.record("a delete based on a replaced record went through")
        } catch let error as RemoteError {
            #expect(error.code == .preconditionFailed && error.message.contains("changed"), "\(error)")
        }
        #expect(racing.raced)
        #expect(try await Self.recordObject(id, in: bucket, with: a)?.record?.generation == 2)
        #expect(try await b.outline.entry(id) != nil, "nothing was deleted here either")
        _ = try await bucket.sync(b).pull()
        #expect(try await bucket.content(id, on: b) == Data("two".utf8))
    }

    /// A bucket writer puts a node's record back after its delete: every store that saw the tombstone
    /// refuses it as a rollback (one line), and the node stays deleted. `check --remote` agrees, and `gc`
    /// deletes the deleted node's cloud file once its grace is over.
    @Test func aReplayedRecordOfADeletedNodeIsARefusedRollback() async throws {
        let bucket = try await ConditionalWriteTests.Bucket(.file)
        let (a, b) = (bucket.setup.a, bucket.setup.b)
        let id = try NodeID("deleted")
        try await bucket.sync(a).push(dataFile: bucket.setup.file("v1", Data("secret".utf8)), nodeID: id)
        try await bucket.sync(a).push(dataFile: bucket.setup.file("other", Data("other".utf8)), nodeID: NodeID("other"))
        let old = try #require(try await bucket.remote.readAll(CloudLayout.record(id, with: a)))
        _ = try await bucket.sync(b).pull()
        try await bucket.sync(a).deleteNode(id)
        #expect(try await bucket.sync(b).pull().deleted == 1)

        _ = try await bucket.remote.write(CloudLayout.record(id, with: a), data: old)
        for store in [a, b] {
            let pulled = try await bucket.sync(store).pull()
            #expect(pulled.added == 0 && pulled.skipped.count == 1 && pulled.skipped[0].contains("rollback"), "\(pulled)")
            #expect(try await store.outline.entry(id) == nil)
            let check = try await bucket.sync(store).checkRemote()
            #expect(check.problems.count == 1 && check.problems[0].contains("rollback"), "\(check.problems)")
        }

        // With the tombstone back, the check is clean; gc then takes the deleted node's cloud file.
        _ = try await bucket.remote.write(CloudLayout.record(id, with: a), data: try NodeTombstone(nodeID: id, generation: 2, deletedAt: Date()).sealed(with: a))
        #expect(try await bucket.sync(b).checkRemote().problems.isEmpty)
        let (folder, otherFolder) = (CloudLayout.nodeName(id, with: a), CloudLayout.nodeName(try NodeID("other"), with: a))
        #expect(try await bucket.remote.list(prefix: "nodes/\(folder)/").count == 1)
        _ = try await bucket.sync(b).collectGarbage(grace: 0)
        #expect(try await bucket.remote.list(prefix: "nodes/\(folder)/").isEmpty)
        #expect(try await bucket.remote.list(prefix: "nodes/\(otherFolder)/").count == 1)
    }
}
