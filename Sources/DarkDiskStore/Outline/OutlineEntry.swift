import DarkDiskCrypto

/// A node as the remote's outline describes it: enough to list it, size it and decrypt it, with no data.
public struct OutlineEntry: Sendable, Equatable, Codable {
    public let nodeID: NodeID
    public var name: String?
    public var parentID: String?
    public var metadataSize: UInt64
    public var thumbnailSize: UInt64
    public var dataSize: UInt64
    /// The node's content key wrapped by the master key (shared by every machine of the user).
    public var wrappedKey: [UInt8]
    /// The ETag of the node's cloud file; a change means the node changed.
    public var cloudETag: String
    /// Which immutable version of the node's cloud file the record names (32 hex digits); nil for a node
    /// recorded in the first layout, whose one cloud file is replaced in place.
    public var cloudVersion: String?
    /// The file ID in the authenticated header of that cloud file (16 bytes), which its record names: a
    /// download refuses any other file, whatever the remote says its ETag is. Nil until known.
    public var cloudFileID: [UInt8]?
    /// Whether the node's objects in the bucket are under a name keyed by the master key (what every push
    /// writes) rather than under its ID (a record written before keyed names, until the node's next push).
    public var keyedNames: Bool
    /// What the node is besides its content: file, folder or link, mode, time, extended attributes.
    public var attributes: NodeAttributes

    public init(nodeID: NodeID, name: String?, parentID: String?, metadataSize: UInt64, thumbnailSize: UInt64,
                dataSize: UInt64, wrappedKey: [UInt8], cloudETag: String, cloudVersion: String? = nil,
                cloudFileID: [UInt8]? = nil, keyedNames: Bool = true, attributes: NodeAttributes = NodeAttributes()) {
        self.cloudVersion = cloudVersion
        self.keyedNames = keyedNames
        self.cloudFileID = cloudFileID
        self.attributes = attributes
        self.nodeID = nodeID
        self.name = name
        self.parentID = parentID
        self.metadataSize = metadataSize
        self.thumbnailSize = thumbnailSize
        self.dataSize = dataSize
        self.wrappedKey = wrappedKey
        self.cloudETag = cloudETag
    }

    /// Whether the node has `kind`: every node has data (perhaps empty); metadata and a thumbnail only when
    /// their size is above 0.
    public func has(_ kind: FileKind) -> Bool {
        kind == .data || plaintextSize(of: kind) > 0
    }

    /// The plaintext size of one of the node's sections (0 for metadata or a thumbnail: the node does not have it).
    public func plaintextSize(of kind: FileKind) -> UInt64 {
        switch kind {
        case .data: dataSize
        case .metadata: metadataSize
        case .thumbnail: thumbnailSize
        case .avatar: 0
        }
    }
}
