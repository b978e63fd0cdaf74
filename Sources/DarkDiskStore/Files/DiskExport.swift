import DarkDiskCrypto
import Foundation

/// A stored file handed out for reading (ZeroDark.cloud's `ZDCDiskExport`). Its `cryptoFile` carries a retain
/// token: while this value (or a copy of the token) is alive, no process deletes the file.
public struct DiskExport: Sendable {
    public let cryptoFile: CryptoFile
    /// The stored version's ID (as `StoredFile.fileID`): it changes whenever the file is replaced.
    public let fileID: Int64
    public let mode: StorageMode
    public let pool: Pool
    /// Bytes of plaintext in the file's data section.
    public let plaintextSize: UInt64
    /// Bytes the encrypted file occupies.
    public let storedSize: UInt64
    public let lastModified: Date
    /// The per-file expiration as imported (0 = pool default, < 0 = never).
    public let expiration: Double
    /// The file ID in a cloud file's header, when the index has it (see `StoredFile.isRemoteVersion`).
    public let cloudFileID: [UInt8]?

    /// Whether this is the node's whole cloud file as the remote has it (`outline`: the node's record now).
    public func isRemoteVersion(of outline: OutlineEntry?) -> Bool {
        StoredFile.isRemoteVersion(format: cryptoFile.format, cloudFileID: cloudFileID, of: outline)
    }

    public var isStoredPersistently: Bool { mode == .persistent }

    /// The token that keeps the file on disk; it also carries the open descriptor readers can share.
    public let retainToken: RetainToken

    /// A random-access reader of the file through the token's descriptor (no second `open`). The reader keeps
    /// the token, and so the file and its descriptor, alive for as long as the reader lives.
    public func reader() throws(CryptoError) -> CryptoFileReader {
        try CryptoFileReader(fileDescriptor: retainToken.fileDescriptor, key: cryptoFile.key, owner: retainToken)
    }

    /// The plaintext of a section (default: the data), one chunk at a time; the sequence keeps the token alive.
    public func chunks(section: Int? = nil) -> CryptoFileChunks {
        CryptoFileChunks(cryptoFile, section: section)
    }
}
