import COpenSSL

/// An AES-256-GCM context bound to one key and direction, reused for many nonces so the key schedule is
/// computed once. Works on raw pointers so the read hot path needs no allocation besides the context itself.
struct GCMContext: ~Copyable {
    static let nonceSize = 12

    private let context: OpaquePointer

    /// Sets up a context for `key` (32 bytes), sealing when `encrypting`, opening otherwise.
    init(key: [UInt8], encrypting: Bool) throws(CryptoError) {
        context = try key.withBytes { (key: UnsafeRawBufferPointer) throws(CryptoError) in try Self.make(key: key, encrypting: encrypting) }
    }

    /// Sets up a context for the 32 bytes at `key` (OpenSSL copies them into the context, which wipes
    /// them when freed), sealing when `encrypting`, opening otherwise.
    init(key: UnsafeRawBufferPointer, encrypting: Bool) throws(CryptoError) {
        context = try Self.make(key: key, encrypting: encrypting)
    }

    private static func make(key: UnsafeRawBufferPointer, encrypting: Bool) throws(CryptoError) -> OpaquePointer {
        precondition(key.count == 32)
        guard let context = EVP_CIPHER_CTX_new() else { throw OpenSSLError.make("allocate a cipher context") }
        let status = EVP_CipherInit_ex2(context, OpenSSLCipher.aes256GCM.pointer, key.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                        nil, encrypting ? 1 : 0, nil)
        guard status == 1 else {
            EVP_CIPHER_CTX_free(context)
            throw OpenSSLError.make("set up AES-256-GCM")
        }
        return context
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
    }

    /// Encrypts `count` bytes at `plaintext` into `ciphertext` (which may equal `plaintext`) and writes the
    /// 16-byte tag to `tag`. `nonce` points at 12 bytes.
    func seal(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, plaintext: UnsafeRawPointer?, count: Int,
              ciphertext: UnsafeMutableRawPointer?, tag: UnsafeMutableRawPointer) throws(CryptoError) {
        guard start(nonce: nonce, aad: aad), update(input: plaintext, count: count, output: ciphertext) else {
            throw OpenSSLError.make("encrypt")
        }
        var length: Int32 = 0
        var unused: UInt8 = 0
        guard EVP_CipherFinal_ex(context, &unused, &length) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(CryptoFormat.tagSize), tag) == 1 else {
            throw OpenSSLError.make("compute a GCM tag")
        }
    }

    /// Decrypts `count` bytes at `ciphertext` into `plaintext` (which may equal `ciphertext`) and checks
    /// the 16-byte tag at `tag`. Returns false if the tag does not verify; the output is then garbage.
    func open(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawPointer?, count: Int,
              tag: UnsafeRawPointer, plaintext: UnsafeMutableRawPointer?) throws(CryptoError) -> Bool {
        guard start(nonce: nonce, aad: aad),
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(CryptoFormat.tagSize),
                                  UnsafeMutableRawPointer(mutating: tag)) == 1,
              update(input: ciphertext, count: count, output: plaintext) else {
            throw OpenSSLError.make("decrypt")
        }
        var length: Int32 = 0
        var unused: UInt8 = 0
        let verified = EVP_CipherFinal_ex(context, &unused, &length) == 1
        if !verified { ERR_clear_error() }
        return verified
    }

    private func start(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer) -> Bool {
        guard EVP_CipherInit_ex2(context, nil, nil, nonce.assumingMemoryBound(to: UInt8.self), -1, nil) == 1 else {
            return false
        }
        guard let base = aad.baseAddress, !aad.isEmpty else { return true }
        var length: Int32 = 0
        return EVP_CipherUpdate(context, nil, &length, base.assumingMemoryBound(to: UInt8.self), Int32(aad.count)) == 1
    }

    private func update(input: UnsafeRawPointer?, count: Int, output: UnsafeMutableRawPointer?) -> Bool {
        guard count > 0, let input, let output else { return true }
        precondition(count <= Int(Int32.max))
        var length: Int32 = 0
        return EVP_CipherUpdate(context, output.assumingMemoryBound(to: UInt8.self), &length,
                                input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
            && Int(length) == count
    }
}
