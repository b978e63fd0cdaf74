import GRDB

extension DiskManager {
    /// The newest row of the index's change table: where a watcher starts reading (`entryChanges(after:)`).
    @available(*, noasync)
    package func newestEntryChange() throws(DarkDiskError) -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM entryChange") ?? 0 }
    }

    /// The entries that changed after row `seq`, in any process, and the newest row read. One indexed range
    /// read: its cost is the number of changes, whatever the size of the store. With `skippingOwnCommits`,
    /// the nodes whose only changes are this process's drive journal's commits of its own writers come apart,
    /// in `ownCommits` (a mount's watcher: its requests showed those commits to the kernel in `/files`, not
    /// under `/nodes`), and those rows are forgotten once read past.
    package func entryChanges(after seq: Int64, skippingOwnCommits: Bool = false) throws(DarkDiskError)
        -> (changes: Set<EntryChange>, ownCommits: Set<NodeID>, newest: Int64) {
        let own = skippingOwnCommits ? ownCommitChanges.withLock { $0 } : OwnCommitChanges()
        let result = try read { db -> (changes: Set<EntryChange>, ownCommits: Set<NodeID>, newest: Int64) in
            var changes = Set<EntryChange>()
            var ownCommits = Set<NodeID>()
            var newest = seq
            for row in try Row.fetchAll(db, sql: "SELECT seq, ownerID, identityID FROM entryChange WHERE seq > ? ORDER BY seq", arguments: [seq]) {
                let rowSeq: Int64 = row["seq"]
                newest = max(newest, rowSeq)
                let owner: String = row["ownerID"]
                let identity: String = row["identityID"]
                if identity.isEmpty {
                    guard let id = try? NodeID(owner) else { continue }
                    if own.contains(rowSeq, node: owner) { ownCommits.insert(id) } else { changes.insert(.node(id)) }
                } else if let user = try? UserID(owner), let identityID = try? IdentityID(identity) {
                    changes.insert(.avatar(user, identityID))
                }
            }
            for change in changes { if case .node(let id) = change { ownCommits.remove(id) } }
            return (changes, ownCommits, newest)
        }
        if skippingOwnCommits { ownCommitChanges.withLock { $0.forget(through: result.newest) } }
        return result
    }

}

extension EntryChange {
    /// Removes change rows older than an hour (every watcher has long read them).
    static func prune(_ db: Database, now: Double) throws {
        try IndexDatabase.pruneLog("entryChange", db, before: now - 3600)
    }
}
