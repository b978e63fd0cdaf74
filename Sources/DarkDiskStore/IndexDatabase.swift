import Foundation
import GRDB

/// The store's index: one SQLite database (WAL, through GRDB) shared by the CLI and the mount daemon.
enum IndexDatabase {
    /// The page cache of each of the pool's readers, in KiB: at most the readers GRDB keeps (five) times this.
    static let readerCacheKiB = 8192

    /// Opens (creating and migrating if needed) the index at `path`.
    /// `readOnly`: the store's file system is mounted read-only; reads work, every write fails with EROFS.
    /// `cipher`: the index is encrypted at rest (registered already; a read-only copy is registered here).
    static func open(path: String, readOnly: Bool = false, counter: IndexStatistics.Counter,
                     trigger: IndexCheckpointer.Trigger?, cipher: IndexCipher? = nil) throws(DarkDiskError) -> DatabasePool {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "darkdisk.index"
        config.readonly = readOnly
        config.prepareDatabase { db in
            counter.count(db)  // (the configuration, and so the pool, keeps the counter and the trigger alive)
            trigger?.install(on: db)
            if !readOnly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            // Statement journals (savepoints, as a drive journal batch written again uses) and sorts stay in
            // memory: on disk each such transaction made and deleted a file in the system's temporary folder,
            // and on ext4 without a journal every freshly deleted inode slows the next allocations in its
            // group, which made the drive's new files cost 120 µs more each during a `tar x`.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // The pool's readers serve listings: each keeps `readerCacheKiB` of pages (SQLite's default is
            // 2 MiB), so a folder listed again after the kernel dropped its caches reads no page from the disk
            // while the index has not changed (a cold `find` of a 10,000-file tree: 0.23–0.25 s → 0.10–0.16 s).
            if db.configuration.readonly { try db.execute(sql: "PRAGMA cache_size = -\(readerCacheKiB)") }
        }
        // On a read-only file system SQLite cannot make the WAL's shared-memory file, and an immutable open
        // would not see what the WAL holds (the last commits, until a checkpoint): a private copy of both
        // is read instead.
        let opened: String
        do { opened = readOnly ? try ReadOnlyIndexCopy.make(of: path) : path } catch {
            throw DarkDiskError(.io, "cannot read the index \(path) on a read-only file system: \(error)")
        }
        if readOnly { try cipher?.register(opened) }
        do {
            let pool = try DatabasePool(path: opened, configuration: config)
            if let cipher, !cipher.wasOpened(opened) {
                throw DarkDiskError(.database, "the index \(path) was not opened through its cipher (SQLite named it otherwise): refused, so that nothing is written in the clear")
            }
            if !readOnly { try migrator.migrate(pool) }
            return pool
        } catch {
            throw failure(error, doing: "cannot open the index \(path)")
        }
    }

    /// An index error in words a user acts on: a full disk or a read-only file system says so (SQLite's
    /// "error 13: database or disk is full - while executing COMMIT" said neither what nor where).
    static func failure(_ error: any Error, doing what: String) -> DarkDiskError {
        if let error = error as? DarkDiskError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_FULL:
                return DarkDiskError(.io, "\(what): no space left on device", errno: ENOSPC)
            case .SQLITE_READONLY:
                return DarkDiskError(.io, "\(what): read-only file system", errno: EROFS)
            case .SQLITE_IOERR, .SQLITE_CANTOPEN:
                return DarkDiskError(.io, "\(what): \(error.message ?? "disk I/O error") (is the disk full or read-only?)")
            default:
                break
            }
        }
        return DarkDiskError(.database, "\(what): \(error)")
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "setting") { t in
                t.primaryKey("pool", .text)
                t.column("maxSize", .integer).notNull()
                t.column("defaultExpiration", .double).notNull()
            }
            for pool in Pool.allCases {
                try db.execute(sql: "INSERT INTO setting (pool, maxSize, defaultExpiration) VALUES (?, ?, ?)",
                               arguments: [pool.rawValue, Int64(pool.defaultMaxSize), pool.defaultExpiration])
            }
            // The outline: every node known locally, with its content key wrapped by the master key.
            try db.create(table: "node") { t in
                t.primaryKey("id", .text)
                t.column("wrappedKey", .blob).notNull()
                t.column("name", .text)
                t.column("parentID", .text)
                t.column("cloudETag", .text)
                t.column("created", .double).notNull()
            }
            try db.create(table: "user") { t in
                t.primaryKey("id", .text)
                t.column("wrappedKey", .blob).notNull()
            }
            // One row per stored encrypted file.
            try db.create(table: "file") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("kind", .text).notNull()
                t.column("ownerID", .text).notNull()
                t.column("identityID", .text).notNull().defaults(to: "")
                t.column("pool", .text).notNull()
                t.column("mode", .text).notNull()
                t.column("format", .integer).notNull()
                t.column("name", .text).notNull().unique()
                t.column("wrappedKey", .blob).notNull()
                t.column("storedSize", .integer).notNull()
                t.column("plaintextSize", .integer).notNull()
                t.column("created", .double).notNull()
                t.column("modified", .double).notNull()
                t.column("lastAccess", .double).notNull()
                t.column("expiration", .double).notNull().defaults(to: 0)
                t.column("migrateToCacheAfterUpload", .boolean).notNull().defaults(to: false)
                t.column("deleteAfterUpload", .boolean).notNull().defaults(to: false)
                t.uniqueKey(["kind", "ownerID", "identityID"])
            }
            try db.create(index: "file_lru", on: "file", columns: ["pool", "mode", "lastAccess"])
            // Files whose row is gone but which a retain token still holds; the last holder deletes them.
            try db.create(table: "pendingDelete") { t in
                t.primaryKey("path", .text)
                t.column("since", .double).notNull()
            }
        }
        migrator.registerMigration("v2: pool usage, store settings, expiry index") { db in
            // Running totals per pool and mode, kept exact by triggers inside every transaction, so status
            // and the over-limit check cost O(1) at any number of files.
            try db.create(table: "usage") { t in
                t.column("pool", .text).notNull()
                t.column("mode", .text).notNull()
                t.column("bytes", .integer).notNull().defaults(to: 0)
                t.column("files", .integer).notNull().defaults(to: 0)
                t.primaryKey(["pool", "mode"])
            }
            for pool in Pool.allCases {
                for mode in [StorageMode.persistent, .cache] {
                    try db.execute(sql: """
                        INSERT INTO usage (pool, mode, bytes, files)
                        SELECT ?, ?, COALESCE(SUM(storedSize), 0), COUNT(*) FROM file WHERE pool = ? AND mode = ?
                        """, arguments: [pool.rawValue, mode.rawValue, pool.rawValue, mode.rawValue])
                }
            }
            try db.execute(sql: """
                CREATE TRIGGER file_usage_insert AFTER INSERT ON file BEGIN
                  UPDATE usage SET bytes = bytes + NEW.storedSize, files = files + 1 WHERE pool = NEW.pool AND mode = NEW.mode;
                END;
                CREATE TRIGGER file_usage_delete AFTER DELETE ON file BEGIN
                  UPDATE usage SET bytes = bytes - OLD.storedSize, files = files - 1 WHERE pool = OLD.pool AND mode = OLD.mode;
                END;
                CREATE TRIGGER file_usage_update AFTER UPDATE OF pool, mode, storedSize ON file BEGIN
                  UPDATE usage SET bytes = bytes - OLD.storedSize, files = files - 1 WHERE pool = OLD.pool AND mode = OLD.mode;
                  UPDATE usage SET bytes = bytes + NEW.storedSize, files = files + 1 WHERE pool = NEW.pool AND mode = NEW.mode;
                END;
                """)
            try db.create(index: "file_expiry", on: "file", columns: ["pool", "mode", "expiration", "modified"])
            try db.create(table: "storeSetting") { t in
                t.primaryKey("key", .text)
                t.column("value", .double).notNull()
            }
            try db.execute(sql: "INSERT INTO storeSetting (key, value) VALUES ('minFreeFraction', 0.10)")
        }
        migrator.registerMigration("v3: outline sizes, remote") { db in
            // What `pull` learns of a node: enough to list it (and its size) before any data is local.
            try db.alter(table: "node") { t in
                t.add(column: "metadataSize", .integer).notNull().defaults(to: 0)
                t.add(column: "thumbnailSize", .integer).notNull().defaults(to: 0)
                t.add(column: "dataSize", .integer).notNull().defaults(to: 0)
            }
            try db.create(table: "storeText") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
            // Ranges of a cloud file already downloaded into a partial file, so a fetch resumes after a crash.
            try db.create(table: "download") { t in
                t.primaryKey("nodeID", .text)
                t.column("etag", .text).notNull()
                t.column("size", .integer).notNull()
                t.column("partialName", .text).notNull()
                t.column("ranges", .text).notNull()
            }
        }
        migrator.registerMigration("v4: outline clock") { db in
            // Bumped by every change of the outline in any process, so a mount notices a pull and tells the
            // kernel to drop what it cached of the nodes that changed.
            try db.execute(sql: """
                CREATE TABLE outlineClock (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                INSERT INTO outlineClock (id, version) VALUES (1, 0);
                CREATE TRIGGER outlineInserted AFTER INSERT ON node WHEN NEW.cloudETag IS NOT NULL
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                CREATE TRIGGER outlineUpdated AFTER UPDATE OF cloudETag, metadataSize, thumbnailSize, dataSize ON node
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                CREATE TRIGGER outlineDeleted AFTER DELETE ON node WHEN OLD.cloudETag IS NOT NULL
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                """)
        }
        migrator.registerMigration("v5: avatar outline") { db in
            // What `pull` learns of users' avatars (from their records), so /avatars lists them before any is
            // downloaded; its changes move the outline clock too.
            try db.execute(sql: """
                CREATE TABLE avatarOutline (
                  userID TEXT NOT NULL, identityID TEXT NOT NULL, plaintextSize INTEGER NOT NULL, wrappedKey BLOB NOT NULL,
                  PRIMARY KEY (userID, identityID));
                CREATE TRIGGER avatarOutlineInserted AFTER INSERT ON avatarOutline
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                CREATE TRIGGER avatarOutlineUpdated AFTER UPDATE ON avatarOutline
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                CREATE TRIGGER avatarOutlineDeleted AFTER DELETE ON avatarOutline
                  BEGIN UPDATE outlineClock SET version = version + 1; END;
                """)
        }
        migrator.registerMigration("v6: files by owner") { db in
            // A node's files by its ID alone (a mount's lookup, `stat` and listing of /nodes/<id>): the unique
            // key leads with the kind, so without this each such query scanned the whole file table.
            try db.create(index: "file_owner", on: "file", columns: ["ownerID", "kind"])
        }
        migrator.registerMigration("v7: kept versions to replace") { db in
            // Node files that were persistent when a pull found a new version in the remote: the new version,
            // whenever it is stored (a pull's download, a read on the mount), is stored persistently too.
            try db.execute(sql: """
                CREATE TABLE keepPersistent (nodeID TEXT NOT NULL, kind TEXT NOT NULL, since REAL NOT NULL,
                  PRIMARY KEY (nodeID, kind));
                """)
        }
        migrator.registerMigration("v8: partial download sizes") { db in
            // What each partial download holds on disk and when it was last touched, so they count against
            // the data pool and are evicted least recently touched first.
            try db.alter(table: "download") { t in
                t.add(column: "bytes", .integer).notNull().defaults(to: 0)
                t.add(column: "lastAccess", .double).notNull().defaults(to: 0)
            }
            for row in try Row.fetchAll(db, sql: "SELECT nodeID, ranges FROM download") {
                let bytes = PartialDownload.parse(row["ranges"]).reduce(UInt64(0)) { $0 + UInt64($1.count) }
                try db.execute(sql: "UPDATE download SET bytes = ? WHERE nodeID = ?", arguments: [Int64(bytes), row["nodeID"] as String])
            }
        }
        migrator.registerMigration("v9: change log") { db in
            // What each process changed among the stored files, so the others report it too
            // (`StoreFiles.changes(in:)`); written by the writer connection's TEMP triggers (`ChangeLog`).
            try db.execute(sql: """
                CREATE TABLE changeLog (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT NOT NULL, at REAL NOT NULL,
                  pool TEXT NOT NULL, kind TEXT NOT NULL, ownerID TEXT NOT NULL, identityID TEXT NOT NULL, reason TEXT NOT NULL);
                CREATE INDEX changeLog_at ON changeLog(at);
                """)
        }
        migrator.registerMigration("v10: record generations") { db in
            // The highest generation of each node's sealed record this store has applied: an older record
            // is a rollback and is refused. Kept when the node goes, so a replay after a delete is one too.
            try db.execute(sql: "CREATE TABLE recordGeneration (nodeID TEXT PRIMARY KEY NOT NULL, generation INTEGER NOT NULL)")
        }
        migrator.registerMigration("v11: cloud file versions") { db in
            // Which immutable version of its cloud file each node's record names (NULL: the first layout's
            // one file per node), and the unnamed versions `gc` has seen, since when (deleted after a grace period).
            try db.execute(sql: """
                ALTER TABLE node ADD COLUMN cloudVersion TEXT;
                CREATE TABLE remoteGarbage (key TEXT PRIMARY KEY NOT NULL, since REAL NOT NULL);
                """)
        }
        migrator.registerMigration("v12: conflict copies") { db in
            // The conflict copies this store made when the remote had changed under a push: the
            // copy's node, the node it copies, its name and when. `status` lists them until the copy is deleted.
            try db.execute(sql: """
                CREATE TABLE conflictCopy (nodeID TEXT PRIMARY KEY NOT NULL, originalID TEXT NOT NULL, name TEXT NOT NULL,
                  createdAt REAL NOT NULL)
                """)
        }
        migrator.registerMigration("v13: upload queue") { db in
            // Local changes meant for the remote, one row per node: the record's name and parent
            // to write (NULL: as the outline has them), the state (pending, uploading, failed), the process
            // uploading it, the cloud file version it is uploading (so a record found after a crash is known
            // as its own), attempts and the last error. `sequence` grows with every change queued, so an
            // upload that finishes only clears the row if no newer change came meanwhile.
            try db.execute(sql: """
                CREATE TABLE uploadQueue (nodeID TEXT PRIMARY KEY NOT NULL, name TEXT, parentID TEXT, queuedAt REAL NOT NULL,
                  state TEXT NOT NULL DEFAULT 'pending', claimedBy INTEGER, version TEXT, attempts INTEGER NOT NULL DEFAULT 0,
                  lastError TEXT, sequence INTEGER NOT NULL)
                """)
        }
        migrator.registerMigration("v14: entry changes") { db in
            // Which node or avatar changed, in any process (`EntryChange`): a mount tells the kernel to drop
            // exactly those names and attributes, so it may cache the rest for long, and its watcher costs
            // the number of changes (it used to compare the whole outline, held in memory, each time). A file
            // row's last access is not a change of what the mount shows. Pruned after an hour.
            let now = "(julianday('now') - 2440587.5) * 86400.0"
            let node = { (row: String) in "INSERT INTO entryChange (ownerID, identityID, at) VALUES (\(row).id, '', \(now));" }
            let file = { (row: String) in
                "INSERT INTO entryChange (ownerID, identityID, at) VALUES (\(row).ownerID, CASE WHEN \(row).kind = 'avatar' THEN \(row).identityID ELSE '' END, \(now));"
            }
            let avatar = { (row: String) in "INSERT INTO entryChange (ownerID, identityID, at) VALUES (\(row).userID, \(row).identityID, \(now));" }
            try db.execute(sql: """
                CREATE TABLE entryChange (seq INTEGER PRIMARY KEY AUTOINCREMENT, ownerID TEXT NOT NULL, identityID TEXT NOT NULL, at REAL NOT NULL);
                CREATE INDEX entryChange_at ON entryChange(at);
                CREATE TRIGGER entryNodeInserted AFTER INSERT ON node BEGIN \(node("NEW")) END;
                CREATE TRIGGER entryNodeUpdated AFTER UPDATE ON node BEGIN \(node("NEW")) END;
                CREATE TRIGGER entryNodeDeleted AFTER DELETE ON node BEGIN \(node("OLD")) END;
                CREATE TRIGGER entryFileInserted AFTER INSERT ON file BEGIN \(file("NEW")) END;
                CREATE TRIGGER entryFileUpdated AFTER UPDATE OF id, name, pool, mode, format, storedSize, plaintextSize, modified, wrappedKey ON file
                  BEGIN \(file("NEW")) END;
                CREATE TRIGGER entryFileDeleted AFTER DELETE ON file BEGIN \(file("OLD")) END;
                CREATE TRIGGER entryAvatarInserted AFTER INSERT ON avatarOutline BEGIN \(avatar("NEW")) END;
                CREATE TRIGGER entryAvatarUpdated AFTER UPDATE ON avatarOutline BEGIN \(avatar("NEW")) END;
                CREATE TRIGGER entryAvatarDeleted AFTER DELETE ON avatarOutline BEGIN \(avatar("OLD")) END;
                """)
        }
        migrator.registerMigration("v15: node attributes") { db in
            // What the drive shows of a node besides its content (`NodeAttributes`): its type ('file',
            // 'folder', 'symlink'), permission bits, modification time, link target and `user.*` extended
            // attributes (JSON of name to base64). NULL: a file with the defaults, as before the drive. A
            // folder's children by name (a drive lookup, a listing) come from one index.
            try db.execute(sql: """
                ALTER TABLE node ADD COLUMN type TEXT;
                ALTER TABLE node ADD COLUMN mode INTEGER;
                ALTER TABLE node ADD COLUMN mtime INTEGER;
                ALTER TABLE node ADD COLUMN mtimeNsec INTEGER;
                ALTER TABLE node ADD COLUMN target TEXT;
                ALTER TABLE node ADD COLUMN xattrs BLOB;
                CREATE INDEX node_parent ON node(parentID, name);
                """)
            // A node row written again as it was (an upsert of the same record) is no change of what a mount
            // shows: only a change of a column is logged.
            let columns = ["wrappedKey", "name", "parentID", "cloudETag", "metadataSize", "thumbnailSize", "dataSize", "cloudVersion",
                           "type", "mode", "mtime", "mtimeNsec", "target", "xattrs"]
            try db.execute(sql: """
                DROP TRIGGER entryNodeUpdated;
                CREATE TRIGGER entryNodeUpdated AFTER UPDATE ON node WHEN \(columns.map { "OLD.\($0) IS NOT NEW.\($0)" }.joined(separator: " OR "))
                  BEGIN INSERT INTO entryChange (ownerID, identityID, at) VALUES (NEW.id, '', (julianday('now') - 2440587.5) * 86400.0); END;
                """)
        }
        migrator.registerMigration("v16: queued operations") { db in
            // What a queued change asks of the remote (`QueuedUpload.Operation`): its content ('content', as
            // before), its record alone ('record': a rename or move), or its deletion ('delete').
            try db.execute(sql: "ALTER TABLE uploadQueue ADD COLUMN operation TEXT NOT NULL DEFAULT 'content'")
        }
        migrator.registerMigration("v17: upload queue order") { db in
            // Each change queued takes the next sequence number (MAX + 1), and the uploader takes them in
            // order: without an index, every commit scanned the whole queue (`tar x` of 10,000 files).
            try db.execute(sql: "CREATE INDEX uploadQueue_sequence ON uploadQueue(sequence)")
        }
        migrator.registerMigration("v18: pins") { db in
            // "Always keep on this device": a node's own pin (1 keep, 0 may be freed); a node
            // without a row inherits from the folder above it, and the row of node '' is the top's setting.
            // `pinClock` changes with every pin set or cleared, in any process, so a daemon sees it.
            // `wantedDownload`: node data a command handed to the running mount (`fetch --background`).
            try db.execute(sql: """
                CREATE TABLE pin (nodeID TEXT PRIMARY KEY NOT NULL, pinned INTEGER NOT NULL, since REAL NOT NULL);
                CREATE TABLE pinClock (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                INSERT INTO pinClock (id, version) VALUES (1, 0);
                CREATE TRIGGER pinInserted AFTER INSERT ON pin BEGIN UPDATE pinClock SET version = version + 1; END;
                CREATE TRIGGER pinUpdated AFTER UPDATE ON pin BEGIN UPDATE pinClock SET version = version + 1; END;
                CREATE TRIGGER pinDeleted AFTER DELETE ON pin BEGIN UPDATE pinClock SET version = version + 1; END;
                CREATE TABLE wantedDownload (nodeID TEXT PRIMARY KEY NOT NULL, persistent INTEGER NOT NULL, since REAL NOT NULL);
                CREATE TRIGGER wantedDownloadInserted AFTER INSERT ON wantedDownload BEGIN UPDATE pinClock SET version = version + 1; END;
                """)
        }
        migrator.registerMigration("v19: change tables without time indexes") { db in
            // Their rows are appended in time order, so the rows older than the pruning's cutoff are the first
            // ones (`pruneLog`): an index of the time cost every commit a page of the log, for nothing.
            try db.execute(sql: "DROP INDEX IF EXISTS changeLog_at; DROP INDEX IF EXISTS entryChange_at")
        }
        migrator.registerMigration("v20: eviction indexes of cache files only") { db in
            // Eviction and expiry look only at cache files (`mode = 'cache'`); a persistent file (a drive file
            // until uploaded, a pinned one) in their indexes cost each commit two pages of the log, for nothing.
            try db.execute(sql: """
                DROP INDEX file_lru;
                CREATE INDEX file_lru ON file(pool, mode, lastAccess) WHERE mode = 'cache';
                DROP INDEX file_expiry;
                CREATE INDEX file_expiry ON file(pool, mode, expiration, modified) WHERE mode = 'cache';
                """)
        }
        migrator.registerMigration("v21: the drive's commit journal") { db in
            // The last journaled drive commit the index has (`DriveCommitJournal`): a replay skips those.
            try db.execute(sql: """
                CREATE TABLE driveJournal (id INTEGER PRIMARY KEY CHECK (id = 1), appliedThrough INTEGER NOT NULL);
                INSERT INTO driveJournal (id, appliedThrough) VALUES (1, 0);
                """)
        }
        migrator.registerMigration("v22: nodes by name") { db in
            // A name looked up at the top of the drive is also looked for among the nodes shown there because
            // their folder is not one (orphans): without this index that read every node, once per lookup
            // (1 ms at 10,000 nodes; a `tar x` looks up each top-level folder it makes).
            try db.execute(sql: "CREATE INDEX node_name ON node(name) WHERE name IS NOT NULL")
        }
        migrator.registerMigration("v23: a node's change time") { db in
            // The time of a node's last change (its `ctime`), in seconds: set by the statements that change its
            // content, and by these triggers for everything else a change of its row is (a rename, a move, a
            // mode, a time, a link target, an extended attribute; a node made or pulled), so that no writer
            // can forget it. NULL on nodes older than the column: their `ctime` shows their `mtime`.
            let now = "(julianday('now') - 2440587.5) * 86400.0"
            try db.execute(sql: """
                ALTER TABLE node ADD COLUMN ctime REAL;
                CREATE TRIGGER node_made AFTER INSERT ON node WHEN NEW.ctime IS NULL
                BEGIN UPDATE node SET ctime = \(now) WHERE id = NEW.id; END;
                CREATE TRIGGER node_changed AFTER UPDATE OF name, parentID, type, mode, mtime, mtimeNsec, target, xattrs ON node
                WHEN NEW.ctime IS OLD.ctime AND (NEW.name IS NOT OLD.name OR NEW.parentID IS NOT OLD.parentID
                  OR NEW.type IS NOT OLD.type OR NEW.mode IS NOT OLD.mode OR NEW.mtime IS NOT OLD.mtime
                  OR NEW.mtimeNsec IS NOT OLD.mtimeNsec OR NEW.target IS NOT OLD.target OR NEW.xattrs IS NOT OLD.xattrs)
                BEGIN UPDATE node SET ctime = \(now) WHERE id = NEW.id; END;
                """)
        }
        migrator.registerMigration("v24: the version a queued change was made on") { db in
            // The cloud file version the node had here when its queued change began (`QueuedUpload.basedOn`):
            // an upload that finds the remote at another version is a conflict, even after the store took
            // the remote's version for an older change of the same row.
            try db.execute(sql: "ALTER TABLE uploadQueue ADD COLUMN basedOn TEXT")
        }
        migrator.registerMigration("v25: the file ID a record names") { db in
            // The file ID of the cloud file a node's record names (`OutlineEntry.cloudFileID`): a download
            // compares it with the header it fetched, so the bucket cannot serve another version in its place.
            try db.execute(sql: "ALTER TABLE node ADD COLUMN cloudFileID BLOB")
        }
        migrator.registerMigration("v26: keyed object names") { db in
            // Whether a node's objects in the bucket are under its keyed name (`OutlineEntry.keyedNames`);
            // every node pulled before is under its ID until its next push.
            try db.execute(sql: "ALTER TABLE node ADD COLUMN keyedNames INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v27: the file ID of a stored cloud file") { db in
            // The file ID in a stored cloud file's header (`StoredFile.cloudFileID`): the file is the remote's
            // version when the node's record names that ID. Drive versions are cloud files too, their own until
            // uploaded. Rows from before (NULL) are all downloads: drive versions were cache files then.
            try db.execute(sql: "ALTER TABLE file ADD COLUMN cloudFileID BLOB")
        }
        migrator.registerMigration("v28: a folder's subfolders") { db in
            // A drive folder's link count is 2 and one per folder in it (`DiskManager.driveSubfolderCount`):
            // counted from this index alone, whatever else the folder holds.
            try db.execute(sql: "CREATE INDEX node_subfolder ON node(parentID) WHERE type = 'folder' AND name IS NOT NULL")
        }
        return migrator
    }

    /// Removes the rows of change table `table` (`changeLog`, `entryChange`: `seq` and `at` columns, rows
    /// appended in time order) before the first one written at `cutoff` or later. It reads the rows it removes
    /// and one more, whatever the table's size.
    static func pruneLog(_ table: String, _ db: Database, before cutoff: Double) throws {
        try db.execute(sql: """
            DELETE FROM \(table) WHERE seq < COALESCE(
              (SELECT seq FROM \(table) WHERE at >= ? ORDER BY seq LIMIT 1), (SELECT MAX(seq) FROM \(table)) + 1)
            """, arguments: [cutoff])
    }
}
