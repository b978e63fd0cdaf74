import DarkDiskCrypto

/// What a content key wrapped by the master key belongs to, as the bucket carries it: a node's key in its
/// record, an avatar's in its user's record. The wrap is bound to it (`SymmetricKey.wrap(_:boundTo:)`), so
/// a wrapped key moved to another node or avatar does not unwrap there.
package enum KeyOwner: Sendable, Hashable {
    case node(NodeID)
    case avatar(UserID, IdentityID)

    /// The wrap's context: the purpose, a NUL, the owner's IDs separated by NULs.
    var context: [UInt8] {
        switch self {
        case .node(let id): Array("node".utf8) + [0] + Array(id.rawValue.utf8)
        case .avatar(let user, let identity): Array("avatar".utf8) + [0] + Array(user.rawValue.utf8) + [0] + Array(identity.rawValue.utf8)
        }
    }
}
