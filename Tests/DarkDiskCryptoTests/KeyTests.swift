import DarkDiskCrypto
import Testing

/// Keys: construction, wrapping one key under another, and passphrase derivation with scrypt.
struct KeyTests {
    @Test func keysMustBe32Bytes() throws {
        for count in [0, 16, 31, 33, 64] {
            let error = #expect(throws: CryptoError.self) { _ = try SymmetricKey(bytes: [UInt8](repeating: 1, count: count)) }
            #expect(error?.code == .invalidKey)
        }
        let bytes = SecureRandom.bytes(32)
        #expect(try SymmetricKey(bytes: bytes).bytes == bytes)
        #expect(SymmetricKey.random() != SymmetricKey.random())
        #expect(SymmetricKey.random().bytes.count == 32)
        let key = SymmetricKey.random()
        #expect("\(key)" == "SymmetricKey(<redacted>)", "descriptions must not show key bytes")
    }

    @Test func wrapAndUnwrap() throws {
        let wrapping = SymmetricKey.random()
        let key = SymmetricKey.random()
        let wrapped = wrapping.wrap(key)
        #expect(wrapped.count == 60)
        #expect(wrapping.wrap(key) != wrapped, "a fresh nonce for every wrap")
        #expect(try wrapping.unwrap(wrapped) == key)
    }

    @Test func unwrapWithTheWrongKeyFails() throws {
        let wrapped = SymmetricKey.random().wrap(.random())
        let error = #expect(throws: CryptoError.self) { _ = try SymmetricKey.random().unwrap(wrapped) }
        #expect(error?.code == .wrongKey)
    }

    @Test func alteredWrappedKeyFails() throws {
        let wrapping = SymmetricKey.random()
        let wrapped = wrapping.wrap(.random())
        for index in [0, 11, 12, 43, 44, 59] {
            var altered = wrapped
            altered[index] ^= 1
            let error = #expect(throws: CryptoError.self) { _ = try wrapping.unwrap(altered) }
            #expect(error?.code == .wrongKey, "byte \(index)")
        }
        for length in [0, 59, 61] {
            let error = #expect(throws: CryptoError.self) { _ = try wrapping.unwrap(Array(wrapped.prefix(length)) + (length > 60 ? [0] : [])) }
            #expect(error?.code == .corrupt, "length \(length)")
        }
    }

    @Test func scryptMatchesRFC7914() throws {
        // RFC 7914 section 12: scrypt("password", "NaCl", N = 1024, r = 8, p = 16), first 32 of 64 bytes.
        let expected: [UInt8] = [
            0xfd, 0xba, 0xbe, 0x1c, 0x9d, 0x34, 0x72, 0x00, 0x78, 0x56, 0xe7, 0x19, 0x0d, 0x01, 0xe9, 0xfe,
            0x7c, 0x6a, 0xd7, 0xcb, 0xc8, 0x23, 0x78, 0x30, 0xe7, 0x73, 0x76, 0x63, 0x4b, 0x37, 0x31, 0x62,
        ]
        let key = try Scrypt.deriveKey(passphrase: Array("password".utf8), salt: Array("NaCl".utf8), n: 1024, r: 8, p: 16)
        #expect(key.bytes == expected)
    }

    @Test func scryptAllowsTheMemoryOfRealParameters() throws {
        // N = 2^16, r = 8 needs 64 MiB, above OpenSSL's default 32 MiB limit.
        let key = try Scrypt.deriveKey(passphrase: Array("correct horse".utf8), salt: SecureRandom.bytes(32), n: 1 << 16, r: 8, p: 1)
        #expect(key.bytes.count == 32)
    }

    @Test func scryptRejectsInvalidParameters() {
        let error = #expect(throws: CryptoError.self) {
            _ = try Scrypt.deriveKey(passphrase: [1], salt: [2], n: 1000, r: 8, p: 1)
        }
        #expect(error?.code == .openssl)
        let huge = #expect(throws: CryptoError.self) {
            _ = try Scrypt.deriveKey(passphrase: [1], salt: [2], n: 1 << 62, r: 1 << 20, p: 1)
        }
        #expect(huge?.code == .openssl)
    }
}
