import DarkDiskCrypto
import DarkDiskSync

/// The `async` forms of the calls that block on the disk or on the index (encrypting an import, copying a
/// migration, deleting files, a transaction waiting on another process): each runs its synchronous form on the
/// shared `BlockingPool`, so a task never holds one of Swift's cooperative threads while it waits. In async
/// code these are the ones Swift picks; synchronous code keeps calling the blocking forms.
extension DiskManager {
    /// Runs blocking store work on the shared pool.
    func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws(DarkDiskError) -> Value) async throws(DarkDiskError) -> Value {
        try await BlockingPool.shared.run(body)
    }

    /// Encrypts or moves `diskImport` into the store as a node's `kind` file (see the synchronous form).
    @discardableResult
    public func importNodeFile(_ diskImport: DiskImport, nodeID: NodeID, kind: FileKind = .data) async throws(DarkDiskError) -> DiskExport {
        try await blocking { () throws(DarkDiskError) in try self.importNodeFile(diskImport, nodeID: nodeID, kind: kind) }
    }

    /// Stores an avatar for one identity of a user (see the synchronous form).
    @discardableResult
    public func importUserAvatar(_ diskImport: DiskImport, userID: UserID, identityID: IdentityID) async throws(DarkDiskError) -> DiskExport {
        try await blocking { () throws(DarkDiskError) in try self.importUserAvatar(diskImport, userID: userID, identityID: identityID) }
    }

    /// Deletes every file of a node (see the synchronous form).
    public func deleteNode(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.deleteNode(nodeID) }
    }

    /// Deletes every file of each node (see the synchronous form).
    public func deleteNodes(_ nodeIDs: [NodeID]) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.deleteNodes(nodeIDs) }
    }

    /// Deletes a node's stored files, leaving the outline alone (see the synchronous form).
    public func deleteLocalFiles(of nodeIDs: [NodeID]) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.deleteLocalFiles(of: nodeIDs) }
    }

    // MARK: The outline, partial downloads, settings and pins, for async callers

    /// Writes a node's entry into the outline (see the synchronous form).
    @discardableResult
    public func updateOutline(_ entry: OutlineEntry, invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in
            try self.updateOutline(entry, invalidatingLocalFiles: invalidatingLocalFiles, keepingLocalPlacement: keepingLocalPlacement)
        }
    }

    /// Writes many nodes' entries into the outline in one transaction (see the synchronous form).
    @discardableResult
    public func updateOutline(_ entries: [OutlineEntry], invalidatingLocalFiles: Bool = true, keepingLocalPlacement: Bool = false,
                              pulledGenerations: [NodeID: UInt64] = [:]) async throws(DarkDiskError) -> Set<NodeID> {
        try await blocking { () throws(DarkDiskError) in
            try self.updateOutline(entries, invalidatingLocalFiles: invalidatingLocalFiles, keepingLocalPlacement: keepingLocalPlacement,
                                   pulledGenerations: pulledGenerations)
        }
    }

    /// Drops a node's local files of `kinds` (see the synchronous form).
    public func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.invalidateLocalFiles(of: nodeID, kinds: kinds) }
    }

    /// Drops a node's local files while its data file is still `fileID` (see the synchronous form).
    @discardableResult
    public func invalidateLocalFiles(of nodeID: NodeID, kinds: Set<FileKind>, whileDataFileIs fileID: Int64) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.invalidateLocalFiles(of: nodeID, kinds: kinds, whileDataFileIs: fileID) }
    }

    /// A text setting of the store (see the synchronous form).
    public func text(_ key: String) async throws(DarkDiskError) -> String? {
        try await blocking { () throws(DarkDiskError) in try self.text(key) }
    }

    /// Sets a text setting of the store (see the synchronous form).
    public func setText(_ value: String, for key: String) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.setText(value, for: key) }
    }

    /// Removes a text setting of the store (see the synchronous form).
    public func removeText(_ key: String) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.removeText(key) }
    }

    /// A scratch file in the store's staging folder (see the synchronous form).
    public func makeScratchFile() async throws(DarkDiskError) -> ScratchFile {
        try await blocking { () throws(DarkDiskError) in try self.makeScratchFile() }
    }

    /// The avatar outline (see the synchronous form).
    public func avatarOutline() async throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try await blocking { () throws(DarkDiskError) in try self.avatarOutline() }
    }

    /// One user's avatar outline (see the synchronous form).
    public func avatarOutline(_ userID: UserID) async throws(DarkDiskError) -> [AvatarOutlineEntry] {
        try await blocking { () throws(DarkDiskError) in try self.avatarOutline(userID) }
    }

    /// Writes a user's avatar outline (see the synchronous form).
    @discardableResult
    public func updateAvatarOutline(_ userID: UserID, entries: [AvatarOutlineEntry]) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.updateAvatarOutline(userID, entries: entries) }
    }

    /// The downloads handed to the mount (see the synchronous form).
    public func wantedDownloads() async throws(DarkDiskError) -> [(nodeID: NodeID, persistent: Bool)] {
        try await blocking { () throws(DarkDiskError) in try self.wantedDownloads() }
    }

    /// A handed download is done (see the synchronous form).
    public func forgetWantedDownload(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.forgetWantedDownload(nodeID) }
    }

    /// The pinned files to keep that are not stored persistently (see the synchronous form).
    public func pinnedNodesToKeep() async throws(DarkDiskError) -> [PinnedNode] {
        try await blocking { () throws(DarkDiskError) in try self.pinnedNodesToKeep() }
    }

    /// Notes a conflict copy (see the synchronous form).
    public func noteConflictCopy(_ copy: ConflictCopy) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.noteConflictCopy(copy) }
    }

    /// The newest row of the entry change table (see the synchronous form).
    public func newestEntryChange() async throws(DarkDiskError) -> Int64 {
        try await blocking { () throws(DarkDiskError) in try self.newestEntryChange() }
    }

}
