import DarkDiskCrypto
import Foundation

/// The store's keys. The master key (read from the key file) never leaves this type: it is only the input
/// of key derivation (HKDF for a purpose) and, for keys wrapped before the key-wrapping key existed, of an
/// unwrap. Everything else the store and the cloud seal with is derived here: the key-wrapping key, the
/// record key, object names, the outline's fingerprint, the index's and the journal's keys.
package final class StoreKeys: Sendable {
    private let masterKey: SymmetricKey
    /// The key that wraps node, avatar and file keys: derived from the master key for that purpose alone
    /// ("darkdisk key wrap key v1").
    private let keyWrapKey: SymmetricKey

    init(masterKey: SymmetricKey) throws(DarkDiskError) {
        self.masterKey = masterKey
        do { keyWrapKey = try masterKey.derived(for: "darkdisk key wrap key v1") } catch {
            throw DarkDiskError(.corrupt, "cannot derive the key-wrapping key: \(error)")
        }
    }

    /// Wraps a key with this store's master key, bound to its owner, as the bucket's records carry keys.
    package func wrap(_ key: SymmetricKey, for owner: KeyOwner) -> [UInt8] {
        keyWrapKey.wrap(key, boundTo: owner.context)
    }

    /// Unwraps a key wrapped by this store's master key for `owner` (from a record, or the outline); a key
    /// from another master key, or bound to another owner, fails. An unbound wrap (what stores wrote before
    /// binding; the seal of the record that carried it authenticated it) is read too.
    package func unwrap(_ wrapped: [UInt8], for owner: KeyOwner) throws(DarkDiskError) -> SymmetricKey {
        try unwrap(Data(wrapped), owner: owner)
    }

    /// Unwraps a key of the index: one the store wrapped itself (unbound), or one bound to `owner` (a key
    /// the bucket's records carry). Wraps made before the key-wrapping key was derived (unbound ones, and
    /// bound ones of version 2) were made with the master key itself, and are read with it.
    func unwrap(_ wrapped: Data, owner: KeyOwner? = nil) throws(DarkDiskError) -> SymmetricKey {
        let bytes = Array(wrapped)
        do {
            if let owner, let version = SymmetricKey.boundWrapVersion(of: bytes) {
                let key = version == SymmetricKey.legacyBoundWrapVersion ? masterKey : keyWrapKey
                return try key.unwrap(bytes, boundTo: owner.context)
            }
            do { return try keyWrapKey.unwrap(bytes) } catch where error.code == .wrongKey {
                return try masterKey.unwrap(bytes)
            }
        } catch {
            throw DarkDiskError(.corrupt, "a key in the index does not unwrap with this store's master key: \(error)")
        }
    }

    /// `key` wrapped for the index (unbound: the index is this machine's own), under the key-wrapping key.
    func wrapLocally(_ key: SymmetricKey) -> [UInt8] {
        keyWrapKey.wrap(key)
    }

    /// Seals a remote record (`SealedMessage`) under the record key, which is derived from the master key, so
    /// every machine of the user derives the same and the bucket's owner learns nothing; `context` binds it
    /// to its kind and its node.
    package func sealRecord(_ plaintext: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        try SealedMessage.seal(plaintext, key: try recordKey(), context: context)
    }

    /// Opens a record `sealRecord` made (on any machine with this master key) for the same context.
    package func openRecord(_ sealed: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        try SealedMessage.open(sealed, key: try recordKey(), context: context)
    }

    private func recordKey() throws(CryptoError) -> SymmetricKey {
        try masterKey.derived(for: "darkdisk record key v1")
    }

    /// A name for a bucket object that tells the bucket's owner nothing of what it names: 32 hex digits of
    /// HKDF of the master key for "darkdisk object name v1", then the parts, NUL-separated (a user's ID, an
    /// avatar's user and identity). Every machine of the user derives the same name.
    package func objectName(_ parts: [String]) -> String {
        let purpose = (["darkdisk object name v1"] + parts).joined(separator: "\u{0}")
        do { return try masterKey.derived(for: purpose).withUnsafeBytes { Hex.encode(Array($0.prefix(16))) } } catch {
            fatalError("cannot derive an object name: \(error)")
        }
    }

    /// A fingerprint of an outline's state: every node's record generation (tombstones too), sorted by node,
    /// under a MAC keyed by the master key ("darkdisk outline fingerprint v1"), as "dd1-" and 32 hex digits.
    /// Two machines with the same key that saw the same records compute the same one; the bucket's owner can
    /// neither compute one nor learn anything from it. What `darkdisk fingerprint` prints and a first pull
    /// checks (`init --remote --expect-fingerprint`).
    package func outlineFingerprint(of generations: [NodeID: UInt64]) -> String {
        var message: [UInt8] = []
        for (node, generation) in generations.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where generation > 0 {
            message += Array(node.rawValue.utf8) + [0] + Array(String(generation).utf8) + [0x0A]
        }
        do {
            let key = try masterKey.derived(for: "darkdisk outline fingerprint v1")
            return "dd1-" + Hex.encode(Array(Digest.hmacSHA256(key: key, message).prefix(16)))
        } catch {
            fatalError("cannot derive the fingerprint key: \(error)")
        }
    }

    /// Whether `key` is this store's master key (a remote's passphrase-protected key, unwrapped, is compared
    /// with it before the store attaches to that remote).
    package func isMasterKey(_ key: SymmetricKey) -> Bool {
        key == masterKey
    }

    /// The key of the drive's commit journal (sealed when the index is encrypted at rest).
    func journalKey() throws(CryptoError) -> SymmetricKey {
        try masterKey.derived(for: "darkdisk drive journal key v1")
    }

    /// The cipher that encrypts the index at rest.
    func indexCipher() throws(DarkDiskError) -> IndexCipher {
        try IndexCipher(masterKey: masterKey)
    }

    /// Protects the master key with `passphrase` at `cost` in the key file at `path` (adding one, or replacing
    /// the old one); the key itself, and so everything it sealed, stays the same.
    func rewrapKeyFile(at path: String, passphrase: [UInt8], cost: PassphraseCost) throws(DarkDiskError) {
        try MasterKeyFile.rewrap(masterKey, passphrase: passphrase, cost: cost, at: path)
    }
}
