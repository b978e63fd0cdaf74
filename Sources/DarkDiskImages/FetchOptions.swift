import DarkDiskCloud

/// Options of one image fetch (ZeroDark.cloud's `ZDCFetchOptions`).
public struct FetchOptions: Sendable, Hashable {
    /// Where the image may come from. `.storedOrRemote` (the default): the memory cache, else the store,
    /// else the remote. `.storedOnly` ("never download"): the memory cache or the store; otherwise the fetch
    /// fails with `notAvailable` and asks the remote nothing. `.remote` ("refresh"): the remote even when
    /// the image is cached in memory or stored; the stored file and the cached images are replaced.
    public var policy: FetchPolicy

    public init(policy: FetchPolicy = .storedOrRemote) {
        self.policy = policy
    }

    /// ZeroDark.cloud's default: memory, then the store, then the remote.
    public static let `default` = FetchOptions()
    /// Never download.
    public static let neverDownload = FetchOptions(policy: .storedOnly)
    /// Download again even if cached.
    public static let refresh = FetchOptions(policy: .remote)
}
