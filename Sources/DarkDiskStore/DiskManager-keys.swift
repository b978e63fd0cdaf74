import DarkDiskCrypto
import Foundation
import GRDB

/// Keys: nodes' content keys, wrapping for remote records, and the master key's passphrase.
extension DiskManager {
    /// The node's content key (created the first time it is needed) and the same key wrapped by the master
    /// key, as a remote record carries it.
    public func contentKey(for nodeID: NodeID) throws(DarkDiskError) -> (key: SymmetricKey, wrapped: [UInt8]) {
        let key = try nodeKey(nodeID)
        let wrapped = try read { db in
            try Data.fetchOne(db, sql: "SELECT wrappedKey FROM node WHERE id = ?", arguments: [nodeID.rawValue])
        }
        return (key, Array(wrapped ?? Data()))
    }

    /// Seals a remote record (`SealedMessage`) under the record key, which is derived from the master key, so
    /// every machine of the user derives the same and the bucket's owner learns nothing; `context` binds it
    /// to its kind and its node.
    public func sealRecord(_ plaintext: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        try SealedMessage.seal(plaintext, key: try recordKey(), context: context)
    }

    /// Opens a record `sealRecord` made (on any machine with this master key) for the same context.
    public func openRecord(_ sealed: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        try SealedMessage.open(sealed, key: try recordKey(), context: context)
    }

    /// A name for a bucket object that tells the bucket's owner nothing of what it names: 32 hex digits of
    /// HKDF of the master key for "darkdisk object name v1", then the parts, NUL-separated (a user's ID, an
    /// avatar's user and identity). Every machine of the user derives the same name.
    public func objectName(_ parts: [String]) -> String {
        let purpose = (["darkdisk object name v1"] + parts).joined(separator: "\u{0}")
        do { return try masterKey.derived(for: purpose).withUnsafeBytes { Hex.encode(Array($0.prefix(16))) } } catch {
            fatalError("cannot derive an object name: \(error)")
        }
    }

    private func recordKey() throws(CryptoError) -> SymmetricKey {
        try masterKey.derived(for: "darkdisk record key v1")
    }

    /// The highest generation of node `nodeID`'s record this store has applied (0: none), even if the node
    /// has gone since: a record of a lower generation is a rollback.
    public func recordGeneration(of nodeID: NodeID) throws(DarkDiskError) -> UInt64 {
        try read { db in
            UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT generation FROM recordGeneration WHERE nodeID = ?", arguments: [nodeID.rawValue]) ?? 0))
        }
    }

    /// `recordGeneration(of:)` of every node that has one, in one read (a pull or a check of a whole bucket).
    public func recordGenerations() throws(DarkDiskError) -> [NodeID: UInt64] {
        try read { db in
            var generations: [NodeID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT nodeID, generation FROM recordGeneration") {
                guard let id = try? NodeID(row["nodeID"] as String) else { continue }
                generations[id] = UInt64(max(0, row["generation"] as Int64))
            }
            return generations
        }
    }

    /// A fingerprint of an outline's state: every node's record generation (tombstones too), sorted by node,
    /// under a MAC keyed by the master key ("darkdisk outline fingerprint v1"), as "dd1-" and 32 hex digits.
    /// Two machines with the same key that saw the same records compute the same one; the bucket's owner can
    /// neither compute one nor learn anything from it. What `darkdisk fingerprint` prints and a first pull
    /// checks (`init --remote --expect-fingerprint`).
    public func outlineFingerprint(of generations: [NodeID: UInt64]) -> String {
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

    /// The fingerprint of the outline as this store last pulled or pushed it (its records' generations), and
    /// how many nodes it covers: what another machine's first pull can be checked against.
    public func outlineFingerprint() throws(DarkDiskError) -> (fingerprint: String, nodes: Int) {
        let generations = try recordGenerations().filter { $0.value > 0 }
        return (outlineFingerprint(of: generations), generations.count)
    }

    /// Whether `text` has the form of an outline fingerprint ("dd1-" and 32 hex digits).
    public static func isOutlineFingerprint(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("dd1-") && lowered.count == 36 && Hex.decode(String(lowered.dropFirst(4))) != nil
    }

    /// Remembers that records of these generations were applied (a generation never goes down).
    public func noteRecordGenerations(_ generations: [NodeID: UInt64]) throws(DarkDiskError) {
        guard !generations.isEmpty else { return }
        try write { db in
            for (node, generation) in generations {
                try db.execute(sql: """
                    INSERT INTO recordGeneration (nodeID, generation) VALUES (?, ?)
                    ON CONFLICT(nodeID) DO UPDATE SET generation = MAX(generation, excluded.generation)
                    """, arguments: [node.rawValue, Int64(clamping: generation)])
            }
        }
    }

    /// Notes the remote objects `gc` found that no record names, and returns since when each has been seen
    /// so (now, for one seen for the first time); objects no longer among them are forgotten.
    public func remoteGarbage(_ unnamed: Set<String>) throws(DarkDiskError) -> [String: Date] {
        let now = clock.now.timeIntervalSince1970
        return try write { db in
            var since: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, since FROM remoteGarbage") {
                let key: String = row["key"]
                if unnamed.contains(key) {
                    since[key] = Date(timeIntervalSince1970: row["since"])
                } else {
                    try db.execute(sql: "DELETE FROM remoteGarbage WHERE key = ?", arguments: [key])
                }
            }
            for key in unnamed where since[key] == nil {
                try db.execute(sql: "INSERT INTO remoteGarbage (key, since) VALUES (?, ?)", arguments: [key, now])
                since[key] = Date(timeIntervalSince1970: now)
            }
            return since
        }
    }

    /// Forgets remote objects `gc` deleted.
    public func forgetRemoteGarbage(_ keys: [String]) throws(DarkDiskError) {
        try write { db in
            for key in keys { try db.execute(sql: "DELETE FROM remoteGarbage WHERE key = ?", arguments: [key]) }
        }
    }

    /// Wraps a key with this store's master key, bound to its owner, as the bucket's records carry keys.
    public func wrapKey(_ key: SymmetricKey, for owner: KeyOwner) -> [UInt8] {
        keyWrapKey.wrap(key, boundTo: owner.context)
    }

    /// Unwraps a key wrapped by this store's master key for `owner` (from a record, or the outline); a key
    /// from another master key, or bound to another owner, fails. An unbound wrap (what stores wrote before
    /// binding; the seal of the record that carried it authenticated it) is read too.
    public func unwrapKey(_ wrapped: [UInt8], for owner: KeyOwner) throws(DarkDiskError) -> SymmetricKey {
        try unwrap(Data(wrapped), owner: owner)
    }

    /// Whether `key` is this store's master key (a remote's passphrase-protected key, unwrapped, is compared
    /// with it before the store attaches to that remote).
    public func isMasterKey(_ key: SymmetricKey) -> Bool {
        key == masterKey
    }

    /// Protects the store's master key with `passphrase` at `cost` (adding one, or replacing the old one,
    /// whatever cost it had); the key itself, and so everything it sealed, stays the same.
    public func setPassphrase(_ passphrase: [UInt8], cost: PassphraseCost = .standard) throws(DarkDiskError) {
        try MasterKeyFile.rewrap(masterKey, passphrase: passphrase, cost: cost, at: location.keyPath)
    }
}
