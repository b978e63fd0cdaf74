import Foundation

/// A local change of a node waiting to reach the remote, as the index's upload queue holds it.
public struct QueuedUpload: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Waiting for an uploader.
        case pending
        /// A process (`claimedBy`) is uploading it.
        case uploading
        /// The last attempt failed (`lastError`); the next drain tries again.
        case failed
    }

    /// What the change asks of the remote.
    public enum Operation: String, Sendable {
        /// The node's content as the store holds it, with its record (a push, a write through the drive).
        case content
        /// The record alone, over the content the remote has: a new name, folder or attributes (a rename, a
        /// move, a chmod through the drive), so a remote-only node is renamed without being downloaded.
        case record
        /// The node everywhere: its record becomes a tombstone (a delete through the drive).
        case delete
    }

    public let nodeID: NodeID
    public let operation: Operation
    /// The name and parent the node's record gets; nil: as the outline has them.
    public let name: String?
    public let parentID: String?
    public let queuedAt: Date
    public let state: State
    /// The process uploading it, while `uploading`.
    public let claimedBy: Int32?
    /// The cloud file version being uploaded (a record naming it after a crash is this upload's own).
    public let version: String?
    public let attempts: Int
    public let lastError: String?
    /// Grows with every change queued for the node: an upload clears only the change it uploaded.
    public let sequence: Int64
    /// The cloud file version the node had here when the change began (nil: none, a new node, or queued
    /// before this was kept); once a change of the row is uploaded, the version it uploaded. A remote at
    /// another version did not get this change's base: its upload is a conflict.
    public var basedOn: String? = nil

    /// Whether a running process is uploading it now (a claim of a process that died is free to take).
    public var isBeingUploaded: Bool {
        guard state == .uploading, let claimedBy else { return false }
        return UploadQueue.isRunning(claimedBy)
    }
}
