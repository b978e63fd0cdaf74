@testable import DarkDiskStore
import DarkDiskCrypto
import GRDB
import Foundation
import Testing

/// The drive's lookups by name and by ID (`driveChildren(of:named:)`, `driveNode`, and the same with their
/// data) and the stored file an open reads (`nodeFile`) go through their own SQLite connection
/// (`DriveLookupConnection`, SQLite's C API) and must find what the listings, read through GRDB, show: every
/// column, duplicates of one name, a node whose parent is no folder (shown at the top).
@Suite struct DriveLookupConnectionTests {
    @Test func lookupsFindWhatTheListingShows() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o750))
        let (file, content) = try manager.createDriveFile(named: "é – \u{1F600}.txt", in: folder.id, attributes: NodeAttributes(
            kind: .file, mode: 0o640, modifiedSeconds: 1_700_000_000, modifiedNanoseconds: 123_456_789,
            extendedAttributes: ["user.note": Array("kept".utf8), "user.empty": []]))
        try Data("hello".utf8).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(file.id, content: content)
        let link = try manager.createDriveNode(named: "link", in: folder.id, attributes: NodeAttributes(kind: .symlink, target: "../elsewhere"))
        // Two nodes with one name (two makers), and a node inside a file (shown at the top).
        let twin = try manager.prepareDriveFile(named: "link", in: folder.id, attributes: NodeAttributes(kind: .file))
        try manager.insertDriveFile(twin, allowingDuplicate: true)
        // (From the outline, as a pull brings them: a node only the remote has, and one in a file.)
        let remoteOnly = try NodeID("remote-only"), inFile = try NodeID("in-a-file")
        try manager.outline.update([
            OutlineEntry(nodeID: remoteOnly, name: "remote.bin", parentID: folder.id.rawValue, metadataSize: 0, thumbnailSize: 0,
                         dataSize: 123_456, wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(remoteOnly)), cloudETag: "e1"),
            OutlineEntry(nodeID: inFile, name: "inside", parentID: file.id.rawValue, metadataSize: 0, thumbnailSize: 0,
                         dataSize: 5, wrappedKey: manager.keys.wrap(SymmetricKey.random(), for: .node(inFile)), cloudETag: "e2"),
        ])

        let listed = try manager.driveChildren(of: folder.id)
        #expect(listed.count == 4)
        for node in listed {
            let named = try manager.driveChildren(of: folder.id, named: node.name)
            #expect(named.contains(node))
            #expect(named == listed.filter { $0.name == node.name })
            #expect(try manager.driveNode(node.id) == node)
        }
        let twins: Set<NodeID> = Set(try manager.driveChildren(of: folder.id, named: "link").map(\.id))
        #expect(twins == [link.id, twin.node.id])
        #expect(try manager.driveNode(file.id)?.attributes.extendedAttributes == ["user.note": Array("kept".utf8), "user.empty": []])
        #expect(try manager.driveChildren(of: folder.id, named: "missing").isEmpty)
        #expect(try manager.driveNode(NodeID.random()) == nil)
        // A node in a file is at the top, by ID as in the top's listing.
        let top = try #require(try manager.driveNode(inFile))
        #expect(top.parentID == nil)
        #expect(try manager.driveChildren(of: nil).contains(top))

        // With their data, as the listing shows it: a lookup of a name or an ID is one read of all a `stat` needs.
        let withData = try manager.driveListing(of: folder.id)
        for listedNode in withData {
            #expect(try manager.driveListedChildren(of: folder.id, named: listedNode.node.name).contains(listedNode))
            #expect(try manager.driveListedNode(listedNode.node.id) == listedNode)
        }
        #expect(try manager.driveListedNode(remoteOnly)?.remoteDataSize == 123_456)
        #expect(try manager.driveListedNode(remoteOnly)?.data == nil)
        #expect(try manager.driveListedNode(file.id)?.data?.plaintextSize == 5)

        // They went through the lookup connection, which is still in use.
        #expect(manager.withLookupConnection { _ in true } == true)
    }

    /// An open finds a node's stored file through the lookup connection as through the pool: the same record,
    /// the same bytes, and a cache file past its pool's default expiration is gone, as `isExpired` says.
    @Test func anOpenReadsTheStoredFileThroughTheLookupConnection() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let plaintext = TemporaryStore.bytes(10_000, seed: 3)
        let id = try NodeID("stored")
        try manager.importNodeFile(DiskImport(cleartextData: plaintext), nodeID: id)
        let export = try #require(try manager.files.nodeFile(id))
        #expect(export.plaintextSize == 10_000)
        #expect(Data(try export.reader().read(section: 0, offset: 0, count: 10_000)) == plaintext)
        #expect(manager.withLookupConnection { _ in true } == true)
        let columns = try #require(manager.withLookupConnection { connection throws(DriveLookupConnection.Failure) in
            try connection.storedFile(kind: "data", owner: id.rawValue, identity: "")
        } ?? nil)
        let viaPool = try #require(try manager.database.read { db in try FileRecord.find(db, kind: .data, owner: id.rawValue) })
        let viaLookup = try columns.0.get()
        #expect(viaLookup.id == viaPool.id && viaLookup.name == viaPool.name && viaLookup.wrappedKey == viaPool.wrappedKey)
        #expect(viaLookup.pool == viaPool.pool && viaLookup.mode == viaPool.mode && viaLookup.format == viaPool.format)
        #expect(viaLookup.storedSize == viaPool.storedSize && viaLookup.lastAccess == viaPool.lastAccess)
        #expect(columns.defaultExpiration == (try manager.files.settings(for: .data)).defaultExpiration)
        #expect(try manager.files.nodeFile(NodeID("none")) == nil)

        // The pool's default expiration comes with the row: one second, and the file is older than that.
        try manager.files.setDefaultExpiration(1, for: .data)
        try manager.database.write { db in try db.execute(sql: "UPDATE file SET modified = modified - 10") }
        #expect(try manager.files.nodeFile(id) == nil, "expired by its pool's default")
    }

    /// A file row the index cannot hold (an unknown storage mode) is the index's corruption, said as such,
    /// through the lookup connection as through the pool.
    @Test func aFileRowOfUnknownModeIsRefusedByName() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let id = try NodeID("odd")
        try manager.importNodeFile(DiskImport(cleartextData: TemporaryStore.bytes(100)), nodeID: id)
        try manager.database.write { db in try db.execute(sql: "UPDATE file SET mode = 'sideways'") }
        #expect { try manager.files.nodeFile(id) } throws: { ($0 as? DarkDiskError)?.code == .corrupt && "\($0)".contains("sideways") }
        #expect(manager.withLookupConnection { _ in true } == true, "a bad row is not the connection's failure")
    }

    /// A change committed after a lookup is seen by the next one (the connection holds no snapshot).
    @Test func aLookupSeesTheLatestCommit() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder))
        #expect(try manager.driveChildren(of: folder.id, named: "new").isEmpty)
        let (made, _) = try manager.createDriveFile(named: "new", in: folder.id, attributes: NodeAttributes(kind: .file))
        #expect(try manager.driveChildren(of: folder.id, named: "new").map(\.id) == [made.id])
        _ = try manager.moveDriveNode(made.id, to: "renamed", in: folder.id)
        #expect(try manager.driveChildren(of: folder.id, named: "new").isEmpty)
        #expect(try manager.driveNode(made.id)?.name == "renamed")
        // Another instance's change (another process's, as the CLI's) too.
        let other = try store.open()
        try other.deleteDriveNode(made.id)
        #expect(try manager.driveNode(made.id) == nil)
    }

    /// A name looked up at the top is also looked for among the nodes shown there because their folder is not
    /// one: through the index of names, not by reading every node (1 ms per lookup at 10,000 nodes).
    @Test func aLookupAtTheTopReadsOnlyNodesOfThatName() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let plan = try manager.database.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + DiskManager.orphansNamed, arguments: ["x"]).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("USING INDEX node_name") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
    }

    /// A lookup connection that fails mid-run (here its table goes from under its prepared statements) hands
    /// the lookups to reads through the pool for the rest of the process, with the same answers.
    @Test func aFailingLookupConnectionHandsLookupsToThePool() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder))
        let (file, content) = try manager.createDriveFile(named: "a.txt", in: folder.id, attributes: NodeAttributes(kind: .file))
        try Data("hello".utf8).withUnsafeBytes { try content.write(offset: 0, bytes: $0) }
        try manager.commitDriveFile(file.id, content: content)
        let copy = store.directory + "/lookup-copy.sqlite"
        try manager.database.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copy]) }
        let doomed = try DriveLookupConnection(path: copy)
        #expect(try doomed.children(of: folder.id.rawValue, named: "a.txt").count == 1)
        try DatabaseQueue(path: copy).writeWithoutTransaction { db in try db.execute(sql: "DROP TABLE node") }
        manager.index.lookupConnection.withLock { $0 = .open(doomed) }

        #expect(try manager.driveChildren(of: folder.id, named: "a.txt").map(\.id) == [file.id])
        #expect(manager.withLookupConnection { _ in true } == nil, "the failed connection was used again")
        #expect(try manager.driveNode(file.id)?.name == "a.txt")
        #expect(try manager.driveChildren(of: folder.id, named: "missing").isEmpty)
        #expect(try manager.driveListedNode(file.id)?.data?.plaintextSize == 5)
        #expect(try manager.driveListedChildren(of: folder.id, named: "a.txt").map(\.node.id) == [file.id])
        #expect(try manager.files.nodeFile(file.id)?.plaintextSize == 5, "an open reads through the pool")
    }
}
