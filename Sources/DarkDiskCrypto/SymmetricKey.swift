import Foundation

/// A 256-bit AES key. Keys wrap other keys (a master key wraps node keys, a passphrase-derived key wraps
/// the master key) with AES-256-GCM so a wrong wrapping key is detected instead of yielding garbage. The
/// key bytes live in `SecretBytes`: locked out of swap, left out of core dumps, wiped when the last copy
/// of the key goes.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible, ContiguousBytes {
    static let size = 32
    static let wrapAAD = Array("darkdisk key wrap v1".utf8)
    /// Length of `wrap`'s output: nonce, encrypted key, tag.
    static let wrappedSize = GCMContext.nonceSize + size + CryptoFormat.tagSize

    private let storage: SecretBytes

    /// A copy of the 32 key bytes in ordinary memory (for a key file, a test): not wiped, so the library
    /// itself reads keys with `withUnsafeBytes`.
    public var bytes: [UInt8] { storage.withUnsafeBytes { Array($0) } }

    /// A key from exactly 32 bytes; any other length is `.invalidKey`. The caller wipes its own array.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.size else {
            throw CryptoError(.invalidKey, "a key must be \(Self.size) bytes, not \(bytes.count)")
        }
        storage = bytes.withUnsafeBytes { SecretBytes(copying: $0) }
    }

    /// A key whose 32 bytes `initialize` writes in place.
    init<E: Error>(initializing initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        storage = try SecretBytes(count: Self.size, initialize)
    }

    /// A new key from the CSPRNG.
    public static func random() -> SymmetricKey {
        SymmetricKey(initializing: { (buffer: UnsafeMutableRawBufferPointer) in SecureRandom.fill(buffer) })
    }

    /// Calls `body` with the key's 32 bytes, which must not escape it.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws -> R in try body(buffer) }
    }

    /// Whether two keys are equal, compared in constant time.
    public static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool {
        lhs.storage.constantTimeEquals(rhs.storage)
    }

    /// `withUnsafeBytes` with a typed error, for the library's own uses.
    func withSecretBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try storage.withUnsafeBytes(body)
    }

    /// Never shows the key material, so keys can be logged or interpolated by accident without leaking.
    public var description: String { "SymmetricKey(<redacted>)" }

    /// Encrypts `key` under `self`: random 12-byte nonce || 32-byte ciphertext || 16-byte tag (60 bytes),
    /// AAD "darkdisk key wrap v1". The random nonce makes wrapping the same key twice give different bytes.
    public func wrap(_ key: SymmetricKey) -> [UInt8] {
        seal(key, aad: Self.wrapAAD)
    }

    /// Decrypts the output of `wrap`. A wrong wrapping key (or altered bytes) is `.wrongKey`; input that
    /// is not 60 bytes long is `.corrupt`.
    public func unwrap(_ wrapped: [UInt8]) throws(CryptoError) -> SymmetricKey {
        guard wrapped.count == Self.wrappedSize else {
            throw CryptoError(.corrupt, "a wrapped key must be \(Self.wrappedSize) bytes, not \(wrapped.count)")
        }
        return try open(wrapped[...], aad: Self.wrapAAD,
                        failure: "the wrapped key does not decrypt with this key (wrong key or corrupted data)")
    }

    /// The first byte of the bound wraps `wrap(_:boundTo:)` makes (which an unbound one, 60 bytes, does not
    /// have); `unwrap(_:boundTo:)` also reads `legacyBoundWrapVersion`.
    public static let boundWrapVersion: UInt8 = 3
    /// The bound wrap stores made before wrapping keys were derived for the purpose (`KeyWrapping`).
    public static let legacyBoundWrapVersion: UInt8 = 2
    /// Length of `wrap(_:boundTo:)`'s output: version byte, nonce, encrypted key, tag.
    public static let boundWrappedSize = 1 + wrappedSize

    /// Encrypts `key` under `self`, bound to `context` (what the key is for and whose it is, such as a node
    /// ID): 0x03 || random 12-byte nonce || 32-byte ciphertext || 16-byte tag (61 bytes), AAD
    /// "darkdisk key wrap v3" || 0x00 || context. It unwraps only for the same context, so a wrapped key
    /// copied to another owner or purpose does not open there.
    public func wrap(_ key: SymmetricKey, boundTo context: [UInt8]) -> [UInt8] {
        [Self.boundWrapVersion] + seal(key, aad: Self.boundWrapAAD(Self.boundWrapVersion, context))
    }

    /// The version byte of a bound wrap (3, or 2 for a legacy one), or nil for bytes of another form.
    public static func boundWrapVersion(of wrapped: [UInt8]) -> UInt8? {
        guard wrapped.count == boundWrappedSize, [boundWrapVersion, legacyBoundWrapVersion].contains(wrapped[0]) else { return nil }
        return wrapped[0]
    }

    /// Decrypts a key `wrap(_:boundTo:)` made for the same `context` (version 3; or version 2, whose AAD says
    /// "v2"); another context, another wrapping key or altered bytes are `.wrongKey`, input of another form
    /// `.corrupt`.
    public func unwrap(_ wrapped: [UInt8], boundTo context: [UInt8]) throws(CryptoError) -> SymmetricKey {
        guard let version = Self.boundWrapVersion(of: wrapped) else {
            throw CryptoError(.corrupt, "a bound wrapped key must be \(Self.boundWrappedSize) bytes starting with \(Self.legacyBoundWrapVersion) or \(Self.boundWrapVersion)")
        }
        return try open(wrapped[1...], aad: Self.boundWrapAAD(version, context),
                        failure: "the wrapped key does not open here (another owner's or purpose's key, a wrong key, or altered bytes)")
    }

    static func boundWrapAAD(_ version: UInt8, _ context: [UInt8]) -> [UInt8] {
        Array("darkdisk key wrap v\(version)".utf8) + [0] + context
    }

    /// nonce || AES-256-GCM(self, key, aad) || tag, the key read from its locked memory.
    private func seal(_ key: SymmetricKey, aad: [UInt8]) -> [UInt8] {
        let nonce = SecureRandom.bytes(GCMContext.nonceSize)
        var ciphertext = [UInt8](repeating: 0, count: Self.size)
        var tag = [UInt8](repeating: 0, count: CryptoFormat.tagSize)
        do {
            try withSecretBytes { (wrapping: UnsafeRawBufferPointer) throws(CryptoError) in
                try key.withSecretBytes { (plaintext: UnsafeRawBufferPointer) throws(CryptoError) in
                    try AESGCM.seal(key: wrapping, nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: &ciphertext, tag: &tag)
                }
            }
        } catch {
            fatalError("cannot wrap a key: \(error)")
        }
        return nonce + ciphertext + tag
    }

    /// Opens `sealed` (nonce || ciphertext || tag, 60 bytes) straight into a new key's locked memory.
    private func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], failure: String) throws(CryptoError) -> SymmetricKey {
        let start = sealed.startIndex
        let nonce = Array(sealed[start..<(start + GCMContext.nonceSize)])
        let ciphertext = Array(sealed[(start + GCMContext.nonceSize)..<(start + GCMContext.nonceSize + Self.size)])
        let tag = Array(sealed[(start + GCMContext.nonceSize + Self.size)...])
        return try SymmetricKey(initializing: { (plaintext: UnsafeMutableRawBufferPointer) throws(CryptoError) in
            let verified = try withSecretBytes { (wrapping: UnsafeRawBufferPointer) throws(CryptoError) -> Bool in
                try AESGCM.open(key: wrapping, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
            }
            guard verified else { throw CryptoError(.wrongKey, failure) }
        })
    }
}
