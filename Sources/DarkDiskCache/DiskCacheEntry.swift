import Foundation

/// What enumeration tells about one entry of a `DiskCache`, without reading its value.
public struct DiskCacheEntry: Sendable, Hashable {
    /// The entry's key.
    public let key: String
    /// The bytes it occupies, as counted by `DiskCache.byteCount` (a file's allocated blocks, or the length of
    /// a small value kept in the index).
    public let byteCount: Int
    /// The value's length in bytes.
    public let length: Int
    /// When the key was first set (kept across later sets of the same key).
    public let created: Date
    /// When the value was last set.
    public let modified: Date
    /// When the value was last read or set; LRU trims and `ageLimit` go by this. Reads are written to the index in the
    /// background, at most about a second late (a process that exits without releasing its caches loses
    /// at most that last second of reads).
    public let accessed: Date
}
