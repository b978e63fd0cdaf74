/// Constants of the on-disk format (see Docs/FORMAT.md).
public enum CryptoFormat {
    /// The format version written to and accepted from header byte 4.
    public static let version: UInt8 = 1
    /// Bytes before the first section.
    public static let headerSize = 80
    /// Bytes of the GCM tag after each chunk and in the header.
    public static let tagSize = 16
    /// Plaintext bytes per chunk for new files: the unit of random access and of authentication.
    public static let defaultChunkSize: UInt32 = 4 * 1024

    static let magic: [UInt8] = Array("DDSK".utf8)
    static let minimumChunkSize: UInt32 = 4096
    static let maximumChunkSize: UInt32 = 4 << 20

    /// Whether `chunkSize` is a power of two within the allowed range.
    static func isValidChunkSize(_ chunkSize: UInt32) -> Bool {
        chunkSize >= minimumChunkSize && chunkSize <= maximumChunkSize && chunkSize & (chunkSize - 1) == 0
    }
}
