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

    /// A key wrapped bound to its owner opens for that owner only; the frozen fixture (a node key wrapped
    /// for node "fixture-node" under the fixture master key, made once with Python's `cryptography`) opens
    /// with the module and with the reference AES-GCM, and not for another node.
    @Test func boundWrapsOpenForTheirOwnerOnly() throws {
        let master = try SealedRecordFixtureTests.masterKey()
        let content = try FixtureTests.contentKey()
        let text = try String(contentsOfFile: FixtureTests.bundled("v2-bound-wrapped-key.hex"), encoding: .utf8)
        let frozen = try #require(Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        let node = Array("node".utf8) + [0] + Array("fixture-node".utf8)
        #expect(frozen.count == 61 && frozen[0] == 2)
        #expect(try master.unwrap(frozen, boundTo: node) == content)
        let aad = Array("darkdisk key wrap v2".utf8) + [0] + node
        #expect(ReferenceDecoder.open(key: master.bytes, nonce: Array(frozen[1..<13]), aad: aad,
                                      ciphertext: Array(frozen[13..<45]), tag: Array(frozen[45...])) == content.bytes)
        for other in [Array("node".utf8) + [0] + Array("other-node".utf8), Array("avatar".utf8) + [0] + Array("fixture-node".utf8), []] {
            let error = #expect(throws: CryptoError.self) { _ = try master.unwrap(frozen, boundTo: other) }
            #expect(error?.code == .wrongKey)
        }
        // Fresh wraps: random nonces, bound the same way; an unbound wrap is not a bound one, nor the reverse.
        let wrapped = master.wrap(content, boundTo: node)
        #expect(wrapped != master.wrap(content, boundTo: node) && wrapped.count == SymmetricKey.boundWrappedSize)
        #expect(try master.unwrap(wrapped, boundTo: node) == content)
        #expect(throws: CryptoError.self) { _ = try master.unwrap(master.wrap(content), boundTo: node) }
        #expect(throws: CryptoError.self) { _ = try master.unwrap(wrapped) }
        var flipped = wrapped
        flipped[30] ^= 1
        #expect(throws: CryptoError.self) { _ = try master.unwrap(flipped, boundTo: node) }
    }

    /// Version 3 bound wraps (what every record carries now) are made under the key-wrapping key, derived
    /// from the master key for that purpose alone; the frozen one, made from FORMAT.md with Python, opens
    /// under it and under the reference decoder, and not under the master key itself.
    @Test func version3WrapsAreMadeUnderTheDerivedWrappingKey() throws {
        let master = try SealedRecordFixtureTests.masterKey()
        let content = try FixtureTests.contentKey()
        let wrapping = try master.derived(for: "darkdisk key wrap key v1")
        let text = try String(contentsOfFile: FixtureTests.bundled("v3-bound-wrapped-key.hex"), encoding: .utf8)
        let frozen = try #require(Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        let node = Array("node".utf8) + [0] + Array("fixture-node".utf8)
        #expect(frozen.count == 61 && frozen[0] == 3)
        #expect(try wrapping.unwrap(frozen, boundTo: node) == content)
        #expect(throws: CryptoError.self) { _ = try master.unwrap(frozen, boundTo: node) }
        let aad = Array("darkdisk key wrap v3".utf8) + [0] + node
        let referenceKey = ReferenceDecoder.hkdf(ikm: master.bytes, info: Array("darkdisk key wrap key v1".utf8), length: 32)
        #expect(ReferenceDecoder.open(key: referenceKey, nonce: Array(frozen[1..<13]), aad: aad,
                                      ciphertext: Array(frozen[13..<45]), tag: Array(frozen[45...])) == content.bytes)
        // A fresh bound wrap is version 3; the version byte is authenticated (a 3 turned into a 2 fails).
        var fresh = wrapping.wrap(content, boundTo: node)
        #expect(fresh[0] == 3)
        #expect(try wrapping.unwrap(fresh, boundTo: node) == content)
        fresh[0] = 2
        #expect(throws: CryptoError.self) { _ = try wrapping.unwrap(fresh, boundTo: node) }
        let local = try #require(Hex.decode(try String(contentsOfFile: FixtureTests.bundled("v3-local-wrapped-key.hex"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try wrapping.unwrap(local) == content)
    }

    /// Keys live in secret memory: equal keys compare equal (in constant time), copies share it, and many
    /// more keys than the locked region holds still work (the rest live on the heap). An unwrap that fails
    /// gives its memory back once: afterwards no two keys share it.
    @Test func keysBeyondTheLockedRegionStillWork() throws {
        let other = SymmetricKey.random(), wrapped = SymmetricKey.random().wrap(SymmetricKey.random())
        for _ in 0..<100 { #expect(throws: CryptoError.self) { _ = try other.unwrap(wrapped) } }
        let keys = (0..<3000).map { _ in SymmetricKey.random() }
        let copies = try keys.map { try SymmetricKey(bytes: $0.bytes) }
        #expect(keys == copies)
        #expect(Set(keys.map(\.bytes)).count == keys.count, "every random key differs")
        let wrapping = SymmetricKey.random()
        for key in keys.prefix(50) { #expect(try wrapping.unwrap(wrapping.wrap(key)) == key) }
        #expect("\(keys[0])" == "SymmetricKey(<redacted>)")
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
