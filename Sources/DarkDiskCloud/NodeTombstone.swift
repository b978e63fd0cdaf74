import DarkDisk
import Foundation

/// What a deleted node's record object holds: a sealed note that the node was deleted, with the next
/// generation. A delete is a conditional write of this tombstone (`If-Match` of the record it deletes), not
/// a DELETE of the record: Ceph RGW ignores `If-Match` on DELETE, and a bare absence could be replayed as
/// "never deleted" while a tombstone's generation makes an older record a refused rollback.
///
/// Sealed like a record but under its own context (`Docs/FORMAT.md`, "Node tombstone"), so a reader that
/// predates tombstones refuses one instead of reading it as a live node.
public struct NodeTombstone: Codable, Sendable, Equatable {
    /// The tombstone format: 1.
    public var version: Int = 1
    public var nodeID: String
    /// One more than the generation of the record it replaced.
    public var generation: UInt64
    /// When the node was deleted (seconds since 1970, UTC), for people reading `check --remote`.
    public var deletedAt: Double

    public init(nodeID: NodeID, generation: UInt64, deletedAt: Date) {
        self.nodeID = nodeID.rawValue
        self.generation = generation
        self.deletedAt = deletedAt.timeIntervalSince1970.rounded()
    }

    /// What a tombstone of `nodeID` is bound to: its format and its node.
    static func sealingContext(_ nodeID: NodeID) -> [UInt8] {
        Array("darkdisk node tombstone 1\u{0}".utf8) + Array(nodeID.rawValue.utf8)
    }

    /// The sealed form, as it goes into the bucket at `CloudLayout.record(_:)`.
    public func sealed(with manager: DiskManager) throws(RemoteError) -> Data {
        guard let id = try? NodeID(nodeID), generation > 0 else {
            throw RemoteError(.invalidResponse, "only a tombstone with a generation is sealed")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plaintext = RecordPadding.padded((try? encoder.encode(self)) ?? Data())
        do {
            return Data(try manager.sealRecord(plaintext, context: Self.sealingContext(id)))
        } catch {
            throw RemoteError(.io, "cannot seal the tombstone of node '\(nodeID)': \(error.message)")
        }
    }

    /// Opens a sealed tombstone fetched for `nodeID`; nil if it does not open as one (it may be a record).
    static func open(_ data: Data, expected nodeID: NodeID, with manager: DiskManager) throws(RemoteError) -> NodeTombstone? {
        guard let plaintext = try? manager.openRecord(Array(data), context: sealingContext(nodeID)) else { return nil }
        guard let tombstone = try? JSONDecoder().decode(NodeTombstone.self, from: Data(plaintext)), tombstone.version == 1,
              tombstone.generation > 0 else {
            throw RemoteError(.invalidResponse, "the tombstone of node '\(nodeID)' is malformed")
        }
        guard tombstone.nodeID == nodeID.rawValue else {
            throw RemoteError(.invalidResponse, "the tombstone of node '\(nodeID)' describes another node")
        }
        return tombstone
    }
}
