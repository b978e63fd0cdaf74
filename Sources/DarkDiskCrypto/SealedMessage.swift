/// A small message sealed whole with AES-256-GCM (a remote record): `magic` (4 bytes) || random 12-byte
/// nonce || ciphertext || 16-byte tag. The AAD is the magic followed by a caller's context (the record's
/// kind and the node ID it describes), so a sealed message presented under another name, or as another kind
/// of message, does not open. `Docs/FORMAT.md` specifies it.
public enum SealedMessage {
    /// "DDS" and format version 1.
    public static let magic: [UInt8] = [0x44, 0x44, 0x53, 0x01]
    /// Bytes a sealed message adds to its plaintext.
    public static let overhead = magic.count + GCMContext.nonceSize + CryptoFormat.tagSize
    /// Messages are small (records); anything larger is refused before decryption.
    public static let maximumSize = 1 << 20

    /// Seals `plaintext` under `key`, bound to `context`.
    public static func seal(_ plaintext: [UInt8], key: SymmetricKey, context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard plaintext.count + overhead <= maximumSize else {
            throw CryptoError(.outOfRange, "a sealed message holds at most \(maximumSize - overhead) bytes, not \(plaintext.count)")
        }
        let nonce = SecureRandom.bytes(GCMContext.nonceSize)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: CryptoFormat.tagSize)
        try AESGCM.seal(key: key, nonce: nonce, aad: magic + context, plaintext: plaintext, ciphertext: &ciphertext, tag: &tag)
        return magic + nonce + ciphertext + tag
    }

    /// Opens what `seal` made with the same key and context. Another magic or version is `badMagic` or
    /// `unsupportedVersion`; a message too short to hold a nonce and a tag is `truncated`; a wrong key, an
    /// altered byte or another context is `wrongKey`.
    public static func open(_ sealed: [UInt8], key: SymmetricKey, context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard sealed.count <= maximumSize else { throw CryptoError(.outOfRange, "a sealed message is at most \(maximumSize) bytes, not \(sealed.count)") }
        guard sealed.count >= magic.count, sealed[0..<3].elementsEqual(magic[0..<3]) else {
            throw CryptoError(.badMagic, "not a darkdisk sealed message")
        }
        guard sealed[3] == magic[3] else { throw CryptoError(.unsupportedVersion, "a sealed message of version \(sealed[3]), which this darkdisk does not know") }
        guard sealed.count >= overhead else { throw CryptoError(.truncated, "a sealed message of \(sealed.count) bytes is cut short") }
        let nonce = Array(sealed[magic.count..<magic.count + GCMContext.nonceSize])
        let ciphertext = Array(sealed[magic.count + GCMContext.nonceSize..<sealed.count - CryptoFormat.tagSize])
        let tag = Array(sealed[(sealed.count - CryptoFormat.tagSize)...])
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        guard try AESGCM.open(key: key, nonce: nonce, aad: magic + context, ciphertext: ciphertext, tag: tag, plaintext: &plaintext) else {
            throw CryptoError(.wrongKey, "the sealed message does not open: altered, written under another key, or meant for another name")
        }
        return plaintext
    }
}
