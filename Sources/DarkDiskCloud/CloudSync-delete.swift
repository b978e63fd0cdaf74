import DarkDiskStore
import Foundation

/// Deleting a node everywhere: its record is replaced by a tombstone on condition that it is
/// still the one this store last saw, so a change another machine made meanwhile is never deleted unseen.
extension CloudSync {
    /// Replaces the node's record in the remote by a sealed tombstone (`NodeTombstone`, the next generation,
    /// written `If-Match` the record this store last applied), then deletes the node from this store (files,
    /// outline entry, queued change). Its cloud file versions are left to `gc`, which deletes them after its
    /// grace period (a machine may still be reading one). A record newer than the one this store applied, or
    /// one that changes meanwhile, is `.preconditionFailed` and nothing is deleted; a record that does not
    /// authenticate is never replaced (one-line error). A node the remote no longer has, or has a tombstone
    /// for, is just deleted here.
    ///
    /// A tombstone rather than a conditional DELETE: Ceph RGW ignores `If-Match` on DELETE (a delete based on
    /// a replaced record went through there), while every S3 server and `file://` honour it on PUT; and the
    /// tombstone's generation makes a replayed older record a refused rollback on every machine.
    public func deleteNode(_ nodeID: NodeID) async throws {
        let applied = try await manager.records.generation(of: nodeID)
        if let current = try await currentRecord(of: nodeID) {
            guard let state = current.state else {
                throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' in \(remote.url) does not authenticate; it was not deleted (see 'darkdisk check --remote')")
            }
            if case .record(let record) = state {
                let changed = RemoteError(.preconditionFailed, "node '\(nodeID)' changed in \(remote.url) since this store last saw it; nothing was deleted (pull, then delete again)")
                guard record.generation ?? 0 <= applied else { throw changed }
                let generation = max(applied, record.generation ?? 0) + 1
                // Written where the record is (under the node's ID for a record written before keyed names).
                var tombstone = NodeTombstone(nodeID: nodeID, generation: generation, deletedAt: manager.clock.now)
                if !current.keyed { tombstone.version = 1 }
                var lostRace = false
                do {
                    _ = try await remote.write(current.key, data: try tombstone.sealed(with: manager), condition: current.condition)
                } catch {
                    guard error.code == .preconditionFailed else { throw error }
                    lostRace = true
                }
                // Unless it was this write landing before a retry (or the same delete from another machine).
                if lostRace, try await currentRecord(of: nodeID)?.state != .tombstone(tombstone) { throw changed }
                try await manager.records.note([nodeID: generation])
            } else {
                try await manager.records.note([nodeID: state.generation])
            }
        }
        try await remote.delete(CloudLayout.legacyRecord(nodeID))
        try await manager.deleteNodes([nodeID])
    }
}
