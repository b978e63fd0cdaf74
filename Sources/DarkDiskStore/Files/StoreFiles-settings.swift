import Foundation
import GRDB

/// Settings: each pool's max size and default expiration, and the cache disk's free-space floor.
extension StoreFiles {
    /// The limits of `pool`.
    public func settings(for pool: Pool) throws(DarkDiskError) -> PoolSettings {
        try quickRead { db in try Self.settings(db, pool: pool) }
    }

    static func settings(_ db: Database, pool: Pool) throws -> PoolSettings {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT maxSize, defaultExpiration FROM setting WHERE pool = ?"), arguments: [pool.rawValue])
        guard let row else { return PoolSettings(maxSize: pool.defaultMaxSize, defaultExpiration: pool.defaultExpiration) }
        return PoolSettings(maxSize: UInt64(max(0, row["maxSize"] as Int64)), defaultExpiration: row["defaultExpiration"])
    }

    /// Sets a pool's max cache size in bytes (0: keep no cache files) and evicts down to it.
    public func setMaxSize(_ bytes: UInt64, for pool: Pool) throws(DarkDiskError) {
        guard bytes <= UInt64(Int64.max) else { throw DarkDiskError(.invalidArgument, "max size \(bytes) is too large") }
        try write { db in
            try db.execute(sql: "UPDATE setting SET maxSize = ? WHERE pool = ?", arguments: [Int64(bytes), pool.rawValue])
        }
        try enforceLimits(of: pool)
    }

    /// Sets a pool's default expiration in seconds for cache files imported with expiration 0
    /// (0 or less: never), and expires what is now past it.
    public func setDefaultExpiration(_ seconds: Double, for pool: Pool) throws(DarkDiskError) {
        guard seconds.isFinite else { throw DarkDiskError(.invalidArgument, "expiration must be a finite number of seconds") }
        try write { db in
            try db.execute(sql: "UPDATE setting SET defaultExpiration = ? WHERE pool = ?", arguments: [seconds, pool.rawValue])
        }
        try expireFiles()
    }

    /// The fraction of the cache file system kept free by evicting cache files (default 0.10).
    public func minimumFreeFraction() throws(DarkDiskError) -> Double {
        try read { db in try Self.minimumFreeFraction(db) }
    }

    static func minimumFreeFraction(_ db: Database) throws -> Double {
        try Double.fetchOne(db, sql: "SELECT value FROM storeSetting WHERE key = 'minFreeFraction'") ?? 0.10
    }

    /// Sets the fraction (0 to 0.9) of the cache file system to keep free; 0 turns the floor off.
    public func setMinimumFreeFraction(_ fraction: Double) throws(DarkDiskError) {
        guard fraction.isFinite, fraction >= 0, fraction <= 0.9 else {
            throw DarkDiskError(.invalidArgument, "the free-space floor must be between 0 and 0.9 (90 %)")
        }
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO storeSetting (key, value) VALUES ('minFreeFraction', ?)", arguments: [fraction])
        }
        try enforceFreeSpace()
    }
}
