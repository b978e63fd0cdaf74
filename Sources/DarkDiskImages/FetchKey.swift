import DarkDiskCloud

/// The key of a fetch in flight: which cache, the entry's key there, and where it may load from (a refresh
/// never joins a fetch that loads from the store, nor the other way round).
struct FetchKey: Hashable, Sendable {
    let thumbnails: Bool
    let key: ImageCacheKey
    let policy: FetchPolicy
}

/// The caller's ticket of the download a fetch needs, of the DownloadManager's kind for its source.
enum FetchTicket: Sendable {
    case thumbnail(DownloadTicket<NodeMetaDownload>)
    case avatar(DownloadTicket<UserAvatarDownload>)

    var thumbnail: DownloadTicket<NodeMetaDownload>? {
        if case .thumbnail(let ticket) = self { ticket } else { nil }
    }

    var avatar: DownloadTicket<UserAvatarDownload>? {
        if case .avatar(let ticket) = self { ticket } else { nil }
    }
}

/// A fetch in flight: everyone waiting for it, and the download it waits on (nil: it loads from the disk).
struct Flight: Sendable {
    var waiters: [FetchWaiter]
    let download: FetchDownload?
}
