import DarkDiskCrypto
import Foundation

/// What the index knows about a stored file, without opening it (for listings and `stat`).
public struct StoredFile: Sendable, Equatable {
    /// Changes whenever the file is replaced, so callers can tell a new version from the old one.
    public let fileID: Int64
    public let kind: FileKind
    public let ownerID: String
    public let identityID: String
    public let mode: StorageMode
    public let plaintextSize: UInt64
    public let storedSize: UInt64
    public let modified: Date
    public let lastAccess: Date
    public let expiration: Double
    /// A cache file (one section, imported here or a downloaded section) or a whole downloaded cloud file.
    public let format: CryptoFileFormat

    init(fileID: Int64, kind: FileKind, ownerID: String, identityID: String, mode: StorageMode, plaintextSize: UInt64,
         storedSize: UInt64, modified: Date, lastAccess: Date, expiration: Double, format: CryptoFileFormat) {
        self.fileID = fileID
        self.kind = kind
        self.ownerID = ownerID
        self.identityID = identityID
        self.mode = mode
        self.plaintextSize = plaintextSize
        self.storedSize = storedSize
        self.modified = modified
        self.lastAccess = lastAccess
        self.expiration = expiration
        self.format = format
    }

    init(_ record: FileRecord) {
        fileID = record.id ?? 0
        kind = record.kind
        ownerID = record.ownerID
        identityID = record.identityID
        mode = record.mode
        plaintextSize = UInt64(record.plaintextSize)
        storedSize = UInt64(record.storedSize)
        modified = Date(timeIntervalSince1970: record.modified)
        lastAccess = Date(timeIntervalSince1970: record.lastAccess)
        expiration = record.expiration
        format = record.format
    }
}
