import Foundation
import GRDBSQLite

/// The drive's lookups (a folder's entries by name, a node by ID, each with its data as a listing shows it)
/// and the stored file an open reads, on a read-only SQLite connection of their own, through SQLite's C API
/// with each statement prepared once. A `tar x` asks one lookup per file, and a `cat` a lookup and an open;
/// through GRDB the same indexed query cost about 36 µs, six times SQLite's own work (queue hop, schema
/// check, statement cache keyed by SQL text, boxed arguments, `Row`s). Used only under
/// `StoreIndex.lookupConnection`'s lock (hence `@unchecked Sendable`). Any SQLite error is thrown as is;
/// the caller then gives the connection up and reads through the pool.
final class DriveLookupConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let byName: OpaquePointer
    private let byID: OpaquePointer
    private let storedFile: OpaquePointer

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The stored file of a kind, owner and identity, with its pool's default expiration (column
    /// `FileRecord.selectedCount`; NULL when the pool has no settings row).
    static let storedFileQuery = """
        SELECT \(FileRecord.selected), setting.defaultExpiration
        FROM file LEFT JOIN setting ON setting.pool = file.pool
        WHERE file.kind = ?1 AND file.ownerID = ?2 AND file.identityID = ?3
        """

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
        var prepared: [OpaquePointer] = []
        do throws(Failure) {
            for sql in [DriveListedColumns.named, DriveListedColumns.byID, Self.storedFileQuery] {
                var statement: OpaquePointer?
                guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
                    throw Failure(description: "cannot prepare a lookup: \(String(cString: sqlite3_errmsg(db)))")
                }
                prepared.append(statement)
            }
        } catch {
            for statement in prepared { sqlite3_finalize(statement) }
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        byName = prepared[0]
        byID = prepared[1]
        storedFile = prepared[2]
    }

    deinit {
        sqlite3_finalize(byName)
        sqlite3_finalize(byID)
        sqlite3_finalize(storedFile)
        sqlite3_close_v2(handle)
    }

    /// The rows named `name` in folder `parentID` (a folder node, not the top), with their data.
    func children(of parentID: String, named name: String) throws(Failure) -> [DriveListedColumns] {
        defer { sqlite3_reset(byName); sqlite3_clear_bindings(byName) }
        bind(parentID, at: 1, in: byName)
        bind(name, at: 2, in: byName)
        var rows: [DriveListedColumns] = []
        while try step(byName) { rows.append(listedColumns(of: byName)) }
        return rows
    }

    /// Node `id`'s row, with its data, if the outline names it, and whether its parent is a named folder.
    func node(_ id: String) throws(Failure) -> (DriveListedColumns, parentIsFolder: Bool)? {
        defer { sqlite3_reset(byID); sqlite3_clear_bindings(byID) }
        bind(id, at: 1, in: byID)
        guard try step(byID) else { return nil }
        return (listedColumns(of: byID), sqlite3_column_int64(byID, DriveListedColumns.count) != 0)
    }

    /// The stored file of `kind` of `owner` (and `identity`), or the error its row is refused with (a row
    /// the index cannot hold is the index's corruption, not the connection's failure), and its pool's
    /// default expiration (nil: the pool has no settings row).
    func storedFile(kind: String, owner: String, identity: String) throws(Failure) -> (Result<FileRecord, DarkDiskError>, defaultExpiration: Double?)? {
        defer { sqlite3_reset(storedFile); sqlite3_clear_bindings(storedFile) }
        bind(kind, at: 1, in: storedFile)
        bind(owner, at: 2, in: storedFile)
        bind(identity, at: 3, in: storedFile)
        guard try step(storedFile) else { return nil }
        let s = storedFile
        let reader = FileRecord.ColumnReader(text: { self.text(s, $0) }, integer: { self.integer(s, $0) },
                                             real: { sqlite3_column_double(s, $0) }, blob: { self.blob(s, $0) })
        let record = Result { () throws(DarkDiskError) in try FileRecord(reader) }
        return (record, real(s, FileRecord.selectedCount))
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

    private func text(_ statement: OpaquePointer, _ column: Int32) -> String? {
        sqlite3_column_text(statement, column).map { String(cString: $0) }
    }

    private func integer(_ statement: OpaquePointer, _ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }

    private func real(_ statement: OpaquePointer, _ column: Int32) -> Double? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_double(statement, column)
    }

    private func blob(_ statement: OpaquePointer, _ column: Int32) -> Data? {
        guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return sqlite3_column_blob(statement, column).map { Data(bytes: $0, count: count) } ?? Data()
    }

    /// The columns of `DriveListedColumns.select`, first in the row.
    private func listedColumns(of s: OpaquePointer) -> DriveListedColumns {
        let node = DriveColumns(id: text(s, 0) ?? "", name: text(s, 1), parentID: text(s, 2), created: sqlite3_column_double(s, 3),
                                type: text(s, 4), mode: integer(s, 5), mtime: integer(s, 6), mtimeNsec: integer(s, 7), target: text(s, 8),
                                xattrs: blob(s, 9), ctime: real(s, 10))
        let data = integer(s, 13).map { fileID in
            DriveListedColumns.StoredData(fileID: fileID, mode: text(s, 14), plaintextSize: sqlite3_column_int64(s, 15),
                                          storedSize: sqlite3_column_int64(s, 16), modified: sqlite3_column_double(s, 17),
                                          lastAccess: sqlite3_column_double(s, 18), expiration: sqlite3_column_double(s, 19),
                                          format: integer(s, 20), cloudFileID: blob(s, 21))
        }
        return DriveListedColumns(node: node, remoteDataSize: sqlite3_column_type(s, 11) == SQLITE_NULL ? nil : sqlite3_column_int64(s, 12),
                                  data: data)
    }
}
