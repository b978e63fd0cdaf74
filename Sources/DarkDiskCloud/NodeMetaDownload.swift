import DarkDiskCrypto
import Foundation

/// What `downloadNodeMeta` delivers: the components asked for, decrypted and authenticated. A section the
/// node does not have (size 0) is nil.
public struct NodeMetaDownload: Sendable {
    /// The cloud file's authenticated header (section sizes, chunk size), if `.header` was asked for.
    public var header: CryptoFileHeader?
    /// The node's metadata, if asked for and present.
    public var metadata: Data?
    /// The node's thumbnail, if asked for and present.
    public var thumbnail: Data?

    public init(header: CryptoFileHeader? = nil, metadata: Data? = nil, thumbnail: Data? = nil) {
        self.header = header
        self.metadata = metadata
        self.thumbnail = thumbnail
    }
}
