import ArgumentParser
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskCloud
import Foundation

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Show or set the store's remote.",
        discussion: """
            A store made by 'import', 'push' or 'mount' (or 'init' without --remote) uses a file:// remote \
            inside its data folder until 'darkdisk remote set URL' attaches another.
            """,
        subcommands: [Get.self, Set.self])

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print the store's remote URL.")

        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let manager = try storeOptions.open()
            let (url, isDefault) = try StoreRemote.url(for: manager)
            print(isDefault ? "\(url) (the store's own folder: no remote set)" : url)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Attach the store to a remote.",
            discussion: """
                Refuses a remote that holds another store's key or nodes sealed under another key. An empty \
                remote gets this store's passphrase-protected key (when the store has a passphrase), so a \
                second machine can join with 'init --remote URL --passphrase-file FILE'. Nodes already \
                pushed to the old remote are not copied.
                """)

        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: ArgumentHelp("file:///path, http(s)://host/prefix (read-only) or s3://BUCKET/PREFIX?endpoint=http://HOST:PORT&region=REGION.", valueName: "URL"))
        var url: String

        func run() async throws {
            let manager = try storeOptions.open()
            var passphrase = try storeOptions.passphrase()
            defer { if passphrase != nil { wipe(&passphrase!) } }
            try await StoreRemote.attach(manager, to: url, passphrase: passphrase)
            print("remote set to \(url)")
        }
    }
}
