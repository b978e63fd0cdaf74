import COpenSSL

/// Turns OpenSSL's thread-local error queue into a `CryptoError` so failures carry OpenSSL's own reason.
enum OpenSSLError {
    /// An `.openssl` error for the failed operation `what`, emptying the error queue into the message.
    static func make(_ what: String) -> CryptoError {
        CryptoError(.openssl, "OpenSSL failed to \(what): \(drainQueue())")
    }

    /// The queued OpenSSL errors as one line (oldest first), leaving the queue empty.
    static func drainQueue() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
    }
}
