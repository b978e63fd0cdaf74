import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// Changes made through the drive: each is an edit of the index in one transaction, then a
/// change queued for the remote (`QueuedUpload`). A node's name, folder and attributes live in its `node`
/// row; the upload writes them into its record. A node never uploaded has nothing to rename or delete in
/// the remote: its queued content upload carries whatever the row says when it runs.
extension DiskManager {
    /// Why `name` cannot name a drive entry, if it cannot: empty, `.` or `..`, a `/` or a NUL, or more than
    /// 255 bytes.
    package static func checkDriveName(_ name: String) throws(DarkDiskError) {
        guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(UInt8(ascii: "/")), !name.utf8.contains(0) else {
            throw DarkDiskError(.invalidArgument, "'\(name)' cannot name a drive entry")
        }
        guard name.utf8.count <= DriveNames.maximumLength else {
            throw DarkDiskError(.nameTooLong, "a name of \(name.utf8.count) bytes (at most \(DriveNames.maximumLength))")
        }
    }

    /// Makes a drive node named `name` in folder `parentID` (nil: the top). A folder or link is queued for
    /// upload at once (with empty data); a file is queued by its first commit (`commitDriveFile`).
    package func createDriveNode(named name: String, in parentID: NodeID?, attributes: NodeAttributes) throws(DarkDiskError) -> DriveNode {
        try insertDriveNode(named: name, in: parentID, attributes: attributes, key: SymmetricKey.random())
    }

    /// Makes drive file `name` in folder `parentID` (nil: the top) and returns it with its content, empty and
    /// due for its first commit (`creat`, then the writes): one transaction, no read of the key just made.
    package func createDriveFile(named name: String, in parentID: NodeID?, attributes: NodeAttributes) throws(DarkDiskError) -> (DriveNode, StagedContent) {
        let prepared = try prepareDriveFile(named: name, in: parentID, attributes: attributes)
        try insertDriveFile(prepared)
        return (prepared.node, prepared.content)
    }

    /// A new drive file made in memory only: its node (ID, key, attributes) and its empty content, checked as
    /// `createDriveFile` checks them but not yet in the index. `insertDriveFile` writes it there; until it
    /// has, nothing else in the index knows the node (the mount answers a `creat` with it at once, and its row
    /// goes in with the file's first commit, `commitDriveFile(inserting:)`, or when a request reads the index).
    package func prepareDriveFile(named name: String, in parentID: NodeID?, attributes: NodeAttributes) throws(DarkDiskError) -> PreparedDriveFile {
        guard attributes.kind == .file else { throw DarkDiskError(.invalidArgument, "'\(name)': not a file") }
        let key = SymmetricKey.random()
        let row = try newDriveNodeRow(named: name, in: parentID, attributes: attributes, key: key)
        return PreparedDriveFile(row: row, content: try stagedContent(key: key, base: nil, isNew: true))
    }

    /// Writes a prepared drive file's node into the index. `allowingDuplicate`: another node may hold the name
    /// already (made meanwhile by another process; the drive shows both), else that is `.exists`.
    package func insertDriveFile(_ prepared: PreparedDriveFile, allowingDuplicate: Bool = false) throws(DarkDiskError) {
        // (A name refused if taken is looked for after the journal's new files of that name are in.)
        if !allowingDuplicate, hasPendingDriveCommit(named: prepared.node.name, in: prepared.node.parentID) { drainDriveCommits() }
        try insert(prepared.row, allowingDuplicate: allowingDuplicate)
    }

    private func insertDriveNode(named name: String, in parentID: NodeID?, attributes: NodeAttributes, key: SymmetricKey) throws(DarkDiskError) -> DriveNode {
        // A new node's ID is its own: the journal's records can only collide with its name, and a name refused if
        // taken is looked for after the journal's new files of that name are in. (Waiting for all of them made
        // each `mkdir` of a `tar x` wait for the index: 0.7–1.2 ms instead of 0.2.)
        if hasPendingDriveCommit(named: name, in: parentID) { drainDriveCommits() }
        let row = try newDriveNodeRow(named: name, in: parentID, attributes: attributes, key: key)
        try insert(row, allowingDuplicate: false)
        let id = row.node.id
        if attributes.kind != .file {
            // A folder or link has no content: its record rides on an empty cloud file, committed (and queued)
            // as a drive file's first version is, without an `fsync` (a `mkdir` is kept as a local disk keeps
            // one: safe from a crash of this process at once, on the disk with the next flush).
            try commitDriveFile(id, content: stagedContent(key: key, base: nil, isNew: true))
        }
        return row.node
    }

    /// A new node's row: checked, with a fresh ID and its key wrapped.
    private func newDriveNodeRow(named name: String, in parentID: NodeID?, attributes: NodeAttributes, key: SymmetricKey) throws(DarkDiskError) -> DriveNodeRow {
        try Self.checkDriveName(name)
        if let problem = attributes.problem { throw DarkDiskError(.invalidArgument, "'\(name)': \(problem)") }
        let id = NodeID.random()
        let extended: Data?
        do { extended = try StoreOutline.extendedAttributesColumn(attributes) } catch {
            throw DarkDiskError(.invalidArgument, "'\(name)': cannot encode its extended attributes")
        }
        let node = DriveNode(id: id, name: name, parentID: parentID, created: clock.now.timeIntervalSince1970, attributes: attributes)
        return DriveNodeRow(node: node, wrappedKey: Data(wrapLocally(key)), extendedAttributes: extended)
    }

    private func insert(_ row: DriveNodeRow, allowingDuplicate: Bool) throws(DarkDiskError) {
        try write { db in try Self.insert(row, allowingDuplicate: allowingDuplicate, db) }
        noteDriveChange()
    }

    /// Inserts a new node's row, in the caller's transaction.
    private static func insert(_ row: DriveNodeRow, allowingDuplicate: Bool, _ db: Database) throws {
        let node = row.node, attributes = row.node.attributes
        try checkDriveFolder(node.parentID, db)
        if !allowingDuplicate, try driveChildID(named: node.name, in: node.parentID, db) != nil {
            throw DarkDiskError(.exists, "'\(node.name)' exists already")
        }
        try insertNodeColumns(db, id: node.id.rawValue, wrappedKey: row.wrappedKey, name: node.name, parentID: node.parentID?.rawValue,
                              created: node.created, type: attributes.kind.rawValue, mode: Int64(attributes.mode),
                              mtime: attributes.modifiedSeconds, mtimeNsec: Int64(attributes.modifiedNanoseconds),
                              target: attributes.target, xattrs: row.extendedAttributes)
        try touchDriveFolder(db, node.parentID?.rawValue, now: node.created)
    }

    /// Sets folder `parentID`'s modification and change times to `now` (an entry was made, removed or moved
    /// in it, as a local disk does), in the caller's transaction, unless the folder changed later (a journaled
    /// record lands after a time set on its folder since: `tar x` sets each folder's time once its files are
    /// in, and that time holds); the top of the drive (no node) keeps the time set on it. Not queued for
    /// upload: the folder's next record change carries them.
    static func touchDriveFolder(_ db: Database, _ parentID: String?, now: Double) throws {
        guard let parentID, let time = DriveTimeColumns(now) else { return }
        try db.cachedStatement(sql: "UPDATE node SET mtime = ?, mtimeNsec = ?, ctime = ? WHERE id = ? AND type = 'folder' AND (ctime IS NULL OR ctime <= ?)")
            .execute(arguments: [time.seconds, time.nanoseconds, now, parentID, now])
    }

    /// Inserts a new node's row from its columns (a journaled commit keeps them so), in the caller's transaction.
    /// `changed`: its change time (nil: when it was made).
    static func insertNodeColumns(_ db: Database, id: String, wrappedKey: Data, name: String, parentID: String?, created: Double,
                                  type: String, mode: Int64, mtime: Int64?, mtimeNsec: Int64, target: String?, xattrs: Data?,
                                  changed: Double? = nil) throws {
        try db.cachedStatement(sql: """
            INSERT INTO node (id, wrappedKey, name, parentID, created, type, mode, mtime, mtimeNsec, target, xattrs, ctime)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [id, wrappedKey, name, parentID, created, type, mode, mtime, mtimeNsec, target, xattrs, changed ?? created])
    }

    /// Commits `content` as the next version of drive file `nodeID`: sealed into a store file (already, when
    /// it was written from its start to its end) and named in place before its index row commits (the file
    /// is at its old or its new version after a crash, never a mix), persistent until uploaded and then a
    /// cache file, and queued for upload. Its modification time becomes that of the last change (or the one set
    /// after it), with the permission bits set meanwhile, in the same transaction. `durable`
    /// (an `fsync`): on the disk before this returns, else as a local file system keeps a closed file (safe
    /// from a crash of this process, not from a power loss). Nil, and nothing stored, when the node has been
    /// deleted meanwhile (its open handles keep reading `content`). `inserting`: the prepared file this is the
    /// first commit of, not yet in the index (`prepareDriveFile`): its row is inserted in the same transaction
    /// (as `insertDriveFile(_:allowingDuplicate: true)` would), so a new file costs one transaction, not two;
    /// if the commit fails, so does the insert.
    ///
    /// `whenIndexed`, in the instance that journals the drive's commits (`startDriveJournal`) and when not
    /// `durable`: the rows go into the journal, not the index, and this returns once they are there (as safe
    /// from a crash of this process as a transaction is); the index takes them moments later, and
    /// `whenIndexed` is told what became of them (a node deleted meanwhile stores nothing). Otherwise (and for
    /// a `durable` commit, after what the journal holds) one transaction, as before.
    @discardableResult
    package func commitDriveFile(_ nodeID: NodeID, content: StagedContent, durable: Bool = false,
                                inserting prepared: PreparedDriveFile? = nil,
                                whenIndexed: (@Sendable (DriveCommitOutcome) -> Void)? = nil) throws(DarkDiskError) -> DiskExport? {
        if let prepared, prepared.node.id != nodeID || prepared.content !== content {
            throw DarkDiskError(.invalidArgument, "node \(nodeID): the prepared file to insert is another node's")
        }
        let journal = driveJournal.withLock { $0 }
        defer { noteDriveChange() }
        if let journal, let whenIndexed, !durable {
            return try content.commit { (file, header, changes) throws(DarkDiskError) -> DiskExport in
                try journalNodeData(file, header: header, key: content.key, nodeID: nodeID, changes: changes, inserting: prepared,
                                    journal: journal, whenIndexed: whenIndexed)
            }
        }
        do {
            return try content.commit { (file, header, changes) throws(DarkDiskError) -> DiskExport in
                // A transaction of its own comes after this node's versions that the journal holds; looked for
                // (and waited for) under the content's lock, so no `close` journals an older version meanwhile.
                // (Other nodes' records do not touch this one: a `mkdir` waited for them all, 0.5 ms.) An index
                // that cannot take them in time fails this commit, which leaves the content staged, rather than
                // hang the `fsync` and every request behind its lock.
                let limit = Self.driveCommitWaitLimit
                if let journal, journal.isPending(node: nodeID.rawValue), !journal.drain(timeout: limit) {
                    throw DarkDiskError(.io, "node \(nodeID): its earlier commits wait for the index for more than \(Int(limit)) s")
                }
                let now = clock.now.timeIntervalSince1970
                // The new version, its time and its queued upload commit as one.
                return try files.placeNodeData(file, header: header, key: content.key, nodeID: nodeID, durable: durable) { db in
                    // (A new file's folder may have gone since it was made: then the commit fails, storing nothing.)
                    if let prepared { try Self.checkDriveFolder(prepared.node.parentID, db) }
                    try Self.writeCommittedNode(db, nodeID, newNode: prepared.map(DriveCommitRecord.NewNode.init),
                                                mode: DriveCommitRecord.mode(changes), modified: DriveCommitRecord.Modified(changes), now: now)
                }
            }
        } catch {
            // (`DeletedMeanwhile`, turned into a database error by the transaction it was thrown in. A node this
            // commit was to insert is not in the index either way: the error is the insert's or the commit's.)
            if prepared == nil, try read({ db in try String.fetchOne(db, sql: "SELECT name FROM node WHERE id = ?", arguments: [nodeID.rawValue]) }) == nil { return nil }
            throw error
        }
    }

    /// Flushes drive file `nodeID`'s stored data, its folder and the index to the disk (an `fsync` of a file
    /// whose last version was committed by a `close`).
    package func syncNodeData(_ nodeID: NodeID) throws(DarkDiskError) {
        if let export = try files.nodeFile(nodeID, kind: .data) {
            do { try export.retainToken.file.fsync() } catch {
                throw .posix("cannot flush", path: export.retainToken.path, errno: error.rawValue)
            }
            try FileOperations.syncDirectory(of: export.retainToken.path)
        }
        syncIndex()
    }

    /// Renames or moves drive node `nodeID` to `name` in folder `parentID` (nil: the top): an edit of the
    /// outline, never a copy of data. An entry already there is replaced as `rename(2)` does (a file by a
    /// file, an empty folder by a folder) unless `replacing` is false; the replaced node is deleted
    /// (`deleteDriveNode`). A folder cannot move into itself or below itself. Returns the replaced node, if any.
    @discardableResult
    package func moveDriveNode(_ nodeID: NodeID, to name: String, in parentID: NodeID?, replacing: Bool = true) throws(DarkDiskError) -> NodeID? {
        // (After what the drive's journal holds of this node and of the name it takes: its commits may make or
        // change the node, a new file or a removal the name. A replaced file's commit still waiting is dropped
        // when it lands, as for any file deleted meanwhile.)
        if hasPendingDriveCommit(nodeID) || hasPendingDriveCommit(named: name, in: parentID) { drainDriveCommits() }
        try Self.checkDriveName(name)
        let now = clock.now.timeIntervalSince1970
        let replaced = try write { db -> (NodeID, ([FileRecord], Bool))? in
            guard let kind = try Self.driveKind(of: nodeID, db) else { throw DarkDiskError(.notFound, "node \(nodeID) is not in the drive") }
            try Self.checkDriveFolder(parentID, db)
            var folder = parentID
            while let current = folder {
                // Up from the new folder: meeting the node itself means a move into itself.
                if current == nodeID { throw DarkDiskError(.invalidArgument, "a folder cannot move into itself") }
                folder = try String.fetchOne(db, sql: "SELECT parentID FROM node WHERE id = ? AND name IS NOT NULL", arguments: [current.rawValue])
                    .flatMap { try? NodeID($0) }
            }
            var replaced: (NodeID, ([FileRecord], Bool))?
            if let existing = try Self.driveChildID(named: name, in: parentID, db), existing != nodeID {
                guard replacing else { throw DarkDiskError(.exists, "'\(name)' exists already") }
                let existingKind = try Self.driveKind(of: existing, db)
                if existingKind == .folder {
                    guard kind == .folder else { throw DarkDiskError(.isDirectory, "'\(name)' is a folder") }
                    guard try !Self.hasDriveChild(existing, db) else { throw DarkDiskError(.notEmpty, "folder '\(name)' is not empty") }
                } else if kind == .folder {
                    throw DarkDiskError(.notDirectory, "'\(name)' is not a folder")
                }
                replaced = (existing, try Self.deleteDriveRows(db, existing, now: now, files: files))
            }
            let oldParent = try String.fetchOne(db.cachedStatement(sql: "SELECT parentID FROM node WHERE id = ?"), arguments: [nodeID.rawValue])
            try db.cachedStatement(sql: "UPDATE node SET name = ?, parentID = ? WHERE id = ?").execute(arguments: [name, parentID?.rawValue, nodeID.rawValue])
            try Self.queueDriveRecordChange(db, nodeID, now: now)
            try Self.touchDriveFolder(db, oldParent, now: now)
            if oldParent != parentID?.rawValue { try Self.touchDriveFolder(db, parentID?.rawValue, now: now) }
            return replaced
        }
        noteDriveChange()
        guard let (replacedID, (deleted, hadPartial)) = replaced else { return nil }
        files.finishDeletes(deleted, reason: .deleted)
        if hadPartial { files.removeIdlePartialDownload(replacedID) }
        return replacedID
    }

    /// Swaps the names and folders of drive nodes `a` and `b` in one transaction (`RENAME_EXCHANGE`); a folder
    /// cannot go below itself (`EINVAL`). Both records are queued for upload.
    package func exchangeDriveNodes(_ a: NodeID, _ b: NodeID) throws(DarkDiskError) {
        guard a != b else { return }
        drainDriveCommits()
        let now = clock.now.timeIntervalSince1970
        try write { db in
            let place = try db.cachedStatement(sql: "SELECT name, parentID FROM node WHERE id = ? AND name IS NOT NULL")
            guard let rowA = try Row.fetchOne(place, arguments: [a.rawValue]), let rowB = try Row.fetchOne(place, arguments: [b.rawValue]) else {
                throw DarkDiskError(.notFound, "a node to exchange is not in the drive")
            }
            let nameA: String = rowA["name"], parentA: String? = rowA["parentID"]
            let nameB: String = rowB["name"], parentB: String? = rowB["parentID"]
            // Each goes to the other's folder: neither may be that folder or above it.
            for (node, folder) in [(a, parentB), (b, parentA)] {
                var current = folder.flatMap { try? NodeID($0) }
                while let id = current {
                    if id == node { throw DarkDiskError(.invalidArgument, "a folder cannot move below itself") }
                    current = try String.fetchOne(db.cachedStatement(sql: "SELECT parentID FROM node WHERE id = ? AND name IS NOT NULL"),
                                                  arguments: [id.rawValue]).flatMap { try? NodeID($0) }
                }
            }
            let move = try db.cachedStatement(sql: "UPDATE node SET name = ?, parentID = ? WHERE id = ?")
            try move.execute(arguments: [nameB, parentB, a.rawValue])
            try move.execute(arguments: [nameA, parentA, b.rawValue])
            try Self.queueDriveRecordChange(db, a, now: now)
            try Self.queueDriveRecordChange(db, b, now: now)
            try Self.touchDriveFolder(db, parentA, now: now)
            if parentB != parentA { try Self.touchDriveFolder(db, parentB, now: now) }
        }
        noteDriveChange()
    }

    /// Deletes drive node `nodeID` here and, through the queue, in the remote. A folder must be empty. Its
    /// stored files go when no one holds them any more: an open file keeps working for its holders. One
    /// transaction (an `rm -rf` makes one per entry).
    package func deleteDriveNode(_ nodeID: NodeID) throws(DarkDiskError) {
        // (After what the drive's journal holds of this node, and of the entries it holds if it is a folder:
        // they may make or change it, or make it empty.)
        if hasPendingDriveCommit(nodeID) || hasPendingDriveCommit(inFolder: nodeID) { drainDriveCommits() }
        let (deleted, hadPartial) = try write { db -> ([FileRecord], Bool) in
            guard let kind = try Self.driveKind(of: nodeID, db) else { throw DarkDiskError(.notFound, "node \(nodeID) is not in the drive") }
            if kind == .folder, try Self.hasDriveChild(nodeID, db) {
                throw DarkDiskError(.notEmpty, "the folder is not empty")
            }
            return try Self.deleteDriveRows(db, nodeID, now: clock.now.timeIntervalSince1970, files: files)
        }
        noteDriveChange()
        files.finishDeletes(deleted, reason: .deleted)
        if hadPartial { files.removeIdlePartialDownload(nodeID) }
    }

    /// Inside a write transaction: takes node `nodeID` out of the tree and deletes its stored files' rows
    /// (their files go after the commit: `StoreFiles.finishDeletes`). A node the remote has keeps its row
    /// until the queued delete writes its tombstone; one only this store knew is forgotten at once. Returns
    /// the file records deleted, and whether a partial download of the node is left to remove.
    static func deleteDriveRows(_ db: Database, _ nodeID: NodeID, now: Double, files: StoreFiles) throws -> ([FileRecord], Bool) {
        let id = nodeID.rawValue
        let parentID = try String.fetchOne(db.cachedStatement(sql: "SELECT parentID FROM node WHERE id = ?"), arguments: [id])
        try db.cachedStatement(sql: "UPDATE node SET name = NULL, parentID = NULL WHERE id = ?").execute(arguments: [id])
        try touchDriveFolder(db, parentID, now: now)
        let records = try FileRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM file WHERE ownerID = ? AND kind != ?"),
                                              arguments: [id, FileKind.avatar.rawValue])
        let deleted = try files.deleteRows(db, records)
        try db.cachedStatement(sql: "DELETE FROM keepPersistent WHERE nodeID = ?").execute(arguments: [id])
        let inRemote = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM node WHERE id = ? AND cloudETag IS NOT NULL"), arguments: [id]) ?? false
        if inRemote {
            try UploadQueue.add(db, nodeID, .delete, name: nil, parentID: nil, now: now)
        } else {
            for sql in ["DELETE FROM node WHERE id = ?", "DELETE FROM conflictCopy WHERE nodeID = ?", "DELETE FROM pin WHERE nodeID = ?",
                        "DELETE FROM uploadQueue WHERE nodeID = ?"] {
                try db.cachedStatement(sql: sql).execute(arguments: [id])
            }
        }
        guard !inRemote else { return (deleted, false) }
        let partial = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM download WHERE nodeID = ?"), arguments: [id]) ?? false
        return (deleted, partial)
    }

    /// Changes a drive node's attributes (mode, times, extended attributes) and queues the record change.
    @discardableResult
    package func updateDriveAttributes(_ nodeID: NodeID, _ change: (inout NodeAttributes) throws(DarkDiskError) -> Void) throws(DarkDiskError) -> NodeAttributes {
        // After this node's commits that the drive's journal holds (they may make it, or set its mode and time);
        // other nodes' records do not touch it. (`tar x` sets each folder's mode and time at its end: waiting
        // for the whole journal made each of those 1 ms.)
        if hasPendingDriveCommit(nodeID) { drainDriveCommits() }
        let now = clock.now.timeIntervalSince1970
        defer { noteDriveChange() }
        return try write { db in
            var attributes = try StoreOutline.attributes(db, nodeID)
            try change(&attributes)
            guard try StoreOutline.setAttributes(db, attributes, of: nodeID) else { throw DarkDiskError(.notFound, "node \(nodeID) is not in the drive") }
            try Self.queueDriveRecordChange(db, nodeID, now: now)
            return attributes
        }
    }

    /// Queues the record of a node whose name, folder or attributes changed: one the remote has, or one whose
    /// content upload is still queued (which then carries the change). A file never committed has nothing
    /// to upload yet.
    private static func queueDriveRecordChange(_ db: Database, _ nodeID: NodeID, now: Double) throws {
        let uploaded = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM node WHERE id = ? AND cloudETag IS NOT NULL"), arguments: [nodeID.rawValue]) ?? false
        let queued = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM uploadQueue WHERE nodeID = ?"), arguments: [nodeID.rawValue]) ?? false
        guard uploaded || queued else { return }
        try UploadQueue.add(db, nodeID, .record, name: nil, parentID: nil, now: now)
    }

    /// Throws unless `folder` is nil (the top) or a drive folder.
    static func checkDriveFolder(_ folder: NodeID?, _ db: Database) throws {
        guard let folder else { return }
        switch try driveKind(of: folder, db) {
        case .folder?: return
        case nil: throw DarkDiskError(.notFound, "folder node \(folder) is not in the drive")
        default: throw DarkDiskError(.notDirectory, "node \(folder) is not a folder")
        }
    }

    static func driveKind(of nodeID: NodeID, _ db: Database) throws -> NodeAttributes.Kind? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT type FROM node WHERE id = ? AND name IS NOT NULL"), arguments: [nodeID.rawValue]) else { return nil }
        return (row["type"] as String?).flatMap(NodeAttributes.Kind.init) ?? .file
    }

    /// The node holding `name` in `folder`: the earliest made, as the drive shows it.
    private static func driveChildID(named name: String, in folder: NodeID?, _ db: Database) throws -> NodeID? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT id FROM node WHERE parentID IS ? AND name = ? ORDER BY created, id LIMIT 1"),
                            arguments: [folder?.rawValue, name]).flatMap { try? NodeID($0) }
    }

    /// A new node's row as the index keeps it.
    struct DriveNodeRow: Sendable {
        let node: DriveNode
        let wrappedKey: Data
        let extendedAttributes: Data?
    }

    /// Thrown in a commit's transaction when the node has gone meanwhile, to roll it back.
    struct DeletedMeanwhile: Error {}

    /// Whether drive folder `folder` has an entry.
    private static func hasDriveChild(_ folder: NodeID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM node WHERE parentID = ? AND name IS NOT NULL LIMIT 1"), arguments: [folder.rawValue]) ?? false
    }
}

/// A time in seconds since 1970 as the `node` row's `mtime` and `mtimeNsec` columns keep it.
struct DriveTimeColumns {
    let seconds: Int64
    let nanoseconds: Int64

    init?(_ time: Double) {
        guard time.isFinite, abs(time) < 1e15 else { return nil }
        let whole = time.rounded(.down)
        seconds = Int64(whole)
        nanoseconds = min(999_999_999, Int64((time - whole) * 1e9))
    }
}
