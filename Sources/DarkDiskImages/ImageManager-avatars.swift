import DarkDiskStore
import DarkDiskCloud
import Foundation

extension ImageManager {
    /// Fetches a user's avatar (ZeroDark.cloud's `fetchUserAvatar`): of `identityID`, or of the user's display
    /// identity when nil, processed by `processor` if given. The `preFetch` / `postFetch` contract is
    /// `fetchNodeThumbnail`'s; the key is user ID + identity + the processor's identifier, the cache
    /// `userAvatarsCache`, and a negative result means the identity has no avatar.
    ///
    /// Returns the ticket of the download the fetch needs (the DownloadManager's `downloadUserAvatar`:
    /// progress, cancel), whose result is the one `postFetch` gets; or nil when no download is needed: a
    /// memory hit, or the named identity's avatar is on local disk (without `identityID` the user's record
    /// is always read from the remote, so there is a ticket whenever there is a remote). `options` may
    /// forbid the download (`.neverDownload`: without `identityID`, the user's most recently stored avatar)
    /// or ask the remote even if cached (`.refresh`).
    @discardableResult
    public func fetchUserAvatar(_ userID: UserID, identityID: IdentityID? = nil, options: FetchOptions = .default, processor: ImageProcessor? = nil,
                                preFetch: (_ image: ProcessedImage?, _ willFetch: Bool) -> Void,
                                postFetch: @escaping @Sendable (_ image: ProcessedImage?, _ error: ImageError?) -> Void) -> DownloadTicket<UserAvatarDownload>? {
        fetch(.avatar(userID, identityID), processor: processor, options: options, preFetch: preFetch, postFetch: postFetch)?.avatar
    }

    /// The user's avatar (of `identityID`, else of the display identity), processed by `processor` if
    /// given, as `fetchUserAvatar` gets it (with `options` as there). Nil when the identity has no avatar.
    public func userAvatar(_ userID: UserID, identityID: IdentityID? = nil, options: FetchOptions = .default,
                           processor: ImageProcessor? = nil) async throws(ImageError) -> ProcessedImage? {
        try await image(.avatar(userID, identityID), processor: processor, options: options)
    }

    /// Removes every cached avatar of a user (all identities, every processor's, negative results).
    public func flushUserAvatarsCache(_ userID: UserID) {
        userAvatarsCache.removeAll { $0.ownerID == userID.rawValue }
    }

    /// Removes every cached avatar made by the processor with this identifier.
    public func flushUserAvatarsCache(processorID: String) {
        userAvatarsCache.removeAll { $0.processorID == processorID }
    }

    /// The avatar to show for a user who has none (a grey silhouette, 128 px PNG, shipped with the package).
    public static func defaultUserAvatar() throws(ImageError) -> ProcessedImage {
        try DefaultAvatars.user.get()
    }

    /// The avatar to show for a group of users (two silhouettes, 128 px PNG, shipped with the package).
    public static func defaultMultiUserAvatar() throws(ImageError) -> ProcessedImage {
        try DefaultAvatars.multiUser.get()
    }
}
