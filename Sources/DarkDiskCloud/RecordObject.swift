import DarkDisk
import Foundation

/// What a node's record object in the bucket holds: the node's record, or the tombstone a delete left.
public enum RecordObject: Sendable, Equatable {
    case record(NodeRecord)
    case tombstone(NodeTombstone)

    /// The generation it carries (0 for a legacy record); a store refuses one lower than it has applied.
    public var generation: UInt64 {
        switch self {
        case .record(let record): record.generation ?? 0
        case .tombstone(let tombstone): tombstone.generation
        }
    }

    /// The record, if the node is not deleted.
    public var record: NodeRecord? {
        if case .record(let record) = self { return record }
        return nil
    }

    /// Reads a record object: a sealed record or tombstone (by which one opens). Throws the record's own error
    /// when neither opens. An unsealed record (plain JSON, `records/<id>.json`: what darkdisk wrote before
    /// records were sealed, or what anyone without the key can write) is refused: anybody could have made it.
    public static func read(_ data: Data, sealed: Bool, expected nodeID: NodeID, with manager: DiskManager) throws(RemoteError) -> RecordObject {
        guard sealed else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is unsealed (plain JSON, \(CloudLayout.legacyRecord(nodeID))), as anyone with access to the bucket could write it: refused (a store that has the node seals it with 'darkdisk push --node \(nodeID)')")
        }
        do {
            return .record(try NodeRecord.open(data, expected: nodeID, with: manager))
        } catch {
            guard let tombstone = try NodeTombstone.open(data, expected: nodeID, with: manager) else { throw error }
            return .tombstone(tombstone)
        }
    }
}
