import Foundation
import GRDB

extension StoreFiles {
    /// Deletes one stored file of a node; returns whether there was one.
    @available(*, noasync)
    @discardableResult
    public func deleteNodeFile(_ nodeID: NodeID, kind: FileKind) throws(DarkDiskError) -> Bool {
        try deleteNodeFiles([nodeID], kind: kind) > 0
    }

    /// Deletes the `kind` file of each node; returns how many files there were.
    @available(*, noasync)
    @discardableResult
    public func deleteNodeFiles(_ nodeIDs: [NodeID], kind: FileKind) throws(DarkDiskError) -> Int {
        let ids = nodeIDs.map(\.rawValue)
        let records = try read { db in
            try FileRecord.filter(ids.contains(Column("ownerID")) && Column("kind") == kind.rawValue).fetchAll(db)
        }
        try deleteRecords(records, reason: .deleted) { db in
            for id in ids { try db.execute(sql: "DELETE FROM keepPersistent WHERE nodeID = ? AND kind = ?", arguments: [id, kind.rawValue]) }
        }
        return records.count
    }

    /// Deletes every avatar of a user.
    @available(*, noasync)
    public func deleteUserAvatars(_ userID: UserID) throws(DarkDiskError) {
        try deleteUserAvatars(forUsers: [userID])
    }

    /// Deletes every avatar of each user.
    public func deleteUserAvatars(forUsers userIDs: [UserID]) throws(DarkDiskError) {
        let ids = userIDs.map(\.rawValue)
        let records = try read { db in
            try FileRecord.filter(ids.contains(Column("ownerID")) && Column("kind") == FileKind.avatar.rawValue).fetchAll(db)
        }
        try deleteRecords(records, reason: .deleted)
    }

    /// Deletes the avatar of one identity of a user; returns whether there was one.
    @available(*, noasync)
    @discardableResult
    public func deleteUserAvatar(_ userID: UserID, identityID: IdentityID) throws(DarkDiskError) -> Bool {
        guard let record = try read({ db in try FileRecord.find(db, kind: .avatar, owner: userID.rawValue, identity: identityID.rawValue) }) else {
            return false
        }
        try deleteRecords([record], reason: .deleted)
        return true
    }

    /// Deletes `path` unless it is a file the store manages: for callers holding a file that may or may not
    /// have been handed to the store (ZeroDark.cloud's `deleteFileIfUnmanaged`). Nothing in the store's folders is
    /// ever deleted (stored and staging files, the index and its journal, the key, the log, partial
    /// downloads), however the path is spelled, except the downloads the store handed to callers.
    /// Returns whether the file was deleted.
    @discardableResult
    package func deleteFileIfUnmanaged(_ path: String) -> Bool {
        guard !isStoreOwned(path) else { return false }
        return unlink(path) == 0
    }

    /// Whether `path` (after `..` and symbolic links) lies in one of the store's folders, other than the
    /// downloads handed to callers.
    func isStoreOwned(_ path: String) -> Bool {
        func resolved(_ path: String) -> String { URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path }
        let file = resolved(path)
        if file.hasPrefix(resolved(location.temporaryDownloads) + "/") { return false }
        return [location.dataDirectory, location.cacheDirectory, location.configDirectory].contains { root in
            let root = resolved(root)
            return file == root || file.hasPrefix(root + "/")
        }
    }

    /// Removes rows (only if they are still the same version) and then their files: the pending-delete
    /// entries commit with the row removal, so a crash at any point leaves either the row or a pending
    /// entry that a later sweep completes.
    func deleteRecords(_ records: [FileRecord], reason: StoreChange.Reason, also extra: ((Database) throws -> Void)? = nil) throws(DarkDiskError) {
        let deleted = try write { db -> [FileRecord] in
            let deleted = try deleteRows(db, records)
            try extra?(db)
            return deleted
        }
        finishDeletes(deleted, reason: reason)
    }

    /// Inside a write transaction: deletes the rows of `records` still there and marks their files for
    /// deletion; returns the records deleted. Call `finishDeletes` with them once the transaction commits.
    func deleteRows(_ db: Database, _ records: [FileRecord]) throws -> [FileRecord] {
        var deleted: [FileRecord] = []
        for record in records {
            try db.cachedStatement(sql: "DELETE FROM file WHERE id = ? AND name = ?").execute(arguments: [record.id, record.name])
            if db.changesCount == 1 { deleted.append(record) }
        }
        try deleter.markPending(db, paths: deleted.map(path(of:)))
        return deleted
    }

    /// After the commit of `deleteRows`: deletes the files nobody retains and tells observers.
    func finishDeletes(_ deleted: [FileRecord], reason: StoreChange.Reason) {
        for record in deleted {
            deleter.tryDelete(path(of: record))
            notify(record, reason)
        }
    }
}
