import Foundation
import GRDB

/// What the mount's ID views (`/nodes`, `/thumbs`) list, and one node's files and entry read together.
extension StoreOutline {
    /// Every node a mount lists: stored here or in the remote's outline, sorted by ID, in one query that
    /// reads IDs only (a listing of 1,000,000 outline nodes loads no keys, names or sizes). With `kind`,
    /// only the nodes that have that section, stored or in the outline (`/thumbs`).
    package func listedNodeIDs(having kind: FileKind? = nil) throws(DarkDiskError) -> [NodeID] {
        let ids = try read { db in try String.fetchAll(db, sql: Self.listedNodeIDsQuery(having: kind)) }
        return ids.compactMap { try? NodeID($0) }
    }

    /// The query of `listedNodeIDs(having:)`: IDs only, stored or in the outline, sorted.
    private static func listedNodeIDsQuery(having kind: FileKind?) -> String {
        let outlineHas = switch kind {
        case nil, .data?, .avatar?: ""
        case .metadata?: " AND metadataSize > 0"
        case .thumbnail?: " AND thumbnailSize > 0"
        }
        let stored = kind.map { "kind = '\($0.rawValue)'" } ?? "kind != '\(FileKind.avatar.rawValue)'"
        return "SELECT id FROM node WHERE cloudETag IS NOT NULL\(outlineHas) UNION SELECT ownerID FROM file WHERE \(stored) ORDER BY 1"
    }

    /// Calls `body` with every node a mount lists under `/nodes` (as `listedNodeIDs()`), in ID order, from
    /// a cursor: a listing of 1,000,000 nodes holds no array of them (`body` must not use the index).
    package func forEachListedNodeID(_ body: (NodeID) -> Void) throws(DarkDiskError) {
        try read { db in
            let ids = try String.fetchCursor(db, sql: Self.listedNodeIDsQuery(having: nil))
            while let id = try ids.next() {
                if let id = try? NodeID(id) { body(id) }
            }
        }
    }

    /// A node's stored files and outline entry, read together (`NodeState`).
    package func nodeState(_ nodeID: NodeID) throws(DarkDiskError) -> NodeState {
        // Cached statements: a mount asks this for every node `find` or `du` opens, and preparing the query
        // each time (GRDB's authorizer, the query builder) was most of the cost.
        try read { db in
            let files = try FileRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM file WHERE ownerID = ? AND kind != 'avatar'"),
                                                arguments: [nodeID.rawValue])
            // The node's row once: its outline entry (when the remote has it) and its drive file's mode.
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM node WHERE id = ?"), arguments: [nodeID.rawValue])
            let fileMode: UInt32? = row.flatMap { row in
                guard (row["name"] as String?) != nil, (row["type"] as String?) ?? "file" == "file" else { return nil }
                return UInt32((row["mode"] as Int64?) ?? 0o644)
            }
            let outline = try row.flatMap { row in (row["cloudETag"] as String?) == nil ? nil : try Self.entry(from: row) }
            return NodeState(nodeID: nodeID, files: files.map(StoredFile.init), outline: outline, fileMode: fileMode)
        }
    }

}
