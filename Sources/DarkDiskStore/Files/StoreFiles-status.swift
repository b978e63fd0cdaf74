import Foundation
import GRDB

extension StoreFiles {
    /// Bytes of `pool`'s files on disk: all of them (partial downloads included), or only persistent or only
    /// cache files.
    public func storageSize(of pool: Pool, mode: StorageMode? = nil) throws(DarkDiskError) -> UInt64 {
        try read { db in
            if let mode {
                return UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT bytes FROM usage WHERE pool = ? AND mode = ?",
                                                        arguments: [pool.rawValue, mode.rawValue]) ?? 0))
            }
            return UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT SUM(bytes) FROM usage WHERE pool = ?", arguments: [pool.rawValue]) ?? 0))
                + (pool == .data ? try Self.partialUsage(db).bytes : 0)
        }
    }

    /// Sizes and limits of every pool.
    public func status() throws(DarkDiskError) -> [PoolStatus] {
        try read { db in
            try Pool.allCases.map { pool in
                let rows = try Row.fetchAll(db, sql: "SELECT mode, bytes, files FROM usage WHERE pool = ?", arguments: [pool.rawValue])
                var persistent: Int64 = 0, cached: Int64 = 0, files = 0
                for row in rows {
                    if row["mode"] == StorageMode.persistent.rawValue { persistent = row["bytes"] } else { cached = row["bytes"] }
                    files += row["files"] as Int
                }
                let partial = pool == .data ? try Self.partialUsage(db) : (bytes: 0, files: 0)
                return PoolStatus(pool: pool, size: UInt64(persistent + cached) + partial.bytes, persistentSize: UInt64(persistent),
                                  cachedSize: UInt64(cached), partialSize: partial.bytes, fileCount: files, partialCount: partial.files,
                                  settings: try Self.settings(db, pool: pool))
            }
        }
    }
}
