import Foundation

extension DiskCache {
    /// Removes the entries not accessed (read or set) since `date`.
    public func trim(toDate date: Date) throws(DiskCacheError) {
        try trim(.accessedBefore(date.timeIntervalSince1970))
    }

    /// Removes entries, largest first, until the cache holds at most `byteCount` bytes.
    public func trim(toSize byteCount: Int) throws(DiskCacheError) {
        try trim(.largestFirst(max(0, byteCount)))
    }

    /// Removes entries, least recently used first (by persisted access times), until the cache holds at most
    /// `byteCount` bytes.
    public func trim(toSizeByDate byteCount: Int) throws(DiskCacheError) {
        try trim(.leastRecentlyUsed(max(0, byteCount)))
    }

    /// Removes the entries unused for longer than `ageLimit` (what its timer runs); nothing without an age limit.
    public func trimExpired() throws(DiskCacheError) {
        guard let cutoff else { return }
        try trim(.accessedBefore(cutoff))
    }

    private func trim(_ rule: CacheFolder.TrimRule) throws(DiskCacheError) {
        let hooks = hooks
        let removed = try folder.trim(rule, willRemove: { fire(hooks.willRemove, $0) })
        for entry in removed { fire(hooks.didRemove, entry.key) }
    }
}
