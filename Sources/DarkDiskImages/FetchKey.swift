/// The key of a fetch in flight: which cache, and the entry's key there.
struct FetchKey: Hashable, Sendable {
    let thumbnails: Bool
    let key: ImageCacheKey
}
