import Foundation
import GRDB

/// Deleting nodes: their stored files (`StoreFiles`) with their outline entries, pins and queued changes.
extension DiskManager {
    /// Deletes every stored file of a node (data, metadata, thumbnail) and forgets the node entirely, its
    /// entry in the remote's outline too: for a node the remote no longer has (a `pull` does this). Files
    /// held by a retain token are deleted when the last token is released.
    @available(*, noasync)
    public func deleteNode(_ nodeID: NodeID) throws(DarkDiskError) {
        try deleteNodes([nodeID])
    }

    /// Deletes every stored file of each node and forgets the nodes, outline entries included.
    @available(*, noasync)
    public func deleteNodes(_ nodeIDs: [NodeID]) throws(DarkDiskError) {
        try deleteNodes(nodeIDs, keepingOutline: false)
    }

    /// Deletes every stored file of a node (data, metadata, thumbnail) and nothing else: a node the remote's
    /// outline lists stays listed, remote-only again (a read downloads it anew); a node only this store knew
    /// is forgotten. What `darkdisk delete --node` does.
    @available(*, noasync)
    public func deleteLocalFiles(of nodeID: NodeID) throws(DarkDiskError) {
        try deleteLocalFiles(of: [nodeID])
    }

    /// `deleteLocalFiles(of:)` for many nodes in one transaction.
    @available(*, noasync)
    public func deleteLocalFiles(of nodeIDs: [NodeID]) throws(DarkDiskError) {
        try deleteNodes(nodeIDs, keepingOutline: true)
    }

    private func deleteNodes(_ nodeIDs: [NodeID], keepingOutline: Bool) throws(DarkDiskError) {
        // (After what the drive's journal holds: a change waiting there is a local change to keep.)
        drainDriveCommits()
        let ids = nodeIDs.map(\.rawValue)
        let records = try read { db in
            try FileRecord.filter(ids.contains(Column("ownerID")) && Column("kind") != FileKind.avatar.rawValue).fetchAll(db)
        }
        try files.deleteRecords(records, reason: .deleted) { db in
            for id in ids {
                try db.execute(sql: "DELETE FROM node WHERE id = ?" + (keepingOutline ? " AND cloudETag IS NULL" : ""), arguments: [id])
                try db.execute(sql: "DELETE FROM keepPersistent WHERE nodeID = ?", arguments: [id])
                if !keepingOutline {
                    try db.execute(sql: "DELETE FROM conflictCopy WHERE nodeID = ?", arguments: [id])
                    try db.execute(sql: "DELETE FROM pin WHERE nodeID = ?", arguments: [id])
                }
                // A change of files that are gone has nothing left to upload.
                try db.execute(sql: "DELETE FROM uploadQueue WHERE nodeID = ?", arguments: [id])
            }
        }
        // Their partial downloads too, unless a download is writing one right now.
        for id in nodeIDs { files.removeIdlePartialDownload(id) }
    }
}
