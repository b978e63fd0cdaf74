/// A pool's limits, kept in the index so they survive restarts and a purge of the cache folder.
public struct PoolSettings: Sendable, Equatable, Codable {
    /// Max bytes of cache files in the pool (0: the pool keeps no cache files).
    public var maxSize: UInt64
    /// Seconds after last modification before a cache file expires (0 or less: never).
    public var defaultExpiration: Double
}
