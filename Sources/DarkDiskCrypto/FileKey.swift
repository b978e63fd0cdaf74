/// The per-file key: HKDF-Expand (one block of HMAC-SHA256) of the content key with the file ID, so files
/// sharing a content key never share a (key, nonce) pair.
enum FileKey {
    static let info = Array("darkdisk file key v1".utf8)

    /// HMAC-SHA256(contentKey, "darkdisk file key v1" || fileID || 0x01).
    static func derive(contentKey: SymmetricKey, fileID: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: contentKey, info + fileID + [0x01])
    }
}
