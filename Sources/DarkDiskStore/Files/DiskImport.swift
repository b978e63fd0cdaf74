import DarkDiskCrypto
import Foundation

/// What to import into the store and how to keep it (ZeroDark.cloud's `ZDCDiskImport`).
public struct DiskImport: Sendable {
    /// Where the bytes come from.
    public enum Source: Sendable {
        /// Plaintext in memory.
        case cleartextData(Data)
        /// A plaintext file; it is read, not moved.
        case cleartextFile(path: String)
        /// A plaintext stream of unknown length (a pipe, stdin); read to its end.
        case cleartextStream(fileDescriptor: Int32)
        /// An already encrypted file; it is moved into the store, not copied.
        case cryptoFile(CryptoFile)

        /// What messages call the source when the import has no `sourceName`.
        var description: String {
            switch self {
            case .cleartextData(let data): "the \(data.count) bytes imported"
            case .cleartextFile(let path): path
            case .cleartextStream(let fd): "the stream on file descriptor \(fd)"
            case .cryptoFile(let file): file.path
            }
        }
    }

    public var source: Source
    /// Keep the file until it is deleted instead of in the pool's cache (default: cache, as in ZeroDark.cloud's framework).
    public var storePersistently: Bool = false
    /// Cache files only: 0 = the pool's default, < 0 = never expire, > 0 = seconds after last modification.
    public var expiration: Double = 0
    /// Persistent until the upload finishes, then a cache file.
    public var migrateToCacheAfterUpload: Bool = false
    /// Deleted once the upload finishes.
    public var deleteAfterUpload: Bool = false
    /// Plaintext bytes per encrypted chunk for cleartext sources (a power of two, 4 KiB to 4 MiB).
    public var chunkSize: UInt32 = CryptoFormat.defaultChunkSize
    /// The stored format of a cleartext source: a cache file, or (node data that goes up as it is stored) a
    /// cloud file whose metadata and thumbnail sections are empty, which an upload sends without sealing
    /// its bytes again.
    public var format: CryptoFileFormat = .cacheFile
    /// The most plaintext bytes a cleartext source may bring: past it the import stops at once and keeps
    /// nothing (`import /dev/zero` into a cache pool wrote gigabytes of a file it could never keep).
    public var sizeLimit: UInt64?
    /// What the source is called in messages (a stream has no path: "standard input").
    public var sourceName: String?

    public init(_ source: Source) {
        self.source = source
    }

    public init(cleartextData: Data) { self.init(.cleartextData(cleartextData)) }
    public init(cleartextFilePath: String) { self.init(.cleartextFile(path: cleartextFilePath)) }
    public init(cryptoFile: CryptoFile) { self.init(.cryptoFile(cryptoFile)) }
}
