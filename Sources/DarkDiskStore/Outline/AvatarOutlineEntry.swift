/// An identity's avatar as the remote's user record describes it: enough to list it under `/avatars` and
/// size it before it is downloaded.
public struct AvatarOutlineEntry: Sendable, Equatable, Hashable {
    public let userID: UserID
    public let identityID: IdentityID
    /// The avatar image's size in bytes (plaintext).
    public var plaintextSize: UInt64
    /// The avatar's key wrapped by the master key; a new one means a new avatar (every push uses a fresh key).
    public var wrappedKey: [UInt8]

    public init(userID: UserID, identityID: IdentityID, plaintextSize: UInt64, wrappedKey: [UInt8]) {
        self.userID = userID
        self.identityID = identityID
        self.plaintextSize = plaintextSize
        self.wrappedKey = wrappedKey
    }
}
