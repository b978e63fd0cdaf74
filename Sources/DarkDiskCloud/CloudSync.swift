import DarkDiskStore
import DarkDiskCrypto
import Foundation

/// Push and pull between a store and its remote: push uploads a node as one cloud file plus its
/// record; pull brings the outline (every node's record, no data) into the store.
public struct CloudSync: Sendable {
    public let manager: DiskManager
    public let remote: any Remote
    /// The machine's name in the conflict copies its pushes make.
    public let host: String

    public init(manager: DiskManager, remote: any Remote, host: String = ConflictName.localHost) {
        self.manager = manager
        self.remote = remote
        self.host = host
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

    /// Adds or updates an identity of a user in the remote: its avatar (encrypted under a fresh key, which
    /// the user record carries wrapped by the master key), or none. With `display`, or if the user has no
    /// display identity yet, it becomes the one shown. Returns the updated record. The record is replaced
    /// only if it is still the one read (`If-Match`, or `If-None-Match: *` for a new user); when another
    /// machine changed it in between, its identities are read again and this one merged in.
    @discardableResult
    public func pushUserIdentity(_ userID: UserID, identityID: IdentityID, avatar: Data?, display: Bool = false) async throws -> UserRecord {
        var identity = UserRecord.Identity(identityID: identityID.rawValue, avatar: nil)
        let objectKey = CloudLayout.avatar(userID, identityID, with: manager)
        if let avatar {
            let key = SymmetricKey.random()
            let scratch = try await manager.makeScratchFile()
            let temporary = scratch.path
            defer { withExtendedLifetime(scratch) {} }
            _ = try FileConversion.encrypt(avatar, key: key, to: temporary)
            let info = try await remote.write(objectKey, movingFile: temporary)
            identity.avatar = UserRecord.Avatar(size: info.size, plaintextSize: UInt64(avatar.count),
                                                wrappedKey: Hex.encode(manager.keys.wrap(key, for: .avatar(userID, identityID))))
        } else {
            try await remote.delete(objectKey)
        }
        for _ in 0..<8 {
            var record = UserRecord(userID: userID)
            let condition: WriteCondition
            let recordKey = CloudLayout.user(userID, with: manager)
            if let object = try await remote.info(recordKey) {
                let existing: Data
                do { existing = try await remote.read(object.key, range: 0..<object.size, ifMatch: object.etag) } catch {
                    guard error.code == .changed || error.code == .notFound else { throw error }
                    continue
                }
                record = try UserRecord.open(existing, name: CloudLayout.userName(userID, with: manager), expected: userID, with: manager)
                condition = .matches(object.etag)
            } else {
                condition = .absent
            }
            record.identities.removeAll { $0.identityID == identityID.rawValue }
            record.identities.append(identity)
            record.identities.sort { $0.identityID < $1.identityID }
            if display || record.displayIdentityID == nil { record.displayIdentityID = identityID.rawValue }
            do {
                _ = try await remote.write(recordKey, data: try record.sealed(with: manager), condition: condition)
                // The record as an older darkdisk wrote it (plain, named by the user ID) goes.
                if try await remote.info(CloudLayout.legacyUser(userID)) != nil { try await remote.delete(CloudLayout.legacyUser(userID)) }
                return record
            } catch {
                guard error.code == .preconditionFailed else { throw error }
            }
        }
        throw RemoteError(.preconditionFailed, "the record of user '\(userID)' in \(remote.url) kept changing while it was updated; try again")
    }

    /// Fetches every record: new nodes appear (no data downloaded), nodes with a new ETag lose their stale
    /// local copies, nodes whose record is a tombstone are deleted locally. A record that does not
    /// authenticate, is unsealed (plain JSON), malformed, or older (a lower generation) than one this store
    /// applied is refused and reported in `skipped`, and the node keeps what the store had; so is the plain
    /// absence of a sealed record this store applied (a delete leaves a tombstone), unless
    /// `acceptEmptyRemote`. A remote that cannot be listed fails the pull before anything changes:
    /// "unreachable" is never taken for "deleted". Nor is a remote that lists no node at all while the store
    /// knows some (an unmounted or wrong bucket folder looks like that), unless `acceptEmptyRemote`.
    ///
    /// With `expectedFingerprint` (or one `init --remote --expect-fingerprint` left in the store's settings,
    /// `expectedFingerprintSetting`), the records the remote serves must have that fingerprint
    /// (`DiskManager.outlineFingerprint`) before anything is applied: a machine's first pull, which has no
    /// generation of its own to refuse a rollback with, then trusts no more than the machine that printed
    /// it. A mismatch fails the pull (`.invalidResponse`) with nothing changed; a match forgets the setting.
    public func pull(acceptEmptyRemote: Bool = false, expectedFingerprint: String? = nil) async throws -> PullResult {
        var expected = expectedFingerprint
        if expected == nil { expected = try await manager.text(Self.expectedFingerprintSetting) }
        // What this store knows is read before the listing: a node this store (its mount) uploads for the
        // first time after the listing was taken is not "gone from the bucket" (it was not listed yet).
        let known = Dictionary(uniqueKeysWithValues: try await manager.outline.entries().map { ($0.nodeID, $0) })
        let appliedGenerations = try await manager.records.generations()
        let objects = try await remote.list(prefix: CloudLayout.recordsPrefix)
        var result = PullResult()
        var seen = Set<NodeID>()
        if !acceptEmptyRemote, !known.isEmpty, !objects.contains(where: { CloudLayout.recordName(ofKey: $0.key) != nil }) {
            throw RemoteError(.emptyListing, "\(remote.url) lists no node while this store knows \(known.count); nothing was changed (a wrong or unmounted bucket?)")
        }
        var generations: [NodeID: UInt64] = [:]
        // Every record that opened, at the generation the remote serves (for the fingerprint).
        var served: [NodeID: UInt64] = [:]
        // The listing gives each record's size and ETag: one GET each (with If-Match), a HEAD only when the
        // record was replaced since; the outline is written in one transaction at the end.
        let listed = Dictionary(objects.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var updates: [OutlineEntry] = []
        // A node with a change queued here (a rename, new attributes, new content made through the drive)
        // keeps what this store says, and its local files, until the change is uploaded: the upload meets a
        // newer remote record and merges it or makes a conflict copy. Checked again in the transaction that
        // writes the outline (`pulledGenerations`): a change queued meanwhile is kept too.
        // (The mount's changes waiting in the drive's journal are queued first.)
        manager.drainDriveCommits()
        let queuedHere = Set(try await manager.uploadQueue.all().map(\.nodeID))
        let records = try await RecordListing.read(objects, knownNodes: Set(known.keys).union(appliedGenerations.keys).union(queuedHere),
                                                   with: manager) { object throws(RemoteError) in
            try await readRecord(object.key, listed: listed[object.key])
        }
        for listedRecord in records.entries {
            var entry: OutlineEntry
            let opened: OpenedRecord
            switch listedRecord.opened {
            case .success(let read): opened = read
            case .failure(let error):
                // A refused record is not a deletion: the node stays as this store knows it.
                if let nodeID = listedRecord.nodeID { seen.insert(nodeID) }
                result.skipped.append(error.message)
                continue
            }
            let nodeID = opened.nodeID
            let applied = appliedGenerations[nodeID] ?? 0
            do throws(RemoteError) {
                let read = opened.object
                if case .tombstone(let note) = read, note.moved == true {
                    throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' moved to its keyed name, which \(remote.url) does not hold: not taken as a delete, the node is kept")
                }
                let generation = read.generation
                served[nodeID] = generation
                guard generation >= applied else {
                    throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' is older (generation \(generation)) than the one this store has applied (generation \(applied)): a rollback, refused")
                }
                if generation > 0 { generations[nodeID] = generation }
                // A tombstone: the node is deleted (below, with the nodes gone from the listing).
                guard let record = read.record else { continue }
                if queuedHere.contains(nodeID), known[nodeID] != nil {
                    // Its generation is not noted either: the upload compares with the one this store applied.
                    generations[nodeID] = nil
                    seen.insert(nodeID)
                    continue
                }
                entry = try record.outlineEntry()
                // Its key must be this node's, under this store's master key: one that is not is refused
                // here, alone, instead of failing the outline's write for every node of the pull.
                do { _ = try manager.keys.unwrap(entry.wrappedKey, for: .node(nodeID)) } catch {
                    throw RemoteError(.invalidResponse, "the key in the record of node '\(nodeID)' does not unwrap as this node's with this store's master key: refused")
                }
            } catch {
                // A refused record is not a deletion: the node stays as this store knows it.
                seen.insert(nodeID)
                result.skipped.append(error.message)
                continue
            }
            if entry.cloudFileID == nil, entry.cloudVersion != nil {
                // A record from before file IDs: bound to its cloud file as this store first sees it (as on a
                // first pull), or to the one it bound that version to before.
                if let bound = OutlineEntry.boundFileID(of: entry.cloudVersion, known: known[nodeID]) {
                    entry.cloudFileID = bound
                } else {
                    do { entry.cloudFileID = try await legacyFileID(of: entry) } catch {
                        guard error.code == .invalidResponse || error.code == .notFound || error.code == .changed else { throw error }
                        seen.insert(nodeID)
                        result.skipped.append(error.message)
                        continue
                    }
                }
            }
            seen.insert(nodeID)
            if let old = known[nodeID] {
                if old.cloudETag != entry.cloudETag { result.changed += 1 } else { result.unchanged += 1 }
                if old == entry { continue }
            } else {
                result.added += 1
            }
            updates.append(entry)
        }
        if let expected {
            let found = manager.keys.outlineFingerprint(of: served)
            guard found == expected.lowercased() else {
                throw RemoteError(.invalidResponse, "\(remote.url) serves records whose fingerprint is \(found) (\(served.count) nodes), not the expected \(expected): rolled back, changed since that fingerprint was made, or tampered with; nothing was pulled")
            }
        }
        // Applied entries note their generations in the transaction that applies them (unless a change was
        // queued meanwhile); the others' (unchanged records, tombstones) are noted here.
        let updated = Set(updates.map(\.nodeID))
        let pulled = generations.filter { updated.contains($0.key) }
        try await manager.outline.update(updates, pulledGenerations: pulled)
        try await manager.records.note(generations.filter { pulled[$0.key] == nil })
        // A node with a change still queued here keeps it: the upload brings the node back (a local change
        // is never dropped by a remote delete).
        manager.drainDriveCommits()
        let queued = Set(try await manager.uploadQueue.all().map(\.nodeID))
        var gone: [NodeID] = []
        for nodeID in known.keys.sorted(by: { $0.rawValue < $1.rawValue }) where !seen.contains(nodeID) && !queued.contains(nodeID) {
            // A delete leaves a tombstone (a tombstone is not `seen`, so its node is here with its generation
            // noted). A sealed record this store applied that is simply gone is a bucket writer's deletion,
            // or a wiped bucket: refused like any tampering, unless the caller accepts an emptied remote.
            let applied = appliedGenerations[nodeID] ?? 0
            if applied > 0, generations[nodeID] == nil, !acceptEmptyRemote {
                result.skipped.append("the record of node '\(nodeID)' is gone from \(remote.url) without a tombstone (this store applied generation \(applied)): not taken as a delete, the node is kept")
                continue
            }
            gone.append(nodeID)
        }
        if !gone.isEmpty {
            try await manager.deleteNodes(Array(gone))
            result.deleted = gone.count
        }
        result.skipped += try await pullUsers()
        if expected != nil, expectedFingerprint == nil { try await manager.removeText(Self.expectedFingerprintSetting) }
        return result
    }

    /// The store setting that holds the fingerprint the next pull must find (`init --remote
    /// --expect-fingerprint`).
    public static let expectedFingerprintSetting = "pull.expectedFingerprint"

    /// The file ID of the cloud file a version 2 record (which names none) describes: its header, read with
    /// the record's ETag (one range request), authenticated by the node's key and agreeing with the record.
    private func legacyFileID(of entry: OutlineEntry) async throws(RemoteError) -> [UInt8] {
        guard let version = entry.cloudVersion else { throw RemoteError(.invalidResponse, "node '\(entry.nodeID)' has no cloud file version") }
        let objectKey = CloudLayout.cloudFile(entry.nodeID, version: version, keyed: entry.keyedNames, with: manager)
        let key: SymmetricKey
        do { key = try manager.keys.unwrap(entry.wrappedKey, for: .node(entry.nodeID)) } catch {
            throw RemoteError(.invalidResponse, "the key in the record of node '\(entry.nodeID)' does not unwrap: \(error.message)")
        }
        let bytes = try await remote.read(objectKey, range: 0..<UInt64(CryptoFormat.headerSize), ifMatch: entry.cloudETag)
        let header: CryptoFileHeader
        do { header = try CryptoFileHeader(authenticating: Array(bytes), key: key, name: objectKey) } catch {
            throw RemoteError(.invalidResponse, "the cloud file of node '\(entry.nodeID)' does not authenticate with the node's key: \(error.message)")
        }
        try entry.checkAgreement(with: header, objectKey: objectKey)
        return header.fileID
    }

    /// A record object as listed: one ranged GET with the listing's ETag; replaced or gone since the listing,
    /// or listed without an ETag (an http remote's index), read afresh (`readAll`).
    private func readRecord(_ key: String, listed: ObjectInfo?) async throws(RemoteError) -> Data? {
        guard let listed, !listed.etag.isEmpty else { return try await remote.readAll(key) }
        do {
            return try await remote.read(key, range: 0..<listed.size, ifMatch: listed.etag)
        } catch {
            guard error.code == .changed || error.code == .notFound else { throw error }
            return try await remote.readAll(key)
        }
    }

    /// Brings every user record's avatars into the store's avatar outline, so they are listed (and sized)
    /// before any is downloaded; a user whose record went loses the avatars the outline had listed.
    /// Returns the user records it refused and skipped, one line each.
    private func pullUsers() async throws -> [String] {
        let objects = try await remote.list(prefix: CloudLayout.usersPrefix)
        var seen = Set<UserID>()
        var skipped: [String] = []
        // The users whose avatars the outline lists, by their records' names: a record of one that is refused
        // keeps what the store had, as a refused node record does.
        let known = await Dictionary(Set(try manager.outline.avatars().map(\.userID)).map { (CloudLayout.userName($0, with: manager), $0) },
                               uniquingKeysWith: { first, _ in first })
        for object in objects {
            guard let name = CloudLayout.userRecordName(ofKey: object.key) else { continue }
            if let user = known[name.name] { seen.insert(user) }
            guard name.sealed else {
                skipped.append("the user record \(object.key) is unsealed (plain JSON, as anyone with access to the bucket could write it): refused (pushing the user's avatar again seals it)")
                continue
            }
            guard let data = try await remote.readAll(object.key) else { continue }
            var entries: [AvatarOutlineEntry] = []
            let userID: UserID
            do {
                let record = try UserRecord.open(data, name: name.name, with: manager)
                userID = try UserID(record.userID)
                seen.insert(userID)
                for identity in record.identities {
                    guard let avatar = identity.avatar, let wrapped = Hex.decode(avatar.wrappedKey) else { continue }
                    let identityID: IdentityID
                    do { identityID = try IdentityID(identity.identityID) } catch {
                        throw RemoteError(.invalidResponse, "the record of user '\(userID)' names a malformed identity")
                    }
                    // Bound to its user and identity: another user's entry copied here does not unwrap.
                    do { _ = try manager.keys.unwrap(wrapped, for: .avatar(userID, identityID)) } catch {
                        throw RemoteError(.invalidResponse, "the avatar key of user '\(userID)', identity '\(identityID)' does not unwrap (another user's or another store's key): refused")
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
            try await manager.outline.updateAvatars(userID, entries: entries)
        }
        for userID in await Set(try manager.outline.avatars().map(\.userID)) where !seen.contains(userID) {
            try await manager.outline.updateAvatars(userID, entries: [])
        }
        return skipped
    }

    /// The image size of an avatar whose record predates `plaintextSize`: from its header (one range request).
    private func avatarPlaintextSize(_ userID: UserID, _ identityID: IdentityID, wrappedKey: [UInt8]) async throws -> UInt64 {
        let key = try manager.keys.unwrap(wrappedKey, for: .avatar(userID, identityID))
        let name = "the avatar of '\(userID)' / '\(identityID)'"
        let bytes = try await remote.read(CloudLayout.avatar(userID, identityID, with: manager), range: 0..<UInt64(CryptoFormat.headerSize), ifMatch: nil)
        let header: CryptoFileHeader
        do { header = try CryptoFileHeader(authenticating: Array(bytes), key: key, name: name) } catch {
            throw RemoteError(.invalidResponse, "\(name) does not authenticate: \(error.message)")
        }
        return header.sectionSizes.reduce(0, +)
    }
}
