import DarkDiskCrypto
import Foundation
import GRDB

/// Content keys: each node's and each user's own random key, made the first time it is needed and kept
/// wrapped in the index (a pulled node's comes from its record).
extension StoreOutline {
    /// The node's content key (created the first time it is needed) and the same key wrapped by the master
    /// key, as a remote record carries it.
    package func contentKey(for nodeID: NodeID) throws(DarkDiskError) -> (key: SymmetricKey, wrapped: [UInt8]) {
        let key = try nodeKey(nodeID)
        let wrapped = try read { db in
            try Data.fetchOne(db, sql: "SELECT wrappedKey FROM node WHERE id = ?", arguments: [nodeID.rawValue])
        }
        return (key, Array(wrapped ?? Data()))
    }

    /// The content key of a node, created (random) the first time the node is stored.
    func nodeKey(_ nodeID: NodeID) throws(DarkDiskError) -> SymmetricKey {
        try ownerKey(table: "node", id: nodeID.rawValue, owner: .node(nodeID), extraColumns: ", created", extraValues: [clock.now.timeIntervalSince1970])
    }

    /// The content key for a user's avatars.
    func userKey(_ userID: UserID) throws(DarkDiskError) -> SymmetricKey {
        try ownerKey(table: "user", id: userID.rawValue, owner: nil, extraColumns: "", extraValues: [])
    }

    /// `owner`: what a key the bucket gave (a node's, from its record) is bound to.
    private func ownerKey(table: String, id: String, owner: KeyOwner?, extraColumns: String,
                          extraValues: [any DatabaseValueConvertible]) throws(DarkDiskError) -> SymmetricKey {
        // Usually the key exists: a read, not a write (every drive file opened for writing asks).
        if let existing = try read({ db in
            try Data.fetchOne(db.cachedStatement(sql: "SELECT wrappedKey FROM \(table) WHERE id = ?"), arguments: [id])
        }) {
            return try keys.unwrap(existing, owner: owner)
        }
        let fresh = SymmetricKey.random()
        let wrapped = Data(keys.wrapLocally(fresh))
        let stored: Data = try write { db in
            let placeholders = Array(repeating: ", ?", count: extraValues.count).joined()
            try db.execute(sql: "INSERT OR IGNORE INTO \(table) (id, wrappedKey\(extraColumns)) VALUES (?, ?\(placeholders))",
                           arguments: StatementArguments([id, wrapped] + extraValues))
            return try Data.fetchOne(db, sql: "SELECT wrappedKey FROM \(table) WHERE id = ?", arguments: [id])!
        }
        return try keys.unwrap(stored, owner: owner)
    }
}
