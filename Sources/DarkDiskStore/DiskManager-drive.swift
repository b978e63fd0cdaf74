import DarkDiskCrypto
import Foundation
import GRDB

/// A node as the drive (`/files`) shows it: its place in the tree and what it is.
package struct DriveNode: Sendable, Equatable {
    package let id: NodeID
    package let name: String
    /// The folder node it is in; nil at the top of the drive.
    package let parentID: NodeID?
    package let created: Double
    package var attributes: NodeAttributes
    /// When the node last changed (content, name, folder, mode, times, extended attributes), in seconds
    /// since 1970: its `ctime`. Nil for a node not yet in the index, or older than the index's column.
    package var changed: Double? = nil
}

/// A new drive file not yet in the index (`DiskManager.prepareDriveFile`): its node and its content.
package struct PreparedDriveFile: Sendable {
    let row: DiskManager.DriveNodeRow
    package var node: DriveNode { row.node }
    package let content: StagedContent
}

/// A drive node as a folder's listing shows it (`DiskManager.driveListing`): with its stored data, if any,
/// else the size the outline gives its data (nil: the remote does not have the node).
package struct DriveListedNode: Sendable, Equatable {
    package let node: DriveNode
    package let data: StoredFile?
    package let remoteDataSize: UInt64?
}

extension DiskManager {
    /// The drive's nodes are those that have a name: the outline's, and those made through the drive here
    /// (not uploaded yet). A node whose parent is not a folder the
    /// outline has is shown at the top of the drive, so nothing named is ever out of reach.

    /// The SQL condition on a `child` row of the outline whose parent is not a drive folder (shown at the top).
    private static let orphan = """
        child.parentID IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM node AS parent WHERE parent.id = child.parentID AND parent.type = 'folder'
                          AND parent.name IS NOT NULL)
        """

    /// The nodes named `?` shown at the top because their folder is not one (read through the `node_name` index).
    static let orphansNamed = "SELECT \(DriveColumns.selected) FROM node AS child WHERE name = ? AND \(orphan)"

    /// The drive node `nodeID`, if the outline names it.
    package func driveNode(_ nodeID: NodeID) throws(DarkDiskError) -> DriveNode? {
        try driveListedNode(nodeID)?.node
    }

    /// The drive node `nodeID`, if the outline names it, with what a listing shows of its data: one indexed
    /// read (a lookup's, a `stat`'s).
    package func driveListedNode(_ nodeID: NodeID) throws(DarkDiskError) -> DriveListedNode? {
        // (Nil from the lookup connection: none to use; `.some(nil)`: the outline does not name the node.)
        var found = withLookupConnection { connection throws(DriveLookupConnection.Failure) in try connection.node(nodeID.rawValue) }
        if found == nil {
            found = try quickRead { db in
                try Row.fetchOne(db.cachedStatement(sql: DriveListedColumns.byID), arguments: [nodeID.rawValue])
                    .map { (DriveListedColumns($0), parentIsFolder: $0[Int(DriveListedColumns.count)] as Bool) }
            }
        }
        guard let (columns, parentIsFolder) = found ?? nil else { return nil }
        let parent = columns.node.parentID.flatMap { try? NodeID($0) }
        return try Self.listedNode(from: columns, in: parentIsFolder ? parent : nil)
    }

    /// How many folders drive folder `folder` (nil: the top) holds: its link count is two more, as on a
    /// local disk (`..` of each). One read of a partial index of folders.
    package func driveSubfolderCount(of folder: NodeID?) throws(DarkDiskError) -> Int {
        try quickRead { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM node WHERE parentID IS ? AND type = 'folder' AND name IS NOT NULL"),
                             arguments: [folder?.rawValue]) ?? 0
        }
    }

    /// The drive nodes of `ids` that the outline names, by ID, in one read (the store watcher asks for every
    /// node that changed in the last second at once).
    package func driveNodes(_ ids: [NodeID]) throws(DarkDiskError) -> [NodeID: DriveNode] {
        try quickRead { db in
            var nodes: [NodeID: DriveNode] = [:]
            for id in ids { nodes[id] = try Self.namedDriveNode(id, db) }
            return nodes
        }
    }

    /// Node `id` as the drive shows it, if the outline names it: in its folder, or at the top when its
    /// parent is not a drive folder.
    private static func namedDriveNode(_ id: NodeID, _ db: Database) throws -> DriveNode? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(DriveColumns.selected) FROM node WHERE id = ? AND name IS NOT NULL"),
                                         arguments: [id.rawValue]) else { return nil }
        let parent = (row[2] as String?).flatMap { try? NodeID($0) }
        return try driveNode(from: DriveColumns(row), in: try parent.map { try isDriveFolder($0, db) } == true ? parent : nil)
    }

    /// The drive nodes in folder `parentID` (nil: the top), in one indexed query.
    package func driveChildren(of parentID: NodeID?) throws(DarkDiskError) -> [DriveNode] {
        try read { db in
            var nodes = try Row.fetchAll(db, sql: "SELECT \(DriveColumns.selected) FROM node WHERE parentID IS ? AND name IS NOT NULL",
                                         arguments: [parentID?.rawValue]).compactMap { try Self.driveNode(from: DriveColumns($0), in: parentID) }
            if parentID == nil {
                // Nodes whose parent is missing, or is not a folder, are shown at the top.
                nodes += try Row.fetchAll(db, sql: "SELECT \(DriveColumns.selected) FROM node AS child WHERE name IS NOT NULL AND \(Self.orphan)")
                    .compactMap { try Self.driveNode(from: DriveColumns($0), in: nil) }
            }
            return nodes
        }
    }

    /// The drive nodes in folder `parentID` (nil: the top, with the orphans shown there), each with what a
    /// listing shows of its data: the stored data file, else the size the outline gives it. One indexed query,
    /// read by column position: `ls -l`, `find` and `du` of a folder cost this and nothing per entry.
    package func driveListing(of parentID: NodeID?) throws(DarkDiskError) -> [DriveListedNode] {
        try quickRead { db in
            var listed: [DriveListedNode] = []
            try Self.appendListed(db.cachedStatement(sql: "\(DriveListedColumns.select) WHERE child.parentID IS ? AND child.name IS NOT NULL"),
                                  arguments: [parentID?.rawValue], in: parentID, to: &listed)
            if parentID == nil {
                try Self.appendListed(db.cachedStatement(sql: "\(DriveListedColumns.select) WHERE child.name IS NOT NULL AND \(Self.orphan)"),
                                      arguments: [], in: nil, to: &listed)
            }
            return listed
        }
    }

    /// What a `stat` of drive file `id` shows of its data: the stored data file, else the size the outline
    /// gives it (nil: the remote does not have it); nil when the index has no such named node.
    package func driveFileData(_ id: NodeID) throws(DarkDiskError) -> (data: StoredFile?, remoteDataSize: UInt64?)? {
        try driveListedNode(id).map { ($0.data, $0.remoteDataSize) }
    }

    private static func appendListed(_ statement: Statement, arguments: StatementArguments, in folder: NodeID?,
                                     to listed: inout [DriveListedNode]) throws {
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            if let node = try listedNode(from: DriveListedColumns(row), in: folder) { listed.append(node) }
        }
    }

    /// A listing's row as the node it shows in `folder` (nil: the top), with its data; nil for a name no folder
    /// can show.
    private static func listedNode(from columns: DriveListedColumns, in folder: NodeID?) throws(DarkDiskError) -> DriveListedNode? {
        guard let node = try driveNode(from: columns.node, in: folder) else { return nil }
        var data: StoredFile?
        if let stored = columns.data, let mode = stored.mode.flatMap(StorageMode.init),
           let format = stored.format.flatMap({ UInt8(exactly: $0) }).flatMap(CryptoFileFormat.init) {
            data = StoredFile(fileID: stored.fileID, kind: .data, ownerID: node.id.rawValue, identityID: "", mode: mode,
                              plaintextSize: UInt64(clamping: stored.plaintextSize), storedSize: UInt64(clamping: stored.storedSize),
                              modified: Date(timeIntervalSince1970: stored.modified), lastAccess: Date(timeIntervalSince1970: stored.lastAccess),
                              expiration: stored.expiration, format: format, cloudFileID: stored.cloudFileID.map(Array.init))
        }
        return DriveListedNode(node: node, data: data, remoteDataSize: columns.remoteDataSize.map { UInt64(clamping: $0) })
    }

    /// The drive nodes named `name` in drive folder `parentID`, with what a listing shows of their data: one
    /// indexed read (a lookup's).
    package func driveListedChildren(of parentID: NodeID, named name: String) throws(DarkDiskError) -> [DriveListedNode] {
        var rows = withLookupConnection { connection throws(DriveLookupConnection.Failure) in
            try connection.children(of: parentID.rawValue, named: name)
        }
        if rows == nil {
            rows = try quickRead { db in
                try Row.fetchAll(db.cachedStatement(sql: DriveListedColumns.named), arguments: [parentID.rawValue, name]).map(DriveListedColumns.init)
            }
        }
        var listed: [DriveListedNode] = []
        for columns in rows ?? [] { if let node = try Self.listedNode(from: columns, in: parentID) { listed.append(node) } }
        return listed
    }

    /// The drive nodes named `name` in folder `parentID` (nil: the top): usually one, more when two machines
    /// gave one name in one folder (`DriveNames`).
    package func driveChildren(of parentID: NodeID?, named name: String) throws(DarkDiskError) -> [DriveNode] {
        if let parentID { return try driveListedChildren(of: parentID, named: name).map(\.node) }
        return try quickRead { db in
            var nodes = try Row.fetchAll(db.cachedStatement(sql: "SELECT \(DriveColumns.selected) FROM node WHERE parentID IS ? AND name = ?"),
                                         arguments: [parentID?.rawValue, name]).compactMap { try Self.driveNode(from: DriveColumns($0), in: parentID) }
            if parentID == nil {
                nodes += try Row.fetchAll(db.cachedStatement(sql: Self.orphansNamed), arguments: [name])
                    .compactMap { try Self.driveNode(from: DriveColumns($0), in: nil) }
            }
            return nodes
        }
    }

    /// A node's drive columns as a drive node shown in `folder` (nil: the top, as the query that found it
    /// knows); nil for a name no folder can show: `.`, `..`, or one with a `/`.
    private static func driveNode(from columns: DriveColumns, in folder: NodeID?) throws(DarkDiskError) -> DriveNode? {
        guard let id = try? NodeID(columns.id), let name = columns.name, !name.isEmpty,
              !name.utf8.contains(UInt8(ascii: "/")), name != ".", name != ".." else { return nil }
        let attributes = NodeAttributes(
            kind: columns.type.flatMap(NodeAttributes.Kind.init) ?? .file, mode: columns.mode.map { UInt32($0) },
            modifiedSeconds: columns.mtime, modifiedNanoseconds: UInt32(columns.mtimeNsec ?? 0), target: columns.target,
            extendedAttributes: try decodedExtendedAttributes(columns.xattrs))
        return DriveNode(id: id, name: name, parentID: folder, created: columns.created, attributes: attributes, changed: columns.ctime)
    }

    static func isDriveFolder(_ id: NodeID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM node WHERE id = ? AND type = 'folder' AND name IS NOT NULL"),
                          arguments: [id.rawValue]) ?? false
    }

    /// A row's extended attributes; a column that does not decode is the index's failure, said as a read's.
    private static func decodedExtendedAttributes(_ column: Data?) throws(DarkDiskError) -> [String: [UInt8]] {
        do { return try StoreOutline.extendedAttributes(fromColumn: column) } catch {
            throw DarkDiskError(.database, "index read failed: \(error)")
        }
    }
}
