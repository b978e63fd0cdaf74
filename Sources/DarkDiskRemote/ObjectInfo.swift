/// An object in a remote: its key, size and ETag (which changes whenever its bytes change).
public struct ObjectInfo: Sendable, Equatable {
    public let key: String
    public let size: UInt64
    public let etag: String

    public init(key: String, size: UInt64, etag: String) {
        self.key = key
        self.size = size
        self.etag = etag
    }
}
