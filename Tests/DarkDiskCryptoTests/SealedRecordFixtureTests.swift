import DarkDiskCrypto
import DarkDiskTestSupport
import Foundation
import Testing

/// The sealed record format (Docs/FORMAT.md, "Sealed records"), checked three ways: the reference HKDF
/// against RFC 5869's test vector, the module's key derivation against the reference, and a frozen
/// sealed record (written once, never regenerated) opened by both the module and the reference decoder.
struct SealedRecordFixtureTests {
    static let masterKeyFile = "v1-master-key.hex"
    static let sealedRecord = "v1-sealed-record.rec"
    static let sealedPlaintext = "v1-sealed-record.json"
    static let sealedTombstone = "v1-sealed-tombstone.rec"
    static let tombstonePlaintext = "v1-sealed-tombstone.json"
    /// The documented context of node "fixture-node"'s tombstone: "darkdisk node tombstone 1", a NUL, the node ID.
    static let tombstoneContext = Array("darkdisk node tombstone 1".utf8) + [0] + Array("fixture-node".utf8)
    /// The documented context of node "fixture-node"'s record: "darkdisk node record 2", a NUL, the node ID.
    static let context = Array("darkdisk node record 2".utf8) + [0] + Array("fixture-node".utf8)

    static func masterKey() throws -> SymmetricKey {
        let text = try String(contentsOfFile: FixtureTests.bundled(masterKeyFile), encoding: .utf8)
        return try SymmetricKey(bytes: try #require(Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines))))
    }

    @Test func referenceHKDFMatchesRFC5869() {
        // RFC 5869, test case 3: SHA-256, 22 bytes of 0x0b, no salt, no info, L = 42.
        let okm = ReferenceDecoder.hkdf(ikm: [UInt8](repeating: 0x0b, count: 22), info: [], length: 42)
        #expect(Hex.encode(okm) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func derivedKeysAreHKDFOfTheirPurpose() throws {
        for _ in 0..<8 {
            let key = SymmetricKey.random()
            for purpose in ["darkdisk record key v1", "", "another purpose"] {
                #expect(try key.derived(for: purpose).bytes == ReferenceDecoder.hkdf(ikm: key.bytes, info: Array(purpose.utf8), length: 32))
            }
            #expect(try key.derived(for: "a") != key.derived(for: "b"))
        }
    }

    @Test func frozenSealedRecordOpens() throws {
        let master = try Self.masterKey()
        let sealed = try FileBytes.read(FixtureTests.bundled(Self.sealedRecord))
        let expected = try FileBytes.read(FixtureTests.bundled(Self.sealedPlaintext))
        let recordKey = ReferenceDecoder.hkdf(ikm: master.bytes, info: Array("darkdisk record key v1".utf8), length: 32)
        #expect(ReferenceDecoder.openSealed(sealed, key: recordKey, context: Self.context) == expected, "the reference decoder opens it")
        #expect(try SealedMessage.open(sealed, key: master.derived(for: "darkdisk record key v1"), context: Self.context) == expected)
        // Bound to its node and to its bytes.
        #expect(throws: CryptoError.self) {
            _ = try SealedMessage.open(sealed, key: master.derived(for: "darkdisk record key v1"), context: Self.context + Array("x".utf8))
        }
        for index in [0, 3, 4, 20, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: CryptoError.self, "byte \(index) flipped") {
                _ = try SealedMessage.open(altered, key: master.derived(for: "darkdisk record key v1"), context: Self.context)
            }
        }
        #expect(throws: CryptoError.self) { _ = try SealedMessage.open(Array(sealed.prefix(31)), key: master.derived(for: "darkdisk record key v1"), context: Self.context) }
        // What a record holds (FORMAT.md): version 2 and a generation.
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        #expect(json["version"] as? Int == 2 && json["generation"] as? Int == 3 && json["nodeID"] as? String == "fixture-node")
    }

    /// A record with the drive's attributes (FORMAT.md: `type`, `mode`, `mtime`, `mtimeNsec`, `xattrs`), frozen
    /// when they were added: it opens as any record, and holds them as documented.
    @Test func frozenRecordWithAttributesOpens() throws {
        let master = try Self.masterKey()
        let recordKey = try master.derived(for: "darkdisk record key v1")
        let sealed = try FileBytes.read(FixtureTests.bundled("v1-sealed-record-attributes.rec"))
        let expected = try FileBytes.read(FixtureTests.bundled("v1-sealed-record-attributes.json"))
        #expect(ReferenceDecoder.openSealed(sealed, key: recordKey.bytes, context: Self.context) == expected, "the reference decoder opens it")
        #expect(try SealedMessage.open(sealed, key: recordKey, context: Self.context) == expected)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        #expect(json["type"] as? String == "file" && json["mode"] as? Int == 0o600)
        #expect(json["mtime"] as? Int == 1_764_000_000 && json["mtimeNsec"] as? Int == 123_456_789)
        let xattrs = try #require(json["xattrs"] as? [String: String])
        #expect(xattrs.mapValues { Data(base64Encoded: $0).map { String(decoding: $0, as: UTF8.self) } }
                == ["user.comment": "kept encrypted", "user.xdg.origin.url": "https://example.com/notes"])
    }

    /// The frozen sealed message `NAME.rec`, opened for `context` by the reference decoder and by the
    /// module, each giving `NAME.json`; returns that plaintext.
    static func openFrozen(_ name: String, context: [UInt8]) throws -> [UInt8] {
        let recordKey = try masterKey().derived(for: "darkdisk record key v1")
        let sealed = try FileBytes.read(FixtureTests.bundled(name + ".rec"))
        let expected = try FileBytes.read(FixtureTests.bundled(name + ".json"))
        #expect(ReferenceDecoder.openSealed(sealed, key: recordKey.bytes, context: context) == expected, "the reference decoder opens \(name)")
        #expect(try SealedMessage.open(sealed, key: recordKey, context: context) == expected)
        return expected
    }

    /// A version 3 record (FORMAT.md: the cloud file's `fileID`, the node key bound to the node, JSON padded
    /// with spaces to 1 KiB), frozen when the version came: it opens with the module and the reference.
    @Test func frozenVersion3RecordOpens() throws {
        let master = try Self.masterKey()
        let expected = try Self.openFrozen("v3-sealed-record", context: Self.context)
        #expect(expected.count == 1024 && expected.last == 0x20, "padded with spaces to 1 KiB")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        #expect(json["version"] as? Int == 3 && json["fileID"] as? String == "00112233445566778899aabbccddeeff")
        let wrappedText = try #require(json["wrappedKey"] as? String)
        let wrapped = try #require(Hex.decode(wrappedText))
        let node = Array("node".utf8) + [0] + Array("fixture-node".utf8)
        #expect(try master.unwrap(wrapped, boundTo: node) == FixtureTests.contentKey())
    }

    /// A version 4 record and a version 2 tombstone (FORMAT.md: under the node's keyed name, which their
    /// contexts bind): the name is the documented HKDF of the node ID, each opens under its own context with
    /// the module and the reference, and neither under the node ID's.
    @Test func frozenVersion4RecordAndTombstoneOpenUnderTheKeyedName() throws {
        let master = try Self.masterKey()
        let recordKey = try master.derived(for: "darkdisk record key v1")
        let name = try String(contentsOfFile: FixtureTests.bundled("v4-node-name.txt"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let purpose = "darkdisk object name v1\u{0}node\u{0}fixture-node"
        #expect(Hex.encode(Array(try master.derived(for: purpose).bytes.prefix(16))) == name)
        #expect(Hex.encode(Array(ReferenceDecoder.hkdf(ikm: master.bytes, info: Array(purpose.utf8), length: 32).prefix(16))) == name)
        let recordContext = Array("darkdisk node record 4".utf8) + [0] + Array(name.utf8)
        let record = try Self.openFrozen("v4-sealed-record", context: recordContext)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(record)) as? [String: Any])
        #expect(json["version"] as? Int == 4 && json["nodeID"] as? String == "fixture-node" && json["fileID"] as? String != nil)
        let tombstoneContext = Array("darkdisk node tombstone 2".utf8) + [0] + Array(name.utf8)
        let tombstone = try Self.openFrozen("v2-sealed-tombstone", context: tombstoneContext)
        let note = try #require(try JSONSerialization.jsonObject(with: Data(tombstone)) as? [String: Any])
        #expect(note["version"] as? Int == 2 && note["generation"] as? Int == 7 && note["nodeID"] as? String == "fixture-node")
        for (file, context) in [("v4-sealed-record.rec", Self.context), ("v2-sealed-tombstone.rec", Self.tombstoneContext),
                                ("v4-sealed-record.rec", tombstoneContext), ("v2-sealed-tombstone.rec", recordContext)] {
            let sealed = try FileBytes.read(FixtureTests.bundled(file))
            #expect(throws: CryptoError.self, "\(file) under another context") { _ = try SealedMessage.open(sealed, key: recordKey, context: context) }
        }
    }

    /// A sealed user record (FORMAT.md "User record"): its object name is the keyed hash of the user ID, its
    /// seal binds that name, its avatar key is bound to the user and identity.
    @Test func frozenUserRecordOpensUnderItsKeyedName() throws {
        let master = try Self.masterKey()
        let recordKey = try master.derived(for: "darkdisk record key v1")
        let name = try String(contentsOfFile: FixtureTests.bundled("v2-user-record-name.txt"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let purpose = "darkdisk object name v1\u{0}user\u{0}fixture-user"
        #expect(Hex.encode(Array(try master.derived(for: purpose).bytes.prefix(16))) == name)
        #expect(Hex.encode(Array(ReferenceDecoder.hkdf(ikm: master.bytes, info: Array(purpose.utf8), length: 32).prefix(16))) == name)
        let context = Array("darkdisk user record 2".utf8) + [0] + Array(name.utf8)
        let expected = try Self.openFrozen("v2-sealed-user-record", context: context)
        let sealed = try FileBytes.read(FixtureTests.bundled("v2-sealed-user-record.rec"))
        #expect(throws: CryptoError.self) { _ = try SealedMessage.open(sealed, key: recordKey, context: Self.context) }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        #expect(json["version"] as? Int == 2 && json["userID"] as? String == "fixture-user")
        let identity = try #require((json["identities"] as? [[String: Any]])?.first)
        let avatar = try #require(identity["avatar"] as? [String: Any])
        let avatarText = try #require(avatar["wrappedKey"] as? String)
        let wrapped = try #require(Hex.decode(avatarText))
        let owner = Array("avatar".utf8) + [0] + Array("fixture-user".utf8) + [0] + Array("mail|fixture".utf8)
        #expect(try master.unwrap(wrapped, boundTo: owner) == FixtureTests.contentKey())
    }

    /// A deleted node's tombstone (FORMAT.md, "Node tombstone"): opens under its own context only, so it is
    /// never read as a record, and a record never as a tombstone.
    @Test func frozenTombstoneOpensOnlyAsATombstone() throws {
        let master = try Self.masterKey()
        let recordKey = try master.derived(for: "darkdisk record key v1")
        let sealed = try FileBytes.read(FixtureTests.bundled(Self.sealedTombstone))
        let expected = try FileBytes.read(FixtureTests.bundled(Self.tombstonePlaintext))
        #expect(ReferenceDecoder.openSealed(sealed, key: recordKey.bytes, context: Self.tombstoneContext) == expected, "the reference decoder opens it")
        #expect(try SealedMessage.open(sealed, key: recordKey, context: Self.tombstoneContext) == expected)
        #expect(throws: CryptoError.self) { _ = try SealedMessage.open(sealed, key: recordKey, context: Self.context) }
        let record = try FileBytes.read(FixtureTests.bundled(Self.sealedRecord))
        #expect(throws: CryptoError.self) { _ = try SealedMessage.open(record, key: recordKey, context: Self.tombstoneContext) }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(expected)) as? [String: Any])
        #expect(json["version"] as? Int == 1 && json["generation"] as? Int == 4 && json["nodeID"] as? String == "fixture-node")
        #expect(json["deletedAt"] as? Double == 1_764_000_000)
    }

    /// Writes the tombstone fixture with the frozen master key; run once (DARKDISK_WRITE_TOMBSTONE_FIXTURE=1).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["DARKDISK_WRITE_TOMBSTONE_FIXTURE"] == "1"))
    func writeTombstoneFixture() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let master = try Self.masterKey()
        let plaintext = Array(#"{"deletedAt":1764000000,"generation":4,"nodeID":"fixture-node","version":1}"#.utf8)
        try FileBytes.write(plaintext, to: path(Self.tombstonePlaintext))
        try FileBytes.write(try SealedMessage.seal(plaintext, key: master.derived(for: "darkdisk record key v1"), context: Self.tombstoneContext),
                            to: path(Self.sealedTombstone))
    }

    /// Writes the sealed-record fixture; run once (DARKDISK_WRITE_SEALED_FIXTURE=1) and never again.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["DARKDISK_WRITE_SEALED_FIXTURE"] == "1"))
    func writeSealedRecordFixture() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let master = SymmetricKey.random()
        try Data((Hex.encode(master.bytes) + "\n").utf8).write(to: URL(fileURLWithPath: path(Self.masterKeyFile)))
        let plaintext = Array(#"{"cloudETag":"\"5f1d-3a8\"","dataSize":10000,"generation":3,"metadataSize":68,"name":"report.pdf","nodeID":"fixture-node","parentID":"folder-1","thumbnailSize":600,"version":2,"wrappedKey":"\#(Hex.encode(master.wrap(SymmetricKey.random())))"}"#.utf8)
        try FileBytes.write(plaintext, to: path(Self.sealedPlaintext))
        try FileBytes.write(try SealedMessage.seal(plaintext, key: master.derived(for: "darkdisk record key v1"), context: Self.context),
                            to: path(Self.sealedRecord))
    }
}
