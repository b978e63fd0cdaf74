import DarkDiskSync
import Dispatch
import GRDB
import GRDBSQLite
import Logging
import Synchronization

/// Copies the index's write-ahead log back into the database on a connection and a thread of its own, so
/// that no writer pays for it. SQLite's automatic checkpoint runs inside the commit that leaves 1,000 or
/// more pages in the log, and in the mount that was a `close` every sixty-odd files of a `tar x`, waiting
/// for a copy of 4 MiB and an `fsync`. Here a commit that has added `threshold` pages since the last
/// checkpoint only wakes this thread (`Trigger`, SQLite's WAL hook), which runs a passive checkpoint: one
/// that never waits for a reader or a writer.
///
/// A log that is copied while readers and writers keep using it is never started again from its
/// beginning (a writer restarts it only when everything is copied and no reader is in it), so it would
/// grow for as long as the mount is busy (90 MB after a `tar x` of 10,000 files). Once it holds
/// `restartAfter` pages, a restarting checkpoint follows the passive one: it holds writers back while it
/// copies what the passive one left and waits, up to `restartWait`, for the readers to leave the log.
///
/// A passive checkpoint that finds another connection in the way (SQLite's "database is locked": another
/// process checkpointing, a writer mid-commit) is ordinary under load and is tried again every 100 ms
/// without a word; only when that has gone on for `patience` does a warning say so. A restart that cannot
/// happen now (a long read) is not tried again before the log has grown as much again. Any other failure is logged (at most once a minute) and tried again
/// at the next wake.
final class IndexCheckpointer: Sendable {
    /// Pages added to the log since the last checkpoint at which a commit calls for the next one: SQLite's
    /// default of 1,000.
    static let threshold: Int32 = 1000
    /// Pages in the log past which a checkpoint also restarts it.
    static let restartAfter = 4 * Int(threshold)
    /// How long a restarting checkpoint waits for readers to leave the log (writers wait meanwhile), and
    /// how long any other statement of this connection waits for a lock, in milliseconds.
    static let restartWait: Int32 = 100
    static let busyTimeout: Int32 = 10_000
    /// The pause before a checkpoint that found the log busy is tried again.
    static let retryDelay = 0.1
    /// The shortest time between two warnings about the same run of failures.
    static let warningInterval: Duration = .seconds(60)

    /// What the index's connections run after each commit, in place of SQLite's automatic checkpoint: it
    /// hands the log's length to the checkpointer once the log holds `threshold` pages or more, or, while
    /// no checkpointer is connected (its connection could not be opened, or it stopped), checkpoints in the
    /// commit as SQLite would have. The pool's configuration keeps it alive as long as the connections that
    /// call it.
    final class Trigger: Sendable {
        /// (A reference, not a closure: a closure read and written back through `Locked`'s generic `inout`
        /// gains two reabstraction thunks each time, and calling it soon walked thousands of them.)
        fileprivate struct Target { weak var checkpointer: IndexCheckpointer? }
        fileprivate let target = Locked(Target())
        /// Where each commit is counted (`IndexStatistics.commits`).
        fileprivate let counter: IndexStatistics.Counter?

        init(counting counter: IndexStatistics.Counter? = nil) {
            self.counter = counter
        }

        /// Makes `db` call this after each of its commits (replacing its automatic checkpoint).
        func install(on db: Database) {
            sqlite3_wal_hook(db.sqliteConnection, { context, connection, name, pages in
                guard let context else { return SQLITE_OK }
                let trigger = Unmanaged<Trigger>.fromOpaque(context).takeUnretainedValue()
                trigger.counter?.commits.add(1, ordering: .relaxed)
                guard pages >= IndexCheckpointer.threshold else { return SQLITE_OK }
                if let checkpointer = trigger.target.withLock({ $0.checkpointer }) {
                    checkpointer.wake(logLength: pages)
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
    /// The log's length in pages when the last checkpoint ran.
    private let lastLength = Atomic<Int32>(0)
    /// The log's length below which no restart is tried: after one failed (a reader stayed in the log, as a
    /// long read does), not before the log has grown by `restartAfter` again, so that such a reader does not
    /// cost the writers `restartWait` at every checkpoint. Touched on `queue` only.
    private let restartFloor = Atomic<Int>(IndexCheckpointer.restartAfter)
    private let stopped = Atomic<Bool>(false)
    private let streak = Locked(Streak())
    /// Checkpoints that ran (whether or not readers let them copy the whole log), restarts of the log, and
    /// attempts that found the log busy: for tests.
    let checkpointsRun = Atomic<Int>(0)
    let restarts = Atomic<Int>(0)
    let restartAttempts = Atomic<Int>(0)
    let busyAttempts = Atomic<Int>(0)

    /// Opens its connection to the index at `path` (in WAL mode already) and takes over `trigger`'s calls.
    init(path: String, trigger: Trigger, logger: Logger, patience: Duration = .seconds(10)) throws {
        var config = Configuration()
        config.busyMode = .timeout(Double(Self.busyTimeout) / 1000)
        config.label = "darkdisk.index.checkpoint"
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        connection = try DatabaseQueue(path: path, configuration: config)
        self.trigger = trigger
        self.logger = logger
        self.patience = patience
        trigger.target.withLock { $0.checkpointer = self }
    }

    /// Stops checkpointing (the store is closing); commits from now on checkpoint as SQLite's would.
    func stop() {
        stopped.store(true, ordering: .releasing)
        trigger.target.withLock { $0.checkpointer = nil }
        queue.sync {}
    }

    /// Queues a checkpoint unless one is queued already or the log has grown by less than `threshold` pages
    /// since the last: called from a commit that left `logLength` pages in the log (and by tests, without).
    func wake(logLength: Int32? = nil) {
        if let logLength {
            let last = lastLength.load(ordering: .relaxed)
            // (A log shorter than at the last checkpoint was started again since.)
            guard logLength < last || logLength - last >= Self.threshold else { return }
        }
        guard !stopped.load(ordering: .acquiring),
              scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async { self.attempt() }
    }

    private func attempt() {
        guard !stopped.load(ordering: .acquiring) else { return }
        do {
            let length = try connection.writeWithoutTransaction { db in try db.checkpoint(.passive).walFrameCount }
            lastLength.store(Int32(clamping: length), ordering: .relaxed)
            checkpointsRun.add(1, ordering: .relaxed)
            if length >= restartFloor.load(ordering: .relaxed) { restart(length: length) }
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

    /// Copies what is left of the log and starts it again, if the readers leave it within `restartWait`;
    /// otherwise none is tried again before the log has grown by `restartAfter` pages more.
    private func restart(length: Int) {
        restartAttempts.add(1, ordering: .relaxed)
        do {
            try connection.writeWithoutTransaction { db in
                sqlite3_busy_timeout(db.sqliteConnection, Self.restartWait)
                defer { sqlite3_busy_timeout(db.sqliteConnection, Self.busyTimeout) }
                _ = try db.checkpoint(.restart)
            }
            lastLength.store(0, ordering: .relaxed)
            restartFloor.store(Self.restartAfter, ordering: .relaxed)
            restarts.add(1, ordering: .relaxed)
        } catch {
            restartFloor.store(length + Self.restartAfter, ordering: .relaxed)
            // (Busy: a reader stayed in the log, or another checkpoint ran. Anything else recurs at the next
            // passive checkpoint, which reports it.)
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
