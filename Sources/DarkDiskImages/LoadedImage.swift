import DarkDiskStore
import Foundation

/// The image bytes a fetch loaded (from the store or the remote) before processing, or a definite "none".
struct LoadedImage: Sendable {
    /// The decrypted image, or nil: the node has no thumbnail, the identity no avatar.
    var bytes: Data?
    /// The stored file they came from (`StoredFile.fileID`), when there is one.
    var sourceFileID: Int64?
    /// For avatars: the identity they belong to.
    var identityID: IdentityID?
    /// A stand-in (a stored avatar while the remote cannot name the display identity): delivered, not cached.
    var provisional = false
}
