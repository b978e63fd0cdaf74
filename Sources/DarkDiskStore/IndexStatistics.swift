import GRDB
import GRDBSQLite
import Synchronization

/// The work a store's index did in this process: statements run and the SQLite virtual-machine steps they
/// took (a full-table scan costs a step per row, an indexed lookup a few dozen). For checking that an
/// operation costs what it should at scale (a listing O(n), a lookup O(log n)), in tests and benchmarks;
/// and the write transactions committed (each costs a lock, its pages in the log and a share of a checkpoint).
package struct IndexStatistics: Sendable, Equatable {
    package var statements: Int
    package var steps: Int
    package var commits: Int

    package init(statements: Int, steps: Int, commits: Int = 0) {
        self.statements = statements
        self.steps = steps
        self.commits = commits
    }

    /// What happened between `earlier` and this.
    package static func - (later: IndexStatistics, earlier: IndexStatistics) -> IndexStatistics {
        IndexStatistics(statements: later.statements - earlier.statements, steps: later.steps - earlier.steps,
                        commits: later.commits - earlier.commits)
    }

    /// The running totals of one index (all its connections).
    final class Counter: Sendable {
        let statements = Atomic<Int>(0)
        let steps = Atomic<Int>(0)
        /// Counted by the connections' WAL hook (`IndexCheckpointer.Trigger`), which SQLite calls once per commit.
        let commits = Atomic<Int>(0)

        var totals: IndexStatistics {
            IndexStatistics(statements: statements.load(ordering: .relaxed), steps: steps.load(ordering: .relaxed),
                            commits: commits.load(ordering: .relaxed))
        }

        /// Counts every statement `db` runs from now on. SQLite's profile callback fires when a statement
        /// finishes; its step counter is read and reset there (GRDB reuses prepared statements). The caller
        /// keeps the counter alive as long as the connection (the pool's configuration holds it).
        func count(_ db: Database) {
            sqlite3_trace_v2(db.sqliteConnection, UInt32(SQLITE_TRACE_PROFILE), { _, context, statement, _ in
                guard let context, let statement else { return 0 }
                let counter = Unmanaged<Counter>.fromOpaque(context).takeUnretainedValue()
                counter.statements.add(1, ordering: .relaxed)
                counter.steps.add(Int(sqlite3_stmt_status(OpaquePointer(statement), SQLITE_STMTSTATUS_VM_STEP, 1)), ordering: .relaxed)
                return 0
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }
}

extension DiskManager {
    /// The work this store's index did in this process so far (see `IndexStatistics`).
    package var indexStatistics: IndexStatistics { indexCounter.totals }
}
