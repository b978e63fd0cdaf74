import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import DarkDiskSync

/// The shared state of one cache folder in this process: the index connection behind a lock, and the buffered
/// access times. Every `DiskCache` with the same folder uses the same `CacheFolder`, so instances in one process
/// see each other's writes at once; other processes share the folder through SQLite's locking (WAL).
///
/// Layout of a folder: `index.sqlite` (one row per entry: key, sizes, checksum, dates, and the value itself
/// when it is at most `inlineLimit` bytes), `files/` (larger values, one file each, named by the SHA-256 of
/// the key plus a random suffix, so any key fits a file name and a new value never overwrites the old one's
/// file), `tmp/` (values being written), `trash/` (what `removeAll` moved away, emptied in the background)
/// and `files.lock` (held shared by `withFileURL` closures, exclusively by `removeAll`).
final class CacheFolder: Sendable {
    /// Values up to this size live in the index (as python diskcache does); larger ones in files.
    static let inlineLimit = 32 * 1024

    let path: String
    let filesPath: String
    let tmpPath: String
    let trashPath: String
    let lockPath: String
    let indexPath: String

    private struct State {
        var connection: SQLiteConnection
        /// Access times of gets not yet written to the index, by row id, flushed in batches (at most a second
        /// late). A row id reused by a later insert is safe: that row's own access time is later.
        var pendingAccess: [Int64: Double] = [:]
        /// The batch a background flush is writing (not yet visible to this connection's reads).
        var flushingAccess: [Int64: Double] = [:]
        var flushScheduled = false
        var flushQueued = false
    }
    private let state: Locked<State>
    /// The connection of the background access-time flush (`flushAccess`), opened on first use.
    private let flusher = Locked<SQLiteConnection?>(nil)
    private let flushQueue = DispatchQueue(label: "darkdisk.DiskCache.access", qos: .utility)

    private final class WeakFolder: @unchecked Sendable {
        weak var folder: CacheFolder?
        init(_ folder: CacheFolder) { self.folder = folder }
    }
    private static let registry = Locked<[String: WeakFolder]>([:])

    /// The folder's shared state in this process, opened (and created) on first use.
    static func open(path: String) throws(DiskCacheError) -> CacheFolder {
        do {
            return try registry.withLock { (folders: inout [String: WeakFolder]) throws(DiskCacheError) -> CacheFolder in
                if let folder = folders[path]?.folder { return folder }
                let folder = try CacheFolder(path: path)
                folders[path] = WeakFolder(folder)
                return folder
            }
        }
    }

    private init(path: String) throws(DiskCacheError) {
        self.path = path
        filesPath = path + "/files"
        tmpPath = path + "/tmp"
        trashPath = path + "/trash"
        lockPath = path + "/files.lock"
        indexPath = path + "/index.sqlite"
        for dir in [path, filesPath, tmpPath, trashPath] {
            if mkdir(dir, 0o700) != 0 && errno != EEXIST {
                throw DiskCacheError.posix("cannot create the cache folder", path: dir)
            }
        }
        let connection: SQLiteConnection
        do {
            connection = try Self.openIndex(indexPath)
        } catch {
            guard SQLiteConnection.isCorruption(error) else { throw error }
            // A damaged index: move it (and the files it described) to the trash and start empty.
            let aside = trashPath + "/" + FileIO.randomName()
            _ = mkdir(aside, 0o700)
            for suffix in ["", "-wal", "-shm"] { _ = rename(indexPath + suffix, aside + "/index.sqlite" + suffix) }
            _ = rename(filesPath, aside + "/files")
            _ = mkdir(filesPath, 0o700)
            connection = try Self.openIndex(indexPath)
        }
        state = Locked(State(connection: connection))
        // Leftovers of crashed processes (temporary files, orphan value files, the trash) go in the background,
        // a little after start-up: never a scan before the first answer.
        DispatchQueue.global(qos: .background).asyncAfter(deadline: .now() + 2) { [weak self] in
            self?.sweep()
        }
    }

    deinit {
        let pending = state.withLock { $0.pendingAccess }
        if !pending.isEmpty { _ = try? state.withLock { (s: inout State) throws(DiskCacheError) in try Self.flush(&s) } }
    }

    /// Opens the index and creates its schema on first use (in one transaction, so two processes opening a new
    /// folder at once cannot both create it).
    private static func openIndex(_ path: String) throws(DiskCacheError) -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        // A 32 MiB page cache and reads through a 256 MiB memory map (python diskcache: 32 MiB and 64 MiB):
        // at 10,000 entries and more, the default 2 MiB cache would read most pages with a system call.
        try connection.execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -32768; PRAGMA mmap_size = 268435456
            """)
        let version = try connection.statement("PRAGMA user_version")
        let current = try version.step() ? version.int(0) : 0
        version.reset()
        if current >= 1 { return connection }
        try connection.writeTransaction { () throws(DiskCacheError) in
            let again = try connection.statement("PRAGMA user_version")
            let now = try again.step() ? again.int(0) : 0
            again.reset()
            guard now < 1 else { return }
            try connection.execute("""
                CREATE TABLE entry (
                    id INTEGER PRIMARY KEY,
                    key TEXT NOT NULL UNIQUE,
                    size INTEGER NOT NULL,      -- bytes counted in byteCount: the file's allocated size, or the inline value's length
                    length INTEGER NOT NULL,    -- the value's length
                    checksum INTEGER NOT NULL,  -- ContentChecksum of the value
                    created REAL NOT NULL,
                    modified REAL NOT NULL,
                    accessed REAL NOT NULL,
                    value BLOB,                 -- the value, when small
                    file TEXT                   -- else its file name in files/
                );
                -- The only secondary index: least-recently-used eviction runs on sets. Every index is one more
                -- page written per set; expiry (a timer) and the sweep scan instead.
                CREATE INDEX entry_accessed ON entry(accessed);
                -- Running totals kept exact by triggers inside every transaction: byteCount costs one row read.
                CREATE TABLE total (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL, count INTEGER NOT NULL);
                INSERT INTO total VALUES (0, 0, 0);
                CREATE TRIGGER entry_insert AFTER INSERT ON entry BEGIN
                    UPDATE total SET bytes = bytes + NEW.size, count = count + 1 WHERE id = 0; END;
                CREATE TRIGGER entry_delete AFTER DELETE ON entry BEGIN
                    UPDATE total SET bytes = bytes - OLD.size, count = count - 1 WHERE id = 0; END;
                CREATE TRIGGER entry_resize AFTER UPDATE OF size ON entry BEGIN
                    UPDATE total SET bytes = bytes - OLD.size + NEW.size WHERE id = 0; END;
                PRAGMA user_version = 1;
                """)
        }
        return connection
    }

    // MARK: - Reads

    /// An entry's row as read for a get.
    struct Row {
        let id: Int64
        let length: Int64
        let checksum: Int64
        let modified: Double
        /// When it was last set or read, buffered reads included: `ageLimit` counts from here (TMDiskCache).
        let accessed: Double
        let value: Data?
        let file: String?
    }

    /// The latest use of row `id`: the index's time, or a read not yet written there.
    private static func lastUse(_ id: Int64, indexed: Double, _ s: State) -> Double {
        max(indexed, s.pendingAccess[id] ?? indexed, s.flushingAccess[id] ?? indexed)
    }

    /// What a read found.
    enum ReadResult {
        case hit(Data)
        case miss
        /// Present but too old for the caller's age limit, or damaged: the caller removes it (if unchanged).
        case expired(Row)
        case corrupt(Row)
    }

    /// Reads `key`'s value; records the access at `now` (buffered) when found and not unused since `cutoff`.
    func read(_ key: String, notUnusedSince cutoff: Double?, now: Double) throws(DiskCacheError) -> ReadResult {
        let found = try state.withLock { (s: inout State) throws(DiskCacheError) -> Row? in
            let statement = try s.connection.statement(
                "SELECT id, length, checksum, modified, accessed, value, file FROM entry WHERE key = ?").bind(.text(key))
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            let id = statement.int(0)
            let row = Row(id: id, length: statement.int(1), checksum: statement.int(2), modified: statement.double(3),
                          accessed: Self.lastUse(id, indexed: statement.double(4), s), value: statement.blob(5), file: statement.text(6))
            if cutoff == nil || row.accessed >= cutoff! { try self.recordAccess(row.id, at: now, in: &s) }
            return row
        }
        guard let row = found else { return .miss }
        if let cutoff, row.accessed < cutoff { return .expired(row) }
        let data: Data
        if let value = row.value {
            data = value
        } else if let file = row.file {
            guard let opened = try? OwnedDescriptor.open(filesPath + "/" + file, O_RDONLY),
                  let bytes = FileIO.readExactly(opened, count: Int(row.length)) else { return .corrupt(row) }
            data = bytes
        } else {
            return .corrupt(row)
        }
        guard data.count == row.length,
              data.withUnsafeBytes({ ContentChecksum.of($0) }) == row.checksum else { return .corrupt(row) }
        return .hit(data)
    }

    private func recordAccess(_ id: Int64, at now: Double, in s: inout State) throws(DiskCacheError) {
        s.pendingAccess[id] = now
        if s.pendingAccess.count >= 65_536 {
            try Self.flush(&s)    // the background flush fell far behind
        } else if s.pendingAccess.count >= 4096 && !s.flushQueued {
            s.flushQueued = true
            flushQueue.async { [weak self] in self?.flushAccess() }
        } else if !s.flushScheduled {
            s.flushScheduled = true
            flushQueue.asyncAfter(deadline: .now() + 1) { [weak self] in self?.flushAccess() }
        }
    }

    /// Writes the buffered access times to the index, so least-recently-used order survives a restart. Runs on
    /// `flushQueue` with a connection of its own, so gets go on meanwhile (on another core). The batch is taken
    /// and the write transaction begun under the state lock: whoever takes that lock next and begins a write
    /// (a set over the limit, a trim) waits for this commit and so sees these access times.
    func flushAccess() {
        flusher.withLock { (connection: inout SQLiteConnection?) in
            // No waiting under the lock for another process' write: then it tries again a second later.
            if connection == nil { connection = try? SQLiteConnection(path: indexPath, busyTimeout: 0) }
            guard let connection else { return }
            let batch = state.withLock { (s: inout State) -> [Int64: Double]? in
                s.flushScheduled = false
                s.flushQueued = false
                guard !s.pendingAccess.isEmpty else { return nil }
                guard (try? connection.statement("BEGIN IMMEDIATE").run()) != nil else {
                    s.flushScheduled = true
                    flushQueue.asyncAfter(deadline: .now() + 1) { [weak self] in self?.flushAccess() }
                    return nil
                }
                defer { s.pendingAccess.removeAll(keepingCapacity: true) }
                s.flushingAccess = s.pendingAccess  // still counted by reads until the commit shows it
                return s.pendingAccess
            }
            guard let batch else { return }
            defer { state.withLock { $0.flushingAccess.removeAll(keepingCapacity: true) } }
            do throws(DiskCacheError) {
                let update = try connection.statement("UPDATE entry SET accessed = ?1 WHERE id = ?2 AND accessed < ?1")
                for (id, time) in batch.sorted(by: { $0.key < $1.key }) { try update.bind(.double(time), .int(id)).run() }
                try connection.statement("COMMIT").run()
            } catch {
                try? connection.execute("ROLLBACK")
            }
        }
    }

    private static func flush(_ s: inout State) throws(DiskCacheError) {
        guard !s.pendingAccess.isEmpty else { return }
        let pending = s.pendingAccess
        let connection = s.connection
        try connection.writeTransaction { () throws(DiskCacheError) in
            let update = try connection.statement("UPDATE entry SET accessed = ?1 WHERE id = ?2 AND accessed < ?1")
            // In row order: neighbouring rows share pages.
            for (id, time) in pending.sorted(by: { $0.key < $1.key }) { try update.bind(.double(time), .int(id)).run() }
        }
        s.pendingAccess.removeAll(keepingCapacity: true)
    }

    /// Whether `key` has an entry used (set or read) since `cutoff` (no read of the value, no access recorded).
    func contains(_ key: String, notUnusedSince cutoff: Double?) throws(DiskCacheError) -> Bool {
        try state.withLock { (s: inout State) throws(DiskCacheError) -> Bool in
            let statement = try s.connection.statement("SELECT id, accessed FROM entry WHERE key = ?").bind(.text(key))
            defer { statement.reset() }
            guard try statement.step() else { return false }
            return cutoff == nil || Self.lastUse(statement.int(0), indexed: statement.double(1), s) >= cutoff!
        }
    }

    // MARK: - Writes

    /// A row removed by an operation: its key for the hooks, its file to delete once committed.
    struct Removed {
        let key: String
        let file: String?
    }

    /// Stores `data` for `key` as set at `now`, then (when `byteLimit` > 0) removes least recently used entries until the total
    /// is within the limit, all in one transaction. `willRemove` is called for each evicted key before its
    /// removal; the evicted keys are returned. A large value is written to `tmp/` first and renamed into `files/`
    /// inside the transaction, so a crash at any point leaves the old value or the new one.
    func write(_ data: Data, forKey key: String, now: Double, byteLimit: Int,
               willRemove: (String) -> Void) throws(DiskCacheError) -> [Removed] {
        let checksum = data.withUnsafeBytes { ContentChecksum.of($0) }
        var held: OwnedDescriptor?
        var tmp = ""
        var fileName: String? = nil
        var size = Int64(data.count)
        if data.count > Self.inlineLimit {
            let hash = Digest.sha256(Array(key.utf8)).map { String(format: "%02x", $0) }.joined()
            fileName = hash + "." + FileIO.randomName()
            tmp = tmpPath + "/" + fileName!
            let file = try FileIO.open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600, failing: "cannot create")
            // Held until the row is committed: the sweep leaves locked files alone.
            do throws(Errno) { try file.lock(.exclusive) } catch {
                unlink(tmp)
                throw DiskCacheError.posix("cannot lock", path: tmp, errno: error.rawValue)
            }
            do {
                try FileIO.writeAll(file, data, path: tmp)
            } catch {
                unlink(tmp)
                throw error
            }
            size = FileIO.allocatedSize(file)
            held = file
        }
        defer { try? held?.close() }
        var renamed = false
        var replacedFile: String? = nil
        let evicted: [Removed]
        do {
            evicted = try state.withLock { (s: inout State) throws(DiskCacheError) -> [Removed] in
                let connection = s.connection
                var pendingFlushed = false
                let result = try connection.writeTransaction { () throws(DiskCacheError) -> [Removed] in
                    let old = try connection.statement("SELECT file FROM entry WHERE key = ?").bind(.text(key))
                    replacedFile = try old.step() ? old.text(0) : nil
                    old.reset()
                    if let fileName {
                        guard rename(tmp, filesPath + "/" + fileName) == 0 else {
                            throw DiskCacheError.posix("cannot move into the cache", path: tmp)
                        }
                        renamed = true
                    }
                    try connection.statement("""
                        INSERT INTO entry (key, size, length, checksum, created, modified, accessed, value, file)
                        VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, ?6, ?7)
                        ON CONFLICT (key) DO UPDATE SET size = ?2, length = ?3, checksum = ?4, modified = ?5,
                            accessed = ?5, value = ?6, file = ?7
                        """).bind(.text(key), .int(size), .int(Int64(data.count)), .int(checksum), .double(now),
                                  fileName == nil ? .blob(data) : .null, fileName.map { .text($0) } ?? .null).run()
                    guard byteLimit > 0, try Self.total(connection).bytes > byteLimit else { return [] }
                    // Eviction by last access: the buffered access times count too.
                    try Self.writePending(&s, connection)
                    pendingFlushed = true
                    return try Self.removeWhileOver(byteLimit, order: "accessed ASC", connection, willRemove: willRemove)
                }
                if pendingFlushed { s.pendingAccess.removeAll(keepingCapacity: true) }
                return result
            }
        } catch {
            if renamed { unlink(filesPath + "/" + fileName!) } else if fileName != nil { unlink(tmp) }
            throw error
        }
        if let replacedFile { discard(replacedFile) }
        for entry in evicted { if let file = entry.file { discard(file) } }
        return evicted
    }

    private static func writePending(_ s: inout State, _ connection: SQLiteConnection) throws(DiskCacheError) {
        guard !s.pendingAccess.isEmpty else { return }
        let update = try connection.statement("UPDATE entry SET accessed = ?1 WHERE id = ?2 AND accessed < ?1")
        for (id, time) in s.pendingAccess.sorted(by: { $0.key < $1.key }) { try update.bind(.double(time), .int(id)).run() }
    }

    static func total(_ connection: SQLiteConnection) throws(DiskCacheError) -> (bytes: Int, count: Int) {
        let statement = try connection.statement("SELECT bytes, count FROM total WHERE id = 0")
        defer { statement.reset() }
        guard try statement.step() else { return (0, 0) }
        return (Int(statement.int(0)), Int(statement.int(1)))
    }

    /// Removes entries in `order` until the total is at most `limit`, in the caller's transaction.
    private static func removeWhileOver(_ limit: Int, order: String, _ connection: SQLiteConnection,
                                        willRemove: (String) -> Void) throws(DiskCacheError) -> [Removed] {
        var removed: [Removed] = []
        let select = try connection.statement("SELECT id, key, file FROM entry ORDER BY \(order) LIMIT 64")
        let delete = try connection.statement("DELETE FROM entry WHERE id = ?")
        while try total(connection).bytes > limit {
            var batch: [(Int64, Removed)] = []
            select.reset()
            while try select.step() { batch.append((select.int(0), Removed(key: select.text(1) ?? "", file: select.text(2)))) }
            select.reset()
            if batch.isEmpty { break }
            for (id, entry) in batch {
                if try total(connection).bytes <= limit { break }
                willRemove(entry.key)
                try delete.bind(.int(id)).run()
                removed.append(entry)
            }
        }
        return removed
    }

    /// Deletes a value file whose row is gone. While someone holds it (a `withFileURL` closure in any
    /// process, or the sweep checking it for a moment) it is tried again in the background, at growing
    /// intervals for about a minute, then left for the next start-up's sweep. No row can name it again:
    /// file names never repeat.
    func discard(_ file: String) {
        Self.discard(filesPath + "/" + file, attempt: 0)
    }

    private static func discard(_ path: String, attempt: Int) {
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY) else { return }
        let locked = (try? file.tryLock(.exclusive)) == true
        if locked { unlink(path) }
        try? file.close()
        guard !locked, attempt < 8 else { return }
        DispatchQueue.global(qos: .background).asyncAfter(deadline: .now() + .milliseconds(250 << attempt)) {
            discard(path, attempt: attempt + 1)
        }
    }

    // MARK: - Removals

    /// Removes `key`'s entry; `willRemove` runs first if it exists. Returns whether it existed.
    func remove(_ key: String, willRemove: (String) -> Void) throws(DiskCacheError) -> Bool {
        let removed = try state.withLock { (s: inout State) throws(DiskCacheError) -> Removed? in
            let connection = s.connection
            return try connection.writeTransaction { () throws(DiskCacheError) -> Removed? in
                let select = try connection.statement("SELECT id, file FROM entry WHERE key = ?").bind(.text(key))
                guard try select.step() else { select.reset(); return nil }
                let id = select.int(0), file = select.text(1)
                select.reset()
                willRemove(key)
                try connection.statement("DELETE FROM entry WHERE id = ?").bind(.int(id)).run()
                return Removed(key: key, file: file)
            }
        }
        if let file = removed?.file { discard(file) }
        return removed != nil
    }

    /// Removes the entry read as `row` if it has not changed since (a damaged or expired entry); `false` when a
    /// writer replaced it meanwhile.
    func removeIfUnchanged(_ key: String, _ row: Row, willRemove: (String) -> Void) throws(DiskCacheError) -> Bool {
        let removed = try state.withLock { (s: inout State) throws(DiskCacheError) -> Bool in
            let connection = s.connection
            return try connection.writeTransaction { () throws(DiskCacheError) -> Bool in
                let select = try connection.statement("SELECT modified, file FROM entry WHERE id = ? AND key = ?")
                    .bind(.int(row.id), .text(key))
                defer { select.reset() }
                guard try select.step(), select.double(0) == row.modified, select.text(1) == row.file else { return false }
                select.reset()
                willRemove(key)
                try connection.statement("DELETE FROM entry WHERE id = ?").bind(.int(row.id)).run()
                return true
            }
        }
        if removed, let file = row.file { discard(file) }
        return removed
    }

    /// Removes `key`'s entry if its value is still in `file` (whose file went missing).
    func removeIfFile(_ key: String, _ file: String, willRemove: (String) -> Void) throws(DiskCacheError) -> Bool {
        try state.withLock { (s: inout State) throws(DiskCacheError) -> Bool in
            let connection = s.connection
            return try connection.writeTransaction { () throws(DiskCacheError) -> Bool in
                let select = try connection.statement("SELECT id FROM entry WHERE key = ? AND file = ?").bind(.text(key), .text(file))
                guard try select.step() else { select.reset(); return false }
                let id = select.int(0)
                select.reset()
                willRemove(key)
                try connection.statement("DELETE FROM entry WHERE id = ?").bind(.int(id)).run()
                return true
            }
        }
    }

    /// How a trim picks its victims.
    enum TrimRule {
        /// Entries last accessed before the date.
        case accessedBefore(Double)
        /// Entries last modified (set) before the date.
        case modifiedBefore(Double)
        /// Largest first, until the total is at most the size.
        case largestFirst(Int)
        /// Least recently accessed first, until the total is at most the size.
        case leastRecentlyUsed(Int)
    }

    /// Removes the entries `rule` selects, in one transaction; returns them.
    func trim(_ rule: TrimRule, willRemove: (String) -> Void) throws(DiskCacheError) -> [Removed] {
        let removed = try state.withLock { (s: inout State) throws(DiskCacheError) -> [Removed] in
            let connection = s.connection
            let result = try connection.writeTransaction { () throws(DiskCacheError) -> [Removed] in
                try Self.writePending(&s, connection)
                switch rule {
                case .largestFirst(let size):
                    return try Self.removeWhileOver(size, order: "size DESC", connection, willRemove: willRemove)
                case .leastRecentlyUsed(let size):
                    return try Self.removeWhileOver(size, order: "accessed ASC", connection, willRemove: willRemove)
                case .accessedBefore(let date):
                    return try Self.removeBefore(date, column: "accessed", connection, willRemove: willRemove)
                case .modifiedBefore(let date):
                    return try Self.removeBefore(date, column: "modified", connection, willRemove: willRemove)
                }
            }
            s.pendingAccess.removeAll(keepingCapacity: true)
            return result
        }
        for entry in removed { if let file = entry.file { discard(file) } }
        return removed
    }

    private static func removeBefore(_ date: Double, column: String, _ connection: SQLiteConnection,
                                     willRemove: (String) -> Void) throws(DiskCacheError) -> [Removed] {
        // One pass (through the index for `accessed`, a scan for `modified`), then the deletions.
        var victims: [(Int64, Removed)] = []
        let select = try connection.statement("SELECT id, key, file FROM entry WHERE \(column) < ?").bind(.double(date))
        while try select.step() { victims.append((select.int(0), Removed(key: select.text(1) ?? "", file: select.text(2)))) }
        select.reset()
        let delete = try connection.statement("DELETE FROM entry WHERE id = ?")
        for (id, entry) in victims {
            willRemove(entry.key)
            try delete.bind(.int(id)).run()
        }
        return victims.map(\.1)
    }

    /// Removes every entry: the value files move to `trash/` in one rename (emptied in the background) and the
    /// rows go in the same transaction. Waits for running `withFileURL` closures (in any process) to end.
    func removeAll() throws(DiskCacheError) {
        let lock = try FileIO.open(lockPath, O_RDWR | O_CREAT, mode: 0o600, failing: "cannot open")
        defer { try? lock.close() }  // (the lock lasts until the entries are gone)
        do { try lock.lock(.exclusive) } catch { throw DiskCacheError.posix("cannot lock", path: lockPath, errno: error.rawValue) }
        try state.withLock { (s: inout State) throws(DiskCacheError) in
            let connection = s.connection
            try connection.writeTransaction { () throws(DiskCacheError) in
                let aside = trashPath + "/" + FileIO.randomName()
                guard rename(filesPath, aside) == 0 else { throw DiskCacheError.posix("cannot move to the trash", path: filesPath) }
                guard mkdir(filesPath, 0o700) == 0 else {
                    let failure = DiskCacheError.posix("cannot create", path: filesPath)
                    _ = rename(aside, filesPath)
                    throw failure
                }
                try connection.execute("DELETE FROM entry")
            }
            s.pendingAccess.removeAll()
        }
        DispatchQueue.global(qos: .background).async { [trashPath] in Self.emptyTrash(trashPath) }
    }

    // MARK: - Files and enumeration

    /// The file name holding `key`'s value, moving a small value out of the index into a file first (a file URL
    /// was asked for). `nil` when there is no such entry (or it was last used before `cutoff`).
    func materialize(_ key: String, notUnusedSince cutoff: Double?, now: Double) throws(DiskCacheError) -> String? {
        // The new file stays locked until its row is committed (this function's end), so the sweep leaves it.
        var held: OwnedDescriptor?
        defer { try? held?.close() }
        return try state.withLock { (s: inout State) throws(DiskCacheError) -> String? in
            let connection = s.connection
            return try connection.writeTransaction { () throws(DiskCacheError) -> String? in
                let select = try connection.statement("SELECT id, accessed, value, file FROM entry WHERE key = ?").bind(.text(key))
                defer { select.reset() }
                guard try select.step() else { return nil }
                if let cutoff, Self.lastUse(select.int(0), indexed: select.double(1), s) < cutoff { return nil }
                let id = select.int(0)
                let file = select.text(3)
                let value = file == nil ? select.blob(2) ?? Data() : Data()
                select.reset()
                // A use, as a get is (written at once: this is a write transaction anyway).
                try connection.statement("UPDATE entry SET accessed = ?1 WHERE id = ?2 AND accessed < ?1").bind(.double(now), .int(id)).run()
                if let file { return file }
                let hash = Digest.sha256(Array(key.utf8)).map { String(format: "%02x", $0) }.joined()
                let name = hash + "." + FileIO.randomName()
                let tmp = tmpPath + "/" + name
                let created = try FileIO.open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600, failing: "cannot create")
                held = created
                do throws(Errno) { try created.lock(.exclusive) } catch {
                    unlink(tmp)
                    throw DiskCacheError.posix("cannot lock", path: tmp, errno: error.rawValue)
                }
                do throws(DiskCacheError) {
                    try FileIO.writeAll(created, value, path: tmp)
                    guard rename(tmp, filesPath + "/" + name) == 0 else { throw DiskCacheError.posix("cannot move into the cache", path: tmp) }
                } catch {
                    unlink(tmp)
                    throw error
                }
                do throws(DiskCacheError) {
                    try connection.statement("UPDATE entry SET value = NULL, file = ?, size = ? WHERE id = ?")
                        .bind(.text(name), .int(FileIO.allocatedSize(created)), .int(id)).run()
                } catch {
                    unlink(filesPath + "/" + name)
                    throw error
                }
                return name
            }
        }
    }

    /// The file name of `key`'s value right now, if it still is `file` (checked after locking the file).
    func currentFile(_ key: String) throws(DiskCacheError) -> String? {
        try state.withLock { (s: inout State) throws(DiskCacheError) -> String? in
            let statement = try s.connection.statement("SELECT file FROM entry WHERE key = ?").bind(.text(key))
            defer { statement.reset() }
            return try statement.step() ? statement.text(0) : nil
        }
    }

    /// The entries' metadata (no values), oldest access first.
    func entries(notUnusedSince cutoff: Double?) throws(DiskCacheError) -> [DiskCacheEntry] {
        try state.withLock { (s: inout State) throws(DiskCacheError) -> [DiskCacheEntry] in
            try Self.flush(&s)
            // Waits for a background flush in progress, so the order includes its access times.
            try s.connection.writeTransaction { () throws(DiskCacheError) in }
            let statement = try s.connection.statement(
                "SELECT key, size, length, created, modified, accessed FROM entry WHERE accessed >= ? ORDER BY accessed")
                .bind(.double(cutoff ?? -Double.greatestFiniteMagnitude))
            defer { statement.reset() }
            var entries: [DiskCacheEntry] = []
            while try statement.step() {
                entries.append(DiskCacheEntry(
                    key: statement.text(0) ?? "", byteCount: Int(statement.int(1)), length: Int(statement.int(2)),
                    created: Date(timeIntervalSince1970: statement.double(3)),
                    modified: Date(timeIntervalSince1970: statement.double(4)),
                    accessed: Date(timeIntervalSince1970: statement.double(5))))
            }
            return entries
        }
    }

    /// The exact totals, read from the index (other processes' writes included).
    func totals() throws(DiskCacheError) -> (bytes: Int, count: Int) {
        try state.withLock { (s: inout State) throws(DiskCacheError) -> (bytes: Int, count: Int) in try Self.total(s.connection) }
    }

    // MARK: - Background sweep

    /// Deletes what crashed processes left: temporary files, value files no row names, and the trash. Locked
    /// files (being written, or open in a `withFileURL` closure) are left alone. Uses its own connection, so
    /// gets and sets go on meanwhile.
    func sweep() {
        Self.emptyTrash(trashPath)
        let now = Date()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmpPath)) ?? [] {
            let path = tmpPath + "/" + name
            // Only files older than a minute: a writer locks its file just after creating it.
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                  now.timeIntervalSince(modified) > 60 else { continue }
            Self.unlinkIfUnlocked(path)
        }
        guard let connection = try? SQLiteConnection(path: indexPath),
              let names = try? FileManager.default.contentsOfDirectory(atPath: filesPath) else { return }
        var known = Set<String>()
        if let statement = try? connection.statement("SELECT file FROM entry WHERE file IS NOT NULL") {
            while (try? statement.step()) == true { if let file = statement.text(0) { known.insert(file) } }
            statement.reset()
        } else {
            return
        }
        guard let check = try? connection.statement("SELECT 1 FROM entry WHERE file = ?") else { return }
        for name in names where !known.contains(name) {
            let path = filesPath + "/" + name
            guard let file = try? OwnedDescriptor.open(path, O_RDONLY) else { continue }
            // Locked, then checked again: a writer commits its row before it unlocks.
            if (try? file.tryLock(.exclusive)) == true {
                check.bind(.text(name))
                if (try? check.step()) == false { unlink(path) }
                check.reset()
            }
            try? file.close()
        }
    }

    private static func unlinkIfUnlocked(_ path: String) {
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY) else { return }
        defer { try? file.close() }  // (the lock lasts until the file is gone)
        if (try? file.tryLock(.exclusive)) == true { unlink(path) }
    }

    static func emptyTrash(_ trashPath: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: trashPath)) ?? [] {
            try? FileManager.default.removeItem(atPath: trashPath + "/" + name)
        }
    }
}
