import ArgumentParser
import DarkDisk

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a store: its folders, a random master key and the index.",
        discussion: "With --passphrase-file the master key is stored wrapped by a key derived from the passphrase (scrypt); every later command then needs the same passphrase file.")

    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        let manager = try DiskManager.create(at: storeOptions.location, passphrase: storeOptions.passphrase(), logger: CLILog.cli)
        print("created store: data \(manager.location.dataDirectory), cache \(manager.location.cacheDirectory), key \(manager.location.keyPath)")
    }
}
