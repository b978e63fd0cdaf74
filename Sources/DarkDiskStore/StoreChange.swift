/// One change to the store's files, as delivered by `StoreFiles.changes(in:)` (for caches built on top,
/// like the image manager, to drop what they derived from a file).
public struct StoreChange: Sendable, Equatable {
    public enum Reason: String, Sendable {
        case imported, deleted, evicted, expired, migrated, vanished
    }

    public let pool: Pool
    public let kind: FileKind
    /// The node ID, or the user ID for avatars.
    public let ownerID: String
    /// The identity for avatars; empty for node files.
    public let identityID: String
    public let reason: Reason
}
