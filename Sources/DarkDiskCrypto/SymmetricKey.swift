/// A 256-bit AES key. Keys wrap other keys (a master key wraps node keys, a passphrase-derived key wraps
/// the master key) with AES-256-GCM so a wrong wrapping key is detected instead of yielding garbage.
public struct SymmetricKey: Sendable, Hashable, CustomStringConvertible {
    static let size = 32
    static let wrapAAD = Array("darkdisk key wrap v1".utf8)
    /// Length of `wrap`'s output: nonce, encrypted key, tag.
    static let wrappedSize = GCMContext.nonceSize + size + CryptoFormat.tagSize

    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// A key from exactly 32 bytes; any other length is `.invalidKey`.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.size else {
            throw CryptoError(.invalidKey, "a key must be \(Self.size) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// A new key from the CSPRNG.
    public static func random() -> SymmetricKey {
        SymmetricKey(checkedBytes: SecureRandom.bytes(size))
    }

    private init(checkedBytes: [UInt8]) {
        bytes = checkedBytes
    }

    /// Never shows the key material, so keys can be logged or interpolated by accident without leaking.
    public var description: String { "SymmetricKey(<redacted>)" }

    /// Encrypts `key` under `self`: random 12-byte nonce || 32-byte ciphertext || 16-byte tag (60 bytes),
    /// AAD "darkdisk key wrap v1". The random nonce makes wrapping the same key twice give different bytes.
    public func wrap(_ key: SymmetricKey) -> [UInt8] {
        let nonce = SecureRandom.bytes(GCMContext.nonceSize)
        var ciphertext = [UInt8](repeating: 0, count: Self.size)
        var tag = [UInt8](repeating: 0, count: CryptoFormat.tagSize)
        do {
            try AESGCM.seal(key: bytes, nonce: nonce, aad: Self.wrapAAD, plaintext: key.bytes,
                            ciphertext: &ciphertext, tag: &tag)
        } catch {
            fatalError("cannot wrap a key: \(error)")
        }
        return nonce + ciphertext + tag
    }

    /// Decrypts the output of `wrap`. A wrong wrapping key (or altered bytes) is `.wrongKey`; input that
    /// is not 60 bytes long is `.corrupt`.
    public func unwrap(_ wrapped: [UInt8]) throws(CryptoError) -> SymmetricKey {
        guard wrapped.count == Self.wrappedSize else {
            throw CryptoError(.corrupt, "a wrapped key must be \(Self.wrappedSize) bytes, not \(wrapped.count)")
        }
        let nonce = Array(wrapped[0..<GCMContext.nonceSize])
        let ciphertext = Array(wrapped[GCMContext.nonceSize..<(GCMContext.nonceSize + Self.size)])
        let tag = Array(wrapped[(GCMContext.nonceSize + Self.size)...])
        var plaintext = [UInt8](repeating: 0, count: Self.size)
        guard try AESGCM.open(key: bytes, nonce: nonce, aad: Self.wrapAAD, ciphertext: ciphertext, tag: tag,
                              plaintext: &plaintext) else {
            throw CryptoError(.wrongKey, "the wrapped key does not decrypt with this key (wrong key or corrupted data)")
        }
        return SymmetricKey(checkedBytes: plaintext)
    }
}
