import Foundation
import GRDB

/// What the index says of stored files, without opening them.
extension StoreFiles {
    /// Every node that has at least one stored file, sorted by ID.
    public func storedNodeIDs() throws(DarkDiskError) -> [NodeID] {
        let ids = try read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT ownerID FROM file WHERE kind != ? ORDER BY ownerID", arguments: [FileKind.avatar.rawValue])
        }
        return ids.compactMap { try? NodeID($0) }
    }

    /// The index entry of one node file, without opening it.
    @available(*, noasync)
    public func storedFile(_ nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> StoredFile? {
        try read { db in try FileRecord.find(db, kind: kind, owner: nodeID.rawValue) }.map(StoredFile.init)
    }

    /// Every node with a stored file of `kind`, sorted by ID (one indexed query).
    public func storedNodeIDs(kind: FileKind) throws(DarkDiskError) -> [NodeID] {
        let ids = try read { db in
            try String.fetchAll(db, sql: "SELECT ownerID FROM file WHERE kind = ? ORDER BY ownerID", arguments: [kind.rawValue])
        }
        return ids.compactMap { try? NodeID($0) }
    }

    /// The index entries of all files of a node.
    @available(*, noasync)
    public func storedFiles(_ nodeID: NodeID) throws(DarkDiskError) -> [StoredFile] {
        try read { db in
            try FileRecord.filter(Column("ownerID") == nodeID.rawValue && Column("kind") != FileKind.avatar.rawValue).fetchAll(db)
        }.map(StoredFile.init)
    }
    /// Every user with at least one stored avatar, sorted by ID.
    public func storedAvatarUsers() throws(DarkDiskError) -> [UserID] {
        let ids = try read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT ownerID FROM file WHERE kind = ? ORDER BY ownerID", arguments: [FileKind.avatar.rawValue])
        }
        return ids.compactMap { try? UserID($0) }
    }

    /// The index entries of a user's stored avatars.
    @available(*, noasync)
    public func storedAvatars(_ userID: UserID) throws(DarkDiskError) -> [StoredFile] {
        try read { db in
            try FileRecord.filter(Column("ownerID") == userID.rawValue && Column("kind") == FileKind.avatar.rawValue)
                .order(Column("identityID")).fetchAll(db)
        }.map(StoredFile.init)
    }

    /// The index entry of one avatar.
    public func storedAvatar(_ userID: UserID, identityID: IdentityID) throws(DarkDiskError) -> StoredFile? {
        try read { db in try FileRecord.find(db, kind: .avatar, owner: userID.rawValue, identity: identityID.rawValue) }
            .map(StoredFile.init)
    }
}
