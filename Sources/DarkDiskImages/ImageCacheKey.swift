/// The key of a memory-cache entry: whose image (a node ID, or a user ID and identity) and which
/// processor's result (its identifier; empty for the unprocessed image).
public struct ImageCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The node ID, or the user ID for avatars.
    public let ownerID: String
    /// The identity for avatars; empty for node thumbnails and for a user's display identity.
    public let identityID: String
    /// The processor's identifier; empty for the image as stored.
    public let processorID: String

    public init(ownerID: String, identityID: String = "", processorID: String = "") {
        self.ownerID = ownerID
        self.identityID = identityID
        self.processorID = processorID
    }

    public var description: String {
        [ownerID, identityID, processorID].filter { !$0.isEmpty }.joined(separator: "/")
    }
}
