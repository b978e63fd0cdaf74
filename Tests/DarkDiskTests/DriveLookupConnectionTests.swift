@testable import DarkDisk
import DarkDiskCrypto
import GRDB
import Foundation
import Testing

/// The drive's lookups by name and by ID (`driveChildren(of:named:)`, `driveNode`) go through their own
/// SQLite connection (`DriveLookupConnection`, SQLite's C API) and must find what the listings, read through
/// GRDB, show: every column, duplicates of one name, a node whose parent is no folder (shown at the top).
@Suite struct DriveLookupConnectionTests {
    @Test func lookupsFindWhatTheListingShows() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let folder = try manager.createDriveNode(named: "docs", in: nil, attributes: NodeAttributes(kind: .folder, mode: 0o750))
        let (file, _) = try manager.createDriveFile(named: "é – \u{1F600}.txt", in: folder.id, attributes: NodeAttributes(
            kind: .file, mode: 0o640, modifiedSeconds: 1_700_000_000, modifiedNanoseconds: 123_456_789,
            extendedAttributes: ["user.note": Array("kept".utf8), "user.empty": []]))
        let link = try manager.createDriveNode(named: "link", in: folder.id, attributes: NodeAttributes(kind: .symlink, target: "../elsewhere"))
        // Two nodes with one name (two makers), and a node inside a file (shown at the top).
        let twin = try manager.prepareDriveFile(named: "link", in: folder.id, attributes: NodeAttributes(kind: .file))
        try manager.insertDriveFile(twin, allowingDuplicate: true)
        // (From the outline, as a pull brings them: a node only the remote has, and one in a file.)
        let remoteOnly = try NodeID("remote-only"), inFile = try NodeID("in-a-file")
        try manager.updateOutline([
            OutlineEntry(nodeID: remoteOnly, name: "remote.bin", parentID: folder.id.rawValue, metadataSize: 0, thumbnailSize: 0,
                         dataSize: 123_456, wrappedKey: manager.wrapKey(SymmetricKey.random(), for: .node(remoteOnly)), cloudETag: "e1"),
            OutlineEntry(nodeID: inFile, name: "inside", parentID: file.id.rawValue, metadataSize: 0, thumbnailSize: 0,
                         dataSize: 5, wrappedKey: manager.wrapKey(SymmetricKey.random(), for: .node(inFile)), cloudETag: "e2"),
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

        // They went through the lookup connection, which is still in use.
        #expect(manager.withLookupConnection { _ in true } == true)
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
        let (file, _) = try manager.createDriveFile(named: "a.txt", in: folder.id, attributes: NodeAttributes(kind: .file))
        let copy = store.directory + "/lookup-copy.sqlite"
        try manager.database.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copy]) }
        let doomed = try DriveLookupConnection(path: copy)
        #expect(try doomed.children(of: folder.id.rawValue, named: "a.txt").count == 1)
        try DatabaseQueue(path: copy).writeWithoutTransaction { db in try db.execute(sql: "DROP TABLE node") }
        manager.lookupConnection.withLock { $0 = .open(doomed) }

        #expect(try manager.driveChildren(of: folder.id, named: "a.txt").map(\.id) == [file.id])
        #expect(manager.withLookupConnection { _ in true } == nil, "the failed connection was used again")
        #expect(try manager.driveNode(file.id)?.name == "a.txt")
        #expect(try manager.driveChildren(of: folder.id, named: "missing").isEmpty)
    }
}
