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
    package func startDriveJournal() throws(DarkDiskError) -> Bool {
        if driveJournal.withLock({ $0 }) != nil { return true }
        let path = driveJournalPath
        // (A failure below closes the file, and with it the lock, as the owner goes.)
        let file = try FileOperations.openFile(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW, mode: 0o600,
                                               failing: "cannot open the drive's commit journal")
        do {
            // Another process's opening holds it a moment while it looks for what to replay: wait that out
            // (up to 2 s); a daemon holds it for good.
            var locked = try file.tryLock(.exclusive)
            for _ in 0..<20 where !locked {
                usleep(100_000)
                locked = try file.tryLock(.exclusive)
            }
            guard locked else {
                try? file.close()
                logger.notice("another process journals this store's drive commits; this one commits each file on its own")
                return false
            }
        } catch {
            throw .posix("cannot lock", path: path, errno: error.rawValue)
        }
        let last = try replayDriveJournal(file)
        let logger = self.logger
        let journal = DriveCommitJournal(path: path, descriptor: file, after: last, key: journalKey, apply: { [weak self] (batch) throws(DarkDiskError) in
            guard let self else { throw DarkDiskError(.io, "the store was closed") }
            return try self.applyDriveCommits(batch)
        }, logger: { logger.warning("\($0)") })
        driveJournal.withLock { $0 = journal }
        files.batchesAccessTimes.withLock { $0 = true }
        startUnnamedFilePool()
        return true
    }

    /// Waits until the index has every drive commit journaled so far (at most `timeout` seconds), then stops
    /// journaling (later commits each take a transaction); whether nothing was left waiting. What is left
    /// stays in the journal for the store's next opening.
    @discardableResult
    package func stopDriveJournal(timeout: Double) -> Bool {
        guard let journal = driveJournal.withLock({ state in defer { state = nil }; return state }) else { return true }
        unnamedFiles.withLock { $0 = nil }
        let done = journal.drain(timeout: timeout)
        journal.stop()
        files.batchesAccessTimes.withLock { $0 = false }
        files.writeAccessTimes()
        return done
    }

    /// How long a request waits for the index to take the drive's journaled commits before it fails (`EIO`
    /// on the mount): an index that cannot be written that long (another process holding its write lock, a
    /// full disk) fails the request rather than hang it, or answer it without the commits.
    package static let driveCommitWaitLimit: Double = 30

    /// Waits until the index has every drive commit journaled before the call: what a request reading the
    /// index must see.
    /// At most `timeout` seconds (nil: as long as it takes); whether nothing journaled before the call waits.
    @discardableResult
    package func drainDriveCommits(timeout: Double? = nil) -> Bool {
        driveJournal.withLock { $0 }?.drain(timeout: timeout) ?? true
    }

    /// Whether no journaled drive commit waits for the index (one atomic load).
    package var driveCommitsIdle: Bool {
        driveJournal.withLock { $0 }?.isIdle ?? true
    }

    /// Batches of the drive's journal the index has taken so far: a read between two looks at this that find
    /// it the same, with no record of the node read waiting at the second, has every record of that node.
    package var driveCommitsLanded: UInt64 {
        driveJournal.withLock { $0 }?.landedBatches ?? 0
    }

    /// Whether a journaled commit of drive node `nodeID` waits for the index.
    package func hasPendingDriveCommit(_ nodeID: NodeID) -> Bool {
        driveJournal.withLock { $0 }?.isPending(node: nodeID.rawValue) ?? false
    }

    /// Whether a journaled commit waiting for the index makes a node named `name` in folder `parentID`.
    /// Whether a record making or removing an entry of folder `folderID` (nil: the top) waits in the drive's
    /// journal.
    package func hasPendingDriveCommit(inFolder folderID: NodeID?) -> Bool {
        driveJournal.withLock { $0 }?.isPending(inFolder: folderID?.rawValue) ?? false
    }

    package func hasPendingDriveCommit(named name: String, in parentID: NodeID?) -> Bool {
        driveJournal.withLock { $0 }?.isPending(name: name, in: parentID?.rawValue) ?? false
    }

    /// Removes drive file or link `node` (found named `node.name` in its folder, no commit of that name
    /// waiting) through the journal: once this returns, the removal outlives the process, and the index takes
    /// it with the next batch (`applyDriveCommits`); a lookup of the name waits for that. False when this
    /// process does not journal: the caller deletes the node itself (`deleteDriveNode`).
    package func journalDriveRemoval(_ node: DriveNode) throws(DarkDiskError) -> Bool {
        guard node.attributes.kind != .folder else { throw DarkDiskError(.isDirectory, "'\(node.name)' is a folder") }
        guard let journal = driveJournal.withLock({ $0 }) else { return false }
        let now = clock.now.timeIntervalSince1970
        defer { noteDriveChange() }
        try journal.append { sequence in
            DriveCommitJournal.Pending(record: .removal(sequence: sequence, nodeID: node.id.rawValue, parentID: node.parentID?.rawValue, name: node.name, time: now),
                                       isLive: true, fileRecord: nil, completion: { _ in })
        }
        return true
    }

    /// The journaled half of `commitDriveFile`: `file` goes in place, locked, and its record into the journal;
    /// the export is the new version's, before the index has it.
    func journalNodeData(_ file: UnnamedFile, header: CryptoFileHeader, key: SymmetricKey, nodeID: NodeID,
                         changes: StagedContent.AttributeChanges, inserting prepared: PreparedDriveFile?,
                         journal: DriveCommitJournal, whenIndexed: @escaping @Sendable (DriveCommitOutcome) -> Void) throws(DarkDiskError) -> DiskExport {
        let name = file.intendedName ?? FileOperations.randomName()
        let finalPath = files.path(name: name, mode: .persistent)
        let (held, storedSize) = try files.lockForPlacing(file, at: finalPath, durable: false)
        let now = clock.now.timeIntervalSince1970
        // (A new file's content key is its node's: the row's wrapping serves both.)
        let fileWrappedKey = prepared?.row.wrappedKey ?? Data(wrapLocally(key))
        let record = { (sequence: UInt64) in
            DriveCommitRecord(
                sequence: sequence, nodeID: nodeID.rawValue, fileName: name, format: header.format.rawValue, fileWrappedKey: fileWrappedKey,
                storedSize: Int64(storedSize), plaintextSize: Int64(header.sectionSizes[header.format == .cloudFile ? CloudFileSection.data.rawValue : 0]),
                time: now, mode: DriveCommitRecord.mode(changes), modified: DriveCommitRecord.Modified(changes), newNode: prepared.map(DriveCommitRecord.NewNode.init),
                cloudFileID: header.format == .cloudFile ? Data(header.fileID) : nil)
        }
        let fileRecord = Self.fileRecord(of: record(0))
        do {
            try file.place(at: finalPath)
            try journal.append { sequence in
                DriveCommitJournal.Pending(record: record(sequence), isLive: true, fileRecord: fileRecord, completion: whenIndexed)
            }
        } catch {
            try? held.close()
            if file.isPlaced { FileOperations.remove(finalPath) }
            throw error
        }
        // The record names the file now (an orphan sweep reads it): the writer's exclusive lock becomes the
        // shared one of a holder, as for every stored file (no descriptor is kept per record).
        do { try held.lock(.shared) } catch {
            logger.error("cannot turn the lock on \(finalPath) into a shared one (\(error)); readers in other processes wait until it is released")
        }
        let token = RetainToken(file: held, path: finalPath, pool: fileRecord.pool, mode: .persistent, manager: files)
        return files.export(fileRecord, fileKey: key, token: token)
    }

    /// Writes journaled drive commits into the index in one transaction, noting the last one's sequence in it;
    /// then does what each commit's file needs once its row is in (the old version's delete). A record that cannot land (its node deleted meanwhile) is dropped alone and its stored file
    /// removed: the transaction is then written again with each record in a savepoint of its own. (Savepoints
    /// for every record, when none fails, cost each ~10 µs of the index's time.) Throws, writing nothing, when
    /// the transaction cannot run.
    func applyDriveCommits(_ batch: [DriveCommitJournal.Pending]) throws(DarkDiskError) -> [DriveCommitOutcome] {
        guard !batch.isEmpty else { return [] }
        let results: [AppliedCommit]
        do {
            results = try applyDriveCommits(batch, savepoints: false)
        } catch let error where error == AppliedCommit.retry {
            results = try applyDriveCommits(batch, savepoints: true)
        }
        for (pending, result) in zip(batch, results) {
            if pending.record.removal != nil {
                if let (deleted, hadPartial) = result.removed {
                    files.finishDeletes(deleted, reason: .deleted)
                    if hadPartial, let id = try? NodeID(pending.record.nodeID) { files.removeIdlePartialDownload(id) }
                }
                continue
            }
            let finalPath = files.path(name: pending.record.fileName, mode: .persistent)
            switch result.outcome {
            case .indexed:
                if let old = result.replaced { files.deleter.tryDelete(old) }
                if let record = result.inserted { files.notify(record, .imported) }
            case .dropped(let error):
                if let error { logger.error("drive file (node \(pending.record.nodeID)): its version could not enter the index: \(error)") }
                FileOperations.remove(finalPath)
            }
        }
        return results.map(\.outcome)
    }

    /// A record's outcome in a batch, the version it replaced (deleted once the batch commits), the row it
    /// inserted; for a removal, the file rows it deleted (their files go once the batch commits) and whether
    /// a partial download is left to remove.
    struct AppliedCommit {
        let outcome: DriveCommitOutcome
        let replaced: String?
        let inserted: FileRecord?
        var removed: ([FileRecord], Bool)? = nil

        /// Thrown (and never seen outside) when a record of a batch written without savepoints cannot land.
        static let retry = DarkDiskError(.busy, "a record of the batch cannot land: written again with savepoints")
    }

    /// The batch's transaction; without `savepoints`, the first record that cannot land rolls the whole
    /// transaction back (`AppliedCommit.retry`) for the caller to write it again with them.
    private func applyDriveCommits(_ batch: [DriveCommitJournal.Pending], savepoints: Bool) throws(DarkDiskError) -> [AppliedCommit] {
        let last = batch[batch.count - 1].record.sequence
        let (results, own) = try write { db -> ([AppliedCommit], OwnCommitChanges.Batch?) in
            let changesBefore = Self.lastEntryChange(db)
            // Read in the transaction that writes: a record another process's replay wrote meanwhile (a daemon
            // stopped while this batch ran) is not written twice.
            let applied = UInt64(max(try Int64.fetchOne(db.cachedStatement(sql: "SELECT appliedThrough FROM driveJournal WHERE id = 1")) ?? 0, 0))
            let results = try batch.map { pending throws -> AppliedCommit in
                guard pending.record.sequence > applied else { return AppliedCommit(outcome: .indexed, replaced: nil, inserted: nil) }
                if pending.record.removal != nil {
                    // (A node gone meanwhile, or no longer a file or link, has nothing left to remove.)
                    guard let id = try? NodeID(pending.record.nodeID), let kind = try Self.driveKind(of: id, db), kind != .folder else {
                        return AppliedCommit(outcome: .dropped(nil), replaced: nil, inserted: nil)
                    }
                    let removed = try Self.deleteDriveRows(db, id, now: pending.record.time, files: files)
                    return AppliedCommit(outcome: .indexed, replaced: nil, inserted: nil, removed: removed)
                }
                if !pending.isLive, access(files.path(name: pending.record.fileName, mode: .persistent), F_OK) != 0 {
                    // A replayed record whose stored file went (removed by hand): nothing to index.
                    return AppliedCommit(outcome: .dropped(DarkDiskError(.notFound, "its stored file \(pending.record.fileName) is gone")),
                                         replaced: nil, inserted: nil)
                }
                guard var fileRecord = pending.fileRecord else { throw DarkDiskError(.corrupt, "a commit without its file row") }
                var old: String?
                let dropped: DriveCommitOutcome
                do {
                    if savepoints {
                        try db.inSavepoint {
                            old = try Self.applyDriveCommit(pending.record, &fileRecord, db, manager: self)
                            return .commit
                        }
                    } else {
                        old = try Self.applyDriveCommit(pending.record, &fileRecord, db, manager: self)
                    }
                    return AppliedCommit(outcome: .indexed, replaced: old, inserted: fileRecord)
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    dropped = .dropped(DarkDiskError(.database, "node \(pending.record.nodeID): \(error)"))
                } catch is DeletedMeanwhile {
                    dropped = .dropped(nil)
                } catch let error as DarkDiskError {
                    dropped = .dropped(error)
                }
                // (Anything else is the transaction's: the whole batch waits and is tried again.)
                guard savepoints else { throw AppliedCommit.retry }
                return AppliedCommit(outcome: dropped, replaced: nil, inserted: nil)
            }
            try db.cachedStatement(sql: "UPDATE driveJournal SET appliedThrough = MAX(appliedThrough, ?) WHERE id = 1").execute(arguments: [Int64(last)])
            return (results, Self.ownCommitBatch(batch, results, changesBefore: changesBefore, db))
        }
        if let own { ownCommitChanges.withLock { $0.add(own) } }
        return results
    }

    /// The newest row of the change table (`sqlite_sequence`: the table counts with AUTOINCREMENT); nil if
    /// it cannot be read.
    private static func lastEntryChange(_ db: Database) -> Int64? {
        try? Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'entryChange'")) ?? 0
    }

    /// The change rows a batch's transaction wrote (after row `changesBefore`) and the nodes among them
    /// whose commits or removals landed as this process's writers made them, and their folders (whose times
    /// they moved), so that a mount has shown them to the kernel already: not replayed records, and not new
    /// files whose folder a pull deleted meanwhile (they show at
    /// the top, which the kernel must be told of). Nil when no row was written (a range past the last row
    /// would claim another writer's next one) or a read failed: the watcher then tells every row, as for
    /// another process's, and the batch is not failed for it.
    private static func ownCommitBatch(_ batch: [DriveCommitJournal.Pending], _ results: [AppliedCommit], changesBefore: Int64?,
                                       _ db: Database) -> OwnCommitChanges.Batch? {
        guard let changesBefore, let last = lastEntryChange(db), last > changesBefore else { return nil }
        var nodes = Set<String>()
        var folders: [String: Bool] = [:]
        for (pending, result) in zip(batch, results) where pending.isLive {
            // (Landed by this transaction: not a record another process's replay had written already.)
            guard case .indexed = result.outcome, result.inserted != nil || result.removed != nil else { continue }
            if let folder = pending.record.name?.parentID {
                if folders[folder] == nil {
                    folders[folder] = (try? NodeID(folder)).flatMap { try? driveKind(of: $0, db) } == .folder
                }
                guard folders[folder] == true else { continue }
                // (Its folder's times, which the mount shows already: `Drive.folderTimes`.)
                nodes.insert(folder)
            }
            nodes.insert(pending.record.nodeID)
        }
        return OwnCommitChanges.Batch(rows: changesBefore + 1...last, nodes: nodes)
    }

    /// One journaled commit's rows, in the caller's transaction (or a savepoint of its own): the new stored
    /// file replaces the node's previous one, the node's row goes in (a first commit) or takes the attributes
    /// set meanwhile, and its upload is queued; the previous file's path, to delete once this commits.
    private static func applyDriveCommit(_ record: DriveCommitRecord, _ fileRecord: inout FileRecord, _ db: Database,
                                         manager: DiskManager) throws -> String? {
        // (A node made here has no stored file yet, and nothing kept for it.)
        let old = record.newNode == nil ? try FileRecord.find(db, kind: .data, owner: record.nodeID) : nil
        var oldPath: String?
        if let old {
            oldPath = manager.files.path(of: old)
            try manager.files.deleter.markPending(db, paths: [oldPath!])
            _ = try old.delete(db)
        }
        try fileRecord.insertRow(db)
        // (A new node's folder was checked when it was made; one deleted since, by a pull, leaves it an orphan,
        // shown at the top: never lost.)
        try writeCommittedNode(db, try NodeID(record.nodeID), newNode: record.newNode, mode: record.mode, modified: record.modified, now: record.time)
        if record.newNode == nil {
            try db.cachedStatement(sql: "DELETE FROM keepPersistent WHERE nodeID = ? AND kind = ?").execute(arguments: [record.nodeID, FileKind.data.rawValue])
        }
        return oldPath
    }

    /// The node side of a drive file's commit, in the caller's transaction (a journaled one's and a commit's own):
    /// a new node's row goes in with the attributes set since it was made; an existing node takes them, and is
    /// found still named (else `DeletedMeanwhile`: an unlink raced the commit); the upload is queued.
    static func writeCommittedNode(_ db: Database, _ nodeID: NodeID, newNode: DriveCommitRecord.NewNode?, mode: Int64?,
                                   modified: DriveCommitRecord.Modified?, now: Double) throws {
        if let node = newNode {
            try insertNodeColumns(db, id: nodeID.rawValue, wrappedKey: node.wrappedKey, name: node.name, parentID: node.parentID,
                                  created: node.created, type: node.type, mode: mode ?? node.mode, mtime: modified?.seconds ?? node.mtime,
                                  mtimeNsec: modified?.nanoseconds ?? node.mtimeNsec, target: node.target, xattrs: node.xattrs, changed: now)
            try touchDriveFolder(db, node.parentID, now: node.created)
        } else if mode != nil || modified != nil {
            // One statement sets them and finds the node still named.
            try db.cachedStatement(sql: """
                UPDATE node SET mode = COALESCE(?, mode), mtime = COALESCE(?, mtime), mtimeNsec = COALESCE(?, mtimeNsec), ctime = ?
                WHERE id = ? AND name IS NOT NULL
                """).execute(arguments: [mode, modified?.seconds, modified?.nanoseconds, now, nodeID.rawValue])
            guard db.changesCount > 0 else { throw DeletedMeanwhile() }
        } else {
            // (New content is a change of the node: its change time.)
            try db.cachedStatement(sql: "UPDATE node SET ctime = ? WHERE id = ? AND name IS NOT NULL").execute(arguments: [now, nodeID.rawValue])
            guard db.changesCount > 0 else { throw DeletedMeanwhile() }
        }
        try UploadQueue.add(db, nodeID, .content, name: nil, parentID: nil, now: now)
    }

    /// Writes into the index the records a stopped daemon left in the journal (open as `lockedFile`, locked by
    /// the caller; else opened and locked here, and left alone while a running daemon holds it), in batches,
    /// and empties it; the last sequence the journal or the index knows.
    @discardableResult
    func replayDriveJournal(_ lockedFile: OwnedDescriptor? = nil) throws(DarkDiskError) -> UInt64 {
        let path = driveJournalPath
        let file: OwnedDescriptor
        if let lockedFile {
            file = lockedFile
        } else {
            do { file = try OwnedDescriptor.open(path, O_RDWR | O_NOFOLLOW) } catch {
                if error == .noSuchFile { return 0 }
                throw .posix("cannot open the drive's commit journal", path: path, errno: error.rawValue)
            }
            // A running daemon's journal is its own to write.
            guard (try? file.tryLock(.exclusive)) == true else { return 0 }
        }
        // (One opened here closes, and its lock goes, when this returns.)
        defer { if lockedFile == nil { try? file.close() } }
        let st: stat
        do { st = try file.stat() } catch { throw .posix("cannot stat", path: path, errno: error.rawValue) }
        // (Every opening of the store comes here: an empty journal costs no index read.)
        if st.st_size == 0, lockedFile == nil { return 0 }
        let applied = try read { db in try Int64.fetchOne(db, sql: "SELECT appliedThrough FROM driveJournal WHERE id = 1") } ?? 0
        var last = UInt64(max(applied, 0))
        guard st.st_size > 0 else { return last }
        let bytes: [UInt8]
        do { bytes = try file.pread(count: Int(st.st_size), at: 0) } catch { throw .posix("cannot read", path: path, errno: error.rawValue) }
        guard bytes.count == Int(st.st_size) else { throw .posix("cannot read", path: path, errno: EIO) }  // (it shrank meanwhile)
        let (records, length) = DriveCommitRecord.records(in: bytes, key: journalKey)
        if length < bytes.count {
            logger.warning("the drive's commit journal ends in \(bytes.count - length) bytes that are no whole record (a write cut short: its close never returned); ignored")
        }
        let todo = records.filter { $0.sequence > last }
        var written = 0
        var start = 0
        while start < todo.count {
            let slice = todo[start..<min(start + 500, todo.count)]
            let batch = slice.map { record in
                DriveCommitJournal.Pending(record: record, isLive: false, fileRecord: record.removal == nil ? Self.fileRecord(of: record) : nil,
                                           completion: { _ in })
            }
            let outcomes = try applyDriveCommits(batch)
            written += outcomes.filter { if case .indexed = $0 { true } else { false } }.count
            start += slice.count
        }
        last = max(last, records.last?.sequence ?? 0)
        if !todo.isEmpty { logger.notice("the index took \(written) of \(todo.count) drive commits a stopped daemon had journaled") }
        do { try file.truncate(to: 0) } catch { throw .posix("cannot empty", path: path, errno: error.rawValue) }
        return last
    }

    /// Whether a record of the drive's commit journal names stored file `name` (a version a daemon journaled
    /// that the index may not have yet): an orphan sweep reads this before it looks in the index, under the
    /// file's exclusive lock, since a daemon appends the record before it lets go of that lock and empties the
    /// journal only once the index has every record. An unreadable journal counts as naming it.
    func isJournaled(_ name: String) -> Bool {
        journaledFileNames()?.contains(name) ?? true
    }

    /// The stored files the drive's commit journal names now; nil when it cannot be read.
    func journaledFileNames() -> Set<String>? {
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor.open(driveJournalPath, O_RDONLY | O_NOFOLLOW) } catch {
            return error == .noSuchFile ? [] : nil
        }
        guard let st = try? file.stat() else { return nil }
        guard st.st_size > 0 else { return [] }
        guard let bytes = try? file.pread(count: Int(st.st_size), at: 0) else { return nil }
        return Set(DriveCommitRecord.records(in: bytes, key: journalKey).records.filter { $0.removal == nil }.map(\.fileName))
    }

    /// The file row a journaled record stands for: the node's data, persistent until uploaded.
    static func fileRecord(of record: DriveCommitRecord) -> FileRecord {
        FileRecord(
            id: nil, kind: .data, ownerID: record.nodeID, identityID: "", pool: FileKind.data.pool, mode: .persistent,
            format: CryptoFileFormat(rawValue: record.format) ?? .cacheFile, name: record.fileName, wrappedKey: record.fileWrappedKey,
            storedSize: record.storedSize, plaintextSize: record.plaintextSize, created: record.time, modified: record.time,
            lastAccess: record.time, expiration: 0, migrateToCacheAfterUpload: true, deleteAfterUpload: false,
            cloudFileID: record.cloudFileID)
    }
}

/// A commit's node side, as a record keeps it and as a commit's own transaction writes it.
extension DriveCommitRecord {
    /// The permission bits set since the last commit, as the `node` row keeps them.
    static func mode(_ changes: StagedContent.AttributeChanges) -> Int64? {
        changes.mode.map { Int64($0 & 0o7777) }
    }
}

extension DriveCommitRecord.Modified {
    /// The modification time set since the last commit, if one was.
    init?(_ changes: StagedContent.AttributeChanges) {
        guard let modified = changes.modified else { return nil }
        self.init(seconds: modified.seconds, nanoseconds: Int64(modified.nanoseconds))
    }
}

extension DriveCommitRecord.NewNode {
    /// The row of a prepared drive file, column by column.
    init(_ prepared: PreparedDriveFile) {
        let node = prepared.node, attributes = node.attributes
        self.init(wrappedKey: prepared.row.wrappedKey, name: node.name, parentID: node.parentID?.rawValue, created: node.created,
                  type: attributes.kind.rawValue, mode: Int64(attributes.mode), mtime: attributes.modifiedSeconds,
                  mtimeNsec: Int64(attributes.modifiedNanoseconds), target: attributes.target, xattrs: prepared.row.extendedAttributes)
    }
}
