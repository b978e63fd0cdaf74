import DarkDiskCrypto
import DarkDiskSync

/// The `async` forms of the stored files' calls that block on the disk or on the index: each runs its
/// synchronous form on the shared `BlockingPool`, so a task never holds one of Swift's cooperative threads
/// while it waits.
extension StoreFiles {
    /// A node's stored file, retained, or nil (see the synchronous form).
    public func nodeFile(_ nodeID: NodeID, kind: FileKind = .data) async throws(DarkDiskError) -> DiskExport? {
        try await blocking { () throws(DarkDiskError) in try self.nodeFile(nodeID, kind: kind) }
    }

    /// A node's stored file in the preferred format, retained, or nil (see the synchronous form).
    public func nodeFile(_ nodeID: NodeID, kind: FileKind = .data, preferredFormat: CryptoFileFormat) async throws(DarkDiskError) -> DiskExport? {
        try await blocking { () throws(DarkDiskError) in try self.nodeFile(nodeID, kind: kind, preferredFormat: preferredFormat) }
    }

    /// A user's stored avatar, retained, or nil (see the synchronous form).
    public func userAvatar(_ userID: UserID, identityID: IdentityID? = nil) async throws(DarkDiskError) -> DiskExport? {
        try await blocking { () throws(DarkDiskError) in try self.userAvatar(userID, identityID: identityID) }
    }

    /// Deletes one file of a node; whether there was one (see the synchronous form).
    @discardableResult
    public func deleteNodeFile(_ nodeID: NodeID, kind: FileKind) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.deleteNodeFile(nodeID, kind: kind) }
    }

    /// Deletes one kind of file of each node; how many there were (see the synchronous form).
    @discardableResult
    public func deleteNodeFiles(_ nodeIDs: [NodeID], kind: FileKind) async throws(DarkDiskError) -> Int {
        try await blocking { () throws(DarkDiskError) in try self.deleteNodeFiles(nodeIDs, kind: kind) }
    }

    /// Deletes every avatar of a user (see the synchronous form).
    public func deleteUserAvatars(_ userID: UserID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.deleteUserAvatars(userID) }
    }

    /// Deletes one avatar; whether there was one (see the synchronous form).
    @discardableResult
    public func deleteUserAvatar(_ userID: UserID, identityID: IdentityID) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.deleteUserAvatar(userID, identityID: identityID) }
    }

    /// Moves a node's file between persistent storage and the cache pool (see the synchronous form).
    @discardableResult
    public func makeNodeFilePersistent(_ persistent: Bool, nodeID: NodeID, kind: FileKind = .data) async throws(DarkDiskError) -> Bool {
        try await blocking { () throws(DarkDiskError) in try self.makeNodeFilePersistent(persistent, nodeID: nodeID, kind: kind) }
    }

    /// Moves all of a user's avatars between persistent storage and the cache pool (see the synchronous form).
    public func makeUserAvatarsPersistent(_ persistent: Bool, userID: UserID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.makeUserAvatarsPersistent(persistent, userID: userID) }
    }

    /// Tells the store a node's file reached the cloud (see the synchronous form).
    package func didUploadNodeFile(_ nodeID: NodeID, kind: FileKind = .data) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.didUploadNodeFile(nodeID, kind: kind) }
    }

    /// Evicts from `pool` until it is within its limits; how many files went (see the synchronous form).
    @discardableResult
    public func enforceLimits(of pool: Pool) async throws(DarkDiskError) -> Int {
        try await blocking { () throws(DarkDiskError) in try self.enforceLimits(of: pool) }
    }

    /// What the index knows of a node's stored file (see the synchronous form).
    public func storedFile(_ nodeID: NodeID, kind: FileKind = .data) async throws(DarkDiskError) -> StoredFile? {
        try await blocking { () throws(DarkDiskError) in try self.storedFile(nodeID, kind: kind) }
    }

    /// What the index knows of each of a node's stored files (see the synchronous form).
    public func storedFiles(_ nodeID: NodeID) async throws(DarkDiskError) -> [StoredFile] {
        try await blocking { () throws(DarkDiskError) in try self.storedFiles(nodeID) }
    }

    /// What the index knows of a user's stored avatars (see the synchronous form).
    public func storedAvatars(_ userID: UserID) async throws(DarkDiskError) -> [StoredFile] {
        try await blocking { () throws(DarkDiskError) in try self.storedAvatars(userID) }
    }

    /// A node's partial download as the index records it (see the synchronous form).
    package func partialDownload(_ nodeID: NodeID) async throws(DarkDiskError) -> PartialDownload? {
        try await blocking { () throws(DarkDiskError) in try self.partialDownload(nodeID) }
    }

    /// Starts a node's partial download anew (see the synchronous form).
    package func beginPartialDownload(_ nodeID: NodeID, etag: String, size: UInt64) async throws(DarkDiskError) -> PartialDownload {
        try await blocking { () throws(DarkDiskError) in try self.beginPartialDownload(nodeID, etag: etag, size: size) }
    }

    /// Records what a partial download holds (see the synchronous form).
    package func savePartialDownload(_ download: PartialDownload) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.savePartialDownload(download) }
    }

    /// Drops a node's partial download (see the synchronous form).
    package func removePartialDownload(_ nodeID: NodeID) async throws(DarkDiskError) {
        try await blocking { () throws(DarkDiskError) in try self.removePartialDownload(nodeID) }
    }
}
