import DarkDiskCrypto
import Foundation
import GRDB

/// Nodes' content keys and the master key's passphrase (wrapping, sealing and derivation: `StoreKeys`).
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

    /// Protects the store's master key with `passphrase` at `cost` (adding one, or replacing the old one,
    /// whatever cost it had); the key itself, and so everything it sealed, stays the same.
    public func setPassphrase(_ passphrase: [UInt8], cost: PassphraseCost = .standard) throws(DarkDiskError) {
        try keys.rewrapKeyFile(at: location.keyPath, passphrase: passphrase, cost: cost)
    }
}
