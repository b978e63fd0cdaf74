import Foundation
import GRDB

/// Changes made by other processes (the CLI, a mount daemon, a `pull`), delivered by `StoreFiles.changes(in:)`
/// like this process' own. The writer connection of each process logs every insert, delete and move of a
/// file row, tagged with the process' origin, through TEMP triggers (they exist on that connection only,
/// so a foreign tool's connection never needs them); every maintenance round reads what others logged
/// since the last look. Rows older than an hour are pruned. From another process an eviction, expiry or
/// deletion all arrive as `deleted`, an import (or a re-import) as `imported`, a move between persistent
/// and cache as `migrated`.
struct ChangeLog: Sendable {
    /// This instance's tag on the rows it logs.
    let origin = UUID().uuidString.replacingOccurrences(of: "-", with: "")

    /// Installs the logging triggers on the pool's writer connection.
    func install(on database: DatabasePool) throws {
        try database.writeWithoutTransaction { db in
            let values = { (row: String, reason: String) in
                "INSERT INTO changeLog (origin, at, pool, kind, ownerID, identityID, reason) VALUES ('\(origin)', "
                    + "(julianday('now') - 2440587.5) * 86400.0, \(row).pool, \(row).kind, \(row).ownerID, \(row).identityID, '\(reason)');"
            }
            try db.execute(sql: """
                CREATE TEMP TRIGGER IF NOT EXISTS changeLogInsert AFTER INSERT ON main.file BEGIN \(values("NEW", "imported")) END;
                CREATE TEMP TRIGGER IF NOT EXISTS changeLogDelete AFTER DELETE ON main.file BEGIN \(values("OLD", "deleted")) END;
                CREATE TEMP TRIGGER IF NOT EXISTS changeLogMigrate AFTER UPDATE OF mode ON main.file BEGIN \(values("NEW", "migrated")) END;
                """)
        }
    }

    /// The newest row now: where this instance starts reading.
    static func newest(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM changeLog") ?? 0
    }

    /// Changes other processes logged after `seq`, and the newest row seen.
    func others(after seq: Int64, _ db: Database) throws -> (changes: [StoreChange], newest: Int64) {
        var newest = seq
        var changes: [StoreChange] = []
        for row in try Row.fetchAll(db, sql: "SELECT * FROM changeLog WHERE seq > ? ORDER BY seq", arguments: [seq]) {
            newest = max(newest, row["seq"])
            guard (row["origin"] as String) != origin, let pool = Pool(rawValue: row["pool"]), let kind = FileKind(rawValue: row["kind"]),
                  let reason = StoreChange.Reason(rawValue: row["reason"]) else { continue }
            changes.append(StoreChange(pool: pool, kind: kind, ownerID: row["ownerID"], identityID: row["identityID"], reason: reason))
        }
        return (changes, newest)
    }

    /// Removes rows older than an hour (every process has long read them).
    static func prune(_ db: Database, now: Double) throws {
        try IndexDatabase.pruneLog("changeLog", db, before: now - 3600)
    }
}
