import DarkDiskStore
import Foundation

/// What `downloadUserAvatar` delivers: the identity chosen and its avatar image, or nil when that identity
/// has no avatar (a definite answer, which image caches may keep as a negative result).
public struct UserAvatarDownload: Sendable {
    public let userID: UserID
    public let identityID: IdentityID
    /// The decrypted image bytes, or nil if the identity has no avatar.
    public let image: Data?
    /// The stored avatar, when the download was cached by the DiskManager (or was already local).
    public let export: DiskExport?
}
