/// One-shot AES-256-GCM over arrays for the small, cold messages of the format (key wraps, header tags);
/// chunks go through `GCMContext` directly.
enum AESGCM {
    /// Encrypts `plaintext` into `ciphertext` (same length) and writes the 16-byte `tag`.
    static func seal(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8],
                     ciphertext: inout [UInt8], tag: inout [UInt8]) throws(CryptoError) {
        precondition(nonce.count == GCMContext.nonceSize && ciphertext.count == plaintext.count
                     && tag.count == CryptoFormat.tagSize)
        let context = try GCMContext(key: key, encrypting: true)
        let result: Result<Void, CryptoError> = nonce.withUnsafeBytes { nonce in
            aad.withUnsafeBytes { aad in
                plaintext.withUnsafeBytes { plaintext in
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
        }
        try result.get()
    }

    /// Decrypts `ciphertext` into `plaintext` (same length) if `tag` verifies; returns false otherwise.
    static func open(key: [UInt8], nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8],
                     plaintext: inout [UInt8]) throws(CryptoError) -> Bool {
        precondition(nonce.count == GCMContext.nonceSize && plaintext.count == ciphertext.count
                     && tag.count == CryptoFormat.tagSize)
        let context = try GCMContext(key: key, encrypting: false)
        let result: Result<Bool, CryptoError> = nonce.withUnsafeBytes { nonce in
            aad.withUnsafeBytes { aad in
                ciphertext.withUnsafeBytes { ciphertext in
                    tag.withUnsafeBytes { tag in
                        plaintext.withUnsafeMutableBytes { plaintext in
                            Result { () throws(CryptoError) in
                                try context.open(nonce: nonce.baseAddress!, aad: aad, ciphertext: ciphertext.baseAddress,
                                                 count: ciphertext.count, tag: tag.baseAddress!,
                                                 plaintext: plaintext.baseAddress)
                            }
                        }
                    }
                }
            }
        }
        let verified = try result.get()
        if !verified {
            for index in plaintext.indices { plaintext[index] = 0 }
        }
        return verified
    }
}
