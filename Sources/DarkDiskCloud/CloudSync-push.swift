import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSync
import Foundation

/// Push: a node's content as a new immutable cloud file version, then its sealed record, written only if
/// the bucket's record is still the one this store last saw. When it is not, nothing is lost:
/// the remote's version keeps the node and the local change becomes a conflict copy beside it.
extension CloudSync {
    /// What a push did.
    public struct PushResult: Sendable, Equatable {
        /// The entry that was uploaded: the node's, or the conflict copy's if there was a conflict.
        public var entry: OutlineEntry
        /// Set when the remote had changed: the local change was uploaded as this new node instead.
        public var conflict: ConflictCopy?
    }

    /// Encrypts `dataFile` (with optional thumbnail and metadata) into the cloud-file format under the node's
    /// key, uploads it as a new version, then writes the node's sealed record (one generation above the one
    /// this store applied) on condition that the bucket's record is still the one that generation names
    /// (`If-Match`, or `If-None-Match: *` for a new node). If another machine's record came first, the
    /// node takes the remote's version in this store and the file is pushed again as a new node named
    /// `NAME (conflict HOST YYYY-MM-DD HHMMSS).EXT` in the same folder (`PushResult.conflict`, listed by
    /// `StoreOutline.conflictCopies()`). Then the store hears that the upload finished (upload hooks fire).
    @discardableResult
    public func push(dataFile: String, nodeID: NodeID, name: String? = nil, parentID: String? = nil,
                     thumbnail: Data? = nil, metadata: Data? = nil) async throws -> PushResult {
        let content = Content(data: .plaintextFile(dataFile), thumbnail: thumbnail, metadata: metadata)
        // Local files of the node that are not what is pushed are its old version from now on.
        let stale = try await staleLocalKinds(of: nodeID, content)
        switch try await upload(content, nodeID: nodeID, name: name, parentID: parentID, ownPlacement: name != nil || parentID != nil) {
        case .pushed(let entry):
            try await manager.outline.invalidateLocalFiles(of: nodeID, kinds: stale)
            try await didUpload(nodeID)
            return PushResult(entry: entry, conflict: nil)
        case .conflict(let remoteRecord):
            // The local change goes up as a new node (with the attributes it has here); then the remote's
            // version is the node's, here too.
            let copy = try await uploadConflictCopy(content, of: nodeID, name: name ?? remoteRecord?.name,
                                                    parentID: parentID ?? remoteRecord?.parentID)
            if let remoteRecord { try await apply(remoteRecord) }
            return copy
        }
    }

    /// What a node's cloud file is made of.
    struct Content {
        enum Source {
            /// A plaintext file (`push(dataFile:)`).
            case plaintextFile(String)
            /// A file the store holds, re-encrypted in memory (an upload from the queue).
            case stored(DiskExport)
        }
        var data: Source
        var thumbnail: Data?
        var metadata: Data?
    }

    /// The kinds of the node's local files whose plaintext differs from `content` (data compared a MiB at a
    /// time; a file that does not decrypt counts as different).
    func staleLocalKinds(of nodeID: NodeID, _ content: Content) async throws -> Set<FileKind> {
        var stale = Set<FileKind>()
        for kind in [FileKind.data, .metadata, .thumbnail] {
            guard let export = try await manager.files.nodeFile(nodeID, kind: kind) else { continue }
            let same: Bool
            switch kind {
            case .metadata: same = (try? Self.plaintext(of: export)) == content.metadata
            case .thumbnail: same = (try? Self.plaintext(of: export)) == content.thumbnail
            default:
                guard case .plaintextFile(let path) = content.data else { continue }
                same = (try? Self.plaintext(of: export, equalsFileAt: path)) ?? false
            }
            if !same { stale.insert(kind) }
        }
        return stale
    }

    static func plaintext(of export: DiskExport) throws -> Data {
        try withExtendedLifetime(export) { try FileConversion.decryptIntoMemory(path: export.cryptoFile.path, key: export.cryptoFile.key) }
    }

    private static func plaintext(of export: DiskExport, equalsFileAt path: String) throws -> Bool {
        let reader = try export.reader()
        let size = reader.plaintextSize(ofSection: reader.dataSection)
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var offset: UInt64 = 0
        while offset < size {
            let count = Int(min(1 << 20, size - offset))
            let local = try reader.read(section: reader.dataSection, offset: offset, count: count)
            guard let pushed = try handle.read(upToCount: count), pushed.elementsEqual(local) else { return false }
            offset += UInt64(count)
        }
        return (try handle.read(upToCount: 1))?.isEmpty ?? true
    }

    enum UploadOutcome {
        case pushed(OutlineEntry)
        /// Another writer's record came first; the record now in the bucket (nil: it went, or it is legacy).
        case conflict(NodeRecord?)
    }

    /// One attempt: the cloud file as a new version, then the record on condition. A record that does not
    /// authenticate is never overwritten (it may be another key's, or a tampering to look at).
    /// `beforeRecord` learns the version uploaded before the record naming it is written (the queue keeps it,
    /// so that after a crash the record is known as this upload's own).
    ///
    /// A newer record whose content is still the one this store's change was made on (another machine renamed
    /// or moved the node, or changed its attributes) is merged, not copied: this content goes up under that
    /// record's name and folder (unless `ownPlacement`: this change renames or moves the node too, and its
    /// name wins), one generation above it. Any other newer record is a conflict.
    /// `attributes`: the record's (nil: the node's in the index). `basedOn`: the cloud file version the change
    /// was made on (a queued change's); a record naming another is a conflict, even one this store has taken
    /// since (for an older change that met it).
    func upload(_ content: Content, nodeID: NodeID, name: String?, parentID: String?, ownPlacement: Bool = true,
                attributes: NodeAttributes? = nil, basedOn: String? = nil,
                beforeRecord: (String) throws -> Void = { _ in }) async throws -> UploadOutcome {
        var name = name, parentID = parentID
        let key = try manager.outline.contentKey(for: nodeID).key
        // Bound to the node: a wrapped key moved to another node's record does not unwrap there.
        let wrapped = manager.keys.wrap(key, for: .node(nodeID))
        // Composed in the store's staging folder: an interrupted push leaves it to the orphan sweep.
        let scratch = try await manager.makeScratchFile()
        defer { withExtendedLifetime(scratch) {} }
        let header: CryptoFileHeader
        switch content.data {
        case .plaintextFile(let path):
            header = try FileConversion.encryptCloudFile(metadata: content.metadata, thumbnail: content.thumbnail,
                                                         dataFileAt: path, key: key, to: scratch.path)
            try CloudFilePadding.pad(fileAt: scratch.path, fileLength: header.fileLength)
        case .stored(let export):
            let source = try export.reader()
            let path = scratch.path
            let (metadata, thumbnail) = (content.metadata, content.thumbnail)
            // A version the drive wrote is already the cloud file this upload would compose (a cloud file under
            // the node's key, at the chunk size files are written with, its metadata and thumbnail sections empty
            // as this upload's are): it goes up as it is, with no second and third pass of AES over its bytes.
            let sendsAsItIs = export.cryptoFile.key == key && source.header.format == .cloudFile
                && source.header.chunkSize == CryptoFormat.defaultChunkSize
                && source.plaintextSize(ofSection: CloudFileSection.metadata.rawValue) == 0 && (metadata?.isEmpty ?? true)
                && source.plaintextSize(ofSection: CloudFileSection.thumbnail.rawValue) == 0 && (thumbnail?.isEmpty ?? true)
            header = try await BlockingPool.shared.run { () throws(CryptoError) in
                if sendsAsItIs {
                    try source.copyEncrypted(to: path)
                    try CloudFilePadding.pad(fileAt: path, fileLength: source.header.fileLength)
                    return source.header
                }
                let header = try FileConversion.encryptCloudFile(metadata: metadata, thumbnail: thumbnail, dataFrom: source, key: key, to: path)
                try CloudFilePadding.pad(fileAt: path, fileLength: header.fileLength)
                return header
            }
        }
        // (Padded with random bytes, so that the bucket's owner sees only roughly how large the node is.)
        // A new, immutable version: a reader of the previous one (If-Match) never sees a mix; `gc` deletes
        // versions no record names after a grace period.
        let version = CloudLayout.newVersion()
        let cloudKey = CloudLayout.cloudFile(nodeID, version: version, with: manager)
        let info = try await remote.write(cloudKey, movingFile: scratch.path)
        try beforeRecord(version)
        let applied = try await manager.records.generation(of: nodeID)
        let condition: WriteCondition
        // The node's record under its ID, which this write moves to the node's keyed name.
        var recordByID: CurrentRecord?
        var generation = applied + 1
        var merged = false
        if let current = try await currentRecord(of: nodeID) {
            switch current.state {
            case nil:
                try? await remote.delete(cloudKey)
                throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' in \(remote.url) does not authenticate; it was not overwritten (see 'darkdisk check --remote')")
            case .record(let record)?:
                if let basedOn, let remoteVersion = record.cloudVersion, remoteVersion != basedOn {
                    try? await remote.delete(cloudKey)
                    return .conflict(record)
                }
                // Newer than what this store saw: another machine's change came first. Its content is the one
                // this change was made on when its cloud file is the one this store knows: merged.
                if record.generation ?? 0 > applied {
                    guard let known = try await manager.outline.entry(nodeID), let version = record.cloudVersion,
                          known.cloudVersion == version, known.cloudETag == record.cloudETag else {
                        try? await remote.delete(cloudKey)
                        return .conflict(record)
                    }
                    if !ownPlacement { (name, parentID) = (record.name, record.parentID) }
                    generation = (record.generation ?? 0) + 1
                    merged = !ownPlacement
                }
            case .tombstone(let tombstone)?:
                // Deleted elsewhere: a local change is never dropped by a remote delete, so it brings the
                // node back, above the tombstone's generation.
                generation = max(applied, tombstone.generation) + 1
            }
            if current.keyed {
                condition = current.condition
            } else {
                (condition, recordByID) = (.absent, current)
            }
        } else {
            condition = .absent
        }
        let recordAttributes: NodeAttributes
        if let attributes { recordAttributes = attributes } else { recordAttributes = try await manager.outline.attributes(of: nodeID) }
        let record = NodeRecord(nodeID: nodeID.rawValue, name: name, parentID: parentID,
                                metadataSize: header.sectionSizes[CloudFileSection.metadata.rawValue],
                                thumbnailSize: header.sectionSizes[CloudFileSection.thumbnail.rawValue],
                                dataSize: header.sectionSizes[CloudFileSection.data.rawValue],
                                wrappedKey: Hex.encode(wrapped), cloudETag: info.etag, generation: generation, cloudVersion: version,
                                fileID: header.fileID, attributes: recordAttributes)
        let sealed = try record.sealed(with: manager)
        let recordKey = CloudLayout.record(nodeID, with: manager)
        var written: ObjectInfo?
        do {
            written = try await remote.write(recordKey, data: sealed, condition: condition)
        } catch {
            guard error.code == .preconditionFailed else { throw error }
        }
        if written == nil {
            // Lost the race, unless it was this write landing before a retry: then the bucket holds our record.
            let now = try await currentRecord(of: nodeID)
            if now?.state?.record?.cloudVersion != version {
                try? await remote.delete(cloudKey)
                return .conflict(now?.state?.record)
            }
            written = now?.object
        }
        if let recordByID, try await !retire(recordByID, of: nodeID, movedAt: generation) {
            // Only while it is this write's (and then its cloud file too): a change made on it meanwhile
            // names that file and stays.
            if let written, (try? await remote.delete(recordKey, condition: .matches(written.etag))) != nil {
                try? await remote.delete(cloudKey)
            }
            return .conflict(try await currentRecord(of: nodeID)?.state?.record)
        }
        try await manager.records.note([nodeID: generation])
        try await deleteReplacedRecordByID(of: nodeID, keyedGeneration: generation)
        let entry = try record.outlineEntry()
        try await manager.outline.update(entry, invalidatingLocalFiles: false, keepingLocalPlacement: true)
        // A merged rename or move from elsewhere is this store's placement too (unless the node went here).
        if merged, try await manager.outline.hasNode(nodeID) { try await manager.outline.update(entry, invalidatingLocalFiles: false) }
        return .pushed(entry)
    }

    /// A node's sealed record object as the bucket holds it now: its key and object, what it holds (a record
    /// or a tombstone; nil if it does not open), and whether it is under the node's keyed name.
    struct CurrentRecord {
        let key: String
        let object: ObjectInfo
        let state: RecordObject?
        let keyed: Bool

        /// The condition on which a write at `key` replaces it: that it is still this object.
        var condition: WriteCondition { .matches(object.etag) }
    }

    /// The node's record as the bucket holds it now: its keyed record, else its record under its ID (read
    /// until the node's next write replaces it); nil if it has neither.
    func currentRecord(of nodeID: NodeID) async throws(RemoteError) -> CurrentRecord? {
        for (key, keyed) in [(CloudLayout.record(nodeID, with: manager), true), (CloudLayout.recordByID(nodeID), false)] {
            if let current = try await currentObject(key, of: nodeID) {
                return CurrentRecord(key: key, object: current.object, state: current.state, keyed: keyed)
            }
        }
        return nil
    }

    /// The record object at `key` as the bucket holds it now, read with one HEAD and one GET (If-Match).
    private func currentObject(_ key: String, of nodeID: NodeID) async throws(RemoteError) -> (object: ObjectInfo, state: RecordObject?)? {
        for _ in 0..<5 {
            guard let object = try await remote.info(key) else { return nil }
            let data: Data
            do {
                data = try await remote.read(key, range: 0..<object.size, ifMatch: object.etag)
            } catch {
                // Replaced or deleted between the HEAD and the GET: look again.
                guard error.code == .changed || error.code == .notFound else { throw error }
                continue
            }
            // A note that the record moved to the keyed name (which is not there, then) is no record to base a
            // change on.
            let state = try? RecordObject.read(data, key: key, expected: nodeID, with: manager).object
            if case .tombstone(let note)? = state, note.moved == true { return (object, nil) }
            return (object, state)
        }
        throw RemoteError(.changed, "the record of node '\(nodeID)' in \(remote.url) keeps changing; try again")
    }

    /// Replaces the node's record under its ID, once its keyed record is written, by a note that it moved
    /// (`NodeTombstone.moved`), on condition that it is still the object the keyed record was based on: a
    /// machine that read it before the keyed record existed writes there, so this condition orders the two.
    /// False if it changed meanwhile (the keyed record must go: the change made there came first); true if
    /// it is gone.
    private func retire(_ recordByID: CurrentRecord, of nodeID: NodeID, movedAt generation: UInt64) async throws(RemoteError) -> Bool {
        let note = NodeTombstone.moved(nodeID, generation: generation, at: manager.clock.now)
        do {
            _ = try await remote.write(recordByID.key, data: try note.sealed(with: manager), condition: recordByID.condition)
            return true
        } catch {
            guard error.code == .preconditionFailed || error.code == .notFound else { throw error }
            // Gone: `gc` deleted it as one a keyed record replaced (this one: a machine moving the node at
            // the same time would have met it and failed). Else, unless it was this write landing before a
            // retry, another machine's change came first.
            guard let data = try await remote.readAll(recordByID.key) else { return true }
            return (try? RecordObject.read(data, key: recordByID.key, expected: nodeID, with: manager).object) == .tombstone(note)
        }
    }

    /// Deletes what the node's keyed record (at `keyedGeneration`) replaced: its record under its ID when
    /// that is a `moved` note or of a lower generation (`isReplaced`), and only while it is the object read
    /// (a change made there since stays, for `check --remote` to report); and its plain JSON record.
    func deleteReplacedRecordByID(of nodeID: NodeID, keyedGeneration: UInt64) async throws(RemoteError) {
        let key = CloudLayout.recordByID(nodeID)
        if let object = try await remote.info(key), let data = try? await remote.read(key, range: 0..<object.size, ifMatch: object.etag),
           Self.isReplaced(try? RecordObject.read(data, key: key, expected: nodeID, with: manager).object, byGeneration: keyedGeneration) {
            try? await remote.delete(key, condition: .matches(object.etag))
        }
        if try await remote.info(CloudLayout.legacyRecord(nodeID)) != nil { try await remote.delete(CloudLayout.legacyRecord(nodeID)) }
    }

    /// Whether a node's record object under its ID is one its keyed record at `generation` replaced: the
    /// `moved` note a push leaves, or a record or tombstone of a lower generation. (One of the same or a
    /// higher generation is a change made there while the node moved: never deleted unseen.)
    static func isReplaced(_ object: RecordObject?, byGeneration generation: UInt64) -> Bool {
        guard let object else { return false }
        if case .tombstone(let note) = object, note.moved == true { return true }
        return object.generation < generation
    }

    /// Takes a record from the bucket as this store's knowledge of its node (what a pull does for one node);
    /// `invalidatingLocalFiles`: its local files of another version go.
    func apply(_ record: NodeRecord, invalidatingLocalFiles: Bool = true) async throws {
        guard let generation = record.generation, let id = try? NodeID(record.nodeID) else { return }
        guard try await generation >= manager.records.generation(of: id) else { return }
        try await manager.outline.update(try record.outlineEntry(), invalidatingLocalFiles: invalidatingLocalFiles)
        try await manager.records.note([id: generation])
    }
}
