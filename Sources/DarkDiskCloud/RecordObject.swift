import DarkDiskStore
import Foundation

/// What a node's record object in the bucket holds: the node's record, or the tombstone a delete left.
package enum RecordObject: Sendable, Equatable {
    case record(NodeRecord)
    case tombstone(NodeTombstone)

    /// The generation it carries (0 for a legacy record); a store refuses one lower than it has applied.
    package var generation: UInt64 {
        switch self {
        case .record(let record): record.generation ?? 0
        case .tombstone(let tombstone): tombstone.generation
        }
    }

    /// The record, if the node is not deleted.
    package var record: NodeRecord? {
        if case .record(let record) = self { return record }
        return nil
    }

    /// Words for the record under `name` in a refusal: its node's, when known.
    static func whose(name: String, keyed: Bool, expected: NodeID?) -> String {
        if let expected { return "the record of node '\(expected)'" }
        return keyed ? "the record \(CloudLayout.recordsPrefix)\(name).rec" : "the record of node '\(name)'"
    }

    /// Reads the record object at `key` (a key under `records/`): a sealed record or tombstone under its
    /// node's keyed name, or, as stores named them before, under its node ID; which one opens says which.
    /// Refused in one line when none opens, when it is malformed, when it holds another node than the name
    /// (or `expected`) says, and when it is unsealed: plain JSON (`records/<id>.json`, what darkdisk wrote
    /// before records were sealed, or what anyone without the key can write), as anybody could have made it.
    package static func read(_ data: Data, key: String, expected: NodeID? = nil, with manager: DiskManager) throws(RemoteError) -> OpenedRecord {
        guard let name = CloudLayout.recordName(ofKey: key) else {
            throw RemoteError(.invalidResponse, "\(key) is not a record's name")
        }
        guard name.sealed else {
            let id = expected?.rawValue ?? name.name
            throw RemoteError(.invalidResponse, "the record of node '\(id)' is unsealed (plain JSON, \(key)), as anyone with access to the bucket could write it: refused (a store that has the node seals it with 'darkdisk push --node \(id)')")
        }
        // A keyed name is 32 hex digits; a node ID may look like one too, so both are tried.
        for keyed in CloudLayout.isVersion(name.name) ? [true, false] : [false] {
            // (Both open only what names a valid node ID.)
            if let record = try NodeRecord.open(data, name: name.name, keyed: keyed, expected: expected, with: manager),
               let id = try? NodeID(record.nodeID) {
                return OpenedRecord(nodeID: id, object: .record(record), keyedNames: keyed)
            }
            if let tombstone = try NodeTombstone.open(data, name: name.name, keyed: keyed, expected: expected, with: manager),
               let id = try? NodeID(tombstone.nodeID) {
                return OpenedRecord(nodeID: id, object: .tombstone(tombstone), keyedNames: keyed)
            }
        }
        throw RemoteError(.invalidResponse, "\(whose(name: name.name, keyed: CloudLayout.isVersion(name.name), expected: expected)) does not authenticate (altered, moved from another node, or sealed under another key)")
    }
}

/// A record object of the bucket, opened: its node, what it holds, and whether it was under the node's
/// keyed name (else under its ID, as stores named records before).
package struct OpenedRecord: Sendable, Equatable {
    package let nodeID: NodeID
    package let object: RecordObject
    package let keyedNames: Bool
}
