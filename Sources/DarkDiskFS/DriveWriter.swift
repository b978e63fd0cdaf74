import DarkDisk
import Synchronization

/// A drive file open for writing in this daemon: its staged content, shared by every handle of the node
/// (a read through any of them sees every write at once), and how many handles use it. The last
/// `release` commits what is left and lets it go (`FuseFileSystem.releaseWriter`).
final class DriveWriter: Sendable {
    let nodeID: NodeID
    let content: StagedContent
    /// Open handles using this content.
    let users = Atomic<Int>(0)

    init(nodeID: NodeID, content: StagedContent) {
        self.nodeID = nodeID
        self.content = content
    }
}
