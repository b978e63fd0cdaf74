/// The three cache pools, each with its own size limit and default expiration.
public enum Pool: String, Sendable, CaseIterable, Codable {
    case data
    case thumbnails
    case avatars

    /// Max bytes of cache files before eviction: 25 MiB, 5 MiB, 5 MiB.
    public var defaultMaxSize: UInt64 {
        switch self {
        case .data: 25 * 1024 * 1024
        case .thumbnails, .avatars: 5 * 1024 * 1024
        }
    }

    /// Seconds after last modification before a cache file expires; 0 means never: 0, 0, 7 days.
    public var defaultExpiration: Double {
        switch self {
        case .data, .thumbnails: 0
        case .avatars: 7 * 24 * 3600
        }
    }
}
