import Foundation
import GRDB

/// A node as the drive (`/files`, DESIGN §10) shows it: its place in the tree and what it is.
public struct DriveNode: Sendable, Equatable {
    public let id: NodeID
    public let name: String
    /// The folder node it is in; nil at the top of the drive.
    public let parentID: NodeID?
    public let created: Double
    public var attributes: NodeAttributes
}

extension DiskManager {
    /// The drive's nodes are those that have a name: the outline's, and those made through the drive here
    /// (not uploaded yet). A node whose parent is not a folder the
    /// outline has is shown at the top of the drive, so nothing named is ever out of reach.
    private static let driveColumns = "id, name, parentID, created, type, mode, mtime, mtimeNsec, target, xattrs"

    /// The SQL condition on a `child` row of the outline whose parent is not a drive folder (shown at the top).
    private static let orphan = """
        child.parentID IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM node AS parent WHERE parent.id = child.parentID AND parent.type = 'folder'
                          AND parent.name IS NOT NULL)
        """

    /// The drive node `nodeID`, if the outline names it.
    public func driveNode(_ nodeID: NodeID) throws(DarkDiskError) -> DriveNode? {
        try read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.driveColumns) FROM node WHERE id = ? AND name IS NOT NULL"),
                             arguments: [nodeID.rawValue]).flatMap { row in
                let parent = (row["parentID"] as String?).flatMap { try? NodeID($0) }
                return try Self.driveNode(from: row, in: try parent.map { try Self.isDriveFolder($0, db) } == true ? parent : nil)
            }
        }
    }

    /// The drive nodes in folder `parentID` (nil: the top), in one indexed query.
    public func driveChildren(of parentID: NodeID?) throws(DarkDiskError) -> [DriveNode] {
        try read { db in
            var nodes = try Row.fetchAll(db, sql: "SELECT \(Self.driveColumns) FROM node WHERE parentID IS ? AND name IS NOT NULL",
                                         arguments: [parentID?.rawValue]).compactMap { try Self.driveNode(from: $0, in: parentID) }
            if parentID == nil {
                // Nodes whose parent is missing, or is not a folder, are shown at the top.
                nodes += try Row.fetchAll(db, sql: "SELECT \(Self.driveColumns) FROM node AS child WHERE name IS NOT NULL AND \(Self.orphan)")
                    .compactMap { try Self.driveNode(from: $0, in: nil) }
            }
            return nodes
        }
    }

    /// The state (stored files, outline entry) of every node whose folder is `parentID` (nil: the top, not
    /// counting the orphans shown there), in two indexed queries instead of one `nodeState` per child: a
    /// listing with attributes asks for all of them at once.
    public func driveChildStates(of parentID: NodeID?) throws(DarkDiskError) -> [NodeID: NodeState] {
        try read { db in
            var files: [NodeID: [StoredFile]] = [:]
            let rows = try FileRecord.fetchAll(db.cachedStatement(sql: """
                SELECT file.* FROM node JOIN file ON file.ownerID = node.id
                WHERE node.parentID IS ? AND node.name IS NOT NULL AND file.kind != 'avatar'
                """), arguments: [parentID?.rawValue])
            for row in rows {
                guard let id = try? NodeID(row.ownerID) else { continue }
                files[id, default: []].append(StoredFile(row))
            }
            var states: [NodeID: NodeState] = [:]
            let outlined = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM node WHERE parentID IS ? AND name IS NOT NULL"),
                                            arguments: [parentID?.rawValue])
            for row in outlined {
                guard let id = try? NodeID(row["id"] as String) else { continue }
                let outline = (row["cloudETag"] as String?) == nil ? nil : try Self.entry(from: row)
                states[id] = NodeState(nodeID: id, files: files[id] ?? [], outline: outline)
            }
            return states
        }
    }

    /// The drive nodes named `name` in folder `parentID` (nil: the top): usually one, more when two machines
    /// gave one name in one folder (`DriveNames`).
    public func driveChildren(of parentID: NodeID?, named name: String) throws(DarkDiskError) -> [DriveNode] {
        try read { db in
            var nodes = try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.driveColumns) FROM node WHERE parentID IS ? AND name = ?"),
                                         arguments: [parentID?.rawValue, name]).compactMap { try Self.driveNode(from: $0, in: parentID) }
            if parentID == nil {
                nodes += try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.driveColumns) FROM node AS child WHERE name = ? AND \(Self.orphan)"), arguments: [name])
                    .compactMap { try Self.driveNode(from: $0, in: nil) }
            }
            return nodes
        }
    }

    /// A row as a drive node shown in `folder` (nil: the top, as the query that found it knows); nil for a
    /// name no folder can show: `.`, `..`, or one with a `/`.
    private static func driveNode(from row: Row, in folder: NodeID?) throws -> DriveNode? {
        guard let id = try? NodeID(row["id"] as String), let name: String = row["name"], !name.isEmpty,
              !name.contains("/"), name != ".", name != ".." else { return nil }
        return DriveNode(id: id, name: name, parentID: folder, created: row["created"], attributes: try attributes(from: row))
    }

    static func isDriveFolder(_ id: NodeID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM node WHERE id = ? AND type = 'folder' AND name IS NOT NULL"),
                          arguments: [id.rawValue]) ?? false
    }
}
