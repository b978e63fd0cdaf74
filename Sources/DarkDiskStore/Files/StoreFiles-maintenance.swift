import DarkDiskSystem
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

extension StoreFiles {
    /// One round of upkeep, run at start-up and by the timer: finish pending deletes, notice a purge of the
    /// cache folder, expire cache files, bring every pool under its limit and the cache file system above its
    /// free-space floor.
    func runMaintenance() {
        dispatchPrecondition(condition: .onQueue(maintenanceQueue))
        deleter.sweep()
        retryLockedOrphans()
        deliverOtherProcessesChanges()
        do {
            try reconcilePurge()
            try expireFiles()
            for pool in Pool.allCases { try trim(pool) }
            try freeSpace()
        } catch {
            logger.error("maintenance: \(error)")
        }
    }

    /// Tells subscribers what other processes changed since the last round (`ChangeLog`), and prunes the log.
    private func deliverOtherProcessesChanges() {
        let (seen, round) = changeLogSeen.withLock { state in
            state.rounds += 1
            return (state.seq, state.rounds)
        }
        do {
            let (changes, newest) = try database.read { db in try changeLog.others(after: seen, db) }
            changeLogSeen.withLock { $0.seq = newest }
            for change in changes { broadcaster.send(change) }
            if round % 30 == 0 {
                try database.write { db in
                    try ChangeLog.prune(db, now: Date().timeIntervalSince1970)
                    try EntryChange.prune(db, now: Date().timeIntervalSince1970)
                }
            }
        } catch {
            logger.error("reading other processes' changes: \(error)")
        }
    }

    /// Waits until the upkeep queued so far in this process has run (the evictions that follow released
    /// retain tokens, the start-up sweep), so pool sizes read next include it. Never call it from inside a
    /// store transaction or a change notification: the upkeep may need what the caller holds.
    public func waitForMaintenance() {
        dispatchPrecondition(condition: .notOnQueue(maintenanceQueue))
        maintenanceQueue.sync { runDueEvictions() }
    }

    /// A retain token let go: finish a delete that waited for it, and (`evictable`: it held a cache file) evict
    /// if the pool is still over its limit. (A release frees nothing by itself: it only lets a pool that its
    /// retained files kept over the limit shrink, so it waits for others longer than an import does: a `cat`
    /// of thousands of cached files measures the pool a few times, not at every close.)
    func released(path: String, pool: Pool, evictable: Bool) {
        deleter.finishPendingDelete(path)
        if evictable { kickEviction(pool, within: Self.releaseEvictionDelay) }
    }

    /// Asks the maintenance queue to bring `pool` under its limit, within `delay`; returns at once. Kicks that
    /// arrive before it runs join it, so a burst of stores and releases of cache files costs one measure of
    /// the pool, not one each; a kick that needs it sooner than the run scheduled adds an earlier one.
    /// `waitForMaintenance` runs it at once.
    func kickEviction(_ pool: Pool, within delay: DispatchTimeInterval = evictionDelay) {
        let deadline = DispatchTime.now() + delay
        let schedule = evictionsDue.withLock { due in
            due.pools.insert(pool)
            if let at = due.at, at <= deadline { return false }
            due.at = deadline
            return true
        }
        guard schedule else { return }
        maintenanceQueue.asyncAfter(deadline: deadline) { [self] in runDueEvictions() }
    }

    /// How long a kicked eviction waits for more kicks to join it.
    static let evictionDelay = DispatchTimeInterval.milliseconds(20)
    /// The same after a release of a retained cache file.
    static let releaseEvictionDelay = DispatchTimeInterval.milliseconds(500)

    /// Trims the pools kicked since the last run (on the maintenance queue).
    private func runDueEvictions() {
        dispatchPrecondition(condition: .onQueue(maintenanceQueue))
        let pools = evictionsDue.withLock { due in defer { due = ([], nil) }; return due.pools }
        for pool in Pool.allCases where pools.contains(pool) {
            do { try trim(pool) } catch { logger.error("eviction in the \(pool.rawValue) pool: \(error)") }
        }
    }

    /// Runs `body` on the maintenance queue and waits for it: the public eviction calls, so that only the
    /// owner ever evicts. Never call from the queue itself, a store transaction or a change notification.
    private func onOwner<Value>(_ body: () throws(DarkDiskError) -> Value) throws(DarkDiskError) -> Value {
        dispatchPrecondition(condition: .notOnQueue(maintenanceQueue))
        let result: Result<Value, DarkDiskError> = maintenanceQueue.sync {
            do throws(DarkDiskError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Evicts least recently accessed, unretained cache files while the pool's cache files exceed its max
    /// size, down to 99 % of it: a small margin, so that not every import into a full pool pays for an
    /// eviction, yet no single import pays for evicting a large share of a big pool. Returns how many went.
    ///
    /// A cache file larger than the max size on its own cannot be kept: it goes as soon as nobody retains
    /// it, and it does not count against the others (TMDiskCache evicts the whole cache, then the object,
    /// when one object exceeds the limit; here the others stay).
    ///
    /// Runs on the maintenance queue, the one owner of eviction; the caller waits for it.
    @available(*, noasync)
    @discardableResult
    public func enforceLimits(of pool: Pool) throws(DarkDiskError) -> Int {
        try onOwner { () throws(DarkDiskError) in try trim(pool) }
    }

    /// `enforceLimits`, on the maintenance queue.
    @discardableResult
    private func trim(_ pool: Pool) throws(DarkDiskError) -> Int {
        dispatchPrecondition(condition: .onQueue(maintenanceQueue))
        // Partial downloads of node data count against the data pool and go with its cache files, least
        // recently touched first.
        let partialBytes = { (db: Database) throws -> UInt64 in pool == .data ? try Self.partialUsage(db).bytes : 0 }
        let (maxSize, cached) = try read { db in
            (try Self.settings(db, pool: pool).maxSize,
             UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT bytes FROM usage WHERE pool = ? AND mode = 'cache'", arguments: [pool.rawValue]) ?? 0))
             + (try partialBytes(db)))
        }
        guard cached > maxSize else { return 0 }
        let oversizedBytes = { (db: Database) throws -> UInt64 in
            UInt64(max(0, try Int64.fetchOne(db, sql: """
                SELECT COALESCE(SUM(storedSize), 0) FROM file WHERE pool = ? AND mode = 'cache' AND storedSize > ?
                """, arguments: [pool.rawValue, Int64(clamping: maxSize)]) ?? 0))
        }
        var evicted = 0
        let oversized = try read(oversizedBytes)
        if oversized > 0 {
            evicted += try evict(from: [pool], largerThan: maxSize) { db, _ in try oversizedBytes(db) }.evicted
        }
        let lowWater = maxSize - maxSize / 100
        // Measured again inside every eviction transaction, so evictions running at once (another process,
        // the timer, a release) together take only what one would. Oversized files still here are retained
        // (measured once: a scan of the pool's rows).
        let kept = oversized > 0 ? try read(oversizedBytes) : 0
        let excess = { (db: Database) throws -> UInt64 in
            let bytes = UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT bytes FROM usage WHERE pool = ? AND mode = 'cache'",
                                                         arguments: [pool.rawValue]) ?? 0)) + (try partialBytes(db))
            let counted = bytes > kept ? bytes - kept : 0
            return counted > lowWater ? counted - lowWater : 0
        }
        // `deferred`: bytes of held cache files counted as going when released (see `evict`).
        let partials = { [self] (touchedBy: Double, deferred: UInt64) throws(DarkDiskError) -> Int in
            pool == .data ? try evictPartialDownloads(touchedBy: touchedBy) { (_: UInt64) throws(DarkDiskError) in
                let bytes = try read(excess)
                return bytes > deferred ? bytes - deferred : 0
            } : 0
        }
        let files = try evict(from: [pool], deferringHeld: true, partialsTouchedBy: partials) { db, _ in try excess(db) }
        evicted += files.evicted
        // Only partial downloads (touched after every cache file left) are over the limit now.
        evicted += try partials(.infinity, files.deferred)
        if evicted > 0 { logger.debug("evicted \(evicted) files from the \(pool.rawValue) pool") }
        return evicted
    }

    /// Deletes every cache file past its expiration (retained ones when their last token goes). Returns how many.
    @discardableResult
    public func expireFiles() throws(DarkDiskError) -> Int {
        let now = clock.now.timeIntervalSince1970
        let expired = try read { db -> [FileRecord] in
            var result: [FileRecord] = []
            // A file queued for upload may be the only copy: it never expires before it is uploaded.
            let queued = " AND NOT (kind != 'avatar' AND ownerID IN (SELECT nodeID FROM uploadQueue))"
            for pool in Pool.allCases {
                result += try FileRecord.fetchAll(db, sql: """
                    SELECT * FROM file WHERE pool = ? AND mode = 'cache' AND expiration > 0 AND modified + expiration <= ?
                    """ + queued, arguments: [pool.rawValue, now])
                let poolDefault = try Self.settings(db, pool: pool).defaultExpiration
                if poolDefault > 0 {
                    result += try FileRecord.fetchAll(db, sql: """
                        SELECT * FROM file WHERE pool = ? AND mode = 'cache' AND expiration = 0 AND modified <= ?
                        """ + queued, arguments: [pool.rawValue, now - poolDefault])
                }
            }
            return result
        }
        guard !expired.isEmpty else { return 0 }
        try deleteRecords(expired, reason: .expired)
        return expired.count
    }

    /// Evicts cache files (least recently accessed first, any pool) while the cache file system has less
    /// free space than the configured floor: the Linux stand-in for "the OS deletes caches under pressure".
    /// Runs on the maintenance queue, the one owner of eviction; the caller waits for it.
    @discardableResult
    public func enforceFreeSpace() throws(DarkDiskError) -> Int {
        try onOwner { () throws(DarkDiskError) in try freeSpace() }
    }

    /// `enforceFreeSpace`, on the maintenance queue.
    @discardableResult
    private func freeSpace() throws(DarkDiskError) -> Int {
        dispatchPrecondition(condition: .onQueue(maintenanceQueue))
        let fraction = try minimumFreeFraction()
        guard fraction > 0 else { return 0 }
        guard let folder = try? OwnedDescriptor.open(location.cacheDirectory, O_RDONLY | O_DIRECTORY) else { return 0 }
        var st = statvfs()
        guard fstatvfs(folder.rawValue, &st) == 0 else { return 0 }
        let total = Double(st.f_blocks) * Double(st.f_frsize)
        let available = Double(st.f_bavail) * Double(st.f_frsize)
        let wanted = fraction * total
        guard available < wanted else { return 0 }
        let needed = UInt64(wanted - available)
        // Idle partial downloads first: a file that cannot be read without the network anyway.
        var partialFreed: UInt64 = 0
        var evicted = try evictPartialDownloads(touchedBy: .infinity) { freed in
            partialFreed = freed
            return freed < needed ? needed - freed : 0
        }
        evicted += try evict(from: Pool.allCases) { _, freed in freed + partialFreed < needed ? needed - freed - partialFreed : 0 }.evicted
        if evicted > 0 {
            logger.info("free space on \(location.cacheDirectory) below \(Int(fraction * 100)) %: evicted \(evicted) cache files")
        }
        return evicted
    }

    /// Evicts cache files of `pools` (only those larger than `largerThan`, if given), least recently
    /// accessed first, while `excess` (bytes still to free, given the index and the bytes this call freed so
    /// far) is above 0 and candidates remain. Returns how many files went, and the bytes of held files
    /// counted as going.
    ///
    /// A retained file is never deleted. With `deferringHeld` (the pool limits) one that is next in LRU order
    /// counts as going: no newer file goes in its place, and its release kicks the pass that evicts it, if
    /// the pool is still over then (ZeroDark.cloud's "may temporarily exceed the max size" while a file is in use).
    /// So least recently used goes first however releases arrive. Without it (the free-space floor, which
    /// needs the blocks now) a held file is skipped and the next one goes.
    /// `partialsTouchedBy`, for the data pool: evicts the idle partial downloads touched no later than the
    /// given time (called before each batch of cache files, with the batch's newest access time and the
    /// bytes deferred so far), so the two go in one least-recently-touched order.
    private func evict(from pools: [Pool], largerThan: UInt64? = nil, deferringHeld: Bool = false,
                       partialsTouchedBy: ((Double, UInt64) throws(DarkDiskError) -> Int)? = nil,
                       excess: (Database, UInt64) throws -> UInt64) throws(DarkDiskError) -> (evicted: Int, deferred: UInt64) {
        // (The accesses this process noted go in first: the order below is the true one.)
        writeAccessTimes()
        var freed: UInt64 = 0
        var deferred: UInt64 = 0
        var evicted = 0
        var cursor: (lastAccess: Double, id: Int64) = (-Double.infinity, Int64.min)
        let poolList = pools.map { "'\($0.rawValue)'" }.joined(separator: ",")
        while true {
            let (needed, batch) = try read { db -> (UInt64, [FileRecord]) in
                let excess = try excess(db, freed)
                guard excess > deferred else { return (0, []) }
                return (excess - deferred, try FileRecord.fetchAll(db, sql: """
                    SELECT * FROM file WHERE pool IN (\(poolList)) AND mode = 'cache' AND (lastAccess, id) > (?, ?)
                    AND storedSize > ? AND NOT (kind != 'avatar' AND ownerID IN (SELECT nodeID FROM uploadQueue))
                    ORDER BY lastAccess, id LIMIT 64
                    """, arguments: [cursor.lastAccess, cursor.id, largerThan.map { Int64(clamping: $0) } ?? -1]))
            }
            guard needed > 0, !batch.isEmpty else { break }
            // Take just enough of the batch; the next round resumes after the last one tried.
            var chosen: [FileRecord] = []
            var wanted: UInt64 = 0
            for record in batch where wanted < needed {
                chosen.append(record)
                wanted += UInt64(record.storedSize)
            }
            cursor = (chosen.last!.lastAccess, chosen.last!.id ?? 0)
            if let partialsTouchedBy {
                evicted += try partialsTouchedBy(chosen.last!.lastAccess, deferred)
            }
            let outcome = try evictBatch(chosen, alreadyFreed: freed, deferred: deferringHeld ? deferred : nil, excess: excess)
            for record in outcome.removed {
                freed += UInt64(record.storedSize)
                evicted += 1
            }
            if deferringHeld { deferred += outcome.held }
        }
        return (evicted, deferred)
    }

    /// Removes the cache files of `records` that nobody retains, in one index transaction, in their order:
    /// each file's row and the file go under an exclusive lock, so a reader that opened it a moment earlier
    /// either holds it (and it stays) or finds it gone and looks again. With `deferred` (bytes of held files
    /// already counted as going), a held file adds its bytes to it, so later records go only if the excess
    /// is still above what the held ones will free. Returns the records removed (evicted or vanished) and
    /// the bytes of held files counted as going.
    private func evictBatch(_ records: [FileRecord], alreadyFreed: UInt64, deferred: UInt64?,
                            excess: (Database, UInt64) throws -> UInt64) throws(DarkDiskError) -> (removed: [FileRecord], held: UInt64) {
        var locked: [Int: OwnedDescriptor] = [:]
        var vanished: Set<Int> = []
        var retained: Set<Int> = []
        defer { for file in locked.values { try? file.close() } }
        for (index, record) in records.enumerated() {
            let file: OwnedDescriptor
            do { file = try OwnedDescriptor.open(path(of: record), O_RDONLY | O_NOFOLLOW) } catch {
                if error == .noSuchFile { vanished.insert(index) }
                continue
            }
            // (A lock that fails for any other reason than a holder counts as held, as a holder's does.)
            if (try? file.tryLock(.exclusive)) == true {
                locked[index] = file
            } else {
                retained.insert(index)
            }
        }
        let removed = try write { db -> (evicted: [FileRecord], vanished: [FileRecord], held: UInt64) in
            func delete(_ record: FileRecord) throws -> Bool {
                try db.execute(sql: "DELETE FROM file WHERE id = ? AND name = ?", arguments: [record.id, record.name])
                return db.changesCount == 1
            }
            let gone = try vanished.sorted().map { records[$0] }.filter(delete)
            var freed = alreadyFreed + gone.reduce(0) { $0 + UInt64($1.storedSize) }
            var held: UInt64 = 0
            var evicted: [FileRecord] = []
            for (index, record) in records.enumerated() where !vanished.contains(index) {
                guard try excess(db, freed) > (deferred ?? 0) + held else { break }
                if locked[index] == nil {
                    // Held by a retain token: it stays, counted as going when the caller defers held files. One
                    // that cannot be opened (not a regular file of ours, say) is skipped: it would never be released.
                    if deferred != nil, retained.contains(index) { held += UInt64(record.storedSize) }
                    continue
                }
                if try delete(record) {
                    evicted.append(record)
                    freed += UInt64(record.storedSize)
                }
            }
            try deleter.markPending(db, paths: evicted.map(path(of:)))
            return (evicted, gone, held)
        }
        for record in removed.evicted { unlink(path(of: record)) }
        deleter.forget(removed.evicted.map(path(of:)))
        for record in removed.evicted { notify(record, .evicted) }
        for record in removed.vanished { notify(record, .vanished) }
        return (removed.evicted + removed.vanished, removed.held)
    }

    /// Removes files no index row knows (left by a crash between writing a file and committing its row) and
    /// abandoned staging files. A file someone holds a lock on (an import in flight) is left alone.
    @discardableResult
    func sweepOrphans() -> Int {
        var removed = 0
        for staging in [location.persistentStaging, location.cacheStaging] {
            for name in FileOperations.realDirectoryEntries(staging) ?? [] {
                // Unlocked and untouched for ten minutes: a CryptoFile being moved in is briefly unlocked.
                let path = staging + "/" + name
                if removeIfUnlocked(path, stillOrphan: { FileOperations.changedSecondsAgo(path) > 600 }) { removed += 1 }
            }
        }
        for (root, mode) in [(location.persistentFiles, StorageMode.persistent), (location.cacheFiles, .cache)] {
            let known = Set((try? database.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM file WHERE mode = ?", arguments: [mode.rawValue])
            }) ?? [])
            for shard in FileOperations.realDirectoryEntries(root) ?? [] {
                guard let names = FileOperations.realDirectoryEntries(root + "/" + shard) else {
                    logger.warning("ignoring \(root)/\(shard): not a directory of the store (a symbolic link is never followed)")
                    continue
                }
                for name in names where !known.contains(name) {
                    let path = root + "/" + shard + "/" + name
                    switch removeOrphan(path) {
                    case .removed: removed += 1
                    case .locked: lockedOrphans.withLock { _ = $0.insert(path) }
                    case .notOrphan: break
                    }
                }
            }
        }
        removed += sweepPartialOrphans()
        if removed > 0 { logger.info("removed \(removed) orphaned files") }
        return removed
    }

    enum OrphanOutcome { case removed, locked, notOrphan }

    /// Removes a file under the stored-files folders if no row names it and nobody holds it.
    func removeOrphan(_ path: String) -> OrphanOutcome {
        let name = (path as NSString).lastPathComponent
        let mode: StorageMode = path.hasPrefix(location.persistentFiles + "/") ? .persistent : .cache
        let known = { [self] in
            ((try? database.read { db in
                try Bool.fetchOne(db, sql: "SELECT 1 FROM file WHERE name = ? AND mode = ?", arguments: [name, mode.rawValue])
            }) ?? nil) != nil
        }
        guard !known(), access(path, F_OK) == 0 else { return .notOrphan }
        return removeIfUnlocked(path, stillOrphan: { [self] in
            // A version a daemon journaled but the index does not have yet: its record names it (read before the
            // index: the journal is emptied only once the index has every record); a stopped daemon's journal
            // is replayed first.
            if mode == .persistent, let journaled = journaled.withLock({ $0 }), journaled.call(name) { return false }
            return !known()
        }) ? .removed : .locked
    }

    private func retryLockedOrphans() {
        let paths = lockedOrphans.withLock { $0 }
        for path in paths where removeOrphan(path) != .locked {
            lockedOrphans.withLock { _ = $0.remove(path) }
        }
    }

    private func removeIfUnlocked(_ path: String, stillOrphan: () -> Bool) -> Bool {
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { return false }
        defer { try? file.close() }  // (the lock lasts until the file is gone)
        guard (try? file.tryLock(.exclusive)) == true, stillOrphan() else { return false }
        unlink(path)
        deleter.forget(path)
        return true
    }
}
