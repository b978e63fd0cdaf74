import DarkDiskStore
import Foundation

/// What `CloudSync.collectGarbage` did.
public struct GarbageResult: Sendable, Equatable, Codable {
    /// Cloud file versions deleted, and their bytes.
    public var deleted: [String] = []
    public var deletedBytes: UInt64 = 0
    /// Unnamed versions still inside their grace period (kept for now).
    public var waiting = 0
    /// Nodes whose record could not be read or opened (by ID, or the record's key when its node is not
    /// known here): none of their files is touched.
    public var skippedNodes: [String] = []
    /// Records under a node's ID that its keyed record replaced (left by a push cut short), deleted.
    public var replacedRecords: [String] = []
    /// Multipart uploads of cloud files left unfinished (an uploader killed mid-upload) that were aborted.
    public var abortedUploads = 0
    /// Why unfinished uploads could not be listed or aborted (say, credentials without that permission);
    /// the versions were collected all the same.
    public var uploadCleanupFailure: String?
}

extension CloudSync {
    /// Deletes the cloud file versions no record names any more (`darkdisk gc`), once this store
    /// has seen them unnamed for `grace` seconds: a reader on another machine that fetched the previous
    /// record may still be downloading the previous version, and a push writes its cloud file before its
    /// record. Only darkdisk's own cloud-file keys are candidates; a node whose record does not open keeps
    /// all its files. The first sightings are kept in the index, so the grace period spans runs.
    ///
    /// It also aborts multipart uploads of cloud files started more than `uploadGrace` seconds ago and never
    /// finished (an uploader killed mid-upload leaves their parts, billed and unlisted; a day by default, as
    /// rclone's `cleanup`, since a live upload of a large file may take hours).
    public func collectGarbage(grace: TimeInterval = 3600, uploadGrace: TimeInterval = 86_400) async throws -> GarbageResult {
        var result = GarbageResult()
        do {
            result.abortedUploads = try await remote.abortUnfinishedUploads(prefix: "nodes/", startedBefore: manager.clock.now.addingTimeInterval(-uploadGrace))
        } catch {
            guard error.code != .unreachable else { throw error }
            result.uploadCleanupFailure = error.message
        }
        var named = Set<String>()
        // Node folders (`CloudLayout.nodeName`) whose record could not be read: none of their files is touched.
        var kept = Set<String>()
        let objects = try await remote.list(prefix: CloudLayout.recordsPrefix)
        let known = Set(try await manager.outline.entries().map(\.nodeID)).union(try await manager.records.generations().keys)
        let listing = try await RecordListing.read(objects, knownNodes: known, with: manager) { object throws(RemoteError) in
            try await remote.readAll(object.key)
        }
        for listed in listing.entries {
            let entry: OutlineEntry
            switch listed.opened {
            case .success(let opened):
                if case .tombstone(let note) = opened.object, note.moved == true {
                    // Moved to a keyed record the bucket does not hold: both names' files are kept.
                    kept.formUnion([opened.nodeID.rawValue, CloudLayout.nodeName(opened.nodeID, with: manager)])
                    result.skippedNodes.append(opened.nodeID.rawValue)
                    continue
                }
                // A deleted node's tombstone names no version: all its versions are garbage after the grace.
                guard let record = opened.object.record, let read = try? record.outlineEntry() else {
                    if opened.object.record != nil {
                        kept.formUnion([opened.nodeID.rawValue, CloudLayout.nodeName(opened.nodeID, with: manager)])
                        result.skippedNodes.append(opened.nodeID.rawValue)
                    }
                    continue
                }
                entry = read
            case .failure:
                if let name = CloudLayout.recordName(ofKey: listed.key) { kept.insert(name.name) }
                if let id = listed.nodeID { kept.formUnion([id.rawValue, CloudLayout.nodeName(id, with: manager)]) }
                result.skippedNodes.append(listed.nodeID?.rawValue ?? listed.key)
                continue
            }
            named.insert(CloudLayout.cloudFile(of: entry, with: manager))
        }
        // A record under a node's ID that its keyed record replaced goes now (a push deletes it; one cut short
        // left it): it is never read again. Only a `moved` note or an older one, and only while it is the
        // object read (`CloudSync.isReplaced`).
        for beside in try await listing.recordsBesideKeyed(in: objects, remote: remote, with: manager) where beside.isReplaced {
            do { try await remote.delete(beside.object.key, condition: .matches(beside.object.etag)) } catch {
                guard error.code == .preconditionFailed || error.code == .notFound else { throw error }
                continue
            }
            result.replacedRecords.append(beside.object.key)
        }
        let files = try await remote.list(prefix: "nodes/")
        let unnamed = files.filter { file in
            guard let folder = CloudLayout.nodeName(ofCloudFileKey: file.key) else { return false }
            return !named.contains(file.key) && !kept.contains(folder)
        }
        let since = try await manager.records.garbage(Set(unnamed.map(\.key)))
        let now = manager.clock.now
        var gone: [String] = []
        for file in unnamed.sorted(by: { $0.key < $1.key }) {
            guard let first = since[file.key], now.timeIntervalSince(first) >= grace else {
                result.waiting += 1
                continue
            }
            try await remote.delete(file.key)
            gone.append(file.key)
            result.deletedBytes += file.size
        }
        try await manager.records.forgetGarbage(gone)
        result.deleted = gone
        result.skippedNodes.sort()
        result.replacedRecords.sort()
        return result
    }
}
