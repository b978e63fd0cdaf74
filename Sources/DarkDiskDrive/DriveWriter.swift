import DarkDiskStore
import DarkDiskSync
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A drive file open for writing in this daemon: its staged content, shared by every handle of the node
/// (a read through any of them sees every write at once), and how many handles use it. The last
/// `Drive.release` commits what is left and lets it go.
package final class DriveWriter: Sendable {
    package let nodeID: NodeID
    package let content: StagedContent
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

    /// Replaces the record's attributes by `attributes`, which this daemon has just written (a change of the
    /// node: its change time is now).
    func remember(attributes: NodeAttributes) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        known.withLock {
            $0.generation &+= 1
            $0.record?.attributes = attributes
            $0.record?.changed = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
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

/// The drive writers of a daemon, by node: one per node, so every handle of a file writes into one version.
/// An opening makes a node's content outside the table's lock (it reads the index and opens the stored
/// version); if a writer of that node committed and went meanwhile, what it made holds an older version, and
/// the opening makes it again (`makingStarts`, `makingEnds`), so no handle's writes are replaced by another's
/// older copy.
struct DriveWriterTable: Sendable {
    private var writers: [NodeID: DriveWriter] = [:]
    /// Openings making a node's content now, and how many writers of that node went since the first began.
    private var makers: [NodeID: (count: Int, removals: UInt64)] = [:]
    /// How many writers went, of any node: what a listing read before one went may not show its last size.
    private(set) var removals: UInt64 = 0

    subscript(id: NodeID) -> DriveWriter? {
        get { writers[id] }
        set {
            if newValue == nil, writers[id] != nil {
                removals &+= 1
                if makers[id] != nil { makers[id]!.removals &+= 1 }
            }
            writers[id] = newValue
        }
    }

    /// An opening of node `id` starts making its content; what to hand to `makingEnds`.
    mutating func makingStarts(_ id: NodeID) -> UInt64 {
        makers[id, default: (0, 0)].count += 1
        return makers[id]!.removals
    }

    /// The opening that began at `mark` is done making; whether no writer of the node went meanwhile (what it
    /// made is then the node's current version).
    mutating func makingEnds(_ id: NodeID, mark: UInt64) -> Bool {
        guard let maker = makers[id] else { return true }
        if maker.count == 1 { makers[id] = nil } else { makers[id]!.count -= 1 }
        return maker.removals == mark
    }
}
