/// How a download is kept (ZeroDark.cloud's ZDCDownloadOptions). Each kind of download has ZeroDark.cloud's default:
/// node meta and avatars are cached by the DiskManager, node data is not unless asked.
public struct DownloadOptions: Sendable, Equatable {
    /// Store the downloaded file in the DiskManager's cache pool (where it is evicted like any cache file).
    public var cacheToDiskManager: Bool
    /// Node data only: keep the download in the store as a persistent file (never evicted, not counted
    /// against the cache pool's limit), whatever `cacheToDiskManager` says; a node already stored in the
    /// cache pool is made persistent. For "keep this on this device" (`darkdisk fetch --persistent`).
    public var storePersistently: Bool
    /// Whether the answer may come from the stored copy, the remote, or either (default: either).
    public var policy: FetchPolicy

    public init(cacheToDiskManager: Bool, storePersistently: Bool = false, policy: FetchPolicy = .storedOrRemote) {
        self.cacheToDiskManager = cacheToDiskManager || storePersistently
        self.storePersistently = storePersistently
        self.policy = policy
    }

    /// These options with another policy.
    public func with(_ policy: FetchPolicy) -> DownloadOptions {
        var options = self
        options.policy = policy
        return options
    }

    /// The default for `downloadNodeMeta`: cached.
    public static let nodeMeta = DownloadOptions(cacheToDiskManager: true)
    /// The default for `downloadNodeData`: not cached; the caller owns a temporary file.
    public static let nodeData = DownloadOptions(cacheToDiskManager: false)
    /// The default for `downloadUserAvatar`: cached.
    public static let userAvatar = DownloadOptions(cacheToDiskManager: true)
}
