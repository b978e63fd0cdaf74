import DarkDiskCrypto
import DarkDiskSync

/// The `async` forms of the calls that block on the disk or on the index (encrypting an import, copying a
/// migration, deleting files, a transaction waiting on another process): each runs its synchronous form on the
/// shared `BlockingPool`, so a task never holds one of Swift's cooperative threads while it waits. In async
/// code these are the ones Swift picks; synchronous code keeps calling the blocking forms.
extension DiskManager {
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

    // MARK: Settings and scratch files, for async callers

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
    package func makeScratchFile() async throws(DarkDiskError) -> ScratchFile {
        try await blocking { () throws(DarkDiskError) in try self.makeScratchFile() }
    }

    /// The newest row of the entry change table (see the synchronous form).
    package func newestEntryChange() async throws(DarkDiskError) -> Int64 {
        try await blocking { () throws(DarkDiskError) in try self.newestEntryChange() }
    }

}
