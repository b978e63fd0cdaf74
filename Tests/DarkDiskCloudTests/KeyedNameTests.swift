import DarkDiskStore
import DarkDiskCloud
import DarkDiskSync
import Foundation
import Testing

extension CloudTests.Setup {
    /// Makes node `id`'s objects in the bucket what a darkdisk before keyed names wrote: its record, as
    /// version `version` (3; 2 without the file ID), sealed under its ID at `records/<id>.rec`, and its cloud
    /// files in `nodes/<id>/`. Returns that record.
    @discardableResult
    func nameByID(_ id: NodeID, version: Int = 3) async throws -> NodeRecord {
        let keyedRecord = CloudLayout.record(id, with: a)
        guard let sealed = try await remote.readAll(keyedRecord) else { throw RemoteError(.notFound, "no record of node '\(id)'") }
        var record = try NodeRecord.open(sealed, expected: id, with: a)
        record.version = version
        if version == 2 { record.fileID = nil }
        _ = try await remote.write(CloudLayout.recordByID(id), data: try record.sealed(with: a))
        try await remote.delete(keyedRecord)
        let folder = directory + "/remote/nodes/"
        try FileManager.default.moveItem(atPath: folder + CloudLayout.nodeName(id, with: a), toPath: folder + id.rawValue)
        return record
    }
}

/// A remote that runs `staged` right before the first write of a record on condition that it is absent:
/// another machine's write landing between a store's read of a node's record under its ID and its move of
/// the record to the node's keyed name.
final class BeforeFirstNewRecord: Remote, Sendable {
    let inner: any Remote
    private let staged: @Sendable () async throws -> Void
    private let done = Locked(false)

    init(_ inner: any Remote, staged: @escaping @Sendable () async throws -> Void) {
        self.inner = inner
        self.staged = staged
    }

    var url: String { inner.url }
    func list(prefix: String) async throws(RemoteError) -> [ObjectInfo] { try await inner.list(prefix: prefix) }
    func info(_ key: String) async throws(RemoteError) -> ObjectInfo? { try await inner.info(key) }
    func read(_ key: String, range: Range<UInt64>, ifMatch etag: String?,
              consume: (UnsafeRawBufferPointer) throws(RemoteError) -> Void) async throws(RemoteError) {
        try await inner.read(key, range: range, ifMatch: etag, consume: consume)
    }
    func write(_ key: String, fromFile path: String) async throws(RemoteError) -> ObjectInfo { try await inner.write(key, fromFile: path) }
    func delete(_ key: String, condition: WriteCondition) async throws(RemoteError) { try await inner.delete(key, condition: condition) }
    func write(_ key: String, data: Data, condition: WriteCondition) async throws(RemoteError) -> ObjectInfo {
        if key.hasPrefix(CloudLayout.recordsPrefix), condition == .absent, done.withLock({ let first = !$0; $0 = true; return first }) {
            do { try await staged() } catch { throw RemoteError(.io, "the staged write failed: \(error)") }
        }
        return try await inner.write(key, data: data, condition: condition)
    }
    func abortUnfinishedUploads(prefix: String, startedBefore date: Date) async throws(RemoteError) -> Int {
        try await inner.abortUnfinishedUploads(prefix: prefix, startedBefore: date)
    }
}

/// The bucket names a node's record and cloud files by a name keyed by the master key, never by its ID
/// (`--node doc` made `records/doc.rec`); a bucket a darkdisk before keyed names wrote is read as it is and
/// moved node by node, by each node's next push.
@Suite struct KeyedNameTests {
    /// Every object key a file remote holds.
    static func keys(_ setup: CloudTests.Setup) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: setup.directory + "/remote").filter {
            var folder: ObjCBool = false
            return FileManager.default.fileExists(atPath: setup.directory + "/remote/" + $0, isDirectory: &folder) && !folder.boolValue
        }
    }

    /// A node's content as `manager` downloads it from `remote`.
    static func content(_ id: NodeID, on manager: DiskManager, remote: any Remote) async throws -> Data {
        try CloudTests().plaintext(try await DownloadManager(manager: manager, remote: remote).nodeData(id))
    }

    @Test func theBucketSeesNoNodeID() async throws {
        let setup = try CloudTests.Setup()
        let node = try NodeID("tax-return-2026")
        try await CloudSync(manager: setup.a, remote: setup.remote).push(dataFile: setup.file("t", Data("taxes".utf8)), nodeID: node, name: "tax.pdf")
        let keys = try Self.keys(setup)
        #expect(!keys.contains { $0.contains("tax") }, "\(keys)")
        let name = CloudLayout.nodeName(node, with: setup.a)
        #expect(CloudLayout.isVersion(name) && keys.contains("records/\(name).rec"), "\(keys)")
        #expect(keys.contains { $0.hasPrefix("nodes/\(name)/") && $0.hasSuffix(".ddc") }, "\(keys)")
        let otherKey = try DiskManager.create(at: StoreLocation(directory: setup.directory + "/other"))
        #expect(CloudLayout.nodeName(node, with: otherKey) != name, "a name is keyed by the master key")

        // Another machine with the key finds the node by opening its record, and reads it.
        let pulled = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(pulled.added == 1 && pulled.skipped.isEmpty, "\(pulled)")
        #expect(try await Self.content(node, on: setup.b, remote: setup.remote) == Data("taxes".utf8))

        // A record of another node sealed under this node's name (by a holder of the key) does not pass for it.
        let recordKey = CloudLayout.record(node, with: setup.a)
        var record = try NodeRecord.open(try #require(try await setup.remote.readAll(recordKey)), expected: node, with: setup.a)
        record.nodeID = "another"
        record.generation = 5
        let context = Array("darkdisk node record 4\u{0}\(name)".utf8)
        _ = try await setup.remote.write(recordKey, data: Data(try setup.a.keys.sealRecord(Array(record.encoded()), context: context)))
        let refused = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        #expect(refused.skipped == ["the record of node '\(node)' is not under its node's name"], "\(refused)")
        #expect(try await setup.b.outline.entry(node) != nil)
        #expect(try await setup.b.outline.entry(NodeID("another")) == nil)
    }

    /// A bucket as a darkdisk before keyed names left it: records and cloud files under node IDs. Every node
    /// reads; a rename or a delete writes where the record is; the next push of a node's content moves it to
    /// its keyed name; `gc` then takes its versions left under its ID and nothing else.
    @Test func aBucketWrittenBeforeKeyedNamesIsReadAndMovedByEachNodesNextPush() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote), syncB = CloudSync(manager: setup.b, remote: setup.remote)
        let (moved, kept, gone) = (try NodeID("moved"), try NodeID("kept"), try NodeID("gone"))
        for id in [moved, kept, gone] {
            try await syncA.push(dataFile: setup.file(id.rawValue, Data("\(id) v1".utf8)), nodeID: id, name: "\(id).txt")
            try await setup.nameByID(id)
        }
        #expect(try Set(Self.keys(setup).filter { $0.hasPrefix("records/") }) == ["records/moved.rec", "records/kept.rec", "records/gone.rec"])
        let pulled = try await syncB.pull()
        #expect(pulled.added == 3 && pulled.skipped.isEmpty, "\(pulled)")
        for id in [moved, kept, gone] {
            #expect(try await setup.b.outline.entry(id)?.keyedNames == false)
            #expect(try await Self.content(id, on: setup.b, remote: setup.remote) == Data("\(id) v1".utf8))
        }

        // A rename of a node under its ID is written there (its cloud file is there); so is a delete's tombstone.
        try await setup.b.uploadQueue.addRecordChange(kept, name: "kept, renamed.txt")
        let drained = try await syncB.drainQueue()
        #expect(drained.uploaded == [kept] && drained.failed.isEmpty, "\(drained)")
        try await syncB.deleteNode(gone)
        // The next push of content moves the node: its keyed record, its new version under its keyed name.
        try await syncB.push(dataFile: setup.file("moved-2", Data("moved v2".utf8)), nodeID: moved)
        let movedName = CloudLayout.nodeName(moved, with: setup.a)
        let records = try Set(Self.keys(setup).filter { $0.hasPrefix("records/") })
        #expect(records == ["records/\(movedName).rec", "records/kept.rec", "records/gone.rec"], "\(records)")
        #expect(try await setup.b.outline.entry(moved)?.keyedNames == true)

        let again = try await syncA.pull()
        #expect(again.skipped.isEmpty && again.deleted == 1, "\(again)")
        #expect(try await setup.a.outline.entry(kept)?.name == "kept, renamed.txt")
        #expect(try await setup.a.outline.entry(gone) == nil)
        #expect(try await Self.content(moved, on: setup.a, remote: setup.remote) == Data("moved v2".utf8))
        #expect(try await syncA.checkRemote().problems.isEmpty)

        // gc: the moved node's version under its ID and the deleted node's go; the renamed node keeps its file.
        let collected = try await syncA.collectGarbage(grace: 0)
        #expect(collected.deleted.count == 2 && collected.skippedNodes.isEmpty, "\(collected)")
        let files = try Set(Self.keys(setup).filter { $0.hasPrefix("nodes/") }.map { $0.split(separator: "/")[1] })
        #expect(files == ["kept", Substring(movedName)], "\(files)")
        #expect(try await Self.content(kept, on: setup.b, remote: setup.remote) == Data("kept v1".utf8))
    }

    /// A machine that read a node's record under its ID before another moved it writes there: the move is
    /// made on condition that the record there is still the one it read, so one of the two comes first and
    /// the other's change becomes a conflict copy; nothing is lost.
    @Test func aMoveThatRacesAChangeUnderTheNodesIDBecomesAConflictCopy() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let node = try NodeID("raced")
        try await syncA.push(dataFile: setup.file("v1", Data("one".utf8)), nodeID: node, name: "raced.txt")
        try await setup.nameByID(node)
        _ = try await syncA.pull()
        _ = try await CloudSync(manager: setup.b, remote: setup.remote).pull()
        try await setup.a.uploadQueue.addRecordChange(node, name: "renamed by A.txt")

        // B pushes new content; A's rename lands under the node's ID between B's read and B's keyed write.
        let racing = BeforeFirstNewRecord(setup.remote) { _ = try await syncA.drainQueue() }
        let result = try await CloudSync(manager: setup.b, remote: racing).push(dataFile: setup.file("v2", Data("two".utf8)), nodeID: node)
        #expect(result.conflict != nil, "\(result)")
        let records = try Set(Self.keys(setup).filter { $0.hasPrefix("records/") })
        #expect(records.contains("records/raced.rec") && !records.contains("records/\(CloudLayout.nodeName(node, with: setup.a)).rec"), "\(records)")
        let pulled = try await syncA.pull()
        #expect(pulled.skipped.isEmpty && pulled.added == 1, "the conflict copy: \(pulled)")
        #expect(try await setup.a.outline.entry(node)?.name == "renamed by A.txt")
        #expect(try await Self.content(node, on: setup.a, remote: setup.remote) == Data("one".utf8))
        let copy = try #require(result.conflict)
        #expect(try await Self.content(copy.nodeID, on: setup.a, remote: setup.remote) == Data("two".utf8))
    }

    /// A push cut short after it moved a node leaves its record under its ID (or the note that it moved):
    /// a store joining then reads the keyed record, `check --remote` lists the leftover, `gc` deletes it. A
    /// bucket that withholds the keyed record and serves the note deletes nothing.
    @Test func whatAMoveLeavesUnderTheNodesIDIsNeverTakenForTheNode() async throws {
        let setup = try CloudTests.Setup()
        let syncA = CloudSync(manager: setup.a, remote: setup.remote)
        let node = try NodeID("left")
        try await syncA.push(dataFile: setup.file("v1", Data("one".utf8)), nodeID: node)
        try await setup.nameByID(node)
        let byID = try #require(try await setup.remote.readAll(CloudLayout.recordByID(node)))
        _ = try await syncA.pull()
        try await syncA.push(dataFile: setup.file("v2", Data("two".utf8)), nodeID: node)
        _ = try await setup.remote.write(CloudLayout.recordByID(node), data: byID)

        let joining = try DiskManager.create(at: StoreLocation(directory: setup.directory + "/c"), passphrase: Array("shared secret".utf8),
                                             adoptingKeyFile: try MasterKeyFile.contents(at: setup.a.location.keyPath))
        let syncC = CloudSync(manager: joining, remote: setup.remote)
        let pulled = try await syncC.pull()
        #expect(pulled.added == 1 && pulled.skipped.isEmpty, "\(pulled)")
        #expect(try await Self.content(node, on: joining, remote: setup.remote) == Data("two".utf8))
        let check = try await syncC.checkRemote()
        #expect(check.problems.isEmpty && check.orphans.contains("records/left.rec"), "\(check)")
        #expect(try await syncC.collectGarbage(grace: 3600).replacedRecords == ["records/left.rec"])
        #expect(try await setup.remote.info(CloudLayout.recordByID(node)) == nil)

        // The bucket withholds the keyed record and serves a note that the node moved: not a delete.
        let keyed = CloudLayout.record(node, with: setup.a)
        let keyedRecord = try #require(try await setup.remote.readAll(keyed))
        try await setup.remote.delete(keyed)
        var note = NodeTombstone(nodeID: node, generation: 3, deletedAt: Date())
        note.version = 1
        note.moved = true
        _ = try await setup.remote.write(CloudLayout.recordByID(node), data: try note.sealed(with: setup.a))
        let withheld = try await syncC.pull()
        #expect(withheld.deleted == 0 && withheld.skipped.count == 1 && withheld.skipped[0].contains("moved to its keyed name"), "\(withheld)")
        #expect(try await joining.outline.entry(node) != nil)
        let collected = try await syncC.collectGarbage(grace: 0)
        #expect(collected.deleted.isEmpty && collected.skippedNodes == ["left"], "none of its files goes: \(collected)")
        _ = try await setup.remote.write(keyed, data: keyedRecord)
        #expect(try await syncC.pull().skipped.isEmpty)
    }
}
