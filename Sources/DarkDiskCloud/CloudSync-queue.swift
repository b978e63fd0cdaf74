import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSystem
import Foundation

/// Uploads from the store's durable queue: the cloud file is composed from the encrypted files
/// the store holds (re-encrypted in memory under the node's key; no plaintext on disk), uploaded as a new
/// version, then the record is written on condition, as `push` does. Upload hooks
/// (`migrateToCacheAfterUpload`, `deleteAfterUpload`) act once the record landed.
extension CloudSync {
    /// What draining the queue did.
    public struct DrainResult: Sendable, Equatable {
        /// Nodes whose change reached the remote on the node itself.
        public var uploaded: [NodeID] = []
        /// Changes that met a newer remote version and went up as conflict copies.
        public var conflicts: [ConflictCopy] = []
        /// Changes whose upload failed, with the error (they stay queued, `failed`).
        public var failed: [(nodeID: NodeID, error: String)] = []
        /// Changes another running process is uploading (left to it).
        public var busy: [NodeID] = []
        /// Whether a failure was for want of the remote (it could not be reached).
        public var unreachable = false
        /// Whether the drain stopped before the end of the queue because its `pauseWhen` said so.
        public var paused = false

        public init() {}

        public static func == (a: DrainResult, b: DrainResult) -> Bool {
            a.uploaded == b.uploaded && a.conflicts == b.conflicts && a.busy == b.busy
                && a.failed.map(\.nodeID) == b.failed.map(\.nodeID) && a.failed.map(\.error) == b.failed.map(\.error)
                && a.unreachable == b.unreachable && a.paused == b.paused
        }
    }

    /// Makes `dataFile` (and a thumbnail and metadata, when given) the node's content in the store and queues
    /// it for upload: what `darkdisk push FILE --node ID` does before it waits for the upload. A section the
    /// store already holds with the same bytes is kept as it is (with its upload hooks); a new one is stored
    /// persistently (it may be the only copy until uploaded) and moves to the cache pool once uploaded, unless
    /// the node's data was kept persistently already. Thumbnail and metadata not given stay as stored.
    public func queuePush(dataFile: String, nodeID: NodeID, name: String? = nil, parentID: String? = nil,
                          thumbnail: Data? = nil, metadata: Data? = nil) async throws {
        let content = Content(data: .plaintextFile(dataFile), thumbnail: thumbnail, metadata: metadata)
        let stale = try await staleLocalKinds(of: nodeID, content)
        let keptBefore = try await manager.files.storedFiles(nodeID).contains { $0.kind == .data && $0.mode == .persistent }
        func store(_ source: DiskImport, _ kind: FileKind) async throws {
            var source = source
            source.storePersistently = true
            source.migrateToCacheAfterUpload = !keptBefore
            try await manager.importNodeFile(source, nodeID: nodeID, kind: kind)
        }
        let stored = await Set(try manager.files.storedFiles(nodeID).map(\.kind))
        if stale.contains(.data) || !stored.contains(.data) {
            // Sealed as the cloud file the upload sends, so that it goes up as it is stored.
            var data = DiskImport(cleartextFilePath: dataFile)
            data.format = .cloudFile
            try await store(data, .data)
        }
        if let thumbnail, stale.contains(.thumbnail) || !stored.contains(.thumbnail) {
            try await store(DiskImport(cleartextData: thumbnail), .thumbnail)
        }
        if let metadata, stale.contains(.metadata) || !stored.contains(.metadata) {
            try await store(DiskImport(cleartextData: metadata), .metadata)
        }
        try await manager.uploadQueue.add(nodeID, name: name, parentID: parentID)
    }

    /// Uploads every queued change this process can claim, oldest first (with `restedSince`, only those last
    /// changed by then); with `waitForOthers`, then waits until the changes other processes were uploading
    /// are done too (or failed). `progress` hears (changes done, changes in all) after each. `pauseWhen` is
    /// asked before each upload; once it says so, the rest stays queued for a later drain (`paused`).
    /// `firstQueuedAfter`: changes made after that moment go before the older ones, so that an edit made while
    /// a backlog drains (a one-line change after a 30,000-file copy) does not wait for the whole backlog.
    public func drainQueue(waitForOthers: Bool = false, restedSince: Date? = nil, firstQueuedAfter: Date? = nil,
                           pauseWhen: (@Sendable () throws -> Bool)? = nil,
                           progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> DrainResult {
        var result = DrainResult()
        var queue = try await manager.uploadQueue.all().filter { queued in restedSince.map { queued.queuedAt <= $0 } ?? true }
        if let firstQueuedAfter {
            let (newer, older) = (queue.filter { $0.queuedAt > firstQueuedAfter }, queue.filter { $0.queuedAt <= firstQueuedAfter })
            queue = newer + older
        }
        progress?(0, queue.count)
        for (index, queued) in queue.enumerated() {
            try Task.checkCancellation()
            if let pauseWhen, try pauseWhen() {
                result.paused = true
                break
            }
            do {
                if let outcome = try await uploadQueued(queued.nodeID) {
                    if let conflict = outcome.conflict { result.conflicts.append(conflict) } else { result.uploaded.append(queued.nodeID) }
                } else if try await manager.uploadQueue.change(of: queued.nodeID) != nil {
                    result.busy.append(queued.nodeID)
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                if (error as? RemoteError)?.code == .unreachable { result.unreachable = true }
                result.failed.append((queued.nodeID, Self.describe(error)))
            }
            progress?(index + 1, queue.count)
        }
        if waitForOthers {
            while !result.busy.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                var still: [NodeID] = []
                for id in result.busy {
                    guard let queued = try await manager.uploadQueue.change(of: id) else { result.uploaded.append(id); continue }
                    switch queued.state {
                    case .uploading: still.append(id)
                    case .failed: result.failed.append((id, queued.lastError ?? "the upload failed"))
                    case .pending:
                        // Given back (its uploader stopped) or changed again: upload it here.
                        if let outcome = try await uploadQueued(id) {
                            if let conflict = outcome.conflict { result.conflicts.append(conflict) } else { result.uploaded.append(id) }
                        } else {
                            still.append(id)
                        }
                    }
                }
                result.busy = still
            }
        }
        return result
    }

    /// Uploads the node's queued change if this process can claim it (nil: nothing queued, or another
    /// running process is uploading it). A failure leaves the change queued as `failed` with its error.
    @discardableResult
    public func uploadQueued(_ nodeID: NodeID) async throws -> PushResult? {
        guard let queued = try await manager.uploadQueue.claim(nodeID) else { return nil }
        do {
            let result = try await upload(queued)
            try await manager.uploadQueue.finish(nodeID, sequence: queued.sequence)
            return result
        } catch is CancellationError {
            try? await manager.uploadQueue.release(nodeID)
            throw CancellationError()
        } catch {
            // A node deleted here while its upload ran (a temporary file's short life) has nothing left to
            // upload: not a failure.
            if queued.operation == .content, (try? await manager.outline.hasNode(nodeID)) == false {
                try? await manager.uploadQueue.remove(nodeID)
                return nil
            }
            try? await manager.uploadQueue.fail(nodeID, sequence: queued.sequence, error: Self.describe(error))
            throw error
        }
    }

    private func upload(_ queued: QueuedUpload) async throws -> PushResult {
        switch queued.operation {
        case .record: return try await uploadRecordChange(queued)
        case .delete: return try await uploadDelete(queued)
        case .content: break
        }
        // The upload hooks run once the stored files are no longer held (the exports die with the helper's
        // frame), so that their move to the cache pool is a hard link, not a copy of the whole file.
        let (result, uploaded) = try await uploadHoldingFiles(queued)
        if uploaded { try await didUpload(queued.nodeID) }
        return result
    }

    /// The upload of `upload(_:)`; whether the node's change landed (then its upload hooks are due).
    private func uploadHoldingFiles(_ queued: QueuedUpload) async throws -> (PushResult, uploaded: Bool) {
        let nodeID = queued.nodeID
        guard let data = try await manager.files.nodeFile(nodeID, kind: .data) else {
            throw RemoteError(.io, "node '\(nodeID)' has no data stored locally to upload")
        }
        let placement = try await manager.outline.placement(nodeID)
        let name = queued.name ?? placement.name
        let parentID = queued.parentID ?? placement.parentID
        // A crash after the record landed and before the queue heard of it: the record names our version.
        // It becomes the base this upload is made on, and the local files stay: they are that version or a
        // newer one queued since (which the upload below then sends; the same content again at worst).
        var basedOn = queued.basedOn
        if let version = queued.version, let current = try await currentRecord(of: nodeID),
           let record = current.state?.record, record.cloudVersion == version {
            try await manager.records.note([nodeID: record.generation ?? 0])
            try await manager.outline.update(try record.outlineEntry(), invalidatingLocalFiles: false, keepingLocalPlacement: true)
            basedOn = version
        }
        let thumbnail = try await manager.files.nodeFile(nodeID, kind: .thumbnail)
        let metadata = try await manager.files.nodeFile(nodeID, kind: .metadata)
        let content = Content(data: .stored(data), thumbnail: try thumbnail.map(Self.plaintext(of:)),
                              metadata: try metadata.map(Self.plaintext(of:)))
        let outcome = try await upload(content, nodeID: nodeID, name: name, parentID: parentID,
                                       ownPlacement: queued.name != nil || queued.parentID != nil, basedOn: basedOn) { version in
            try manager.uploadQueue.noteVersion(nodeID, version: version)
        }
        switch outcome {
        case .pushed(let entry):
            if try await !manager.outline.hasNode(nodeID) {
                // Deleted here while it uploaded (a temporary file's short life): the record just written
                // must not bring it back on other machines.
                try await deleteNode(nodeID)
            }
            return (PushResult(entry: entry, conflict: nil), true)
        case .conflict(let remoteRecord):
            // The copy goes up first, from the files still held here; then the node takes the remote's version.
            let copy = try await uploadConflictCopy(content, of: nodeID, name: name ?? remoteRecord?.name,
                                                    parentID: parentID ?? remoteRecord?.parentID)
            // The node takes the remote's version; its local files go if they are the copy's (then it reads as the
            // remote has it, on every machine). A newer local version, committed while this one uploaded, is
            // not the copy's: it stays, queued, made on what this store had (`basedOn`), so its upload is a
            // conflict copy too.
            if let remoteRecord { try await apply(remoteRecord, invalidatingLocalFiles: false) }
            try await manager.outline.invalidateLocalFiles(of: nodeID, kinds: [.data, .metadata, .thumbnail], whileDataFileIs: data.fileID)
            return (copy, false)
        }
    }

    /// Writes the node's record anew over the content the remote has: the queued name and parent (nil: as
    /// the outline has them) and the attributes the index holds, one generation up, `If-Match` the record
    /// read (a race reads again). A record another machine changed meanwhile is merged, not copied: its
    /// content and attributes stay, this change's name and folder are put on it (a rename never makes a
    /// conflict copy), and this store takes its content. A node deleted elsewhere stays deleted: the change
    /// is dropped (one error line) and the node goes here too.
    private func uploadRecordChange(_ queued: QueuedUpload) async throws -> PushResult {
        let nodeID = queued.nodeID
        let placement = try await manager.outline.placement(nodeID)
        let name = queued.name ?? placement.name
        let parentID = queued.parentID ?? placement.parentID
        for _ in 0..<5 {
            guard let current = try await currentRecord(of: nodeID) else {
                throw RemoteError(.notFound, "node '\(nodeID)' has no record in \(remote.url) to rename; push its content first")
            }
            guard let state = current.state else {
                throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' in \(remote.url) does not authenticate; it was not overwritten (see 'darkdisk check --remote')")
            }
            guard case .record(let base) = state else {
                try await manager.records.note([nodeID: state.generation])
                try await manager.uploadQueue.remove(nodeID)
                try await manager.deleteNodes([nodeID])
                throw RemoteError(.notFound, "node '\(nodeID)' was deleted in \(remote.url); its rename was dropped and it is deleted here too")
            }
            let applied = try await manager.records.generation(of: nodeID)
            let changedElsewhere = base.generation ?? 0 > applied
            let attributes = changedElsewhere ? (base.attributes ?? NodeAttributes()) : try await manager.outline.attributes(of: nodeID)
            let generation = max(applied, base.generation ?? 0) + 1
            // The file ID the content's record named; a record from before file IDs takes the one this store
            // bound to that version (at its push, or when it first pulled it).
            var fileID = base.fileID.flatMap(Hex.decode)
            if fileID == nil { fileID = OutlineEntry.boundFileID(of: base.cloudVersion, known: try await manager.outline.entry(nodeID)) }
            // The node's key as the record carried it, bound to the node (a record from before binding is
            // rewritten with a bound wrap).
            guard let baseKey = Hex.decode(base.wrappedKey) else { throw RemoteError(.invalidResponse, "the record of node '\(nodeID)' has a malformed key") }
            let wrappedKey = Hex.encode(manager.keys.wrap(try manager.keys.unwrap(baseKey, for: .node(nodeID)), for: .node(nodeID)))
            var record = NodeRecord(nodeID: nodeID.rawValue, name: name, parentID: parentID, metadataSize: base.metadataSize,
                                    thumbnailSize: base.thumbnailSize, dataSize: base.dataSize, wrappedKey: wrappedKey,
                                    cloudETag: base.cloudETag, generation: generation, cloudVersion: base.cloudVersion,
                                    fileID: fileID, attributes: attributes)
            // Written where it is: a record under the node's ID names a cloud file there, and keeps that name
            // until the node's content is next pushed.
            if !current.keyed, record.version == 4 { record.version = 3 }
            do {
                _ = try await remote.write(current.key, data: try record.sealed(with: manager), condition: current.condition)
            } catch {
                guard error.code == .preconditionFailed else { throw error }
                // Another write landed between the read and this one (or this one, before a retry): read again.
                if try await currentRecord(of: nodeID)?.state == .record(record) { return try tookOwnRecord(record, replacingContent: changedElsewhere) }
                continue
            }
            return try tookOwnRecord(record, replacingContent: changedElsewhere)
        }
        throw RemoteError(.changed, "the record of node '\(nodeID)' in \(remote.url) keeps changing; the rename stays queued")
    }

    /// Takes a record this store wrote as its knowledge of the node.
    private func tookOwnRecord(_ record: NodeRecord, replacingContent: Bool) throws -> PushResult {
        let entry = try record.outlineEntry()
        try manager.records.note([entry.nodeID: record.generation ?? 0])
        try manager.outline.update(entry, invalidatingLocalFiles: replacingContent, keepingLocalPlacement: !replacingContent)
        return PushResult(entry: entry, conflict: nil)
    }

    /// Deletes the node everywhere (`deleteNode`): a tombstone `If-Match` the record this store last saw. A
    /// node changed elsewhere meanwhile is not deleted: the change is dropped (one error line) and the
    /// node's newer version comes back with the next pull; nothing is lost.
    private func uploadDelete(_ queued: QueuedUpload) async throws -> PushResult {
        let known = try await manager.outline.entry(queued.nodeID)
        do {
            try await deleteNode(queued.nodeID)
        } catch {
            guard (error as? RemoteError)?.code == .preconditionFailed else { throw error }
            try await manager.uploadQueue.remove(queued.nodeID)
            throw RemoteError(.preconditionFailed, "node '\(queued.nodeID)' changed in \(remote.url) before its delete reached it: it is kept, and the next pull brings its new version back")
        }
        guard let known else {
            throw RemoteError(.notFound, "node '\(queued.nodeID)' was not in \(remote.url); it is deleted here")
        }
        return PushResult(entry: known, conflict: nil)
    }

    /// Uploads `content` as a new node beside `nodeID`, named as its conflict copy, and notes it.
    func uploadConflictCopy(_ content: Content, of nodeID: NodeID, name: String?, parentID: String?) async throws -> PushResult {
        // To the second, as the name says it (and as the index keeps it).
        let now = Date(timeIntervalSince1970: manager.clock.now.timeIntervalSince1970.rounded(.down))
        let copyID = NodeID.random()
        let copyName = ConflictName.make(original: name ?? nodeID.rawValue, host: host, date: now)
        // (With the original's attributes as they are here: the local change's modification time and mode.)
        let attributes = try await manager.outline.hasNode(nodeID) ? try manager.outline.attributes(of: nodeID) : nil
        guard case .pushed(let entry) = try await upload(content, nodeID: copyID, name: copyName, parentID: parentID, attributes: attributes) else {
            throw RemoteError(.preconditionFailed, "\(remote.url): the conflict copy of node '\(nodeID)' (a new node, '\(copyID)') met a record already there")
        }
        // A new node here too, beside the original (the upload takes its own record only for nodes it has).
        try await manager.outline.update(entry, invalidatingLocalFiles: false)
        let copy = ConflictCopy(nodeID: copyID, originalID: nodeID, name: copyName, createdAt: now)
        try await manager.outline.noteConflictCopy(copy)
        return PushResult(entry: entry, conflict: copy)
    }

    /// The upload hooks of every file of the node.
    func didUpload(_ nodeID: NodeID) async throws {
        for kind in [FileKind.data, .metadata, .thumbnail] { try await manager.files.didUploadNodeFile(nodeID, kind: kind) }
    }

    static func describe(_ error: any Error) -> String {
        (error as? any DarkDiskFailure)?.message ?? "\(error)"
    }
}
