@testable import DarkDiskStore
import Foundation
import GRDB
import Testing

/// The change tables (`changeLog` for other processes' change streams, `entryChange` for a mount's
/// watcher) lose their rows after an hour, without an index of their time: rows come in time order, so
/// pruning reads the old rows and one more, however many recent rows follow.
@Suite struct ChangeTablePruningTests {
    @Test(arguments: ["changeLog", "entryChange"]) func rowsOlderThanAnHourGoAndTheRestStay(table: String) throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let now = Date().timeIntervalSince1970
        let (first, recent) = try manager.database.write { db -> (Int64, Int64) in
            let first = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM \(table)")!
            for index in 0..<10_000 {
                // 300 rows two hours old, then 9,700 of the last minute.
                let at = index < 300 ? now - 7200 + Double(index) : now - 60 + Double(index) / 1000
                try Self.insert(into: table, at: at, db)
            }
            return (first, first + 301)
        }
        let before = manager.indexStatistics
        try manager.database.write { db in try IndexDatabase.pruneLog(table, db, before: now - 3600) }
        let cost = manager.indexStatistics - before
        let left = try manager.database.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM \(table) WHERE seq > ? ORDER BY seq", arguments: [first]) }
        #expect(left.count == 9_700 && left.first == recent, "\(left.count) rows left, the first \(String(describing: left.first))")
        #expect(cost.steps < 20_000, "pruning 300 of 10,000 rows took \(cost.steps) steps")
        // Nothing old: nothing goes, and the look costs a few steps.
        let again = manager.indexStatistics
        try manager.database.write { db in try IndexDatabase.pruneLog(table, db, before: now - 3600) }
        #expect((manager.indexStatistics - again).steps < 100)
        #expect(try manager.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE seq > ?", arguments: [first]) } == 9_700)
        // All old: all go.
        try manager.database.write { db in try IndexDatabase.pruneLog(table, db, before: now + 1) }
        #expect(try manager.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") } == 0)
    }

    @Test func theTimeIndexesAreGone() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let indexes = try manager.database.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('changeLog', 'entryChange')")
        }
        #expect(indexes.isEmpty, "\(indexes)")
    }

    static func insert(into table: String, at: Double, _ db: Database) throws {
        if table == "changeLog" {
            try db.execute(sql: "INSERT INTO changeLog (origin, at, pool, kind, ownerID, identityID, reason) VALUES ('test', ?, 'data', 'data', 'n', '', 'imported')", arguments: [at])
        } else {
            try db.execute(sql: "INSERT INTO entryChange (ownerID, identityID, at) VALUES ('n', '', ?)", arguments: [at])
        }
    }
}
