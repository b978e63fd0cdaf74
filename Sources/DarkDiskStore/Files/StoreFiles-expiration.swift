import Foundation
import GRDB

extension StoreFiles {
    /// Sets a node file's own expiration in seconds after its last modification (0: its pool's default,
    /// less than 0: never), then expires what is now past it, as `setDefaultExpiration` does. Only cache files
    /// expire; a persistent file keeps the value for when it goes back to its pool. Returns whether the node
    /// has such a file.
    @discardableResult
    public func setExpiration(_ seconds: Double, nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> Bool {
        guard kind != .avatar else { throw DarkDiskError(.invalidArgument, "avatars belong to a user identity, not a node") }
        return try setExpiration(seconds, kind: kind, owner: nodeID.rawValue, identity: "")
    }

    /// Sets the own expiration of one avatar, as `setExpiration(_:nodeID:kind:)` does for node files.
    /// Returns whether the identity has a stored avatar.
    @discardableResult
    public func setExpiration(_ seconds: Double, userID: UserID, identityID: IdentityID) throws(DarkDiskError) -> Bool {
        try setExpiration(seconds, kind: .avatar, owner: userID.rawValue, identity: identityID.rawValue)
    }

    private func setExpiration(_ seconds: Double, kind: FileKind, owner: String, identity: String) throws(DarkDiskError) -> Bool {
        guard seconds.isFinite else { throw DarkDiskError(.invalidArgument, "expiration must be a finite number of seconds") }
        let changed = try write { db -> Bool in
            try db.execute(sql: "UPDATE file SET expiration = ? WHERE kind = ? AND ownerID = ? AND identityID = ?",
                           arguments: [seconds, kind.rawValue, owner, identity])
            return db.changesCount > 0
        }
        if changed { try expireFiles() }
        return changed
    }
}
