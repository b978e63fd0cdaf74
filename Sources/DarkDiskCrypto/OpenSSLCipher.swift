import COpenSSL

/// A cipher implementation fetched from OpenSSL's default provider once per process and shared by every
/// context; a fetched `EVP_CIPHER` is immutable, so sharing it between threads is safe.
final class OpenSSLCipher: @unchecked Sendable {
    /// AES-256-GCM, the only cipher of the format.
    static let aes256GCM = OpenSSLCipher(name: "AES-256-GCM")

    let pointer: OpaquePointer

    private init(name: String) {
        guard let pointer = EVP_CIPHER_fetch(nil, name, nil) else {
            fatalError("OpenSSL does not provide \(name): \(OpenSSLError.drainQueue())")
        }
        self.pointer = pointer
    }
}
