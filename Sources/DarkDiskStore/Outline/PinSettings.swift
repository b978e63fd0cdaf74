import GRDB

/// The `pin` table read as the rule users see: a node's own setting, else the nearest folder's above it,
/// else the top's. The outline's pin calls and the files' migration after an upload (a pinned file stays
/// persistent) ask it in their own transactions.
enum PinSettings {
    /// Whether `nodeID` is pinned now.
    static func isPinned(_ db: Database, _ nodeID: NodeID) throws -> Bool {
        // Up the folders (at most 4096 deep: a loop of parents, which no outline should have, ends there).
        let inherited = try Bool.fetchOne(db.cachedStatement(sql: """
            WITH RECURSIVE up(id, depth) AS (
              SELECT ?, 0
              UNION ALL
              SELECT node.parentID, up.depth + 1 FROM up JOIN node ON node.id = up.id
                WHERE node.parentID IS NOT NULL AND up.depth < 4096)
            SELECT pin.pinned FROM up JOIN pin ON pin.nodeID = up.id ORDER BY up.depth LIMIT 1
            """), arguments: [nodeID.rawValue])
        if let inherited { return inherited }
        return try Bool.fetchOne(db.cachedStatement(sql: "SELECT pinned FROM pin WHERE nodeID = ''")) ?? false
    }
}
