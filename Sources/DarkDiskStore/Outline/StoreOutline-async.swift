import DarkDiskSync

/// The `async` forms of the outline's calls that write or may wait on another process: each runs its
/// synchronous form on the shared `BlockingPool` (the reads that have async forms use GRDB's own).
extension StoreOutline {
    /// Writes a node's entry into the outline (see the synchronous form).
    @discardableResult
    package func update(_ entry: OutlineEntry, invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in
            try self.update(entry, invalidatingLocalFiles: invalidatingLocalFiles, keepingLocalPlacement: keepingLocalPlacement)
        }
    }

    /// Writes many nodes' entries into the outline in one transaction (see the synchronous form).
    @discardableResult
    package func update(_ entries: [OutlineEntry], invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false,
                        pulledGenerations: [NodeID: UInt64] = [:]) async throws(DarkDiskError) -> Set<NodeID> {
        try await blocking { () throws(DarkDiskError) in
            try self.update(entries, invalidatingLocalFiles: invalidatingLocalFiles, keepingLocalPlacement: keepingLocalPlacement,
                            pulledGenerations: pulledGenerations)
        }
    }

    /// Drops a node's local files of `kinds` (see the synchronous form).
    package func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.invalidateLocalFiles(of: nodeID, kinds: kinds) }
    }

    /// Drops a node's local files while its data file is still `fileID` (see the synchronous form).
    @discardableResult
    package func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>, whileDataFileIs fileID: Int64) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.invalidateLocalFiles(of: nodeID, kinds: kinds, whileDataFileIs: fileID) }
    }

    /// The avatar outline (see the synchronous form).
    public func avatars() async throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try await blocking { () throws(DarkDiskError) in try self.avatars() }
    }

    /// One user's avatar outline (see the synchronous form).
    public func avatars(_ userID: UserID) async throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try await blocking { () throws(DarkDiskError) in try self.avatars(userID) }
    }

    /// Writes a user's avatar outline (see the synchronous form).
    @discardableResult
    package func updateAvatars(_ userID: UserID, entries: [AvatarOutlineEntry]) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.updateAvatars(userID, entries: entries) }
    }

    /// The downloads handed to the mount (see the synchronous form).
    package func wantedDownloads() async throws(DarkDiskError) -> [(nodeID: NodeID, persistent: Bool)] {
        try await blocking { () throws(DarkDiskError) in try self.wantedDownloads() }
    }

    /// A handed download is done (see the synchronous form).
    package func forgetWantedDownload(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.forgetWantedDownload(nodeID) }
    }

    /// The pinned files to keep that are not stored persistently (see the synchronous form).
    package func pinnedNodesToKeep() async throws(DarkDiskError) -> [PinnedNode] {
        try await blocking { () throws(DarkDiskError) in try self.pinnedNodesToKeep() }
    }

    /// Notes a conflict copy (see the synchronous form).
    package func noteConflictCopy(_ copy: ConflictCopy) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.noteConflictCopy(copy) }
    }
}
