import DarkDisk

/// What makes two download requests identical, so that they share one transfer.
enum TransferKey: Hashable, Sendable {
    case nodeData(NodeID)
    case nodeMeta(NodeID, NodeMetaComponents)
    case userAvatar(UserID, IdentityID?)
}
