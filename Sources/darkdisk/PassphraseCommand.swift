import ArgumentParser
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskCloud
import Foundation

struct PassphraseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passphrase",
        abstract: "Protect the store's key with a passphrase, or change it.",
        subcommands: [Set.self])

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Wrap the store's master key with a new passphrase (adding one, or replacing the old one).",
            discussion: """
                The key itself stays the same, so nothing stored or pushed changes. --passphrase-file gives \
                the current passphrase, if the key has one. When the store has a remote it can write to, the \
                remote's copy of the wrapped key (keys/master.json) is replaced too, so a machine that joins \
                later uses the new passphrase; machines that already joined keep their own key files. The \
                new passphrase is wrapped at today's scrypt cost (N = 2^17 unless --scrypt-log-n says \
                otherwise), so this also upgrades a key file made with a lower one. A store given its first \
                passphrase has its index (names, link targets, attributes, sizes, times) encrypted the next \
                time darkdisk opens it with no other darkdisk process using it.
                """)

        @OptionGroup var storeOptions: StoreOptions

        @OptionGroup var costOptions: PassphraseCostOption

        @Option(help: ArgumentHelp("Read the new passphrase from FILE (a private file, or a pipe such as <(pass show darkdisk)).", valueName: "FILE"))
        var newPassphraseFile: String

        func run() async throws {
            let manager = try storeOptions.open()
            var passphrase = try StoreOptions.readPassphrase(newPassphraseFile)
            defer { wipe(&passphrase) }
            try manager.setPassphrase(passphrase, cost: try costOptions.cost())
            var published = ""
            let (url, isDefault) = try StoreRemote.url(for: manager)
            if !isDefault, !url.hasPrefix("http") {
                let remote = try StoreRemote.remote(for: manager)
                _ = try await remote.write(CloudLayout.masterKey, data: MasterKeyFile.contents(at: manager.location.keyPath))
                published = " and in \(url)"
            }
            print("the store's key is now protected by the new passphrase in \(manager.location.keyPath)\(published)")
            if !manager.isIndexEncrypted {
                print("its index (names, link targets, attributes) is encrypted the next time darkdisk opens the store with no other darkdisk process using it")
            }
        }
    }
}
