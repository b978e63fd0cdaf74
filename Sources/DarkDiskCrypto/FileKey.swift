import COpenSSL

/// The per-file key: HKDF-Expand (one block of HMAC-SHA256) of the content key with the file ID, so files
/// sharing a content key never share a (key, nonce) pair.
enum FileKey {
    static let info = Array("darkdisk file key v1".utf8)

    /// HMAC-SHA256(contentKey, "darkdisk file key v1" || fileID || 0x01).
    static func derive(contentKey: SymmetricKey, fileID: [UInt8]) -> [UInt8] {
        let message = info + fileID + [0x01]
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = contentKey.bytes.withUnsafeBytes { key in
            HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), message, message.count, &output, &length)
        }
        guard result != nil, length == 32 else {
            fatalError("HMAC-SHA256 failed: \(OpenSSLError.drainQueue())")
        }
        return output
    }
}
