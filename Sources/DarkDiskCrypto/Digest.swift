import COpenSSL
import Foundation

/// SHA-256 and HMAC-SHA256 through OpenSSL's libcrypto, for request signing (AWS Signature V4) and for
/// checking transferred bytes; one-shot for small inputs, incremental for files streamed in pieces.
public enum Digest {
    /// The 32-byte SHA-256 of `bytes`.
    public static func sha256(_ bytes: some ContiguousBytes) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The 32-byte HMAC-SHA256 of `message` under `key` (RFC 2104 over `SHA256`). OpenSSL's one-shot `HMAC`
    /// looks the algorithm up again at every call; on the mount's threads that lookup (a global lock) cost
    /// 8 µs of each new drive file's first write, which derives the file's key with this.
    public static func hmacSHA256(key: some ContiguousBytes, _ message: some ContiguousBytes) -> [UInt8] {
        var padded = [UInt8](repeating: 0, count: 64)
        key.withUnsafeBytes { key in
            if key.count > padded.count {
                padded.replaceSubrange(0..<32, with: sha256(key))
            } else {
                padded.withUnsafeMutableBytes { $0.copyMemory(from: key) }
            }
        }
        // (The padded key and its two masked forms are as good as the key: wiped before this returns.)
        var masked = padded.map { $0 ^ 0x36 }
        var inner = SHA256()
        inner.update(masked)
        inner.update(message)
        let innerDigest = inner.finalize()
        for index in masked.indices { masked[index] = padded[index] ^ 0x5c }
        var outer = SHA256()
        outer.update(masked)
        outer.update(innerDigest)
        for index in padded.indices {
            padded[index] = 0
            masked[index] = 0
        }
        return outer.finalize()
    }

    /// SHA-256 as fetched from OpenSSL's default provider once (`EVP_sha256()` is fetched again at every use).
    private struct Algorithm: @unchecked Sendable {
        let pointer: OpaquePointer

        static let sha256: Algorithm = {
            guard let fetched = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("SHA-256 is not available: \(OpenSSLError.drainQueue())") }
            return Algorithm(pointer: fetched)
        }()
    }

    /// An incremental SHA-256: feed it pieces with `update`, then take the digest once with `finalize`.
    public struct SHA256: ~Copyable {
        private let context: OpaquePointer

        public init() {
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, Algorithm.sha256.pointer, nil) == 1 else {
                fatalError("SHA-256 initialisation failed: \(OpenSSLError.drainQueue())")
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        /// Adds `bytes` to the hashed stream.
        public mutating func update(_ bytes: some ContiguousBytes) {
            bytes.withUnsafeBytes { update($0) }
        }

        /// Adds the bytes in `buffer` to the hashed stream.
        public mutating func update(_ buffer: UnsafeRawBufferPointer) {
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            guard EVP_DigestUpdate(context, base, buffer.count) == 1 else {
                fatalError("SHA-256 update failed: \(OpenSSLError.drainQueue())")
            }
        }

        /// The 32-byte digest of everything added; the hasher is used up.
        public consuming func finalize() -> [UInt8] {
            var output = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            guard EVP_DigestFinal_ex(context, &output, &length) == 1, length == 32 else {
                fatalError("SHA-256 finalisation failed: \(OpenSSLError.drainQueue())")
            }
            return output
        }
    }
}
