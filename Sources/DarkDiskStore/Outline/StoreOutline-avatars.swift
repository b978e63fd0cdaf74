import Foundation
import GRDB

/// The avatars the remote's user records list.
extension StoreOutline {
    /// Every avatar the remote's user records list (what `pull` learned), by user then identity.
    @available(*, noasync)
    public func avatars() throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM avatarOutline ORDER BY userID, identityID").map(Self.avatarEntry(from:))
        }
    }

    /// The avatars the remote lists for one user.
    @available(*, noasync)
    public func avatars(_ userID: UserID) throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM avatarOutline WHERE userID = ? ORDER BY identityID", arguments: [userID.rawValue])
                .map(Self.avatarEntry(from:))
        }
    }

    /// The avatar the remote lists for one identity of a user, if any.
    public func avatar(_ userID: UserID, identityID: IdentityID) throws(DarkDiskError) -> AvatarOutlineEntry? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM avatarOutline WHERE userID = ? AND identityID = ?",
                             arguments: [userID.rawValue, identityID.rawValue]).map(Self.avatarEntry(from:))
        }
    }

    /// Records what a pull learned of one user's avatars (`entries`: all of them; empty when the user is gone
    /// or has none). A local avatar the outline listed before is deleted when its listing went or names
    /// another key (the avatar was replaced in the cloud); avatars only imported here are kept. Returns
    /// whether the user's listing changed.
    @available(*, noasync)
    @discardableResult
    package func updateAvatars(_ userID: UserID, entries: [AvatarOutlineEntry]) throws(DarkDiskError) -> Bool {
        for entry in entries where entry.userID != userID {
            throw DarkDiskError(.invalidID, "avatar outline entry of user '\(entry.userID)' given for user '\(userID)'")
        }
        for entry in entries { _ = try keys.unwrap(entry.wrappedKey, for: .avatar(entry.userID, entry.identityID)) }
        let previous = try avatars(userID)
        guard Set(previous) != Set(entries) else { return false }
        let current = Dictionary(entries.map { ($0.identityID, $0) }, uniquingKeysWith: { first, _ in first })
        for old in previous where current[old.identityID]?.wrappedKey != old.wrappedKey {
            try files.deleteUserAvatar(userID, identityID: old.identityID)
        }
        try write { db in
            try db.execute(sql: "DELETE FROM avatarOutline WHERE userID = ?", arguments: [userID.rawValue])
            for entry in current.values {
                try db.execute(sql: "INSERT INTO avatarOutline (userID, identityID, plaintextSize, wrappedKey) VALUES (?, ?, ?, ?)",
                               arguments: [userID.rawValue, entry.identityID.rawValue, Int64(entry.plaintextSize), Data(entry.wrappedKey)])
            }
        }
        return true
    }

    private static func avatarEntry(from row: Row) throws -> AvatarOutlineEntry {
        AvatarOutlineEntry(userID: try UserID(row["userID"]), identityID: try IdentityID(row["identityID"]),
                           plaintextSize: UInt64(row["plaintextSize"] as Int64), wrappedKey: Array(row["wrappedKey"] as Data))
    }
}
