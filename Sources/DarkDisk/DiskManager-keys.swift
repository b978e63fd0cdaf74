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

    /// Wraps a key with this store's master key, as remote records carry keys.
    public func wrapKey(_ key: SymmetricKey) -> [UInt8] {
        masterKey.wrap(key)
    }

    /// Unwraps a key wrapped by this store's master key (from a remote record); a key from another master key fails.
    public func unwrapKey(_ wrapped: [UInt8]) throws(DarkDiskError) -> SymmetricKey {
        try unwrap(Data(wrapped))
    }

    /// Whether `key` is this store's master key (a remote's passphrase-protected key, unwrapped, is compared
    /// with it before the store attaches to that remote).
    public func isMasterKey(_ key: SymmetricKey) -> Bool {
        key.bytes == masterKey.bytes
    }

    /// Protects the store's master key with `passphrase` (adding one, or replacing the old one); the key
    /// itself, and so everything it sealed, stays the same.
    public func setPassphrase(_ passphrase: [UInt8]) throws(DarkDiskError) {
        try MasterKeyFile.rewrap(masterKey, passphrase: passphrase, at: location.keyPath)
    }
}
