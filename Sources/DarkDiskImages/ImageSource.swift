import DarkDiskStore

/// Whose image a fetch is for: a node's thumbnail, or a user's avatar (one identity, or the display one).
enum ImageSource: Sendable, Hashable {
    case thumbnail(NodeID)
    case avatar(UserID, IdentityID?)

    /// The memory-cache key for the result of `processor` (nil: not cached, as the identifier is nil).
    func cacheKey(_ processor: ImageProcessor?) -> ImageCacheKey? {
        let processorID: String
        if let processor {
            guard let identifier = processor.identifier else { return nil }
            processorID = identifier
        } else {
            processorID = ""
        }
        switch self {
        case .thumbnail(let node): return ImageCacheKey(ownerID: node.rawValue, processorID: processorID)
        case .avatar(let user, let identity): return ImageCacheKey(ownerID: user.rawValue, identityID: identity?.rawValue ?? "", processorID: processorID)
        }
    }

    var isThumbnail: Bool {
        if case .thumbnail = self { return true }
        return false
    }
}
