import COpenSSL

/// One-shot AES-256-GCM for the small, cold messages of the format (key wraps, header tags, sealed
/// records); chunks go through `GCMContext` directly. The cores take raw buffers, so a key or a key being
/// unwrapped never leaves its locked memory.
enum AESGCM {
    /// Encrypts `plaintext` into `ciphertext` (same length) and writes the 16-byte `tag`.
    static func seal(key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8], plaintext: UnsafeRawBufferPointer,
                     ciphertext: inout [UInt8], tag: inout [UInt8]) throws(CryptoError) {
        precondition(nonce.count == GCMContext.nonceSize && ciphertext.count == plaintext.count
                     && tag.count == CryptoFormat.tagSize)
        let context = try GCMContext(key: key, encrypting: true)
        let result: Result<Void, CryptoError> = nonce.withUnsafeBytes { nonce in
            aad.withUnsafeBytes { aad in
                ciphertext.withUnsafeMutableBytes { ciphertext in
                    tag.withUnsafeMutableBytes { tag in
                        Result { () throws(CryptoError) in
                            try context.seal(nonce: nonce.baseAddress!, aad: aad, plaintext: plaintext.baseAddress,
                                             count: plaintext.count, ciphertext: ciphertext.baseAddress,
                                             tag: tag.baseAddress!)
                        }
                    }
                }
            }
        }
        try result.get()
    }

    /// Decrypts `ciphertext` into `plaintext` (same length) if `tag` verifies; returns false (and zeroes
    /// `plaintext`) otherwise.
    static func open(key: UnsafeRawBufferPointer, nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8],
                     plaintext: UnsafeMutableRawBufferPointer) throws(CryptoError) -> Bool {
        precondition(nonce.count == GCMContext.nonceSize && plaintext.count == ciphertext.count
                     && tag.count == CryptoFormat.tagSize)
        let context = try GCMContext(key: key, encrypting: false)
        let result: Result<Bool, CryptoError> = nonce.withUnsafeBytes { nonce in
            aad.withUnsafeBytes { aad in
                ciphertext.withUnsafeBytes { ciphertext in
                    tag.withUnsafeBytes { tag in
                        Result { () throws(CryptoError) in
                            try context.open(nonce: nonce.baseAddress!, aad: aad, ciphertext: ciphertext.baseAddress,
                                             count: ciphertext.count, tag: tag.baseAddress!,
                                             plaintext: plaintext.baseAddress)
                        }
                    }
                }
            }
        }
        let verified = try result.get()
        if !verified, let base = plaintext.baseAddress { OPENSSL_cleanse(base, plaintext.count) }
        return verified
    }

    /// `seal` with the key and plaintext in arrays (a file key, a header).
    static func seal(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8],
                     ciphertext: inout [UInt8], tag: inout [UInt8]) throws(CryptoError) {
        try key.withBytes { (key: UnsafeRawBufferPointer) throws(CryptoError) in
            try plaintext.withBytes { (plaintext: UnsafeRawBufferPointer) throws(CryptoError) in
                try seal(key: key, nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: &ciphertext, tag: &tag)
            }
        }
    }

    /// `seal` under a `SymmetricKey`, the plaintext in an array (a sealed record).
    static func seal(key: SymmetricKey, nonce: [UInt8], aad: [UInt8], plaintext: [UInt8],
                     ciphertext: inout [UInt8], tag: inout [UInt8]) throws(CryptoError) {
        try key.withSecretBytes { (key: UnsafeRawBufferPointer) throws(CryptoError) in
            try plaintext.withBytes { (plaintext: UnsafeRawBufferPointer) throws(CryptoError) in
                try seal(key: key, nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: &ciphertext, tag: &tag)
            }
        }
    }

    /// `open` with the key and plaintext in arrays.
    static func open(key: [UInt8], nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8],
                     plaintext: inout [UInt8]) throws(CryptoError) -> Bool {
        try key.withBytes { (key: UnsafeRawBufferPointer) throws(CryptoError) -> Bool in
            try plaintext.withMutableBytes { (plaintext: UnsafeMutableRawBufferPointer) throws(CryptoError) -> Bool in
                try open(key: key, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
            }
        }
    }

    /// `open` under a `SymmetricKey`, the plaintext into an array (a sealed record).
    static func open(key: SymmetricKey, nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8],
                     plaintext: inout [UInt8]) throws(CryptoError) -> Bool {
        try key.withSecretBytes { (key: UnsafeRawBufferPointer) throws(CryptoError) -> Bool in
            try plaintext.withMutableBytes { (plaintext: UnsafeMutableRawBufferPointer) throws(CryptoError) -> Bool in
                try open(key: key, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
            }
        }
    }
}
