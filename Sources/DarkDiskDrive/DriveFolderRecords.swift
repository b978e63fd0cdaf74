import DarkDiskStore
import DarkDiskSync

/// Drive folders' records as last read from the index, so that the attributes the kernel asks for after
/// every entry made in a folder (it drops them at each create, mkdir, unlink and rename there) cost no index
/// read: `tar x` asked once per file. A change made through this mount forgets the record at once; one
/// made elsewhere (a pull, another process) is forgotten by the store watcher before it tells the kernel.
final class DriveFolderRecords: Sendable {
    /// Records kept at most; the next one past it starts the table again (a listing of many folders).
    static let limit = 10_000
    private let state = Locked<(records: [NodeID: DriveNode], generation: UInt64)>(([:], 0))

    /// The record of folder `id` if kept, and the generation to pass to `remember` after reading it anew.
    func record(_ id: NodeID) -> (record: DriveNode?, generation: UInt64) {
        state.withLock { ($0.records[id], $0.generation) }
    }

    /// Keeps `node` as read from the index, unless a record was forgotten since `generation` (the read may
    /// then be older than the change).
    func remember(_ node: DriveNode, ifStill generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.records.count >= Self.limit { state.records.removeAll(keepingCapacity: true) }
            state.records[node.id] = node
        }
    }

    /// Forgets the records of `ids` (their nodes changed).
    func forget(_ ids: [NodeID]) {
        state.withLock { state in
            state.generation &+= 1
            for id in ids { state.records[id] = nil }
        }
    }
}
