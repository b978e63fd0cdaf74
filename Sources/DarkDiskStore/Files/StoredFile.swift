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
    /// A cache file (one section, imported here or a downloaded section) or a cloud file (a whole downloaded
    /// one, or a version the drive wrote).
    public let format: CryptoFileFormat
    /// The file ID in a cloud file's header, when the index has it (see `isRemoteVersion(of:)`).
    public let cloudFileID: [UInt8]?

    init(fileID: Int64, kind: FileKind, ownerID: String, identityID: String, mode: StorageMode, plaintextSize: UInt64,
         storedSize: UInt64, modified: Date, lastAccess: Date, expiration: Double, format: CryptoFileFormat, cloudFileID: [UInt8]? = nil) {
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
        self.cloudFileID = cloudFileID
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
        cloudFileID = record.cloudFileID.map(Array.init)
    }

    /// Whether this is the node's whole cloud file as the remote has it (`outline`: the node's record now):
    /// see `StoredFile.isRemoteVersion(format:cloudFileID:of:)`.
    public func isRemoteVersion(of outline: OutlineEntry?) -> Bool {
        Self.isRemoteVersion(format: format, cloudFileID: cloudFileID, of: outline)
    }

    /// Whether a stored data file is the node's whole cloud file as the remote has it, so that its metadata
    /// and thumbnail sections are the remote's too and its inode is the remote version's: a cloud file whose
    /// header's file ID is the one the node's record names. A version the drive wrote is a cloud file of its
    /// own until its upload makes the record name it. A row without the ID is a download made before the
    /// index kept it (drive versions were cache files then).
    public static func isRemoteVersion(format: CryptoFileFormat, cloudFileID: [UInt8]?, of outline: OutlineEntry?) -> Bool {
        guard format == .cloudFile else { return false }
        guard let cloudFileID else { return true }
        return outline?.cloudFileID == cloudFileID
    }
}
