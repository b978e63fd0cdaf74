import DarkDisk
import DarkDiskSync
import Dispatch
import Synchronization

/// The index inserts of drive files the mount has made but not yet written to the index (`creat` is
/// answered from the node made in memory, and its row is inserted on this queue while the program writes:
/// a `tar x` then waits for one transaction per file, its commit's, not two). They run one at a time, in
/// the order made. Every request that reads or changes the drive's index first waits for them (`drain`),
/// so nothing the kernel asks can miss a file it was told of; a file's commit waits, and fails with its
/// insert's error if the insert failed (`settle`), and an `fsync` of a folder waits for them all. Nothing is
/// promised of a file before its `close`, its `fsync` or its folder's `fsync` returns (DESIGN §10): a daemon
/// killed before that may leave no trace of it.
final class PendingCreates: Sendable {
    private let queue = DispatchQueue(label: "darkdisk.creates")
    private let pending = Atomic<Int>(0)
    private let failures = Locked<[NodeID: DarkDiskError]>([:])

    /// Runs `insert`, the index row of new node `id`, after the inserts submitted before it.
    func submit(_ id: NodeID, _ insert: @escaping @Sendable () throws(DarkDiskError) -> Void) {
        pending.wrappingAdd(1, ordering: .acquiringAndReleasing)
        queue.async { [self] in
            do throws(DarkDiskError) { try insert() } catch { failures.withLock { $0[id] = error } }
            pending.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Waits until every insert submitted so far has run (at once when none is waiting).
    func drain() {
        guard pending.load(ordering: .acquiring) > 0 else { return }
        queue.sync {}
    }

    /// Waits for the inserts, then throws the error that stopped node `id`'s, if one did.
    func settle(_ id: NodeID) throws(DarkDiskError) {
        drain()
        if let failure = failures.withLock({ $0[id] }) { throw failure }
    }

    /// Forgets node `id`'s failure (its last handle has gone).
    func forget(_ id: NodeID) {
        failures.withLock { _ = $0.removeValue(forKey: id) }
    }
}
