/// How much a pool holds, as `darkdisk status` reports it.
public struct PoolStatus: Sendable, Equatable, Codable {
    public let pool: Pool
    /// Bytes of all files (persistent, cache and partial downloads).
    public let size: UInt64
    public let persistentSize: UInt64
    public let cachedSize: UInt64
    /// Bytes received so far by partial (unfinished or interrupted) downloads: data pool only.
    public let partialSize: UInt64
    public let fileCount: Int
    /// Partial downloads on disk (not counted in `fileCount`).
    public let partialCount: Int
    public let settings: PoolSettings
}
