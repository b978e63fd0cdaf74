import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension StoreFiles {
    /// Stores `diskImport` as the file of `kind`, `owner` and `identity`, sealed under `contentKey` (see
    /// `DiskManager.importNodeFile`), with `also` run in the transaction that records it.
    func store(_ diskImport: DiskImport, kind: FileKind, owner: String, identity: String, contentKey: SymmetricKey,
                       also: ((Database) throws -> Void)? = nil) throws(DarkDiskError) -> DiskExport {
        // The new version of a kept file that a pull replaced is kept too (`keptVersionsToReplace`).
        var replacesKept = false
        if kind != .avatar, !diskImport.storePersistently {
            replacesKept = try read { db in
                try Bool.fetchOne(db, sql: "SELECT 1 FROM keepPersistent WHERE nodeID = ? AND kind = ?", arguments: [owner, kind.rawValue]) ?? false
            }
        }
        let mode: StorageMode = diskImport.storePersistently || replacesKept ? .persistent : .cache
        let staging = mode == .persistent ? location.persistentStaging : location.cacheStaging
        try FileOperations.makeDirectory(staging)
        let name = FileOperations.randomName()
        let temporary = staging + "/" + name
        // Our descriptor on the file being written, locked exclusively until its row commits, so that no
        // orphan sweep (in any process) takes it for debris; it then becomes the caller's retain token.
        var file = try FileOperations.openFile(temporary, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600, failing: "cannot create")
        do { try FileOperations.lock(file.rawValue, .exclusive, path: temporary) } catch {
            try? file.close()
            FileOperations.remove(temporary)
            throw error
        }
        var tokenOwned = false
        // Until it is renamed into place, an interrupted command removes it (`StagingFiles.removeAll`).
        StagingFiles.register(temporary)
        defer {
            StagingFiles.unregister(temporary)
            if !tokenOwned { try? file.close(); FileOperations.remove(temporary) }
        }

        // A cache file larger than its pool's max size could never be kept (eviction takes it as soon as
        // nobody holds it): such an import stops as soon as it passes the limit and keeps nothing.
        let poolLimit = mode == .cache ? try settings(for: kind.pool).maxSize : nil
        let limit = [diskImport.sizeLimit, poolLimit].compactMap { $0 }.min()
        let sourceName = diskImport.sourceName ?? diskImport.source.description
        /// `size`: what is known of the size ("takes N bytes encrypted"); nil when the source passed the limit.
        func tooLarge(_ size: String?) -> DarkDiskError {
            let what = size.map { "\(sourceName) \($0), more than" } ?? "\(sourceName) holds more than"
            if let poolLimit, diskImport.sizeLimit.map({ poolLimit <= $0 }) ?? true {
                return DarkDiskError(.tooLarge, "\(what) the \(kind.pool.rawValue) pool's max size (\(poolLimit) bytes): the cache could never keep it, so the import stopped and kept nothing")
            }
            return DarkDiskError(.tooLarge, "\(what) the import's size limit (\(limit ?? 0) bytes): the import stopped and kept nothing")
        }

        let fileKey: SymmetricKey
        let header: CryptoFileHeader
        do {
            switch diskImport.source {
            case .cleartextData(let data):
                header = try FileConversion.encrypt(data, key: contentKey, format: diskImport.format, to: temporary, chunkSize: diskImport.chunkSize)
                fileKey = contentKey
            case .cleartextFile(let path):
                header = try FileConversion.encrypt(fileAt: path, key: contentKey, format: diskImport.format, to: temporary, chunkSize: diskImport.chunkSize,
                                                    limit: limit)
                fileKey = contentKey
            case .cleartextStream(let source):
                header = try FileConversion.encrypt(fileDescriptor: source, key: contentKey, format: diskImport.format, to: temporary, chunkSize: diskImport.chunkSize,
                                                    name: diskImport.sourceName, limit: limit)
                fileKey = contentKey
            case .cryptoFile(let cryptoFile):
                // Authenticate and measure before moving, so a file refused stays where the caller put it.
                header = try CryptoFileReader(path: cryptoFile.path, key: cryptoFile.key).header
                if let limit, header.fileLength > limit { throw tooLarge("takes \(header.fileLength) bytes encrypted") }
                if try FileOperations.move(cryptoFile.path, onto: temporary) == .renamed {
                    // Our locked descriptor is on the replaced empty file: take the moved one and lock it.
                    let moved = try FileOperations.openFile(temporary, O_RDONLY | O_NOFOLLOW)
                    try FileOperations.lock(moved.rawValue, .exclusive, path: temporary)
                    file = moved  // (the one on the replaced empty file closes)
                }
                fileKey = cryptoFile.key
            }
        } catch let error as CryptoError where error.code == .outOfRange && limit != nil {
            throw tooLarge(nil)
        } catch let error as CryptoError {
            throw DarkDiskError(crypto: error)
        } catch let error as DarkDiskError {
            throw error
        } catch {
            throw DarkDiskError(.io, "import failed: \(error)")
        }
        let st: stat
        do { st = try file.stat() } catch { throw .posix("cannot stat", path: temporary, errno: error.rawValue) }
        if let poolLimit, UInt64(st.st_size) > poolLimit { throw tooLarge("takes \(st.st_size) bytes encrypted") }
        do { try file.fsync() } catch { throw .posix("cannot flush", path: temporary, errno: error.rawValue) }

        let finalPath = path(name: name, mode: mode)
        try FileOperations.rename(temporary, to: finalPath)
        let export = try recordStoredFile(
            file, at: finalPath, name: name, header: header, fileKey: fileKey, storedSize: UInt64(st.st_size), kind: kind,
            owner: owner, identity: identity, mode: mode, diskImport: diskImport, also: also)
        tokenOwned = true
        return export
    }

    /// Stores `file`, a complete cache-format file sealed under node `nodeID`'s key, as the node's data: a
    /// persistent file that moves to the cache pool once uploaded. The file is named in place (no copy and
    /// no second rename) before its row commits with `also` in the same transaction, so a crash leaves the
    /// old version or the new one. `durable`: the file, its folder and the index reach the disk before this
    /// returns (an `fsync`); otherwise they are written as a local file system writes a closed file, and a
    /// power loss (not a crash of this process) may take the last versions back.
    func placeNodeData(_ file: UnnamedFile, header: CryptoFileHeader, key: SymmetricKey, nodeID: NodeID, durable: Bool,
                       also: @escaping (Database) throws -> Void) throws(DarkDiskError) -> DiskExport {
        let name = file.intendedName ?? FileOperations.randomName()
        let finalPath = path(name: name, mode: .persistent)
        let (held, storedSize) = try lockForPlacing(file, at: finalPath, durable: durable)
        do {
            try file.place(at: finalPath)
            if durable { try FileOperations.syncDirectory(of: finalPath) }
            var version = DiskImport(cleartextData: Data())
            version.storePersistently = true
            version.migrateToCacheAfterUpload = true
            let export = try recordStoredFile(
                held, at: finalPath, name: name, header: header, fileKey: key, storedSize: storedSize,
                kind: .data, owner: nodeID.rawValue, identity: "", mode: .persistent, diskImport: version, also: also)
            if durable { index.sync() }
            return export
        } catch {
            try? held.close()
            if file.isPlaced { FileOperations.remove(finalPath) }
            throw error
        }
    }

    /// Locks the new version `file`, to be named `finalPath`, exclusively until its row is in the index, so that
    /// no orphan sweep (in any process) takes it for debris; its stored size, and a descriptor that shares the
    /// lock (for a retain token, which turns the lock into a holder's after). `durable`: flushed first.
    func lockForPlacing(_ file: UnnamedFile, at finalPath: String, durable: Bool) throws(DarkDiskError) -> (file: OwnedDescriptor, storedSize: UInt64) {
        try FileOperations.lock(file.fileDescriptor, .exclusive, path: finalPath)
        let st: stat
        do { st = try file.file.stat() } catch { throw .posix("cannot stat the new version of", path: finalPath, errno: error.rawValue) }
        if durable {
            do { try file.file.fsync() } catch { throw .posix("cannot flush", path: finalPath, errno: error.rawValue) }
        }
        let fd = dup(file.fileDescriptor)
        guard fd >= 0 else { throw .posix("cannot duplicate the descriptor of", path: finalPath) }
        return (OwnedDescriptor(owning: fd), UInt64(st.st_size))
    }

    /// Records the stored file at `finalPath` (open as `file`, locked exclusively) in the index, replacing the
    /// owner's previous file of that kind, and returns it retained by a token that takes `file`. If the row
    /// cannot be written, the file is removed and `file` stays the caller's.
    private func recordStoredFile(_ file: OwnedDescriptor, at finalPath: String, name: String, header: CryptoFileHeader, fileKey: SymmetricKey,
                                  storedSize: UInt64, kind: FileKind, owner: String, identity: String, mode: StorageMode,
                                  diskImport: DiskImport, also: ((Database) throws -> Void)?) throws(DarkDiskError) -> DiskExport {
        let now = clock.now.timeIntervalSince1970
        var record = FileRecord(
            id: nil, kind: kind, ownerID: owner, identityID: identity, pool: kind.pool, mode: mode,
            format: header.format, name: name, wrappedKey: Data(wrapLocally(fileKey)),
            storedSize: Int64(storedSize), plaintextSize: Int64(header.sectionSizes[header.format == .cloudFile ? CloudFileSection.data.rawValue : 0]),
            created: now, modified: now, lastAccess: now, expiration: diskImport.expiration,
            migrateToCacheAfterUpload: diskImport.migrateToCacheAfterUpload, deleteAfterUpload: diskImport.deleteAfterUpload,
            cloudFileID: header.format == .cloudFile ? Data(header.fileID) : nil)
        let replaced: String?
        do {
            replaced = try write { db -> String? in
                let old = try FileRecord.find(db, kind: kind, owner: owner, identity: identity)
                if let old {
                    try deleter.markPending(db, paths: [path(of: old)])
                    _ = try old.delete(db)
                }
                try record.insertRow(db)
                try also?(db)
                if mode == .persistent, kind != .avatar {
                    try db.cachedStatement(sql: "DELETE FROM keepPersistent WHERE nodeID = ? AND kind = ?").execute(arguments: [owner, kind.rawValue])
                }
                return old.map(path(of:))
            }
        } catch {
            FileOperations.remove(finalPath)
            throw error
        }
        // Exclusive (the writer's) becomes shared (a holder's); converting never waits on other holders.
        do { try file.lock(.shared) } catch {
            logger.error("cannot turn the lock on \(finalPath) into a shared one (\(error)); readers in other processes wait until it is released")
        }
        if let replaced { deleter.tryDelete(replaced) }
        notify(record, .imported)
        if mode == .cache { kickEviction(record.pool) }
        let token = RetainToken(file: file, path: finalPath, pool: record.pool, mode: record.mode, manager: self)
        return export(record, fileKey: fileKey, token: token)
    }

    /// Builds the export of a record the caller already holds a token for.
    func export(_ record: FileRecord, fileKey: SymmetricKey, token: RetainToken) -> DiskExport {
        DiskExport(
            cryptoFile: CryptoFile(path: token.path, format: record.format, key: fileKey, retainToken: token),
            fileID: record.id ?? 0,
            mode: record.mode, pool: record.pool, plaintextSize: UInt64(record.plaintextSize),
            storedSize: UInt64(record.storedSize), lastModified: Date(timeIntervalSince1970: record.modified),
            expiration: record.expiration, cloudFileID: record.cloudFileID.map(Array.init), retainToken: token)
    }
}

extension DarkDiskError {
    /// Maps a format error to the store's error type, keeping errno for I/O failures (ENOSPC stays ENOSPC).
    public init(crypto error: CryptoError) {
        switch error.code {
        case .io: self.init(.io, error.message, errno: error.errno)
        case .invalidKey, .openssl, .outOfRange: self.init(.invalidArgument, error.message)
        default: self.init(.corrupt, error.message)
        }
    }
}
