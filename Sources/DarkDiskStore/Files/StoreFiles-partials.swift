import DarkDiskSystem
import Foundation
import GRDB

/// Partial downloads as part of the data pool: counted in its size, evicted least recently
/// touched first when the pool or the disk needs room (never while a downloader holds one), dropped with
/// their node, and swept when no index row knows them.
extension StoreFiles {
    /// Bytes and count of the partial downloads on disk (they belong to the data pool).
    package func partialDownloadUsage() throws(DarkDiskError) -> (bytes: UInt64, files: Int) {
        try read { db in try Self.partialUsage(db) }
    }

    static func partialUsage(_ db: Database) throws -> (bytes: UInt64, files: Int) {
        let row = try Row.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS files FROM download")
        return (UInt64(max(0, row?["bytes"] as Int64? ?? 0)), row?["files"] ?? 0)
    }

    /// Removes the partial download of `nodeID` unless a downloader holds it; whether it is gone.
    @discardableResult
    func removeIdlePartialDownload(_ nodeID: NodeID) -> Bool {
        let folder = location.cacheDirectory + "/partial"
        let lockPath = folder + "/" + nodeID.rawValue + ".lock"
        var folderStat = stat()
        if lstat(folder, &folderStat) != 0, errno == ENOENT {
            // The cache folder was purged: no downloader holds anything there, only the row is left.
            do { try removePartialDownload(nodeID) } catch { return false }
            return true
        }
        guard let lock = try? OwnedDescriptor.open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600) else { return false }
        defer { try? lock.close() }  // (after the lock file is removed, below)
        guard (try? lock.tryLock(.exclusive)) == true else { return false }
        // The lock we hold must be the file at the path (a downloader that just finished removes its lock
        // file, and the next one makes a new one); it goes while we hold it, as a downloader's does.
        var current = stat()
        guard let held = try? lock.stat(), stat(lockPath, &current) == 0, held.st_ino == current.st_ino, held.st_dev == current.st_dev else { return false }
        defer { unlink(lockPath) }
        do { try removePartialDownload(nodeID) } catch {
            logger.error("cannot remove the partial download of node '\(nodeID)': \(error)")
            return false
        }
        return true
    }

    /// Removes idle partial downloads touched no later than `touchedBy`, least recently touched first, until
    /// `excess` (bytes still to free, given the bytes freed so far) is 0. Returns how many went. On the
    /// maintenance queue.
    func evictPartialDownloads(touchedBy: Double, excess: (UInt64) throws(DarkDiskError) -> UInt64) throws(DarkDiskError) -> Int {
        let candidates = try read { db in
            try Row.fetchAll(db, sql: "SELECT nodeID, bytes FROM download WHERE lastAccess <= ? ORDER BY lastAccess, nodeID",
                             arguments: [touchedBy])
                .map { (nodeID: $0["nodeID"] as String, bytes: UInt64(max(0, $0["bytes"] as Int64))) }
        }
        var freed: UInt64 = 0
        var evicted = 0
        for candidate in candidates {
            guard try excess(freed) > 0 else { break }
            // A pinned node's download resumes where it stopped: never evicted.
            guard let id = try? NodeID(candidate.nodeID), (try? read { db in try PinSettings.isPinned(db, id) }) != true, removeIdlePartialDownload(id) else { continue }
            freed += candidate.bytes
            evicted += 1
        }
        if evicted > 0 { logger.debug("evicted \(evicted) partial downloads (\(freed) bytes)") }
        return evicted
    }

    /// Removes files in the partial folder that no download row names and nobody holds, untouched for ten
    /// minutes (a crash between creating one and recording it, or a meta download's scratch file).
    func sweepPartialOrphans() -> Int {
        let folder = location.cacheDirectory + "/partial"
        guard let names = FileOperations.realDirectoryEntries(folder) else { return 0 }
        let known = Set((try? database.read { db in try String.fetchAll(db, sql: "SELECT partialName FROM download") }) ?? [])
        var removed = 0
        for name in names where !name.hasSuffix(".lock") && !known.contains(name) {
            let path = folder + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0, clock.now.timeIntervalSince1970 - Double(st.st_ctim.tv_sec) > 600 else { continue }
            guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_NOFOLLOW) else { continue }
            defer { try? file.close() }  // (the lock lasts until the file is gone)
            guard (try? file.tryLock(.exclusive)) == true else { continue }
            let stillUnknown = ((try? database.read { db in
                try Bool.fetchOne(db, sql: "SELECT 1 FROM download WHERE partialName = ?", arguments: [name])
            }) ?? nil) == nil
            if stillUnknown, unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}
