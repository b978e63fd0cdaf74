import ArgumentParser
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskCloud
import Foundation

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a store: its folders, a random master key and the index.",
        discussion: """
            With --passphrase-file the master key is stored wrapped by a key derived from the passphrase \
            (scrypt, N = 2^17 unless --scrypt-log-n says otherwise); every later command then needs the same \
            passphrase file. With --remote as well, the \
            wrapped key is also kept in the remote, and a second machine joins with the same two options, \
            then 'darkdisk pull'; with --expect-fingerprint that first pull applies nothing unless the remote \
            serves the records another machine's 'darkdisk fingerprint' covers (without it, the first pull \
            trusts what the remote serves). Without --remote the store uses a file:// remote inside its data folder.
            """)

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var costOptions: PassphraseCostOption

    @OptionGroup var fingerprintOptions: ExpectedFingerprintOption

    @Option(help: ArgumentHelp("The remote: file:///path, http(s)://host/prefix (read-only) or s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION (default: a folder inside the store).", valueName: "URL"))
    var remote: String?

    func run() async throws {
        if fingerprintOptions.expectFingerprint != nil, remote == nil {
            throw CLIError("--expect-fingerprint needs --remote: a new store's own remote holds nothing to check")
        }
        let location = storeOptions.location
        var passphrase = try storeOptions.passphrase()
        defer { if passphrase != nil { wipe(&passphrase!) } }
        let cost = try costOptions.cost()
        let manager: DiskManager
        var joinedKey = false
        if let remote {
            (manager, joinedKey) = try await StoreRemote.createStore(at: location, remote: remote, passphrase: passphrase,
                                                                           passphraseCost: cost, logger: CLILog.cli)
        } else {
            if let problem = DiskManager.unreachableKey(at: location) { throw problem }
            guard !DiskManager.exists(at: location) else {
                throw DarkDiskError(.storeExists, "a store already exists at \(location.configDirectory)")
            }
            manager = try DiskManager.create(at: location, passphrase: passphrase, passphraseCost: cost, logger: CLILog.cli)
        }
        if let expected = fingerprintOptions.expectFingerprint {
            try await manager.setText(expected.lowercased(), for: CloudSync.expectedFingerprintSetting)
        }
        let joined = joinedKey ? " (joined the remote's key)" : ""
        print("created store\(joined): data \(manager.location.dataDirectory), cache \(manager.location.cacheDirectory), key \(manager.location.keyPath)")
    }
}
