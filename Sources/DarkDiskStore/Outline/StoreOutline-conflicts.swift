import Foundation
import GRDB

/// The conflict copies this store made: listed by `status` until the copy's node is deleted.
extension StoreOutline {
    /// Remembers a conflict copy a push made.
    @available(*, noasync)
    package func noteConflictCopy(_ copy: ConflictCopy) throws(DarkDiskError) {
        try write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO conflictCopy (nodeID, originalID, name, createdAt) VALUES (?, ?, ?, ?)
                """, arguments: [copy.nodeID.rawValue, copy.originalID.rawValue, copy.name, copy.createdAt.timeIntervalSince1970])
        }
    }

    /// The conflict copies this store made whose node it still knows, oldest first.
    public func conflictCopies() throws(DarkDiskError) -> [ConflictCopy] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT nodeID, originalID, name, createdAt FROM conflictCopy ORDER BY createdAt, nodeID")
                .compactMap { row in
                    guard let id = try? NodeID(row["nodeID"] as String), let original = try? NodeID(row["originalID"] as String) else { return nil }
                    return ConflictCopy(nodeID: id, originalID: original, name: row["name"],
                                        createdAt: Date(timeIntervalSince1970: row["createdAt"]))
                }
        }
    }
}
