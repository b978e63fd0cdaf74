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

    /// The first byte of a bound wrap (`wrap(_:boundTo:)`), which an unbound one (60 bytes) does not have.
    static let boundWrapVersion: UInt8 = 2
    /// Length of `wrap(_:boundTo:)`'s output: version byte, nonce, encrypted key, tag.
    public static let boundWrappedSize = 1 + wrappedSize

    /// Encrypts `key` under `self`, bound to `context` (what the key is for and whose it is, such as a node
    /// ID): 0x02 || random 12-byte nonce || 32-byte ciphertext || 16-byte tag (61 bytes), AAD
    /// "darkdisk key wrap v2" || 0x00 || context. It unwraps only for the same context, so a wrapped key
    /// copied to another owner or purpose does not open there.
    public func wrap(_ key: SymmetricKey, boundTo context: [UInt8]) -> [UInt8] {
        let nonce = SecureRandom.bytes(GCMContext.nonceSize)
        var ciphertext = [UInt8](repeating: 0, count: Self.size)
        var tag = [UInt8](repeating: 0, count: CryptoFormat.tagSize)
        do {
            try AESGCM.seal(key: bytes, nonce: nonce, aad: Self.boundWrapAAD(context), plaintext: key.bytes,
                            ciphertext: &ciphertext, tag: &tag)
        } catch {
            fatalError("cannot wrap a key: \(error)")
        }
        return [Self.boundWrapVersion] + nonce + ciphertext + tag
    }

    /// Decrypts a key `wrap(_:boundTo:)` made for the same `context`; another context, another wrapping key
    /// or altered bytes are `.wrongKey`, input of another form `.corrupt`.
    public func unwrap(_ wrapped: [UInt8], boundTo context: [UInt8]) throws(CryptoError) -> SymmetricKey {
        guard wrapped.count == Self.boundWrappedSize, wrapped[0] == Self.boundWrapVersion else {
            throw CryptoError(.corrupt, "a bound wrapped key must be \(Self.boundWrappedSize) bytes starting with \(Self.boundWrapVersion)")
        }
        let nonce = Array(wrapped[1..<(1 + GCMContext.nonceSize)])
        let ciphertext = Array(wrapped[(1 + GCMContext.nonceSize)..<(1 + GCMContext.nonceSize + Self.size)])
        let tag = Array(wrapped[(1 + GCMContext.nonceSize + Self.size)...])
        var plaintext = [UInt8](repeating: 0, count: Self.size)
        guard try AESGCM.open(key: bytes, nonce: nonce, aad: Self.boundWrapAAD(context), ciphertext: ciphertext, tag: tag,
                              plaintext: &plaintext) else {
            throw CryptoError(.wrongKey, "the wrapped key does not open here (another owner's or purpose's key, a wrong key, or altered bytes)")
        }
        return SymmetricKey(checkedBytes: plaintext)
    }

    static func boundWrapAAD(_ context: [UInt8]) -> [UInt8] {
        Array("darkdisk key wrap v2".utf8) + [0] + context
    }
}
