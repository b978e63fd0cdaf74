import DarkDiskCrypto
import DarkDiskStore
import Foundation

/// The small per-node record next to each cloud file: what another machine needs to list the node and
/// decrypt it (its key, wrapped by the user's master key), the ETag of the cloud file it describes, and a
/// generation that grows with every write.
///
/// In the bucket it is sealed (`sealed(with:)`, version 4): JSON encrypted and authenticated under a key
/// derived from the master key, the AAD binding the node's keyed name (`CloudLayout.nodeName`), which must
/// be its node's, so the bucket's owner learns no node ID and a swapped, altered or forged record does not
/// open. It names its cloud file's file ID, so no other version of the node's content is taken for it.
/// Versions 3 (named and bound by the node ID) and 2 (that, without the file ID) are what stores wrote
/// before, read until the node's next push; version 1 (plain JSON) is refused. `Docs/FORMAT.md` specifies them.
package struct NodeRecord: Codable, Sendable, Equatable {
    /// 4: a record under its node's keyed name; 3: one under the node ID; 2: that without the file ID.
    /// (1 was the plain-JSON record of stores before sealing, refused now.)
    package var version: Int = 4
    package var nodeID: String
    package var name: String?
    package var parentID: String?
    package var metadataSize: UInt64
    package var thumbnailSize: UInt64
    package var dataSize: UInt64
    /// Hex of the node key wrapped by the master key.
    package var wrappedKey: String
    package var cloudETag: String
    /// Grows by one with every write of the record (sealed records only; nil in a legacy one). A record of
    /// a lower generation than one a store has applied is a rollback.
    package var generation: UInt64?
    /// The version of the cloud file the record names (`CloudLayout.cloudFile(_:version:)`); nil in a legacy
    /// record, whose node has the one file `nodes/<id>.ddc`.
    package var cloudVersion: String?
    /// Hex of the 16-byte file ID in that cloud file's authenticated header (version 3).
    package var fileID: String?
    /// "file", "folder" or "symlink" (absent: a file, as in records written before the drive).
    package var type: String?
    /// Permission bits (absent: the type's default, 0644 for a file).
    package var mode: UInt32?
    /// Modification time: seconds since 1970 and nanoseconds (absent: unknown).
    package var mtime: Int64?
    package var mtimeNsec: UInt32?
    /// A symbolic link's target.
    package var target: String?
    /// `user.*` extended attributes, name to base64 of the value (absent: none).
    package var xattrs: [String: String]?

    package init(nodeID: String, name: String?, parentID: String?, metadataSize: UInt64, thumbnailSize: UInt64, dataSize: UInt64,
                wrappedKey: String, cloudETag: String, generation: UInt64?, cloudVersion: String? = nil, fileID: [UInt8]? = nil,
                attributes: NodeAttributes? = nil) {
        self.cloudVersion = cloudVersion
        self.fileID = fileID.map(Hex.encode)
        if let attributes {
            type = attributes.kind.rawValue
            mode = attributes.mode
            mtime = attributes.modifiedSeconds
            mtimeNsec = attributes.modifiedSeconds == nil ? nil : attributes.modifiedNanoseconds
            target = attributes.target
            xattrs = attributes.extendedAttributes.isEmpty ? nil : attributes.extendedAttributes.mapValues { Data($0).base64EncodedString() }
        }
        self.version = generation == nil ? 1 : fileID == nil ? 2 : 4
        self.nodeID = nodeID
        self.name = name
        self.parentID = parentID
        self.metadataSize = metadataSize
        self.thumbnailSize = thumbnailSize
        self.dataSize = dataSize
        self.wrappedKey = wrappedKey
        self.cloudETag = cloudETag
        self.generation = generation
    }

    /// What a sealed record under the name `name` is bound to: its format and that name (version 4: the
    /// node's keyed name; versions 2 and 3: its node ID).
    static func sealingContext(keyed: Bool, name: String) -> [UInt8] {
        Array((keyed ? "darkdisk node record 4\u{0}" : "darkdisk node record 2\u{0}").utf8) + Array(name.utf8)
    }

    /// Opens a sealed record read under `name` (`CloudLayout.nodeName`; keyed or, before keyed names, the
    /// node ID) with the store's record key: nil if it does not authenticate (altered, moved from another
    /// node's name, sealed under another key, or not a record); refused if it is malformed, of the other
    /// naming's version, or holds a node whose name is not `name` (or, given `expected`, another node).
    static func open(_ data: Data, name: String, keyed: Bool, expected: NodeID?, with manager: DiskManager) throws(RemoteError) -> NodeRecord? {
        guard let plaintext = try? manager.keys.openRecord(Array(data), context: sealingContext(keyed: keyed, name: name)) else { return nil }
        let whose = RecordObject.whose(name: name, keyed: keyed, expected: expected)
        let record = try parse(Data(plaintext), whose: whose, versions: keyed ? [4] : [2, 3])
        if !keyed {
            guard let named = try? NodeID(name) else { throw RemoteError(.invalidResponse, "\(whose) is not under a node's name") }
            return try record.validated(for: expected ?? named, whose: whose)
        }
        guard let id = try? NodeID(record.nodeID), CloudLayout.nodeName(id, with: manager) == name else {
            throw RemoteError(.invalidResponse, "\(whose) is not under its node's name")
        }
        return try record.validated(for: expected ?? id, whose: whose)
    }

    /// Opens a sealed record fetched from `CloudLayout.record(_:with:)` for `nodeID`, refusing one that does
    /// not authenticate (altered, moved from another node, or sealed under another key), is malformed, or
    /// names another node.
    package static func open(_ data: Data, expected nodeID: NodeID, with manager: DiskManager) throws(RemoteError) -> NodeRecord {
        guard let record = try open(data, name: CloudLayout.nodeName(nodeID, with: manager), keyed: true, expected: nodeID, with: manager) else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' does not authenticate (altered, moved from another node, or sealed under another key)")
        }
        return record
    }

    /// Parses an opened record's JSON (version 2, 3 or 4, with a generation) for `nodeID`, refusing one that
    /// is malformed or names another node.
    package static func parse(_ plaintext: Data, expected nodeID: NodeID) throws(RemoteError) -> NodeRecord {
        let whose = "the record of node '\(nodeID)'"
        return try parse(plaintext, whose: whose, versions: [2, 3, 4]).validated(for: nodeID, whose: whose)
    }

    /// Parses an opened record's JSON of one of `versions`, refusing one that is malformed.
    private static func parse(_ plaintext: Data, whose: String, versions: Set<Int>) throws(RemoteError) -> NodeRecord {
        guard plaintext.count <= 128 * 1024, let record = try? JSONDecoder().decode(NodeRecord.self, from: plaintext),
              versions.contains(record.version), record.version == 2 && record.fileID == nil || record.version >= 3 && record.fileID != nil,
              let generation = record.generation, generation > 0 else {
            throw RemoteError(.invalidResponse, "\(whose) is malformed")
        }
        return record
    }

    /// The sealed form of this record (version 4, or 2 or 3 as stores named records before), as it goes
    /// into the bucket at `CloudLayout.record(_:with:)` (or, for 2 and 3, `CloudLayout.recordByID`).
    package func sealed(with manager: DiskManager) throws(RemoteError) -> Data {
        guard let id = try? NodeID(nodeID), let generation, generation > 0, (2...4).contains(version) else {
            throw RemoteError(.invalidResponse, "only a version 2, 3 or 4 record with a generation is sealed")
        }
        let keyed = version == 4
        do {
            return Data(try manager.keys.sealRecord(RecordPadding.padded(encoded()),
                                               context: Self.sealingContext(keyed: keyed, name: CloudLayout.nodeName(id, keyed: keyed, with: manager))))
        } catch {
            throw RemoteError(.io, "cannot seal the record of node '\(nodeID)': \(error.message)")
        }
    }

    /// What the record says the node is besides its content (`NodeAttributes`); nil when a field is malformed
    /// (an unknown type, a value that is not base64, or attributes that cannot describe a node).
    package var attributes: NodeAttributes? {
        if case .success(let attributes) = parsedAttributes() { attributes } else { nil }
    }

    /// The record's attributes, or why they cannot describe a node, in words.
    private func parsedAttributes() -> Result<NodeAttributes, RemoteError> {
        let kind: NodeAttributes.Kind
        if let type {
            guard let known = NodeAttributes.Kind(rawValue: type) else { return .failure(RemoteError(.invalidResponse, "unknown type '\(type.prefix(32))'")) }
            kind = known
        } else {
            kind = .file
        }
        var values: [String: [UInt8]] = [:]
        for (name, encoded) in xattrs ?? [:] {
            guard let value = Data(base64Encoded: encoded) else { return .failure(RemoteError(.invalidResponse, "an extended attribute that is not base64")) }
            values[name] = Array(value)
        }
        let attributes = NodeAttributes(kind: kind, mode: mode, modifiedSeconds: mtime, modifiedNanoseconds: mtimeNsec ?? 0,
                                        target: target, extendedAttributes: values)
        if let problem = attributes.problem { return .failure(RemoteError(.invalidResponse, problem)) }
        return .success(attributes)
    }

    /// The checks every record passes, whatever its layout; `whose` says which record in a refusal.
    private func validated(for nodeID: NodeID, whose: String) throws(RemoteError) -> NodeRecord {
        let record = self
        guard record.nodeID == nodeID.rawValue else {
            throw RemoteError(.invalidResponse, "\(whose) describes another node")
        }
        // Version 3 carries the key bound to the node (61 bytes); version 2 an unbound wrap (60) or a bound one.
        let keySize = Hex.decode(record.wrappedKey)?.count
        guard keySize == SymmetricKey.boundWrappedSize || record.version == 2 && keySize == 60 else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has a malformed key")
        }
        guard record.name.map(Self.isValidName) ?? true else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has a malformed name (more than 255 bytes, or a NUL)")
        }
        guard record.parentID.map({ (try? NodeID($0)) != nil }) ?? true else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' names a parent that is not a node ID")
        }
        if case .failure(let problem) = record.parsedAttributes() {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has malformed attributes (\(problem.message))")
        }
        guard record.cloudVersion.map(CloudLayout.isVersion) ?? true else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' names a malformed cloud file version")
        }
        guard record.fileID.map({ Hex.decode($0)?.count == 16 }) ?? true, record.fileID == nil || record.cloudVersion != nil else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' names a malformed cloud file ID")
        }
        return record
    }

    /// A node's name: at most 255 bytes of UTF-8 and no NUL, as a file name on Linux (`push --name` checks it
    /// too; a record from the remote with another name is refused).
    package static func isValidName(_ name: String) -> Bool {
        name.utf8.count <= 255 && !name.utf8.contains(0)
    }

    package func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The outline entry this record describes.
    package func outlineEntry() throws(RemoteError) -> OutlineEntry {
        guard let id = try? NodeID(nodeID), let key = Hex.decode(wrappedKey) else {
            throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is malformed")
        }
        return OutlineEntry(nodeID: id, name: name, parentID: parentID, metadataSize: metadataSize,
                            thumbnailSize: thumbnailSize, dataSize: dataSize, wrappedKey: key, cloudETag: cloudETag, cloudVersion: cloudVersion,
                            cloudFileID: fileID.flatMap(Hex.decode), keyedNames: version == 4, attributes: attributes ?? NodeAttributes())
    }
}
