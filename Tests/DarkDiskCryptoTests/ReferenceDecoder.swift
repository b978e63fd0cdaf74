import COpenSSL

/// An independent decoder written from Docs/FORMAT.md against raw OpenSSL calls, sharing no code with the
/// module, so the tests check the documented format rather than the implementation agreeing with itself.
enum ReferenceDecoder {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// HMAC-SHA256(contentKey, "darkdisk file key v1" || fileID || 0x01).
    static func fileKey(contentKey: [UInt8], fileID: [UInt8]) -> [UInt8] {
        let message = Array("darkdisk file key v1".utf8) + fileID + [1]
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), contentKey, Int32(contentKey.count), message, message.count, &output, &length)
        return output
    }

    /// HKDF-SHA256 (RFC 5869) from its definition: PRK = HMAC(salt or 32 zero bytes, IKM); T(i) =
    /// HMAC(PRK, T(i-1) || info || i); the first `length` bytes of T(1) || T(2) || ...
    static func hkdf(ikm: [UInt8], salt: [UInt8] = [], info: [UInt8], length: Int) -> [UInt8] {
        func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: 32)
            var outputLength: UInt32 = 0
            _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &output, &outputLength)
            return output
        }
        let prk = hmac(salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, ikm)
        var okm: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            previous = hmac(prk, previous + info + [counter])
            okm += previous
            counter += 1
        }
        return Array(okm.prefix(length))
    }

    /// A sealed message (FORMAT.md "Sealed records"): "DDS" 0x01 || nonce (12) || ciphertext || tag (16),
    /// AAD = the 4 magic bytes || context. Nil if anything does not check.
    static func openSealed(_ bytes: [UInt8], key: [UInt8], context: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 32, Array(bytes.prefix(4)) == [0x44, 0x44, 0x53, 0x01] else { return nil }
        return open(key: key, nonce: Array(bytes[4..<16]), aad: Array(bytes.prefix(4)) + context,
                    ciphertext: Array(bytes[16..<(bytes.count - 16)]), tag: Array(bytes.suffix(16)))
    }

    /// AES-256-GCM encryption; returns ciphertext and tag.
    static func seal(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8]) {
        let context = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        _ = EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce)
        _ = EVP_EncryptUpdate(context, nil, &length, aad, Int32(aad.count))
        if !plaintext.isEmpty { _ = EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)) }
        _ = EVP_EncryptFinal_ex(context, &ciphertext, &length)
        _ = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag)
        return (Array(ciphertext.prefix(plaintext.count)), tag)
    }

    /// AES-256-GCM decryption; nil if the tag does not verify.
    static func open(key: [UInt8], nonce: [UInt8], aad: [UInt8], ciphertext: [UInt8], tag: [UInt8]) -> [UInt8]? {
        let context = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var tag = tag
        _ = EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce)
        _ = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag)
        _ = EVP_DecryptUpdate(context, nil, &length, aad, Int32(aad.count))
        if !ciphertext.isEmpty { _ = EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) }
        guard EVP_DecryptFinal_ex(context, &plaintext, &length) == 1 else { return nil }
        return Array(plaintext.prefix(ciphertext.count))
    }

    static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func littleEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// The 80-byte header for the given fields, tagged under the file key.
    static func header(format: UInt8, chunkSize: UInt32, fileID: [UInt8], sizes: [UInt64], contentKey: [UInt8]) -> [UInt8] {
        var bytes = Array("DDSK".utf8) + [1, format, 0, 0]
        bytes += littleEndianBytes(UInt64(chunkSize)).prefix(4) + [0, 0, 0, 0] + fileID
        for index in 0..<3 { bytes += littleEndianBytes(index < sizes.count ? sizes[index] : 0) }
        bytes += [UInt8](repeating: 0, count: 8)
        let key = fileKey(contentKey: contentKey, fileID: fileID)
        return bytes + seal(key: key, nonce: [UInt8](repeating: 0xFF, count: 12), aad: bytes, plaintext: []).tag
    }

    /// The plaintext of every section of `file`, checking every rule of the format.
    static func decode(_ file: [UInt8], contentKey: [UInt8]) throws -> [[UInt8]] {
        guard file.count >= 80, file[0..<4].elementsEqual("DDSK".utf8), file[4] == 1 else { throw Failure(description: "bad start") }
        let sectionCount = switch file[5] {
        case 1: 1
        case 2: 3
        default: throw Failure(description: "bad format \(file[5])")
        }
        let chunkSize = Int(littleEndian(file[8..<12]))
        let fileID = Array(file[16..<32])
        let sizes = (0..<3).map { Int(littleEndian(file[(32 + 8 * $0)..<(40 + 8 * $0)])) }
        guard file[6..<8].allSatisfy({ $0 == 0 }), file[12..<16].allSatisfy({ $0 == 0 }), file[56..<64].allSatisfy({ $0 == 0 }),
              sizes[sectionCount...].allSatisfy({ $0 == 0 }), chunkSize >= 4096, chunkSize <= 4 << 20,
              chunkSize & (chunkSize - 1) == 0 else {
            throw Failure(description: "bad header fields")
        }
        let key = fileKey(contentKey: contentKey, fileID: fileID)
        guard open(key: key, nonce: [UInt8](repeating: 0xFF, count: 12), aad: Array(file[0..<64]), ciphertext: [],
                   tag: Array(file[64..<80])) != nil else {
            throw Failure(description: "header tag")
        }
        var offset = 80
        var sections: [[UInt8]] = []
        for section in 0..<sectionCount {
            let chunks = (sizes[section] + chunkSize - 1) / chunkSize
            var plaintext: [UInt8] = []
            for chunk in 0..<chunks {
                let length = min(chunkSize, sizes[section] - chunk * chunkSize)
                guard offset + length + 16 <= file.count else { throw Failure(description: "truncated") }
                let nonce = [UInt8(section), 0, 0, 0] + littleEndianBytes(UInt64(chunk))
                let aad = fileID + [UInt8(section)] + littleEndianBytes(UInt64(chunk)) + [chunk == chunks - 1 ? 1 : 0]
                guard let decrypted = open(key: key, nonce: nonce, aad: aad, ciphertext: Array(file[offset..<(offset + length)]),
                                           tag: Array(file[(offset + length)..<(offset + length + 16)])) else {
                    throw Failure(description: "section \(section) chunk \(chunk) tag")
                }
                plaintext += decrypted
                offset += length + 16
            }
            sections.append(plaintext)
        }
        guard offset == file.count else { throw Failure(description: "length \(file.count), expected \(offset)") }
        return sections
    }
}
