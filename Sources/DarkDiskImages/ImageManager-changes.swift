import DarkDiskStore

extension ImageManager {
    /// Follows the DiskManager: a node's thumbnail (or whole cloud file) or a user's avatar that is
    /// replaced drops the entries made from an older file, and negative results; one that is deleted drops
    /// all the owner's entries. Evictions, expiries and purges of the disk cache change nothing in memory:
    /// the image is the same, and the memory caches have their own limits.
    func storeDidChange(_ change: StoreChange) {
        let thumbnails: Bool
        switch change.kind {
        case .thumbnail, .data: thumbnails = true
        case .avatar: thumbnails = false
        case .metadata: return
        }
        let cache = thumbnails ? nodeThumbnailsCache : userAvatarsCache
        let owner = change.ownerID
        switch change.reason {
        case .deleted:
            cache.removeEntries { key, _ in key.ownerID == owner }
        case .imported:
            let current: Int64??
            if thumbnails {
                current = (try? NodeID(owner)).flatMap { currentFileID(.thumbnail($0)) }
            } else {
                let user = try? UserID(owner)
                let identity = try? IdentityID(change.identityID)
                if let user, let identity { current = currentFileID(.avatar(user, identity)) } else { current = nil }
            }
            cache.removeEntries { key, entry in
                guard key.ownerID == owner else { return false }
                if !thumbnails, let identity = entry.identityID, identity != change.identityID { return false }
                guard let current else { return true }  // the index cannot say: drop to be safe
                return entry.sourceFileID != current
            }
        case .evicted, .expired, .vanished, .migrated:
            break
        }
    }
}
