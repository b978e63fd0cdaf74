import Foundation
import GRDB

extension DiskManager {
    /// The limits of `pool`.
    public func settings(for pool: Pool) throws(DarkDiskError) -> PoolSettings {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT maxSize, defaultExpiration FROM setting WHERE pool = ?", arguments: [pool.rawValue])
            guard let row else { return PoolSettings(maxSize: pool.defaultMaxSize, defaultExpiration: pool.defaultExpiration) }
            return PoolSettings(maxSize: UInt64(max(0, row["maxSize"] as Int64)), defaultExpiration: row["defaultExpiration"])
        }
    }

    /// Sizes and limits of every pool.
    public func status() throws(DarkDiskError) -> [PoolStatus] {
        var result: [PoolStatus] = []
        for pool in Pool.allCases {
            let settings = try settings(for: pool)
            let sums = try read { db in
                try Row.fetchOne(db, sql: """
                    SELECT COALESCE(SUM(CASE WHEN mode = 'persistent' THEN storedSize END), 0) AS persistent,
                           COALESCE(SUM(CASE WHEN mode = 'cache' THEN storedSize END), 0) AS cached,
                           COUNT(*) AS count
                    FROM file WHERE pool = ?
                    """, arguments: [pool.rawValue])!
            }
            let persistent = UInt64(sums["persistent"] as Int64)
            let cached = UInt64(sums["cached"] as Int64)
            result.append(PoolStatus(pool: pool, size: persistent + cached, persistentSize: persistent, cachedSize: cached,
                                     fileCount: sums["count"], settings: settings))
        }
        return result
    }
}
