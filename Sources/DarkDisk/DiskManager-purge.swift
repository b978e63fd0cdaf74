import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// An outside purge of the cache folder (`rm -rf ~/.cache/*`, a cleaner): the cache folder may be deleted
/// at any time (DESIGN §2), and the pools' totals must not keep counting what went with it.
extension DiskManager {
    /// A file the store keeps in the cache files folder: gone means the folder was purged.
    var purgeSentinel: String { location.cacheFiles + "/.present" }

    /// If the cache folder was purged since the last look (its sentinel is gone), forgets every cache file
    /// that went with it, so sizes, `status` and the pool xattrs are true again, and puts the sentinel back.
    /// One `access` call when nothing happened; a pass over the cache rows (in batches) when it did.
    /// Returns how many files were forgotten. Runs at start-up and on the maintenance timer.
    @discardableResult
    func reconcilePurge() throws(DarkDiskError) -> Int {
        guard access(purgeSentinel, F_OK) != 0 else { return 0 }
        var forgotten = 0
        var after: Int64 = 0
        while true {
            let batch = try read { db in
                try FileRecord.fetchAll(db, sql: "SELECT * FROM file WHERE mode = 'cache' AND id > ? ORDER BY id LIMIT 512", arguments: [after])
            }
            guard let last = batch.last else { break }
            after = last.id ?? after
            let vanished = batch.filter { record in
                var st = stat()
                return lstat(path(of: record), &st) != 0 && errno == ENOENT
            }
            if !vanished.isEmpty {
                try deleteRecords(vanished, reason: .vanished)
                forgotten += vanished.count
            }
        }
        try FileOperations.makeDirectory(location.cacheFiles)
        let fd = open(purgeSentinel, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 { close(fd) }
        if forgotten > 0 { logger.info("the cache folder was purged: forgot \(forgotten) cache files that went with it") }
        return forgotten
    }
}
