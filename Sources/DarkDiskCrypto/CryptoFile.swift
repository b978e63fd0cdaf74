/// What a store hands out for an encrypted file: where it is, its format and key, and an optional retain
/// token (any object; while it is alive the store will not delete the file).
public struct CryptoFile: Sendable {
    public let path: String
    public let format: CryptoFileFormat
    public let key: SymmetricKey
    public let retainToken: (any AnyObject & Sendable)?

    public init(path: String, format: CryptoFileFormat, key: SymmetricKey, retainToken: (any AnyObject & Sendable)? = nil) {
        self.path = path
        self.format = format
        self.key = key
        self.retainToken = retainToken
    }
}
