import COpenSSL

extension SymmetricKey {
    /// A key for one purpose, derived from this one with HKDF-SHA256 (RFC 5869, OpenSSL's implementation;
    /// no salt, `info` = the purpose's UTF-8 bytes). Different purposes give independent keys, so the key
    /// that seals remote records never also wraps node keys.
    public func derived(for purpose: String) throws(CryptoError) -> SymmetricKey {
        let info = Array(purpose.utf8)
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw OpenSSLError.make("make an HKDF context") }
        defer { EVP_PKEY_CTX_free(context) }
        return try SymmetricKey(initializing: { (output: UnsafeMutableRawBufferPointer) throws(CryptoError) in
            var length = output.count
            let ok = withSecretBytes { (key: UnsafeRawBufferPointer) -> Bool in
                EVP_PKEY_derive_init(context) == 1
                    && EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1
                    && EVP_PKEY_CTX_set1_hkdf_key(context, key.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(key.count)) == 1
                    && EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count)) == 1
                    && EVP_PKEY_derive(context, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length) == 1
            }
            guard ok, length == Self.size else { throw OpenSSLError.make("derive a key with HKDF") }
        })
    }
}
