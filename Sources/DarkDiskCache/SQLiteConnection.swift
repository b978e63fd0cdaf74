import Foundation
import GRDBSQLite

/// One raw SQLite connection with its prepared statements kept for reuse: the fast path that lets a set or a
/// get cost a few microseconds. Not thread-safe: `CacheFolder` keeps it behind its lock.
final class SQLiteConnection {
    private let handle: OpaquePointer
    private let path: String
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating if needed) the database at `path`; a write waits up to `busyTimeout` milliseconds for
    /// another connection's (10 s by default).
    init(path: String, busyTimeout: Int32 = 10_000) throws(DiskCacheError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw DiskCacheError(.database, "cannot open the cache index \(path): \(message)")
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, busyTimeout)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(DiskCacheError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    /// The prepared statement for `sql`, compiled once per connection, reset and ready to bind.
    func statement(_ sql: String) throws(DiskCacheError) -> SQLiteStatement {
        if let cached = statements[sql] { return SQLiteStatement(raw: cached, connection: self, sql: sql) }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, sql) }
        statements[sql] = raw
        return SQLiteStatement(raw: raw, connection: self, sql: sql)
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`, so another process waits at the start rather
    /// than failing at the first write); rolls back if `body` throws.
    func writeTransaction<R>(_ body: () throws(DiskCacheError) -> R) throws(DiskCacheError) -> R {
        try statement("BEGIN IMMEDIATE").run()
        do {
            let result = try body()
            try statement("COMMIT").run()
            return result
        } catch {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// A `.database` error for result code `rc`, with SQLite's message.
    func error(_ rc: Int32, _ sql: String) -> DiskCacheError {
        let message = String(cString: sqlite3_errmsg(handle))
        return DiskCacheError(.database, "cache index \(path): \(message) (\(rc)) in \(sql.prefix(60))")
    }

    /// Whether a result code says the file is not a database or is damaged.
    static func isCorruption(_ error: DiskCacheError) -> Bool {
        error.message.contains("(\(SQLITE_CORRUPT))") || error.message.contains("(\(SQLITE_NOTADB))")
    }
}

/// A prepared statement of a `SQLiteConnection`: bind, step, read columns. Reset when a new use begins.
struct SQLiteStatement {
    let raw: OpaquePointer
    unowned let connection: SQLiteConnection
    let sql: String

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    @discardableResult
    func bind(_ values: SQLiteValue...) -> SQLiteStatement {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(raw, index)
            case .int(let v): sqlite3_bind_int64(raw, index, v)
            case .double(let v): sqlite3_bind_double(raw, index, v)
            case .text(var v):
                // With its length, so a key may hold any character, NUL included.
                v.withUTF8 { utf8 in
                    if let base = utf8.baseAddress, utf8.count > 0 {
                        _ = base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                            sqlite3_bind_text(raw, index, $0, Int32(utf8.count), Self.transient)
                        }
                    } else {
                        _ = sqlite3_bind_text(raw, index, "", 0, Self.transient)
                    }
                }
            case .blob(let v):
                v.withUnsafeBytes { buffer in
                    // A zero-length blob still needs a non-null pointer to be a blob rather than NULL.
                    _ = sqlite3_bind_blob(raw, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), Self.transient)
                }
            }
        }
        return self
    }

    /// Steps once; `true` when a row is available.
    func step() throws(DiskCacheError) -> Bool {
        let rc = sqlite3_step(raw)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = connection.error(rc, sql)
        sqlite3_reset(raw)
        throw error
    }

    /// Runs a statement that returns no rows (or whose rows are not needed).
    func run() throws(DiskCacheError) {
        sqlite3_reset(raw)
        while try step() {}
        sqlite3_reset(raw)
    }

    /// Ends the current use early, releasing read locks.
    func reset() { sqlite3_reset(raw) }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(raw, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(raw, column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self)
    }
    func blob(_ column: Int32) -> Data? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let p = sqlite3_column_blob(raw, column) else { return Data() }
        return Data(bytes: p, count: count)
    }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob(Data)
}
