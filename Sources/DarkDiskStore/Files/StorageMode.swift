/// Persistent files stay until deleted; cache files belong to a size-limited, expiring pool.
public enum StorageMode: String, Sendable, Codable {
    case persistent
    case cache
}
