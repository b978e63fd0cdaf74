import DarkDiskCrypto
import Foundation
import GRDB

/// Imports into the store: a node's sections under the node's key, a user's avatars under the user's.
extension DiskManager {
    /// Encrypts (or moves, for a CryptoFile) `diskImport` into the store as the `kind` section of a node,
    /// replacing any previous file of that node and kind. Returns the stored file, retained.
    ///
    /// The file is written to a staging file, flushed and renamed into place before the index row commits,
    /// so a crash leaves either the old file or the new one, never a half-written file in the index.
    @available(*, noasync)
    @discardableResult
    public func importNodeFile(_ diskImport: DiskImport, nodeID: NodeID, kind: FileKind = .data) throws(DarkDiskError) -> DiskExport {
        guard kind != .avatar else {
            throw DarkDiskError(.invalidArgument, "avatars belong to users: use importUserAvatar")
        }
        return try files.store(diskImport, kind: kind, owner: nodeID.rawValue, identity: "", contentKey: outline.nodeKey(nodeID))
    }

    /// `importNodeFile`, with `also` run in the transaction that records the new file (the drive's commit
    /// queues its upload there: a pull never sees the new version unqueued).
    func importNodeFile(_ diskImport: DiskImport, nodeID: NodeID, also: @escaping (Database) throws -> Void) throws(DarkDiskError) -> DiskExport {
        try files.store(diskImport, kind: .data, owner: nodeID.rawValue, identity: "", contentKey: outline.nodeKey(nodeID), also: also)
    }

    /// Stores an avatar for one identity of a user.
    @available(*, noasync)
    @discardableResult
    public func importUserAvatar(_ diskImport: DiskImport, userID: UserID, identityID: IdentityID) throws(DarkDiskError) -> DiskExport {
        try files.store(diskImport, kind: .avatar, owner: userID.rawValue, identity: identityID.rawValue, contentKey: outline.userKey(userID))
    }
}
