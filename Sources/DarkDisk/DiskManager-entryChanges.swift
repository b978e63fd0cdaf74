import GRDB

extension DiskManager {
    /// The newest row of the index's change table: where a watcher starts reading (`entryChanges(after:)`).
    public func newestEntryChange() throws(DarkDiskError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM entryChange") ?? 0 }
    }

    /// The entries that changed after row `seq`, in any process, and the newest row read. One indexed range
    /// read: its cost is the number of changes, whatever the size of the store.
    public func entryChanges(after seq: Int64) throws(DarkDiskError) -> (changes: Set<EntryChange>, newest: Int64) {
        try read { db in
            var changes = Set<EntryChange>()
            var newest = seq
            for row in try Row.fetchAll(db, sql: "SELECT seq, ownerID, identityID FROM entryChange WHERE seq > ? ORDER BY seq", arguments: [seq]) {
                newest = max(newest, row["seq"])
                let owner: String = row["ownerID"]
                let identity: String = row["identityID"]
                if identity.isEmpty {
                    if let id = try? NodeID(owner) { changes.insert(.node(id)) }
                } else if let user = try? UserID(owner), let identityID = try? IdentityID(identity) {
                    changes.insert(.avatar(user, identityID))
                }
            }
            return (changes, newest)
        }
    }

    /// Removes change rows older than an hour (every watcher has long read them).
    static func pruneEntryChanges(_ db: Database, now: Double) throws {
        try IndexDatabase.pruneLog("entryChange", db, before: now - 3600)
    }
}
