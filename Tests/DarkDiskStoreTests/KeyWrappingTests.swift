@testable import DarkDiskStore
@testable import DarkDiskCrypto
import Foundation
import Testing

/// The store wraps keys under a key derived for wrapping alone, never under the master key itself (which
/// is only ever the input of key derivation), and still reads what stores made before wrapped under the
/// master key: their index's unbound wraps and their records' version 2 bound wraps.
@Suite struct KeyWrappingTests {
    @Test func newWrapsUseTheDerivedKeyAndOldOnesStillOpen() throws {
        let store = try TemporaryStore()
        let manager = try store.create()
        let master = try MasterKeyFile.load(at: manager.location.keyPath, passphrase: nil)
        let wrapping = try master.derived(for: "darkdisk key wrap key v1")
        let content = SymmetricKey.random()
        let node = try NodeID("n1")

        let bound = manager.keys.wrap(content, for: .node(node))
        #expect(bound[0] == SymmetricKey.boundWrapVersion)
        #expect(try wrapping.unwrap(bound, boundTo: KeyOwner.node(node).context) == content)
        #expect(throws: CryptoError.self) { _ = try master.unwrap(bound, boundTo: KeyOwner.node(node).context) }
        #expect(try manager.keys.unwrap(bound, for: .node(node)) == content)
        #expect(throws: DarkDiskError.self) { _ = try manager.keys.unwrap(bound, for: .node(NodeID("n2"))) }

        // A version 2 wrap (the master key itself, AAD "v2") from a record pushed before: still read.
        let legacyBound = Self.legacyBoundWrap(content, under: master, context: KeyOwner.node(node).context)
        #expect(try manager.keys.unwrap(legacyBound, for: .node(node)) == content)

        // The index's own wraps: new ones under the derived key, old ones (the master key) still read.
        let local = manager.wrapLocally(content)
        #expect(try wrapping.unwrap(local) == content)
        #expect(throws: CryptoError.self) { _ = try master.unwrap(local) }
        #expect(try manager.unwrap(Data(local)) == content)
        #expect(try manager.unwrap(Data(master.wrap(content))) == content)
        #expect(throws: DarkDiskError.self) { _ = try manager.unwrap(Data(SymmetricKey.random().wrap(content))) }
    }

    /// A version 2 bound wrap as stores made it before the key-wrapping key: 0x02 || nonce || GCM under the
    /// master key with AAD "darkdisk key wrap v2" || 0x00 || context (spelled out here from FORMAT.md).
    static func legacyBoundWrap(_ key: SymmetricKey, under master: SymmetricKey, context: [UInt8]) -> [UInt8] {
        let aad = Array("darkdisk key wrap v2".utf8) + [0] + context
        let nonce = SecureRandom.bytes(12)
        var ciphertext = [UInt8](repeating: 0, count: 32), tag = [UInt8](repeating: 0, count: 16)
        try! AESGCM.seal(key: master.bytes, nonce: nonce, aad: aad, plaintext: key.bytes, ciphertext: &ciphertext, tag: &tag)
        return [2] + nonce + ciphertext + tag
    }
}
