import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension StoreFiles {
    /// The stored `kind` file of a node, retained, or nil if it is not on local disk (never stored, deleted,
    /// expired, or removed from the cache folder behind our back).
    @available(*, noasync)
    public func nodeFile(_ nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> DiskExport? {
        try export(kind: kind, owner: nodeID.rawValue, identity: "")
    }

    /// The `kind` file of a node in `preferredFormat` if the stored version has it, else whatever is stored
    /// (the store keeps one version per node and kind; a download may leave a cloud-format file).
    @available(*, noasync)
    public func nodeFile(_ nodeID: NodeID, kind: FileKind = .data, preferredFormat: CryptoFileFormat) throws(DarkDiskError) -> DiskExport? {
        try nodeFile(nodeID, kind: kind)
    }

    /// A user's avatar for one identity, or for any identity when `identityID` is nil (the most recently
    /// modified), retained; nil if none is on local disk.
    @available(*, noasync)
    public func userAvatar(_ userID: UserID, identityID: IdentityID? = nil) throws(DarkDiskError) -> DiskExport? {
        if let identityID {
            return try export(kind: .avatar, owner: userID.rawValue, identity: identityID.rawValue)
        }
        for avatar in try storedAvatars(userID).sorted(by: { $0.modified > $1.modified }) {
            if let export = try export(kind: .avatar, owner: userID.rawValue, identity: avatar.identityID) { return export }
        }
        return nil
    }

    /// Whether a user has an avatar on local disk, for one identity or any.
    public func hasUserAvatar(_ userID: UserID, identityID: IdentityID? = nil) throws(DarkDiskError) -> Bool {
        let records = try read { db in
            var request = FileRecord.filter(Column("ownerID") == userID.rawValue && Column("kind") == FileKind.avatar.rawValue)
            if let identityID { request = request.filter(Column("identityID") == identityID.rawValue) }
            return try request.fetchAll(db)
        }
        for record in records where try !isExpired(record) && access(path(of: record), F_OK) == 0 { return true }
        return false
    }

    /// Whether the `kind` file of a node is on local disk right now (a snapshot: use `nodeFile` to keep it).
    public func hasNodeFile(_ nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> Bool {
        guard let record = try read({ db in try FileRecord.find(db, kind: kind, owner: nodeID.rawValue) }) else { return false }
        return try !isExpired(record) && access(path(of: record), F_OK) == 0
    }

    private func export(kind: FileKind, owner: String, identity: String) throws(DarkDiskError) -> DiskExport? {
        // A concurrent replace can unlink the file between our index read and our lock; re-read then.
        for _ in 0..<4 {
            // (One indexed read, on the lookup connection: an open of a small file is a `cat`'s whole cost. A
            // cache file's pool default expiration comes with it.)
            guard let (record, defaultExpiration) = try storedFileRecord(kind: kind, owner: owner, identity: identity) else { return nil }
            if try isExpired(record, defaultExpiration: defaultExpiration) {
                try deleteRecords([record], reason: .expired)
                return nil
            }
            let filePath = path(of: record)
            let file: OwnedDescriptor
            do { file = try OwnedDescriptor.open(filePath, O_RDONLY | O_NOFOLLOW) } catch {
                guard error == .noSuchFile else { throw .posix("cannot open", path: filePath, errno: error.rawValue) }
                if record.mode == .cache {
                    // The cache folder was purged: the file is simply not local any more.
                    try deleteRecords([record], reason: .vanished)
                    logger.info("cache file of \(record.kind.rawValue) '\(record.ownerID)' vanished from disk; treating it as not local")
                    return nil
                }
                // Replaced, deleted, or moved to the other pool (a migration renames it) meanwhile: read again.
                if try read({ db in try FileRecord.fetchOne(db, key: record.id) })?.name != record.name { continue }
                throw DarkDiskError(.corrupt, "persistent file \(filePath) of \(kind.rawValue) '\(owner)' is missing from the store")
            }
            try FileOperations.lock(file.rawValue, .shared, path: filePath)
            // (Unlinked meanwhile, by a delete or an eviction: read the row again.)
            guard let st = try? file.stat(), st.st_nlink > 0 else { continue }
            let fileKey = try unwrap(record.wrappedKey)
            let now = clock.now.timeIntervalSince1970
            // A cache file's access orders its eviction: kept at every export. A persistent file is in no such
            // order until it moves to the cache: its time is kept to the minute (the upload that reads each
            // drive file seconds after its commit then costs no write transaction).
            if record.mode == .cache || now - record.lastAccess >= Self.persistentAccessResolution, let id = record.id {
                if batchesAccessTimes.withLock({ $0 }) {
                    // The mount: written with the other opens of the moment (`AccessTimes`).
                    if accessTimes.note(id, at: now) {
                        maintenanceQueue.asyncAfter(deadline: .now() + AccessTimes.delay) { [weak self] in self?.writeAccessTimes() }
                    }
                } else {
                    _ = try? database.write { db in
                        try db.execute(sql: "UPDATE file SET lastAccess = ? WHERE id = ?", arguments: [now, id])
                    }
                }
            }
            return export(record, fileKey: fileKey, token: RetainToken(file: file, path: filePath, pool: record.pool, mode: record.mode, manager: self))
        }
        throw DarkDiskError(.io, "\(kind.rawValue) '\(owner)' keeps changing while being opened; try again")
    }

    /// The stored file of `kind`, `owner` and `identity`, with its pool's default expiration when it uses it
    /// (a cache file of expiration 0).
    private func storedFileRecord(kind: FileKind, owner: String, identity: String) throws(DarkDiskError) -> (FileRecord, defaultExpiration: Double?)? {
        let found = index.withLookupConnection { connection throws(DriveLookupConnection.Failure) in
            try connection.storedFile(kind: kind.rawValue, owner: owner, identity: identity)
        }
        guard let found else {
            return try quickRead { db -> (FileRecord, Double?)? in
                guard let record = try FileRecord.find(db, kind: kind, owner: owner, identity: identity) else { return nil }
                let usesDefault = record.mode == .cache && record.expiration == 0
                return (record, usesDefault ? try Self.settings(db, pool: record.pool).defaultExpiration : nil)
            }
        }
        guard let (row, poolExpiration) = found else { return nil }
        let record = try row.get()
        guard record.mode == .cache, record.expiration == 0 else { return (record, nil) }
        return (record, poolExpiration ?? record.pool.defaultExpiration)
    }

    /// Writes the accesses `AccessTimes` holds into the index, in one transaction (a later one kept).
    func writeAccessTimes() {
        let times = accessTimes.take()
        guard !times.isEmpty else { return }
        do {
            try database.write { db in
                let statement = try db.cachedStatement(sql: "UPDATE file SET lastAccess = MAX(lastAccess, ?) WHERE id = ?")
                for (id, time) in times { try statement.execute(arguments: [time, id]) }
            }
        } catch {
            logger.warning("cannot note \(times.count) files' last access: \(error)")
        }
    }

    /// How old a persistent file's recorded access may be before an export records a new one, in seconds.
    static let persistentAccessResolution: Double = 60

    /// Whether a cache file is past its expiration (its own, or its pool's default when its own is 0).
    /// `defaultExpiration`: the pool's, when the caller has read it already.
    func isExpired(_ record: FileRecord, defaultExpiration: Double? = nil) throws(DarkDiskError) -> Bool {
        let now = clock.now.timeIntervalSince1970
        guard record.mode == .cache else { return false }
        var expiration = record.expiration
        if expiration == 0 {
            if let defaultExpiration { expiration = defaultExpiration } else { expiration = try settings(for: record.pool).defaultExpiration }
        }
        guard expiration > 0 && record.modified + expiration <= now else { return false }
        // A file queued for upload may be the only copy: it does not expire before it is uploaded.
        guard record.kind != .avatar else { return true }
        let queued = try read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM uploadQueue WHERE nodeID = ?", arguments: [record.ownerID]) ?? false
        }
        return !queued
    }
}
