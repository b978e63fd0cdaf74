extension CryptoFileHeader {
    /// Parses and authenticates a header fetched on its own (the first `CryptoFormat.headerSize` bytes of a
    /// file, e.g. by one range request), so a client learns the section offsets before fetching a section.
    public init(authenticating bytes: [UInt8], key: SymmetricKey, name: String) throws(CryptoError) {
        self = try Self.decode(bytes, contentKey: key, name: name).0
    }
}
