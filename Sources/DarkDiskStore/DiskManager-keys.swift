import DarkDiskCrypto
import Foundation
import GRDB

/// The master key's passphrase (wrapping, sealing and derivation: `StoreKeys`; content keys: `StoreOutline`).
extension DiskManager {
    /// Protects the store's master key with `passphrase` at `cost` (adding one, or replacing the old one,
    /// whatever cost it had); the key itself, and so everything it sealed, stays the same.
    public func setPassphrase(_ passphrase: [UInt8], cost: PassphraseCost = .standard) throws(DarkDiskError) {
        try keys.rewrapKeyFile(at: location.keyPath, passphrase: passphrase, cost: cost)
    }
}
