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
    /// Random file name; the folder follows from `mode` (see `DiskManager.path(of:)`).
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

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    static func find(_ db: Database, kind: FileKind, owner: String, identity: String = "") throws -> FileRecord? {
        try FileRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM file WHERE kind = ? AND ownerID = ? AND identityID = ?"),
                                arguments: [kind.rawValue, owner, identity])
    }
}
