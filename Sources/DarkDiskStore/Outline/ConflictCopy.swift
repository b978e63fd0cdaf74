import Foundation

/// A node a push made when the remote had changed since the store last saw the node: the
/// remote's version kept the original node, and the local change became this new node beside it.
public struct ConflictCopy: Sendable, Equatable {
    /// The copy's own node.
    public let nodeID: NodeID
    /// The node whose remote version won.
    public let originalID: NodeID
    /// The copy's name: `NAME (conflict HOST YYYY-MM-DD HHMMSS).EXT`.
    public let name: String
    public let createdAt: Date

    public init(nodeID: NodeID, originalID: NodeID, name: String, createdAt: Date) {
        self.nodeID = nodeID
        self.originalID = originalID
        self.name = name
        self.createdAt = createdAt
    }
}
