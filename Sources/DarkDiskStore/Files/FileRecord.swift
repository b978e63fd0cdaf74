import DarkDiskCrypto
import Foundation
import GRDB

/// One stored encrypted file, as the index knows it.
struct FileRecord: Codable, FetchableRecord, MutablePersistableRecord, Sendable {
    static let databaseTableName = "file"

    var id: Int64?
    var kind: FileKind
    var ownerID: String
    var identityID: String
    var pool: Pool
    var mode: StorageMode
    var format: CryptoFileFormat
    /// Random file name; the folder follows from `mode` (see `StoreFiles.path(of:)`).
    var name: String
    var wrappedKey: Data
    var storedSize: Int64
    var plaintextSize: Int64
    var created: Double
    var modified: Double
    var lastAccess: Double
    var expiration: Double
    var migrateToCacheAfterUpload: Bool
    var deleteAfterUpload: Bool
    /// The file ID in the header of a cloud file (nil: a cache file, or a row from before it was kept).
    var cloudFileID: Data? = nil

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// Writes the row by column: GRDB's Codable encoding of the same record cost a tenth of a drive commit.
    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["kind"] = kind.rawValue
        container["ownerID"] = ownerID
        container["identityID"] = identityID
        container["pool"] = pool.rawValue
        container["mode"] = mode.rawValue
        container["format"] = format.rawValue
        container["name"] = name
        container["wrappedKey"] = wrappedKey
        container["storedSize"] = storedSize
        container["plaintextSize"] = plaintextSize
        container["created"] = created
        container["modified"] = modified
        container["lastAccess"] = lastAccess
        container["expiration"] = expiration
        container["migrateToCacheAfterUpload"] = migrateToCacheAfterUpload
        container["deleteAfterUpload"] = deleteAfterUpload
        container["cloudFileID"] = cloudFileID
    }

    /// Inserts the row with one cached statement (GRDB's `insert` builds its statement and runs the record's
    /// callbacks each time: half the cost of a drive commit's statements) and takes its new ID.
    mutating func insertRow(_ db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO file (id, kind, ownerID, identityID, pool, mode, format, name, wrappedKey, storedSize, plaintextSize,
                              created, modified, lastAccess, expiration, migrateToCacheAfterUpload, deleteAfterUpload, cloudFileID)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [id, kind.rawValue, ownerID, identityID, pool.rawValue, mode.rawValue, format.rawValue, name, wrappedKey,
                                     storedSize, plaintextSize, created, modified, lastAccess, expiration, migrateToCacheAfterUpload,
                                     deleteAfterUpload, cloudFileID])
        id = db.lastInsertedRowID
    }

    static func find(_ db: Database, kind: FileKind, owner: String, identity: String = "") throws -> FileRecord? {
        try FileRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM file WHERE kind = ? AND ownerID = ? AND identityID = ?"),
                                arguments: [kind.rawValue, owner, identity])
    }
}

extension FileRecord {
    /// Reads a row by column: GRDB's Codable decoding of the same row is slower, and listings and lookups decode
    /// one row per file.
    init(row: Row) throws {
        func value<T: RawRepresentable>(_ column: String, _ type: T.Type) throws -> T where T.RawValue: DatabaseValueConvertible {
            guard let raw: T.RawValue = row[column], let value = T(rawValue: raw) else {
                throw DarkDiskError(.corrupt, "the index's file row has an unknown \(column) '\(row[column] as DatabaseValue)'")
            }
            return value
        }
        id = row["id"]
        kind = try value("kind", FileKind.self)
        ownerID = row["ownerID"]
        identityID = row["identityID"]
        pool = try value("pool", Pool.self)
        mode = try value("mode", StorageMode.self)
        format = try value("format", CryptoFileFormat.self)
        name = row["name"]
        wrappedKey = row["wrappedKey"]
        storedSize = row["storedSize"]
        plaintextSize = row["plaintextSize"]
        created = row["created"]
        modified = row["modified"]
        lastAccess = row["lastAccess"]
        expiration = row["expiration"]
        migrateToCacheAfterUpload = row["migrateToCacheAfterUpload"]
        deleteAfterUpload = row["deleteAfterUpload"]
        cloudFileID = row["cloudFileID"]
    }
}

extension FileRecord {
    /// The `file` columns `init(_:)` reads, in this order (the lookup connection selects them).
    static let selected = """
        file.id, file.kind, file.ownerID, file.identityID, file.pool, file.mode, file.format, file.name, file.wrappedKey,
        file.storedSize, file.plaintextSize, file.created, file.modified, file.lastAccess, file.expiration,
        file.migrateToCacheAfterUpload, file.deleteAfterUpload, file.cloudFileID
        """
    /// How many they are: a query's own columns come after them.
    static let selectedCount: Int32 = 18

    /// Reads a result row's values by position (SQLite's C API, on the lookup connection).
    struct ColumnReader {
        let text: (Int32) -> String?
        let integer: (Int32) -> Int64?
        let real: (Int32) -> Double
        let blob: (Int32) -> Data?
    }

    /// A row read by column position (`selected`), refused as `init(row:)` refuses it.
    init(_ columns: ColumnReader) throws(DarkDiskError) {
        func value<T: RawRepresentable>(_ raw: T.RawValue?, _ column: String) throws(DarkDiskError) -> T {
            guard let raw, let value = T(rawValue: raw) else {
                throw DarkDiskError(.corrupt, "the index's file row has an unknown \(column) '\(raw.map { "\($0)" } ?? "NULL")'")
            }
            return value
        }
        let id = columns.integer(0)
        guard let ownerID = columns.text(2), let identityID = columns.text(3), let name = columns.text(7) else {
            throw DarkDiskError(.corrupt, "the index's file row \(id.map(String.init) ?? "?") lacks its owner or name")
        }
        guard let format = columns.integer(6).flatMap({ UInt8(exactly: $0) }).flatMap(CryptoFileFormat.init) else {
            throw DarkDiskError(.corrupt, "the index's file row has an unknown format '\(columns.integer(6).map(String.init) ?? "NULL")'")
        }
        self.init(id: id, kind: try value(columns.text(1), "kind"), ownerID: ownerID, identityID: identityID,
                  pool: try value(columns.text(4), "pool"), mode: try value(columns.text(5), "mode"), format: format, name: name,
                  wrappedKey: columns.blob(8) ?? Data(), storedSize: columns.integer(9) ?? 0, plaintextSize: columns.integer(10) ?? 0,
                  created: columns.real(11), modified: columns.real(12), lastAccess: columns.real(13), expiration: columns.real(14),
                  migrateToCacheAfterUpload: columns.integer(15) ?? 0 != 0, deleteAfterUpload: columns.integer(16) ?? 0 != 0,
                  cloudFileID: columns.blob(17))
    }
}
