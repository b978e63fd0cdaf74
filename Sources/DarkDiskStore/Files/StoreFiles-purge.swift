import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// An outside purge of the cache folder (`rm -rf ~/.cache/*`, a cleaner): the cache folder may be deleted
/// at any time, and the pools' totals must not keep counting what went with it.
extension StoreFiles {
    /// Which folder the cache files are in: its device and inode ("none" when it is missing). A purge
    /// removes it (`rm -rf ~/.cache/*`), and the next import makes a new one: either way this changes.
    private var cacheFilesIdentity: String {
        var st = stat()
        return lstat(location.cacheFiles, &st) == 0 ? "\(st.st_dev):\(st.st_ino)" : "none"
    }

    /// If the cache files folder was purged since the last look (it is gone, or another folder stands in
    /// its place), forgets every cache file that went with it, so sizes, `status` and the pool xattrs are
    /// true again. One `lstat` and one index read when nothing happened; a pass over the cache rows (in
    /// batches) when it did. Returns how many files were forgotten. Runs at start-up and on the timer.
    @discardableResult
    func reconcilePurge() throws(DarkDiskError) -> Int {
        let seen = cacheFilesIdentity
        if seen == (try index.text("cacheFilesIdentity")) {
            // Also gone again after a new folder came and went between two looks: no folder, yet cache rows.
            guard seen == "none", try read({ db in try Bool.fetchOne(db, sql: "SELECT 1 FROM file WHERE mode = 'cache' LIMIT 1") }) != nil else {
                return 0
            }
        }
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
        try index.setText(seen, for: "cacheFilesIdentity")
        if forgotten > 0 { logger.info("the cache folder was purged: forgot \(forgotten) cache files that went with it") }
        return forgotten
    }
}
