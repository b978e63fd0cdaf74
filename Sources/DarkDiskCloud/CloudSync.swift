import DarkDisk
import DarkDiskCrypto
import Foundation

/// Push and pull between a store and its remote (DESIGN §4): push uploads a node as one cloud file plus its
/// record; pull brings the outline (every node's record, no data) into the store.
public struct CloudSync: Sendable {
    public let manager: DiskManager
    public let remote: any Remote

    public init(manager: DiskManager, remote: any Remote) {
        self.manager = manager
        self.remote = remote
    }

    /// What a pull changed.
    public struct PullResult: Sendable, Equatable {
        public var added = 0
        public var changed = 0
        public var deleted = 0
        public var unchanged = 0
        /// Records that were refused (malformed, or naming another node) and skipped, one line each: the
        /// node or user keeps what this store had of it, and the rest is pulled.
        public var skipped: [String] = []
    }

    /// Encrypts `dataFile` (with optional thumbnail and metadata) into the cloud-file format under the node's
    /// key, uploads it, then its sealed record (one generation above the newest this store or the bucket
    /// has; a legacy JSON record of the node goes); then tells the store the upload finished (upload hooks fire).
    @discardableResult
    public func push(dataFile: String, nodeID: NodeID, name: String? = nil, parentID: String? = nil,
                     thumbnail: Data? = nil, metadata: Data? = nil) async throws -> OutlineEntry {
        let (key, wrapped) = try manager.contentKey(for: nodeID)
        // Composed in the store's staging folder: an interrupted push leaves it to the orphan sweep.
        let scratch = try manager.makeScratchFile()
        let temporary = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let header = try FileConversion.encryptCloudFile(metadata: metadata, thumbnail: thumbnail, dataFileAt: dataFile,
                                                         key: key, to: temporary)
        // A new, immutable version: a reader of the previous one (If-Match) never sees a mix; `gc` deletes
        // versions no record names after a grace period.
        let version = CloudLayout.newVersion()
        let info = try await remote.write(CloudLayout.cloudFile(nodeID, version: version), fromFile: temporary)
        let generation = max(try manager.recordGeneration(of: nodeID), try await remoteGeneration(of: nodeID)) + 1
        let record = NodeRecord(nodeID: nodeID.rawValue, name: name, parentID: parentID,
                                metadataSize: header.sectionSizes[CloudFileSection.metadata.rawValue],
                                thumbnailSize: header.sectionSizes[CloudFileSection.thumbnail.rawValue],
                                dataSize: header.sectionSizes[CloudFileSection.data.rawValue],
                                wrappedKey: Hex.encode(wrapped), cloudETag: info.etag, generation: generation, cloudVersion: version)
        _ = try await remote.write(CloudLayout.record(nodeID), data: try record.sealed(with: manager))
        try manager.noteRecordGenerations([nodeID: generation])
        if try await remote.info(CloudLayout.legacyRecord(nodeID)) != nil {
            try await remote.delete(CloudLayout.legacyRecord(nodeID))
        }
        let entry = try record.outlineEntry()
        try manager.updateOutline(entry, invalidatingLocalFiles: false)
        for kind in [FileKind.data, .metadata, .thumbnail] { try await manager.didUploadNodeFile(nodeID, kind: kind) }
        return entry
    }

    /// The generation of the node's sealed record in the bucket (0: none, or one that does not open, which
    /// the new record replaces).
    private func remoteGeneration(of nodeID: NodeID) async throws -> UInt64 {
        guard let data = try await remote.readAll(CloudLayout.record(nodeID)) else { return 0 }
        return (try? NodeRecord.open(data, expected: nodeID, with: manager))?.generation ?? 0
    }

    /// Adds or updates an identity of a user in the remote: its avatar (encrypted under a fresh key, which
    /// the user record carries wrapped by the master key), or none. With `display`, or if the user has no
    /// display identity yet, it becomes the one shown. Returns the updated record.
    @discardableResult
    public func pushUserIdentity(_ userID: UserID, identityID: IdentityID, avatar: Data?, display: Bool = false) async throws -> UserRecord {
        var record = UserRecord(userID: userID)
        if let existing = try await remote.readAll(CloudLayout.user(userID)) {
            record = try UserRecord.decode(existing, expected: userID)
        }
        var identity = UserRecord.Identity(identityID: identityID.rawValue, avatar: nil)
        let objectKey = CloudLayout.avatar(userID, identityID)
        if let avatar {
            let key = SymmetricKey.random()
            let scratch = try manager.makeScratchFile()
            let temporary = scratch.path
            defer { withExtendedLifetime(scratch) {} }
            _ = try FileConversion.encrypt(avatar, key: key, to: temporary)
            let info = try await remote.write(objectKey, fromFile: temporary)
            identity.avatar = UserRecord.Avatar(size: info.size, plaintextSize: UInt64(avatar.count),
                                                wrappedKey: Hex.encode(manager.wrapKey(key)))
        } else {
            try await remote.delete(objectKey)
        }
        record.identities.removeAll { $0.identityID == identityID.rawValue }
        record.identities.append(identity)
        record.identities.sort { $0.identityID < $1.identityID }
        if display || record.displayIdentityID == nil { record.displayIdentityID = identityID.rawValue }
        _ = try await remote.write(CloudLayout.user(userID), data: record.encoded())
        return record
    }

    /// Fetches every record: new nodes appear (no data downloaded), nodes with a new ETag lose their stale
    /// local copies, nodes gone from the remote are deleted locally. A node's sealed record is read in
    /// preference to a legacy JSON one. A record that does not authenticate, is malformed, or is older (a
    /// lower generation; a legacy record after a sealed one) than one this store applied is refused and
    /// reported in `skipped`, and the node keeps what the store had. A remote that cannot be listed fails the
    /// pull before anything changes: "unreachable" is never taken for "deleted". Nor is a remote that lists no
    /// node at all while the store knows some (an unmounted or wrong bucket folder looks like that), unless
    /// `acceptEmptyRemote`.
    public func pull(acceptEmptyRemote: Bool = false) async throws -> PullResult {
        let objects = try await remote.list(prefix: CloudLayout.recordsPrefix)
        var result = PullResult()
        var seen = Set<NodeID>()
        let known = Dictionary(uniqueKeysWithValues: try manager.outline().map { ($0.nodeID, $0) })
        if !acceptEmptyRemote, !known.isEmpty, !objects.contains(where: { CloudLayout.nodeID(ofRecordKey: $0.key) != nil }) {
            throw RemoteError(.emptyListing, "\(remote.url) lists no node while this store knows \(known.count); nothing was changed (a wrong or unmounted bucket?)")
        }
        var generations: [NodeID: UInt64] = [:]
        let appliedGenerations = try manager.recordGenerations()
        for object in CloudLayout.currentRecords(objects) {
            let nodeID = object.nodeID
            guard let data = try await remote.readAll(object.key) else { continue }
            // A refused record is not a deletion: the node stays as this store knows it.
            seen.insert(nodeID)
            let entry: OutlineEntry
            let applied = appliedGenerations[nodeID] ?? 0
            do throws(RemoteError) {
                let record = try NodeRecord.read(data, sealed: object.sealed, expected: nodeID, with: manager)
                let generation = record.generation ?? 0
                guard generation >= applied else {
                    throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is older (generation \(generation)) than the one this store has applied (generation \(applied)): a rollback, refused")
                }
                entry = try record.outlineEntry()
                if generation > 0 { generations[nodeID] = generation }
            } catch {
                result.skipped.append(error.message)
                continue
            }
            if let old = known[nodeID] {
                if old.cloudETag != entry.cloudETag { result.changed += 1 } else { result.unchanged += 1 }
                if old == entry { continue }
            } else {
                result.added += 1
            }
            try manager.updateOutline(entry)
        }
        try manager.noteRecordGenerations(generations)
        let gone = known.keys.filter { !seen.contains($0) }
        if !gone.isEmpty {
            try await manager.deleteNodes(Array(gone))
            result.deleted = gone.count
        }
        result.skipped += try await pullUsers()
        return result
    }

    /// Brings every user record's avatars into the store's avatar outline, so they are listed (and sized)
    /// before any is downloaded; a user whose record went loses the avatars the outline had listed.
    /// Returns the user records it refused and skipped, one line each.
    private func pullUsers() async throws -> [String] {
        let objects = try await remote.list(prefix: CloudLayout.usersPrefix)
        var seen = Set<UserID>()
        var skipped: [String] = []
        for object in objects {
            guard let userID = CloudLayout.userID(ofRecordKey: object.key),
                  let data = try await remote.readAll(object.key) else { continue }
            seen.insert(userID)
            var entries: [AvatarOutlineEntry] = []
            do {
                let record = try UserRecord.decode(data, expected: userID)
                for identity in record.identities {
                    guard let avatar = identity.avatar, let wrapped = Hex.decode(avatar.wrappedKey) else { continue }
                    let identityID: IdentityID
                    do { identityID = try IdentityID(identity.identityID) } catch {
                        throw RemoteError(.invalidResponse, "the record of user '\(userID)' names a malformed identity")
                    }
                    let size: UInt64
                    if let known = avatar.plaintextSize {
                        size = known
                    } else {
                        size = try await avatarPlaintextSize(userID, identityID, wrappedKey: wrapped)
                    }
                    entries.append(AvatarOutlineEntry(userID: userID, identityID: identityID, plaintextSize: size, wrappedKey: wrapped))
                }
            } catch let error as RemoteError where error.code == .invalidResponse {
                skipped.append(error.message)
                continue
            }
            try manager.updateAvatarOutline(userID, entries: entries)
        }
        for userID in Set(try manager.avatarOutline().map(\.userID)) where !seen.contains(userID) {
            try manager.updateAvatarOutline(userID, entries: [])
        }
        return skipped
    }

    /// The image size of an avatar whose record predates `plaintextSize`: from its header (one range request).
    private func avatarPlaintextSize(_ userID: UserID, _ identityID: IdentityID, wrappedKey: [UInt8]) async throws -> UInt64 {
        let key = try manager.unwrapKey(wrappedKey)
        let name = "the avatar of '\(userID)' / '\(identityID)'"
        let bytes = try await remote.read(CloudLayout.avatar(userID, identityID), range: 0..<UInt64(CryptoFormat.headerSize), ifMatch: nil)
        let header: CryptoFileHeader
        do { header = try CryptoFileHeader(authenticating: Array(bytes), key: key, name: name) } catch {
            throw RemoteError(.invalidResponse, "\(name) does not authenticate: \(error.message)")
        }
        return header.sectionSizes.reduce(0, +)
    }
}
