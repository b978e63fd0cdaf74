import DarkDiskStore
import DarkDiskSync
import Foundation
import Synchronization

/// The drive files the mount has made but not yet written to the index. `creat` is answered from the node
/// made in memory; its row goes into the index with the file's first commit, in that commit's journal record
/// or transaction (`take`), so a `tar x` pays one write per file, not two. Every request that reads or changes the
/// drive's index first puts the rows still waiting there (`drain`), so nothing the kernel asks can miss a
/// file it was told of; a commit whose insert failed there fails with that error. Nothing is promised of a
/// file before its `close`, its `fsync` or its folder's `fsync` returns: a daemon killed before
/// that may leave no trace of it.
package final class PendingCreates: Sendable {
    private let manager: DiskManager
    /// Broadcast whenever a row being written lands or goes back (waiters look again).
    private let state = Locked<State>(State())
    /// Rows waiting plus rows being written: `drain` returns at once when there are none.
    private let outstanding = Atomic<Int>(0)

    private struct State: Sendable {
        /// Rows not yet written, in the order made (a drain inserts them in that order).
        var waiting: [PreparedDriveFile] = []
        /// Nodes whose rows a drain or a commit is writing now.
        var writing: Set<NodeID> = []
        /// Inserts that failed in a drain, by node: the node's commit fails with it.
        var failures: [NodeID: DarkDiskError] = [:]
    }

    package init(manager: DiskManager) {
        self.manager = manager
    }

    /// Keeps new file `prepared` until its first commit or the next drain writes its row.
    package func add(_ prepared: PreparedDriveFile) {
        outstanding.wrappingAdd(1, ordering: .acquiringAndReleasing)
        state.withLock { $0.waiting.append(prepared) }
    }

    /// Writes every waiting row to the index (each in its own transaction, so one that cannot land, its
    /// folder gone, fails alone) and waits for the rows others were writing when it was called (not for rows
    /// made since: a stream of commits cannot hold it up); at once when there are none.
    package func drain() {
        guard outstanding.load(ordering: .acquiring) > 0 else { return }
        let (rows, others) = state.withLock { state in
            defer { state.waiting = [] }
            let others = state.writing
            for row in state.waiting { state.writing.insert(row.node.id) }
            return (state.waiting, others)
        }
        for row in rows {
            do throws(DarkDiskError) {
                try manager.insertDriveFile(row, allowingDuplicate: true)
                finish(row.node.id, putBack: nil, failure: nil)
            } catch {
                finish(row.node.id, putBack: nil, failure: error)
            }
        }
        guard !others.isEmpty else { return }
        state.withLock(when: { $0.writing.isDisjoint(with: others) }) { _, _ in }
    }

    /// The row of node `id` if it still waits, now the caller's to insert with the node's first commit (then
    /// `finish` it); nil when it is in the index already (or the node is not one made here). Waits while a
    /// drain writes it, and throws the error that stopped that insert, if one did.
    package func take(_ id: NodeID) throws(DarkDiskError) -> PreparedDriveFile? {
        guard outstanding.load(ordering: .acquiring) > 0 || state.withLock({ $0.failures[id] != nil }) else { return nil }
        let (row, failure) = state.withLock(when: { state in
            !state.writing.contains(id) || state.failures[id] != nil || state.waiting.contains { $0.node.id == id }
        }) { state, _ -> (PreparedDriveFile?, DarkDiskError?) in
            if let index = state.waiting.firstIndex(where: { $0.node.id == id }) {
                let row = state.waiting.remove(at: index)
                state.writing.insert(id)
                return (row, nil)
            }
            return (nil, state.failures[id])
        }
        if let row { return row }
        if let failure { throw failure }
        return nil
    }

    /// Ends the writing of node `id`'s row: landed, or not (`putBack`: the row waits again, as the commit
    /// that was to insert it failed; `failure`: a drain's insert failed, and the node's commit will say so).
    package func finish(_ id: NodeID, putBack: PreparedDriveFile?, failure: DarkDiskError?) {
        state.withLock { state in
            state.writing.remove(id)
            if let putBack { state.waiting.insert(putBack, at: 0) }
            if let failure { state.failures[id] = failure }
        }
        if putBack == nil { outstanding.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
        state.broadcast()
    }

    /// Forgets node `id`'s failure (its last handle has gone).
    package func forget(_ id: NodeID) {
        state.withLock { _ = $0.failures.removeValue(forKey: id) }
    }
}
