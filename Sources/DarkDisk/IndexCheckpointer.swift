import DarkDiskSync
import Dispatch
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// Copies the index's write-ahead log back into the database on a connection and a thread of its own, so
/// that no writer pays for it. SQLite's automatic checkpoint runs inside the commit that leaves 1,000 or
/// more pages in the log, and in the mount that was a `close` every sixty-odd files of a `tar x`, waiting
/// for a copy of 4 MiB and an `fsync`. Here the same commit only wakes this thread (`Trigger`, SQLite's WAL
/// hook), which runs a passive checkpoint: one that never waits for a reader or a writer.
///
/// A checkpoint that finds another connection in the way (SQLite's "database is locked": another process
/// checkpointing, a writer mid-commit) is ordinary under load and is tried again every 100 ms without a
/// word; only when that has gone on for `patience` does a warning say so. Any other failure is logged (at
/// most once a minute) and tried again at the next commit past the threshold.
final class IndexCheckpointer: Sendable {
    /// Log pages at or past which a commit calls for a checkpoint: SQLite's default of 1,000.
    static let threshold: Int32 = 1000
    /// The pause before a checkpoint that found the log busy is tried again.
    static let retryDelay = 0.1
    /// The shortest time between two warnings about the same run of failures.
    static let warningInterval: Duration = .seconds(60)

    /// What the index's connections run after each commit, in place of SQLite's automatic checkpoint: it
    /// wakes the checkpointer once the log holds `threshold` pages or more, or, while no checkpointer is
    /// connected (its connection could not be opened, or it stopped), checkpoints in the commit as SQLite
    /// would have. The pool's configuration keeps it alive as long as the connections that call it.
    final class Trigger: Sendable {
        fileprivate let due = Locked<(@Sendable () -> Void)?>(nil)

        init() {}

        /// Makes `db` call this after each of its commits (replacing its automatic checkpoint).
        func install(on db: Database) {
            sqlite3_wal_hook(db.sqliteConnection, { context, connection, name, pages in
                guard pages >= IndexCheckpointer.threshold, let context else { return SQLITE_OK }
                let trigger = Unmanaged<Trigger>.fromOpaque(context).takeUnretainedValue()
                if let due = trigger.due.withLock({ $0 }) {
                    due()
                } else {
                    _ = sqlite3_wal_checkpoint(connection, name)
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// The failures since the last checkpoint that worked.
    private struct Streak {
        var busySince: ContinuousClock.Instant?
        var warnedAt: ContinuousClock.Instant?
    }

    private let connection: DatabaseQueue
    private let trigger: Trigger
    private let logger: Logger
    private let patience: Duration
    private let queue = DispatchQueue(label: "darkdisk.checkpoint", qos: .utility)
    /// A checkpoint is queued, running, or waiting to be tried again: commits meanwhile add nothing.
    private let scheduled = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let streak = Locked(Streak())
    /// Checkpoints that ran (whether or not readers let them copy the whole log), and attempts that found
    /// the log busy: for tests.
    let checkpointsRun = Atomic<Int>(0)
    let busyAttempts = Atomic<Int>(0)

    /// Opens its connection to the index at `path` (in WAL mode already) and takes over `trigger`'s calls.
    init(path: String, trigger: Trigger, logger: Logger, patience: Duration = .seconds(10)) throws {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "darkdisk.index.checkpoint"
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        connection = try DatabaseQueue(path: path, configuration: config)
        self.trigger = trigger
        self.logger = logger
        self.patience = patience
        trigger.due.withLock { $0 = { [weak self] in self?.wake() } }
    }

    /// Stops checkpointing (the store is closing); commits from now on checkpoint as SQLite's would.
    func stop() {
        stopped.store(true, ordering: .releasing)
        trigger.due.withLock { $0 = nil }
        queue.sync {}
    }

    deinit {
        trigger.due.withLock { $0 = nil }
    }

    /// Queues a checkpoint unless one is queued already: called from a commit that left the log at or past
    /// the threshold (and by tests).
    func wake() {
        guard !stopped.load(ordering: .acquiring),
              scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async { self.attempt() }
    }

    private func attempt() {
        guard !stopped.load(ordering: .acquiring) else { return }
        do {
            try connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
            checkpointsRun.add(1, ordering: .relaxed)
            let warned = streak.withLock { streak in
                defer { streak = Streak() }
                return streak.warnedAt != nil
            }
            if warned { logger.info("the index's log is copied into the index again") }
            scheduled.store(false, ordering: .releasing)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            noteBusy()
            queue.asyncAfter(deadline: .now() + Self.retryDelay) { [weak self] in self?.attempt() }
        } catch {
            if warnNow() {
                logger.warning("cannot copy the index's log into the index (\(error)); trying again at the next commit")
            }
            scheduled.store(false, ordering: .releasing)
        }
    }

    /// Counts a checkpoint that found the log busy; warns once it has gone on for `patience`.
    private func noteBusy() {
        busyAttempts.add(1, ordering: .relaxed)
        let now = ContinuousClock.now
        let since = streak.withLock { streak in
            if streak.busySince == nil { streak.busySince = now }
            return streak.busySince!
        }
        guard now - since >= patience, warnNow() else { return }
        let seconds = Int((now - since).components.seconds)
        logger.warning("the index's log has waited \(seconds) s to be copied into the index: another connection keeps it busy; still trying")
    }

    /// Whether a warning may be logged now (none in the last `warningInterval`); if so, notes it.
    private func warnNow() -> Bool {
        let now = ContinuousClock.now
        return streak.withLock { streak in
            if let last = streak.warnedAt, now - last < Self.warningInterval { return false }
            streak.warnedAt = now
            return true
        }
    }
}
