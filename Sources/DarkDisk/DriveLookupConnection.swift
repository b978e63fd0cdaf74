import Foundation
import GRDBSQLite

/// The drive's two lookups (a folder's entries by name, a node by ID) on a read-only SQLite connection of
/// their own, through SQLite's C API with both statements prepared once. A `tar x` asks one lookup per file
/// (each name is looked up before it is made); through GRDB the same indexed query cost about 36 µs, six
/// times SQLite's own work (queue hop, statement cache keyed by SQL text, boxed arguments, `Row`s). Used
/// only under `DiskManager.lookupConnection`'s lock (hence `@unchecked Sendable`). Any SQLite error is thrown as is;
/// the caller then gives the connection up and reads through the pool.
final class DriveLookupConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let byName: OpaquePointer
    private let byID: OpaquePointer

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Opens the index at `path` read-only; a lookup waits up to 10 s for a lock another process holds.
    init(path: String) throws(Failure) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw Failure(description: "cannot open \(path) for lookups: \(message)")
        }
        sqlite3_busy_timeout(db, 10_000)
        func prepare(_ sql: String) throws(Failure) -> OpaquePointer {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
                throw Failure(description: "cannot prepare a lookup: \(String(cString: sqlite3_errmsg(db)))")
            }
            return statement
        }
        let prepared: (byName: OpaquePointer, byID: OpaquePointer)
        do throws(Failure) {
            let byName = try prepare("SELECT \(DriveColumns.selected) FROM node WHERE parentID = ?1 AND name = ?2")
            do throws(Failure) {
                prepared = (byName, try prepare("""
                    SELECT \(DriveColumns.selected), EXISTS (SELECT 1 FROM node AS parent WHERE parent.id = node.parentID
                                                    AND parent.type = 'folder' AND parent.name IS NOT NULL)
                    FROM node WHERE id = ?1 AND name IS NOT NULL
                    """))
            } catch {
                sqlite3_finalize(byName)
                throw error
            }
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        byName = prepared.byName
        byID = prepared.byID
    }

    deinit {
        sqlite3_finalize(byName)
        sqlite3_finalize(byID)
        sqlite3_close_v2(handle)
    }

    /// The rows named `name` in folder `parentID` (a folder node, not the top).
    func children(of parentID: String, named name: String) throws(Failure) -> [DriveColumns] {
        defer { sqlite3_reset(byName); sqlite3_clear_bindings(byName) }
        bind(parentID, at: 1, in: byName)
        bind(name, at: 2, in: byName)
        var rows: [DriveColumns] = []
        while try step(byName) { rows.append(columns(of: byName)) }
        return rows
    }

    /// Node `id`'s row if the outline names it, and whether its parent is a named folder.
    func node(_ id: String) throws(Failure) -> (DriveColumns, parentIsFolder: Bool)? {
        defer { sqlite3_reset(byID); sqlite3_clear_bindings(byID) }
        bind(id, at: 1, in: byID)
        guard try step(byID) else { return nil }
        return (columns(of: byID), sqlite3_column_int64(byID, DriveColumns.count) != 0)
    }

    private func bind(_ text: String, at index: Int32, in statement: OpaquePointer) {
        // (SQLITE_TRANSIENT: SQLite copies the text, which lives only for this call.)
        _ = text.withCString { sqlite3_bind_text(statement, index, $0, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
    }

    private func step(_ statement: OpaquePointer) throws(Failure) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc: throw Failure(description: "lookup failed: \(String(cString: sqlite3_errstr(rc))): \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    private func columns(of statement: OpaquePointer) -> DriveColumns {
        func text(_ column: Int32) -> String? {
            sqlite3_column_text(statement, column).map { String(cString: $0) }
        }
        func integer(_ column: Int32) -> Int64? {
            sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
        }
        var xattrs: Data?
        if sqlite3_column_type(statement, 9) != SQLITE_NULL {
            let count = Int(sqlite3_column_bytes(statement, 9))
            xattrs = sqlite3_column_blob(statement, 9).map { Data(bytes: $0, count: count) } ?? Data()
        }
        return DriveColumns(id: text(0) ?? "", name: text(1), parentID: text(2), created: sqlite3_column_double(statement, 3),
                            type: text(4), mode: integer(5), mtime: integer(6), mtimeNsec: integer(7), target: text(8), xattrs: xattrs,
                            ctime: sqlite3_column_type(statement, 10) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 10))
    }
}
