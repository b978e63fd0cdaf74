import DarkDiskStore
import DarkDiskSync
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The writable drive as one process serves it: lookups, listings, attributes and every change of its
/// folders, files and links, each answered with what this process has written already (read-your-writes),
/// by node and name, with no knowledge of FUSE. The mount's adapter turns its answers into replies.
///
/// A `creat` is answered from memory (`PendingCreates`); a `close` returns once its commit is in the store's
/// journal, which the index takes in batches. Both are this type's business: every call here that reads the
/// drive first lets in what it must see (the rows of files made before it, the journaled commits of the
/// nodes it reads), so its callers never coordinate with the journal.
///
/// Locks, taken in this order and never while calling the store:
/// 1. `writers` (the table of open writers), briefly; inside it only a writer's `users` count.
/// 2. A `DriveWriter`'s record lock, `folderRecords`, `PendingCreates`' state: leaves.
/// The store's own locks (staged content, then the journal, then GRDB's writer) are below all of these.
package final class Drive: Sendable {
    package let store: DiskManager
    let logger: Logger
    /// The drive files open for writing, by node: their handles share one staged content.
    let writers = Locked<DriveWriterTable>(DriveWriterTable())
    /// Drive folders' records, kept between the kernel's questions.
    let folderRecords = DriveFolderRecords()
    /// New drive files whose index rows wait for their first commit.
    let creates: PendingCreates
    /// Folders whose entries changed here, and when: their modification and change times show it at once,
    /// before the index has the change (a journaled `unlink`, a `creat` whose row waits). Forgotten when the
    /// folder's time is set.
    let folderTimes = Locked<[NodeID: DriveTime]>([:])
    /// The top of the drive's own attributes, once read (`Drive-top.swift`).
    let top = Locked<DriveTopAttributes?>(nil)
    /// Told when a node has a new version committed here (in the index), so readers change over.
    private let versionObserver = Locked<Callback<NodeID, Void>?>(nil)

    package init(store: DiskManager, logger: Logger) {
        self.store = store
        self.logger = logger
        creates = PendingCreates(manager: store)
    }

    /// Calls `observer` whenever node `id` gets a new version here (committed, or in the index at last).
    package func observeVersions(_ observer: @escaping @Sendable (NodeID) -> Void) {
        versionObserver.withLock { $0 = Callback(observer) }
    }

    func versionChanged(_ id: NodeID) {
        versionObserver.withLock { $0 }?.call(id)
    }

    // MARK: Life

    /// Starts committing closes through the journal; false when another process journals this store (each
    /// commit is then its own transaction).
    package func start() throws(DarkDiskError) -> Bool {
        try store.startDriveJournal()
    }

    /// Writes every waiting row and waits up to `timeout` seconds for the index to take the journal; whether
    /// it did (what it did not take waits in the journal for the store's next opening).
    package func stop(timeout: Double) -> Bool {
        creates.drain()
        return store.stopDriveJournal(timeout: timeout)
    }

    // MARK: What the store must have first

    /// The store, once it has every change this drive took so far (its new files' rows and its journaled
    /// commits): for reads of the same nodes through other views (`/nodes/<id>`), which ask the store directly.
    /// Throws when the index cannot take the journal in time (`DiskManager.driveCommitWaitLimit`): an answer without those changes would miss
    /// files (a listing that `tar c` or a backup takes as whole).
    package func currentStore() throws(DarkDiskError) -> DiskManager {
        creates.drain()
        try waitForCommits()
        return store
    }

    /// Makes the index durable with every change taken so far (`fsync` of a folder).
    package func sync() throws(DarkDiskError) {
        _ = try currentStore()
        store.syncIndex()
    }

    /// Waits until the index has the commits journaled so far, at most `DiskManager.driveCommitWaitLimit`.
    /// (The journal's backlog is bounded, `DriveCommitJournal.backlogLimit`: a working index takes it in well
    /// under a second.)
    func waitForCommits() throws(DarkDiskError) {
        let limit = DiskManager.driveCommitWaitLimit
        guard !store.driveCommitsIdle, !store.drainDriveCommits(timeout: limit) else { return }
        throw DarkDiskError(.io, "drive commits wait for the index for more than \(Int(limit)) s")
    }

    /// Waits until the index has the journaled commits of node `id`, if any wait; one atomic load when none do.
    func settle(_ id: NodeID) throws(DarkDiskError) {
        guard !store.driveCommitsIdle, store.hasPendingDriveCommit(id) else { return }
        try waitForCommits()
    }

    // MARK: Records kept

    /// Notes that the entries of `folders` (nil: the top, whose times are the mount's) changed now.
    func entriesChanged(in folders: NodeID?...) {
        let now = Self.now()
        // (Once the index has every change, it has these times too: a long-running mount keeps no more than
        // `folderTimesLimit` of them.)
        let idle = store.driveCommitsIdle
        folderTimes.withLock { times in
            if times.count >= Self.folderTimesLimit, idle { times.removeAll(keepingCapacity: true) }
            for case let folder? in folders { times[folder] = now }
        }
    }

    static let folderTimesLimit = 10_000

    /// Forgets what this drive keeps of the records of `ids` (a folder's, a writer's), whose nodes changed
    /// (here, or elsewhere: a pull, another process).
    package func forgetRecords(_ ids: [NodeID]) {
        folderRecords.forget(ids)
        writers.withLock { table in for id in ids { table[id]?.forgetRecord() } }
    }

    /// The writer of node `id`, while it is open for writing here.
    package func writer(of id: NodeID) -> DriveWriter? {
        writers.withLock { $0[id] }
    }

    /// A new entry's attributes: `permissions` (the caller applied the umask), made now.
    package static func newAttributes(_ kind: NodeAttributes.Kind, permissions: UInt32) -> NodeAttributes {
        let now = now()
        return NodeAttributes(kind: kind, mode: permissions & 0o7777, modifiedSeconds: now.seconds, modifiedNanoseconds: now.nanoseconds)
    }

    package static func now() -> DriveTime {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return DriveTime(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }
}
