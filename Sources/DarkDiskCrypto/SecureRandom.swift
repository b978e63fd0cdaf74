import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's CSPRNG, for keys, nonces, salts and file IDs.
public enum SecureRandom {
    /// `count` random bytes. Stops the process if the CSPRNG fails, since continuing without
    /// randomness would silently produce guessable keys.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max))
        var bytes = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&bytes, Int32(count)) == 1 else {
            fatalError("OpenSSL RAND_bytes failed: \(OpenSSLError.drainQueue())")
        }
        return bytes
    }
}

extension SecureRandom {
    /// Fills `buffer` with random bytes in place (a key's locked memory). Stops the process if the CSPRNG
    /// fails.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            fatalError("OpenSSL RAND_bytes failed: \(OpenSSLError.drainQueue())")
        }
    }
}
