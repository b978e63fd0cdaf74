import DarkDiskStore

/// What makes two download requests identical, so that they share one transfer (a refresh never joins a
/// transfer that may answer from the store, nor the other way round).
enum TransferKey: Hashable, Sendable {
    case nodeData(NodeID, FetchPolicy)
    case nodeMeta(NodeID, NodeMetaComponents, FetchPolicy)
    case userAvatar(UserID, IdentityID?, FetchPolicy)
}
