import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension StoreFiles {
    /// Moves a node's `kind` file between persistent storage and the cache pool. An unretained file is moved
    /// (hard link, then the old name goes); a retained file is copied and the original deleted when its last
    /// token is released (as in ZeroDark.cloud's framework). Returns whether the node has such a file.
    @available(*, noasync)
    @discardableResult
    public func makeNodeFilePersistent(_ persistent: Bool, nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> Bool {
        if !persistent {
            // No longer kept: a version a pull replaced is no longer stored persistently when it comes.
            try write { db in try db.execute(sql: "DELETE FROM keepPersistent WHERE nodeID = ? AND kind = ?", arguments: [nodeID.rawValue, kind.rawValue]) }
        }
        guard let record = try read({ db in try FileRecord.find(db, kind: kind, owner: nodeID.rawValue) }) else { return false }
        try migrate(record, to: persistent ? .persistent : .cache)
        return true
    }

    /// Moves all of a user's avatars between persistent storage and the cache pool.
    @available(*, noasync)
    public func makeUserAvatarsPersistent(_ persistent: Bool, userID: UserID) throws(DarkDiskError) {
        let records = try read { db in
            try FileRecord.filter(Column("ownerID") == userID.rawValue && Column("kind") == FileKind.avatar.rawValue).fetchAll(db)
        }
        for record in records { try migrate(record, to: persistent ? .persistent : .cache) }
    }

    /// Tells the store that a node's file reached the cloud: `migrateToCacheAfterUpload` files become cache
    /// files (unless the node is pinned), `deleteAfterUpload` files are deleted.
    @available(*, noasync)
    package func didUploadNodeFile(_ nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) {
        guard let record = try read({ db in try FileRecord.find(db, kind: kind, owner: nodeID.rawValue) }) else { return }
        if record.deleteAfterUpload {
            try deleteRecords([record], reason: .deleted)
        } else if record.migrateToCacheAfterUpload {
            let pinned = try write { db in
                try db.execute(sql: "UPDATE file SET migrateToCacheAfterUpload = 0 WHERE id = ?", arguments: [record.id])
                return kind == .data ? try PinSettings.isPinned(db, nodeID) : false
            }
            // A pinned file stays persistent.
            guard !pinned else { return }
            var updated = record
            updated.migrateToCacheAfterUpload = false
            try migrate(updated, to: .cache)
        }
    }

    func migrate(_ record: FileRecord, to mode: StorageMode) throws(DarkDiskError) {
        guard record.mode != mode else { return }
        let oldPath = path(of: record)
        let name = FileOperations.randomName()
        let newPath = path(name: name, mode: mode)
        let staging = mode == .persistent ? location.persistentStaging : location.cacheStaging
        try FileOperations.makeDirectory(staging)

        let original: OwnedDescriptor
        do { original = try OwnedDescriptor.open(oldPath, O_RDONLY | O_NOFOLLOW) } catch {
            guard error == .noSuchFile, record.mode == .cache else { throw .posix("cannot open", path: oldPath, errno: error.rawValue) }
            // A cache file purged from disk has nothing to migrate: it is simply not local any more.
            try deleteRecords([record], reason: .vanished)
            return
        }
        defer { try? original.close() }  // (its lock lasts until the row and the names are settled)
        // An unretained file is held exclusively while its new name exists without a row, so no orphan sweep
        // takes it. It gets the new name as a hard link (no copy). A retained file is copied, as in ZeroDark.cloud's framework:
        // its holders keep the original, which goes when the last of them lets go. Either way the old name
        // goes only after the row points at the new one: a crash in between leaves the old row and file
        // intact and the new name an orphan for the next sweep.
        let retained: Bool
        do { retained = try !original.tryLock(.exclusive) } catch { throw .posix("cannot lock", path: oldPath, errno: error.rawValue) }
        try FileOperations.makeDirectory((newPath as NSString).deletingLastPathComponent)
        let linked = !retained && link(oldPath, newPath) == 0
        var copyLock: OwnedDescriptor?
        defer { try? copyLock?.close() }
        if !linked {
            guard retained || errno == EXDEV else { throw .posix("cannot link \(oldPath) to", path: newPath) }
            let temporary = staging + "/" + name
            try FileOperations.copy(original.rawValue, from: oldPath, to: temporary)
            // Locked from before it appears under files/ until its row commits (fresh staging files are spared).
            let lock = try FileOperations.openFile(temporary, O_RDONLY)
            copyLock = lock
            try FileOperations.lock(lock.rawValue, .exclusive, path: temporary)
            try FileOperations.rename(temporary, to: newPath)
        }
        try FileOperations.syncDirectory(of: newPath)
        var updated = record
        updated.mode = mode
        updated.name = name
        let committed = try write { db -> Bool in
            try db.execute(sql: "UPDATE file SET mode = ?, name = ? WHERE id = ? AND name = ?",
                           arguments: [mode.rawValue, name, record.id, record.name])
            guard db.changesCount == 1 else { return false }
            try deleter.markPending(db, paths: [oldPath])
            return true
        }
        guard committed else {
            // The file changed under us (replaced or deleted): drop the new name.
            FileOperations.remove(newPath)
            return
        }
        if linked {
            unlink(oldPath)
            deleter.forget(oldPath)
        } else {
            // The original goes now if its holders are gone, else when the last token is released.
            try? original.unlock()  // a failure only delays the delete until this descriptor closes
            deleter.tryDelete(oldPath)
        }
        notify(updated, .migrated)
        if mode == .cache { kickEviction(record.pool) }
    }
}
