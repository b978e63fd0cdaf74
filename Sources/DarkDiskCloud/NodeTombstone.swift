import DarkDiskStore
import Foundation

/// What a deleted node's record object holds: a sealed note that the node was deleted, with the next
/// generation. A delete is a conditional write of this tombstone (`If-Match` of the record it deletes), not
/// a DELETE of the record: Ceph RGW ignores `If-Match` on DELETE, and a bare absence could be replayed as
/// "never deleted" while a tombstone's generation makes an older record a refused rollback.
///
/// Sealed like a record but under its own context (`Docs/FORMAT.md`, "Node tombstone"), so a reader that
/// predates tombstones refuses one instead of reading it as a live node: version 2 binds the node's keyed
/// name, version 1 (what stores wrote before keyed names) its node ID.
package struct NodeTombstone: Codable, Sendable, Equatable {
    /// The tombstone format: 2 (under the node's keyed name; 1 under its node ID).
    package var version: Int = 2
    package var nodeID: String
    /// One more than the generation of the record it replaced.
    package var generation: UInt64
    /// When the node was deleted (seconds since 1970, UTC), for people reading `check --remote`.
    package var deletedAt: Double
    /// True in the note a push leaves under a node's ID (version 1) when it moves the node's record to its
    /// keyed name: the node is not deleted, its record is the keyed one (this note is deleted right after).
    package var moved: Bool?

    package init(nodeID: NodeID, generation: UInt64, deletedAt: Date) {
        self.nodeID = nodeID.rawValue
        self.generation = generation
        self.deletedAt = deletedAt.timeIntervalSince1970.rounded()
    }

    /// The note a push leaves under the node's ID when it moves the node's record to its keyed name, at the
    /// generation of the keyed record.
    static func moved(_ nodeID: NodeID, generation: UInt64, at date: Date) -> NodeTombstone {
        var note = NodeTombstone(nodeID: nodeID, generation: generation, deletedAt: date)
        note.version = 1
        note.moved = true
        return note
    }

    /// What a tombstone under the name `name` is bound to: its format and that name (version 2: the node's
    /// keyed name; version 1: its node ID).
    static func sealingContext(keyed: Bool, name: String) -> [UInt8] {
        Array((keyed ? "darkdisk node tombstone 2\u{0}" : "darkdisk node tombstone 1\u{0}").utf8) + Array(name.utf8)
    }

    /// The sealed form, as it goes into the bucket at `CloudLayout.record(_:with:)` (version 1: at
    /// `CloudLayout.recordByID`).
    package func sealed(with manager: DiskManager) throws(RemoteError) -> Data {
        guard let id = try? NodeID(nodeID), generation > 0, version == 1 || version == 2 else {
            throw RemoteError(.invalidResponse, "only a version 1 or 2 tombstone with a generation is sealed")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plaintext = RecordPadding.padded((try? encoder.encode(self)) ?? Data())
        let keyed = version == 2
        do {
            return Data(try manager.keys.sealRecord(plaintext, context: Self.sealingContext(keyed: keyed, name: CloudLayout.nodeName(id, keyed: keyed, with: manager))))
        } catch {
            throw RemoteError(.io, "cannot seal the tombstone of node '\(nodeID)': \(error.message)")
        }
    }

    /// Opens a sealed tombstone read under `name` (as `NodeRecord.open`); nil if it does not open as one (it
    /// may be a record).
    static func open(_ data: Data, name: String, keyed: Bool, expected: NodeID?, with manager: DiskManager) throws(RemoteError) -> NodeTombstone? {
        guard let plaintext = try? manager.keys.openRecord(Array(data), context: sealingContext(keyed: keyed, name: name)) else { return nil }
        let whose = RecordObject.whose(name: name, keyed: keyed, expected: expected).replacingOccurrences(of: "the record", with: "the tombstone")
        guard let tombstone = try? JSONDecoder().decode(NodeTombstone.self, from: Data(plaintext)), tombstone.version == (keyed ? 2 : 1),
              tombstone.generation > 0, let id = try? NodeID(tombstone.nodeID), tombstone.moved == nil || !keyed else {
            throw RemoteError(.invalidResponse, "\(whose) is malformed")
        }
        guard CloudLayout.nodeName(id, keyed: keyed, with: manager) == name, expected.map({ $0 == id }) ?? true else {
            throw RemoteError(.invalidResponse, "\(whose) describes another node")
        }
        return tombstone
    }
}
