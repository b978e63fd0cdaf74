import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The drive's commit journal (`DriveCommitJournal`): the mount daemon's `close` commits a drive file with
/// one `write` of a record, and the index takes the records waiting in one transaction behind it.
extension DiskManager {
    /// Where the journal lives: beside the index.
    var driveJournalPath: String { location.dataDirectory + "/drive-commits.journal" }

    /// Makes this instance the journal's writer (the mount daemon): a drive commit given `whenIndexed` is
    /// then journaled. First writes into the index what a stopped daemon left. False when another process
    /// journals for this store already (this one then commits each file in a transaction of its own).
    public func startDriveJournal() throws(DarkDiskError) -> Bool {
        if driveJournal.withLock({ $0 }) != nil { return true }
        let path = driveJournalPath
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .posix("cannot open the drive's commit journal", path: path) }
        do {
            // Another process's opening holds it a moment while it looks for what to replay: wait that out
            // (up to 2 s); a daemon holds it for good.
            var locked = try SystemCall.tryLock(fd, .exclusive)
            for _ in 0..<20 where !locked {
                usleep(100_000)
                locked = try SystemCall.tryLock(fd, .exclusive)
            }
            guard locked else {
                close(fd)
                logger.notice("another process journals this store's drive commits; this one commits each file on its own")
                return false
            }
        } catch {
            close(fd)
            throw .posix("cannot lock", path: path, errno: error.rawValue)
        }
        let last: UInt64
        do { last = try replayDriveJournal(fd) } catch {
            close(fd)
            throw error
        }
        let logger = self.logger
        let journal = DriveCommitJournal(path: path, fd: fd, after: last, apply: { [weak self] (batch) throws(DarkDiskError) in
            guard let self else { throw DarkDiskError(.io, "the store was closed") }
            return try self.applyDriveCommits(batch)
        }, logger: { logger.warning("\($0)") })
        driveJournal.withLock { $0 = journal }
        return true
    }

    /// Waits until the index has every drive commit journaled so far (at most `timeout` seconds), then stops
    /// journaling (later commits each take a transaction); whether nothing was left waiting. What is left
    /// stays in the journal for the store's next opening.
    @discardableResult
    public func stopDriveJournal(timeout: Double) -> Bool {
        guard let journal = driveJournal.withLock({ state in defer { state = nil }; return state }) else { return true }
        let done = journal.drain(timeout: timeout)
        journal.stop()
        return done
    }

    /// Waits until the index has every drive commit journaled before the call: what a request reading the
    /// index must see.
    /// At most `timeout` seconds (nil: as long as it takes); whether nothing journaled before the call waits.
    @discardableResult
    public func drainDriveCommits(timeout: Double? = nil) -> Bool {
        driveJournal.withLock { $0 }?.drain(timeout: timeout) ?? true
    }

    /// Whether no journaled drive commit waits for the index (one atomic load).
    public var driveCommitsIdle: Bool {
        driveJournal.withLock { $0 }?.isIdle ?? true
    }

    /// Whether a journaled commit of drive node `nodeID` waits for the index.
    public func hasPendingDriveCommit(_ nodeID: NodeID) -> Bool {
        driveJournal.withLock { $0 }?.isPending(node: nodeID.rawValue) ?? false
    }

    /// Whether a journaled commit waiting for the index makes a node named `name` in folder `parentID`.
    public func hasPendingDriveCommit(named name: String, in parentID: NodeID?) -> Bool {
        driveJournal.withLock { $0 }?.isPending(name: name, in: parentID?.rawValue) ?? false
    }

    /// The journaled half of `commitDriveFile`: `file` goes in place, locked, and its record into the journal;
    /// the export is the new version's, before the index has it.
    func journalNodeData(_ file: UnnamedFile, header: CryptoFileHeader, key: SymmetricKey, nodeID: NodeID,
                         changes: StagedContent.AttributeChanges, inserting prepared: PreparedDriveFile?,
                         journal: DriveCommitJournal, whenIndexed: @escaping @Sendable (DriveCommitOutcome) -> Void) throws(DarkDiskError) -> DiskExport {
        let name = file.intendedName ?? FileOperations.randomName()
        let finalPath = path(name: name, mode: .persistent)
        // Exclusive until its row is in the index (no orphan sweep takes it); `holder` keeps the lock until then.
        try FileOperations.lock(file.fileDescriptor, .exclusive, path: finalPath)
        var st = stat()
        guard fstat(file.fileDescriptor, &st) == 0 else { throw .posix("cannot stat the new version of", path: finalPath) }
        let fd = dup(file.fileDescriptor)
        guard fd >= 0 else { throw .posix("cannot duplicate the descriptor of", path: finalPath) }
        let holder = dup(file.fileDescriptor)
        guard holder >= 0 else {
            close(fd)
            throw .posix("cannot duplicate the descriptor of", path: finalPath)
        }
        let now = clock.now.timeIntervalSince1970
        let plaintextSize = Int64(header.sectionSizes[header.format == .cloudFile ? CloudFileSection.data.rawValue : 0])
        // (A new file's content key is its node's: the row's wrapping serves both.)
        let fileWrappedKey = prepared?.row.wrappedKey ?? Data(masterKey.wrap(key))
        let fileRecord = FileRecord(
            id: nil, kind: .data, ownerID: nodeID.rawValue, identityID: "", pool: FileKind.data.pool, mode: .persistent,
            format: header.format, name: name, wrappedKey: fileWrappedKey, storedSize: Int64(st.st_size), plaintextSize: plaintextSize,
            created: now, modified: now, lastAccess: now, expiration: 0, migrateToCacheAfterUpload: true, deleteAfterUpload: false)
        let newNode = prepared.map { prepared in
            let node = prepared.node, attributes = node.attributes
            return DriveCommitRecord.NewNode(
                wrappedKey: prepared.row.wrappedKey, name: node.name, parentID: node.parentID?.rawValue, created: node.created,
                type: attributes.kind.rawValue, mode: Int64(attributes.mode), mtime: attributes.modifiedSeconds,
                mtimeNsec: Int64(attributes.modifiedNanoseconds), target: attributes.target, xattrs: prepared.row.extendedAttributes)
        }
        do {
            try file.place(at: finalPath)
            try journal.append { sequence in
                DriveCommitJournal.Pending(
                    record: DriveCommitRecord(
                        sequence: sequence, nodeID: nodeID.rawValue, fileName: name, format: header.format.rawValue,
                        fileWrappedKey: fileWrappedKey, storedSize: fileRecord.storedSize, plaintextSize: plaintextSize, time: now,
                        mode: changes.mode.map { Int64($0 & 0o7777) },
                        modified: changes.modified.map { DriveCommitRecord.Modified(seconds: $0.seconds, nanoseconds: Int64($0.nanoseconds)) },
                        newNode: newNode),
                    lockHolder: holder, fileRecord: fileRecord, completion: whenIndexed)
            }
        } catch {
            close(fd)
            close(holder)
            if file.isPlaced { FileOperations.remove(finalPath) }
            throw error
        }
        let token = RetainToken(fileDescriptor: fd, path: finalPath, pool: fileRecord.pool, mode: .persistent, manager: self)
        return export(fileRecord, fileKey: key, token: token)
    }

    /// Writes journaled drive commits into the index in one transaction (each in a savepoint of its own: one
    /// that cannot land, its node deleted meanwhile, is dropped alone and its stored file removed), noting
    /// the last one's sequence in the same transaction; then does what each commit's file needs once its row
    /// is in (the lock of a holder, the old version's delete). Throws, writing nothing, when the transaction
    /// cannot run.
    func applyDriveCommits(_ batch: [DriveCommitJournal.Pending]) throws(DarkDiskError) -> [DriveCommitOutcome] {
        guard let last = batch.last?.record.sequence else { return [] }
        let (outcomes, replaced, inserted) = try write { db -> ([DriveCommitOutcome], [String?], [FileRecord?]) in
            var outcomes: [DriveCommitOutcome] = []
            var replaced: [String?] = []
            var inserted: [FileRecord?] = []
            // Read in the transaction that writes: a record another process's replay wrote meanwhile (a daemon
            // stopped while this batch ran) is not written twice.
            let applied = try Int64.fetchOne(db.cachedStatement(sql: "SELECT appliedThrough FROM driveJournal WHERE id = 1")) ?? 0
            for pending in batch {
                guard pending.record.sequence > UInt64(max(applied, 0)) else {
                    outcomes.append(.indexed)
                    replaced.append(nil)
                    inserted.append(nil)
                    continue
                }
                if pending.lockHolder < 0, access(path(name: pending.record.fileName, mode: .persistent), F_OK) != 0 {
                    // A replayed record whose stored file went (removed by hand): nothing to index.
                    outcomes.append(.dropped(DarkDiskError(.notFound, "its stored file \(pending.record.fileName) is gone")))
                    replaced.append(nil)
                    inserted.append(nil)
                    continue
                }
                var fileRecord = pending.fileRecord
                var old: String?
                do {
                    try db.inSavepoint {
                        old = try Self.applyDriveCommit(pending.record, &fileRecord, db, manager: self)
                        return .commit
                    }
                    outcomes.append(.indexed)
                    replaced.append(old)
                    inserted.append(fileRecord)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    outcomes.append(.dropped(DarkDiskError(.database, "node \(pending.record.nodeID): \(error)")))
                    replaced.append(nil)
                    inserted.append(nil)
                } catch is DeletedMeanwhile {
                    outcomes.append(.dropped(nil))
                    replaced.append(nil)
                    inserted.append(nil)
                } catch let error as DarkDiskError {
                    outcomes.append(.dropped(error))
                    replaced.append(nil)
                    inserted.append(nil)
                }
            }
            try db.cachedStatement(sql: "UPDATE driveJournal SET appliedThrough = MAX(appliedThrough, ?) WHERE id = 1").execute(arguments: [Int64(last)])
            return (outcomes, replaced, inserted)
        }
        for (index, pending) in batch.enumerated() {
            let finalPath = path(name: pending.record.fileName, mode: .persistent)
            switch outcomes[index] {
            case .indexed:
                if pending.lockHolder >= 0 {
                    // Exclusive (the writer's) becomes shared (a holder's) for the token that shares it.
                    do { try SystemCall.lock(pending.lockHolder, .shared) } catch {
                        logger.error("cannot turn the lock on \(finalPath) into a shared one (\(error)); readers in other processes wait until it is released")
                    }
                    close(pending.lockHolder)
                }
                if let old = replaced[index] { deleter.tryDelete(old) }
                if let record = inserted[index] { notify(record, .imported) }
            case .dropped(let error):
                if let error { logger.error("drive file (node \(pending.record.nodeID)): its version could not enter the index: \(error)") }
                if pending.lockHolder >= 0 { close(pending.lockHolder) }
                FileOperations.remove(finalPath)
            }
        }
        return outcomes
    }

    /// One journaled commit's rows, in the caller's savepoint: the new stored file replaces the node's
    /// previous one, the node's row goes in (a first commit) or takes the attributes set meanwhile, and its
    /// upload is queued; the previous file's path, to delete once this commits.
    private static func applyDriveCommit(_ record: DriveCommitRecord, _ fileRecord: inout FileRecord, _ db: Database,
                                         manager: DiskManager) throws -> String? {
        // (A node made here has no stored file yet, and nothing kept for it.)
        let old = record.newNode == nil ? try FileRecord.find(db, kind: .data, owner: record.nodeID) : nil
        var oldPath: String?
        if let old {
            oldPath = manager.path(of: old)
            try manager.deleter.markPending(db, paths: [oldPath!])
            _ = try old.delete(db)
        }
        try fileRecord.insertRow(db)
        if let node = record.newNode {
            // A new node's row goes in with the attributes set since it was made. (Its folder was checked when
            // it was made; one deleted since, by a pull, leaves it an orphan, shown at the top: never lost.)
            try insertNodeColumns(db, id: record.nodeID, wrappedKey: node.wrappedKey, name: node.name, parentID: node.parentID,
                                  created: node.created, type: node.type, mode: record.mode ?? node.mode,
                                  mtime: record.modified?.seconds ?? node.mtime, mtimeNsec: record.modified?.nanoseconds ?? node.mtimeNsec,
                                  target: node.target, xattrs: node.xattrs)
        } else if record.mode != nil || record.modified != nil {
            try db.cachedStatement(sql: """
                UPDATE node SET mode = COALESCE(?, mode), mtime = COALESCE(?, mtime), mtimeNsec = COALESCE(?, mtimeNsec)
                WHERE id = ? AND name IS NOT NULL
                """).execute(arguments: [record.mode, record.modified?.seconds, record.modified?.nanoseconds, record.nodeID])
            guard db.changesCount > 0 else { throw DeletedMeanwhile() }
        } else {
            guard try String.fetchOne(db.cachedStatement(sql: "SELECT name FROM node WHERE id = ?"), arguments: [record.nodeID]) != nil else {
                throw DeletedMeanwhile()
            }
        }
        let nodeID = try NodeID(record.nodeID)
        try queue(db, nodeID, .content, name: nil, parentID: nil, operation: "'content'", now: record.time)
        if record.newNode == nil {
            try db.cachedStatement(sql: "DELETE FROM keepPersistent WHERE nodeID = ? AND kind = ?").execute(arguments: [record.nodeID, FileKind.data.rawValue])
        }
        return oldPath
    }

    /// Writes into the index the records a stopped daemon left in the journal (open at `fd`, locked by the
    /// caller; else opened and locked here, and left alone while a running daemon holds it), in batches, and
    /// empties it; the last sequence the journal or the index knows.
    @discardableResult
    func replayDriveJournal(_ lockedFD: Int32? = nil) throws(DarkDiskError) -> UInt64 {
        let path = driveJournalPath
        let fd: Int32
        if let lockedFD {
            fd = lockedFD
        } else {
            fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else {
                if errno == ENOENT { return 0 }
                throw .posix("cannot open the drive's commit journal", path: path)
            }
        }
        defer { if lockedFD == nil { close(fd) } }
        if lockedFD == nil {
            // A running daemon's journal is its own to write.
            guard (try? SystemCall.tryLock(fd, .exclusive)) == true else { return 0 }
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .posix("cannot stat", path: path) }
        // (Every opening of the store comes here: an empty journal costs no index read.)
        if st.st_size == 0, lockedFD == nil { return 0 }
        let applied = try read { db in try Int64.fetchOne(db, sql: "SELECT appliedThrough FROM driveJournal WHERE id = 1") } ?? 0
        var last = UInt64(max(applied, 0))
        guard st.st_size > 0 else { return last }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, 0) }
        guard count == bytes.count else { throw .posix("cannot read", path: path) }
        let (records, length) = DriveCommitRecord.records(in: bytes)
        if length < bytes.count {
            logger.warning("the drive's commit journal ends in \(bytes.count - length) bytes that are no whole record (a write cut short: its close never returned); ignored")
        }
        let todo = records.filter { $0.sequence > last }
        var written = 0
        var start = 0
        while start < todo.count {
            let slice = todo[start..<min(start + 500, todo.count)]
            let batch = slice.map { record in
                DriveCommitJournal.Pending(record: record, lockHolder: -1, fileRecord: fileRecord(replaying: record), completion: { _ in })
            }
            let outcomes = try applyDriveCommits(batch)
            written += outcomes.filter { if case .indexed = $0 { true } else { false } }.count
            start += slice.count
        }
        last = max(last, records.last?.sequence ?? 0)
        if !todo.isEmpty { logger.notice("the index took \(written) of \(todo.count) drive commits a stopped daemon had journaled") }
        guard ftruncate(fd, 0) == 0 else { throw .posix("cannot empty", path: path) }
        return last
    }

    /// The file row a replayed record stands for; a record whose stored file is not there (removed by hand)
    /// is dropped by its transaction.
    private func fileRecord(replaying record: DriveCommitRecord) -> FileRecord {
        FileRecord(
            id: nil, kind: .data, ownerID: record.nodeID, identityID: "", pool: FileKind.data.pool, mode: .persistent,
            format: CryptoFileFormat(rawValue: record.format) ?? .cacheFile, name: record.fileName, wrappedKey: record.fileWrappedKey,
            storedSize: record.storedSize, plaintextSize: record.plaintextSize, created: record.time, modified: record.time,
            lastAccess: record.time, expiration: 0, migrateToCacheAfterUpload: true, deleteAfterUpload: false)
    }
}
