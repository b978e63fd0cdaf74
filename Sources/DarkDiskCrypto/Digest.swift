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

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: some ContiguousBytes, _ message: some ContiguousBytes) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                // HMAC wants a non-null data pointer even for an empty message.
                let data = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { empty in
                    HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data ?? UnsafePointer(empty.baseAddress), message.count,
                         &output, &length)
                }
            }
        }
        guard result != nil, length == 32 else { fatalError("HMAC-SHA256 failed: \(OpenSSLError.drainQueue())") }
        return output
    }

    /// An incremental SHA-256: feed it pieces with `update`, then take the digest once with `finalize`.
    public struct SHA256: ~Copyable {
        private let context: OpaquePointer

        public init() {
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
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
