import DarkDiskStore
import Foundation
import Logging

/// The remote a store is attached to: the URL given to `init --remote` or `remote set`, else
/// the embedded default, a `file://` bucket inside the store's data folder (so everything works with
/// nothing else running). Joining a store's key through its remote and attaching a remote are here too,
/// so an app does what `darkdisk init --remote` and `darkdisk remote set` do without the command line.
public enum StoreRemote {
    /// The index setting that holds the URL.
    public static let settingKey = "remote"

    /// The embedded default remote of a store at `location`.
    public static func defaultURL(for location: StoreLocation) -> String {
        "file://" + location.dataDirectory + "/remote"
    }

    /// The store's remote URL, and whether it is the embedded default (no remote was set).
    public static func url(for manager: DiskManager) throws -> (url: String, isDefault: Bool) {
        if let url = try manager.text(settingKey) { return (url, url == defaultURL(for: manager.location)) }
        return (defaultURL(for: manager.location), true)
    }

    /// The store's remote, ready to use (the embedded default's folder is made if missing). `stallTimeout`:
    /// how long a request may go without a byte before the remote counts as unreachable
    /// (`RemoteURL.remote`; nil: the remote's default).
    public static func remote(for manager: DiskManager, stallTimeout: Duration? = nil) throws -> any Remote {
        let url = try self.url(for: manager).url
        if url == defaultURL(for: manager.location) {
            try FileManager.default.createDirectory(atPath: manager.location.dataDirectory + "/remote", withIntermediateDirectories: true)
        }
        return try RemoteURL.remote(url, stallTimeout: stallTimeout)
    }

    /// Creates a store at `location` attached to the remote at `url`. If the remote keeps a
    /// passphrase-protected key (another machine made it), the store joins that key, which `passphrase`
    /// must open; if it is empty, the store gets a new key, published there when it has a passphrase. A
    /// remote holding nodes or users but no key to join is refused (`.foreignKey`): a new key could read none;
    /// a protected key and no passphrase is `.passphraseRequired`. A new key is wrapped at `passphraseCost`;
    /// a joined one keeps the cost its key file records.
    /// Returns the store and whether it joined the remote's key.
    public static func createStore(at location: StoreLocation, remote url: String, passphrase: [UInt8]?,
                                   passphraseCost: PassphraseCost = .standard, logger: Logger? = nil) async throws -> (manager: DiskManager, joined: Bool) {
        if let problem = DiskManager.unreachableKey(at: location) { throw problem }
        guard !DiskManager.exists(at: location) else {
            throw DarkDiskError(.storeExists, "a store already exists at \(location.configDirectory)")
        }
        let target = try RemoteURL.remote(url)
        let contents = try await RemoteMembership.contents(of: target)
        try RemoteMembership.refuseNewKey(for: target, holding: contents, keyPath: location.keyPath)
        if contents.keyFile != nil && passphrase == nil {
            throw DarkDiskError(.passphraseRequired, "\(url) keeps a passphrase-protected key: joining it takes the passphrase of the machine that made it (a new key could read none of its nodes)")
        }
        let manager = try logger.map {
            try DiskManager.create(at: location, passphrase: passphrase, passphraseCost: passphraseCost, adoptingKeyFile: contents.keyFile, logger: $0)
        } ?? DiskManager.create(at: location, passphrase: passphrase, passphraseCost: passphraseCost, adoptingKeyFile: contents.keyFile)
        try await manager.setText(url, for: settingKey)
        if contents.keyFile == nil, passphrase != nil {
            _ = try await target.write(CloudLayout.masterKey, data: MasterKeyFile.contents(at: location.keyPath))
        }
        return (manager, contents.keyFile != nil)
    }

    /// Attaches the store to the remote at `url`, refusing (`.foreignKey`) one that holds another store's key
    /// or nodes sealed under another key (`passphrase` opens the remote's key file to compare it). An empty
    /// remote gets this store's passphrase-protected key, so another machine can join. Nodes already pushed
    /// to the old remote are not copied.
    public static func attach(_ manager: DiskManager, to url: String, passphrase: [UInt8]?) async throws {
        let remote = try RemoteURL.remote(url)
        let contents = try await RemoteMembership.contents(of: remote)
        try await RemoteMembership.checkSameKey(manager, remote: remote, holding: contents, passphrase: passphrase)
        if contents.keyFile == nil, try MasterKeyFile.needsPassphrase(at: manager.location.keyPath), !url.hasPrefix("http") {
            _ = try await remote.write(CloudLayout.masterKey, data: MasterKeyFile.contents(at: manager.location.keyPath))
        }
        try await manager.setText(url, for: settingKey)
    }
}
