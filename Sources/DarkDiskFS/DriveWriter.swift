import DarkDisk
import DarkDiskSync
import Synchronization

/// A drive file open for writing in this daemon: its staged content, shared by every handle of the node
/// (a read through any of them sees every write at once), and how many handles use it. The last
/// `release` commits what is left and lets it go (`FuseFileSystem.releaseWriter`).
final class DriveWriter: Sendable {
    let nodeID: NodeID
    let content: StagedContent
    /// Open handles using this content.
    let users = Atomic<Int>(0)
    /// The node's record as this daemon last wrote or read it, so that the attribute answers `tar x` and
    /// `cp -p` ask for after each `fchown`, `fchmod` and `utimensat` need no index read. Each change of the
    /// record here replaces it; a change the store watcher sees (a pull, another process) forgets it.
    private let known = Locked<(record: DriveNode?, generation: UInt64)>((nil, 0))

    init(nodeID: NodeID, content: StagedContent, record: DriveNode? = nil) {
        self.nodeID = nodeID
        self.content = content
        known.withLock { $0.record = record }
    }

    /// The record as last known, and the generation to pass to `remember(_:ifStill:)` after reading it anew.
    var knownRecord: (record: DriveNode?, generation: UInt64) { known.withLock { $0 } }

    /// Keeps `record` as read from the index, unless the record was replaced or forgotten since
    /// `generation` (the read may then be older than what is known).
    func remember(_ record: DriveNode, ifStill generation: UInt64) {
        known.withLock { if $0.generation == generation { $0.record = record } }
    }

    /// Replaces the record's attributes by `attributes`, which this daemon has just written.
    func remember(attributes: NodeAttributes) {
        known.withLock {
            $0.generation &+= 1
            $0.record?.attributes = attributes
        }
    }

    /// Forgets the record: the next answer reads it from the index.
    func forgetRecord() {
        known.withLock {
            $0.generation &+= 1
            $0.record = nil
        }
    }
}
