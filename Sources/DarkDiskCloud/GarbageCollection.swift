import DarkDisk
import Foundation

/// What `CloudSync.collectGarbage` did.
public struct GarbageResult: Sendable, Equatable, Codable {
    /// Cloud file versions deleted, and their bytes.
    public var deleted: [String] = []
    public var deletedBytes: UInt64 = 0
    /// Unnamed versions still inside their grace period (kept for now).
    public var waiting = 0
    /// Nodes whose record could not be read or opened: none of their files is touched.
    public var skippedNodes: [String] = []
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
        var unreadable = Set<NodeID>()
        for object in CloudLayout.currentRecords(try await remote.list(prefix: CloudLayout.recordsPrefix)) {
            let nodeID = object.nodeID
            guard let data = try await remote.readAll(object.key),
                  let read = try? RecordObject.read(data, sealed: object.sealed, expected: nodeID, with: manager) else {
                unreadable.insert(nodeID)
                result.skippedNodes.append(nodeID.rawValue)
                continue
            }
            // A deleted node's tombstone names no version: all its versions are garbage after the grace.
            guard let record = read.record else { continue }
            guard let entry = try? record.outlineEntry() else {
                unreadable.insert(nodeID)
                result.skippedNodes.append(nodeID.rawValue)
                continue
            }
            named.insert(CloudLayout.cloudFile(of: entry))
        }
        let files = try await remote.list(prefix: "nodes/")
        let unnamed = files.filter { file in
            guard let node = CloudLayout.nodeID(ofCloudFileKey: file.key) else { return false }
            return !named.contains(file.key) && !unreadable.contains(node)
        }
        let since = try manager.remoteGarbage(Set(unnamed.map(\.key)))
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
        try manager.forgetRemoteGarbage(gone)
        result.deleted = gone
        result.skippedNodes.sort()
        return result
    }
}
