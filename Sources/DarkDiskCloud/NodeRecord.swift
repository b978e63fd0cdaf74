import DarkDiskCrypto
import DarkDisk
import Foundation

/// The small per-node record next to each cloud file: what another machine needs to list the node and
/// decrypt it (its key, wrapped by the user's master key), and the ETag of the cloud file it describes.
public struct NodeRecord: Codable, Sendable, Equatable {
    public var version: Int = 1
    public var nodeID: String
    public var name: String?
    public var parentID: String?
    public var metadataSize: UInt64
    public var thumbnailSize: UInt64
    public var dataSize: UInt64
    /// Hex of the node key wrapped by the master key.
    public var wrappedKey: String
    public var cloudETag: String

    /// Parses a record fetched from `key`, refusing one that names another node or is malformed.
    public static func decode(_ data: Data, expected nodeID: NodeID) throws(RemoteError) -> NodeRecord {
        guard data.count <= 64 * 1024, let record = try? JSONDecoder().decode(NodeRecord.self, from: data), record.version == 1 else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is malformed")
        }
        guard record.nodeID == nodeID.rawValue else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' describes another node")
        }
        guard Hex.decode(record.wrappedKey)?.count == 60 else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has a malformed key")
        }
        guard record.name.map(Self.isValidName) ?? true else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has a malformed name (more than 255 bytes, or a NUL)")
        }
        guard record.parentID.map({ (try? NodeID($0)) != nil }) ?? true else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' names a parent that is not a node ID")
        }
        return record
    }

    /// A node's name: at most 255 bytes of UTF-8 and no NUL, as a file name on Linux (`push --name` checks it
    /// too; a record from the remote with another name is refused).
    public static func isValidName(_ name: String) -> Bool {
        name.utf8.count <= 255 && !name.utf8.contains(0)
    }

    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The outline entry this record describes.
    public func outlineEntry() throws(RemoteError) -> OutlineEntry {
        guard let id = try? NodeID(nodeID), let key = Hex.decode(wrappedKey) else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is malformed")
        }
        return OutlineEntry(nodeID: id, name: name, parentID: parentID, metadataSize: metadataSize,
                            thumbnailSize: thumbnailSize, dataSize: dataSize, wrappedKey: key, cloudETag: cloudETag)
    }
}
