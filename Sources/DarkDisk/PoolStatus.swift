/// How much a pool holds, as `darkdisk status` reports it.
public struct PoolStatus: Sendable, Equatable, Codable {
    public let pool: Pool
    /// Bytes of all files (persistent and cache).
    public let size: UInt64
    public let persistentSize: UInt64
    public let cachedSize: UInt64
    public let fileCount: Int
    public let settings: PoolSettings
}
