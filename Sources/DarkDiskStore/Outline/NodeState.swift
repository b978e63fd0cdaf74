/// Everything the index knows of one node, read in one transaction: its stored files and what the remote's
/// outline says of it. A mount's lookup, `stat` and listing of `/nodes/<id>` each need both, so they cost
/// one indexed read (O(log n)) instead of several.
package struct NodeState: Sendable, Equatable {
    package let nodeID: NodeID
    /// The node's stored files (data, metadata, thumbnail), at most one per kind.
    package let files: [StoredFile]
    /// What the remote's outline lists for the node, if it does.
    package let outline: OutlineEntry?
    /// The permission bits of a drive file (uploaded or not); nil for a node the drive does not show as a
    /// file (imported by ID, a folder, a link).
    package let fileMode: UInt32?

    package init(nodeID: NodeID, files: [StoredFile], outline: OutlineEntry?, fileMode: UInt32? = nil) {
        self.nodeID = nodeID
        self.files = files
        self.outline = outline
        self.fileMode = fileMode
    }

    /// Whether the node exists here at all: something stored, or listed by the outline.
    package var exists: Bool { !files.isEmpty || outline != nil }

    /// The stored file of `kind`, if any.
    package func stored(_ kind: FileKind) -> StoredFile? {
        files.first { $0.kind == kind }
    }

    /// Whether the node has a `kind` section: stored, or in the outline.
    package func has(_ kind: FileKind) -> Bool {
        stored(kind) != nil || outline?.has(kind) == true
    }

    /// The sections the node has, sorted by name.
    package var kinds: [FileKind] {
        var kinds = Set(files.map(\.kind))
        if let outline {
            for kind in [FileKind.data, .metadata, .thumbnail] where outline.has(kind) { kinds.insert(kind) }
        }
        return kinds.sorted { $0.rawValue < $1.rawValue }
    }
}
