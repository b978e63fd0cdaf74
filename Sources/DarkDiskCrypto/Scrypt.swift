import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`, to turn a passphrase into a key-encryption key
/// that is expensive to brute-force.
public enum Scrypt {
    /// The 32-byte scrypt output for `passphrase` and `salt` with cost `n` (a power of two > 1), block size
    /// `r` and parallelism `p`. Parameters OpenSSL rejects, or memory it cannot get, are `.openssl` errors.
    public static func deriveKey(passphrase: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64) throws(CryptoError) -> SymmetricKey {
        // OpenSSL refuses to use more than `maxmem` bytes and defaults it to 32 MiB, less than common
        // parameters need (N = 2^16, r = 8 takes 64 MiB); allow 128·r·(N + p + 2) plus some slack.
        let (blocks, overflow1) = n.addingReportingOverflow(p)
        let (blocksPlusTwo, overflow2) = blocks.addingReportingOverflow(2)
        let (perBlock, overflow3) = r.multipliedReportingOverflow(by: 128)
        let (needed, overflow4) = blocksPlusTwo.multipliedReportingOverflow(by: perBlock)
        let (maxMemory, overflow5) = needed.addingReportingOverflow(1 << 20)
        guard !(overflow1 || overflow2 || overflow3 || overflow4 || overflow5) else {
            throw CryptoError(.openssl, "scrypt parameters N=\(n) r=\(r) p=\(p) need more memory than can be addressed")
        }
        // The passphrase is read in place (never copied) and the output written straight into the key's
        // locked memory; OpenSSL wipes its own working memory.
        return try SymmetricKey(initializing: { (output: UnsafeMutableRawBufferPointer) throws(CryptoError) in
            let status = passphrase.withUnsafeBytes { passphrase in
                salt.withUnsafeBytes { salt in
                    EVP_PBE_scrypt(passphrase.baseAddress?.assumingMemoryBound(to: CChar.self), passphrase.count,
                                   salt.baseAddress?.assumingMemoryBound(to: UInt8.self), salt.count, n, r, p, maxMemory,
                                   output.baseAddress?.assumingMemoryBound(to: UInt8.self), output.count)
                }
            }
            guard status == 1 else { throw OpenSSLError.make("derive a key with scrypt N=\(n) r=\(r) p=\(p)") }
        })
    }
}
