import GRDB
import GRDBSQLite
import Synchronization

/// The work the index did in this process: statements run and the SQLite virtual-machine steps they took
/// (a full-table scan costs a step per row, an indexed lookup a few dozen). For checking that an operation
/// costs what it should at scale (a listing O(n), a lookup O(log n)), in tests and benchmarks.
public struct IndexStatistics: Sendable, Equatable {
    public var statements: Int
    public var steps: Int

    /// The totals since the process started, over every store it opened.
    public static var current: IndexStatistics {
        IndexStatistics(statements: indexStatements.load(ordering: .relaxed), steps: indexSteps.load(ordering: .relaxed))
    }

    /// What happened between `earlier` and this.
    public static func - (later: IndexStatistics, earlier: IndexStatistics) -> IndexStatistics {
        IndexStatistics(statements: later.statements - earlier.statements, steps: later.steps - earlier.steps)
    }


    /// Counts every statement `db` runs from now on. SQLite's profile callback fires when a statement
    /// finishes; its step counter is read and reset there (GRDB reuses prepared statements).
    static func count(_ db: Database) {
        sqlite3_trace_v2(db.sqliteConnection, UInt32(SQLITE_TRACE_PROFILE), { _, _, statement, _ in
            guard let statement else { return 0 }
            indexStatements.add(1, ordering: .relaxed)
            indexSteps.add(Int(sqlite3_stmt_status(OpaquePointer(statement), SQLITE_STMTSTATUS_VM_STEP, 1)), ordering: .relaxed)
            return 0
        }, nil)
    }
}

// Globals, not statics: SQLite's C callback cannot capture the type it would reach them through.
private let indexStatements = Atomic<Int>(0)
private let indexSteps = Atomic<Int>(0)
