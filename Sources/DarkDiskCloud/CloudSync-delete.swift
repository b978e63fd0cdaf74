import DarkDisk
import Foundation

/// Deleting a node everywhere (DESIGN §4): its record goes from the remote on condition that it is still the
/// one this store last saw, so a change another machine made meanwhile is never deleted unseen.
extension CloudSync {
    /// Deletes the node's record from the remote (`If-Match` the record this store last applied), then the
    /// node from this store (files, outline entry, queued change). Its cloud file versions are left to `gc`,
    /// which deletes them after its grace period (a machine may still be reading one). A record newer than
    /// the one this store applied, or one that changes meanwhile, is `.preconditionFailed` and nothing is
    /// deleted; a record that does not authenticate is never deleted (one-line error). A node the remote no
    /// longer has is just deleted here.
    public func deleteNode(_ nodeID: NodeID) async throws {
        let applied = try manager.recordGeneration(of: nodeID)
        if let current = try await currentRecord(of: nodeID) {
            guard let record = current.record else {
                throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' in \(remote.url) does not authenticate; it was not deleted (see 'darkdisk check --remote')")
            }
            let changed = RemoteError(.preconditionFailed, "node '\(nodeID)' changed in \(remote.url) since this store last saw it; nothing was deleted (pull, then delete again)")
            guard record.generation ?? 0 <= applied else { throw changed }
            do {
                try await remote.delete(CloudLayout.record(nodeID), condition: .matches(current.object.etag))
            } catch {
                throw error.code == .preconditionFailed ? changed : error
            }
        }
        try await remote.delete(CloudLayout.legacyRecord(nodeID))
        try await manager.deleteNodes([nodeID])
    }
}
