import DarkDiskCrypto
import Testing

/// SHA-256 and HMAC-SHA256 against published vectors (FIPS 180-2, RFC 4231): the HMAC is built on the
/// hasher here, so every case of the RFC's key sizes (shorter than, equal to and longer than a block) is run.
struct DigestTests {
    @Test func sha256MatchesFIPS180Vectors() {
        #expect(Hex.encode(Digest.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(Digest.sha256([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test(arguments: [
        // RFC 4231 test cases 1, 2, 3, 4, 6 and 7.
        (String(repeating: "0b", count: 20), Hex.encode(Array("Hi There".utf8)),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Hex.encode(Array("Jefe".utf8)), Hex.encode(Array("what do ya want for nothing?".utf8)),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (String(repeating: "aa", count: 20), String(repeating: "dd", count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("0102030405060708090a0b0c0d0e0f10111213141516171819", String(repeating: "cd", count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (String(repeating: "aa", count: 131), Hex.encode(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (String(repeating: "aa", count: 131),
         Hex.encode(Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8)),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmacSHA256MatchesRFC4231(key: String, message: String, expected: String) throws {
        let key = try #require(Hex.decode(key)), message = try #require(Hex.decode(message))
        #expect(Hex.encode(Digest.hmacSHA256(key: key, message)) == expected)
    }

    /// A key of exactly one block is used as it is; an empty message still has a MAC (Python's hmac module).
    @Test func blockSizedKeyAndEmptyMessage() {
        let key = [UInt8](0..<64)
        #expect(Hex.encode(Digest.hmacSHA256(key: key, [UInt8]())) == Self.blockKeyEmptyMessage)
    }

    static let blockKeyEmptyMessage = "3499f163f48604c0b15ac89e4e7c66f314fb3b203b8ac2f564828e62f6be9d9d"
}
