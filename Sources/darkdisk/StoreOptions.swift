import ArgumentParser
import DarkDisk
import Foundation
import Logging

/// Options every command shares: which store, and how to unlock its key.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Keep the whole store under DIR (default: $DARKDISK_STORE, else the XDG folders).", valueName: "DIR"))
    var store: String?

    @Option(name: .long, help: ArgumentHelp("Read the passphrase that protects the store's key from FILE (default: $DARKDISK_PASSPHRASE_FILE).", valueName: "FILE"))
    var passphraseFile: String?

    var location: StoreLocation { StoreLocation.resolve(store: store) }

    /// The passphrase from --passphrase-file or DARKDISK_PASSPHRASE_FILE (one trailing newline removed), if any.
    func passphrase() throws -> [UInt8]? {
        guard let path = passphraseFile ?? ProcessInfo.processInfo.environment["DARKDISK_PASSPHRASE_FILE"], !path.isEmpty else {
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read passphrase file \(path)")
        }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard !bytes.isEmpty else { throw CLIError("passphrase file \(path) is empty") }
        return bytes
    }

    /// Opens the store; with `create`, makes a new one first if none exists.
    func open(create: Bool = false, logger: Logger = CLILog.cli) throws -> DiskManager {
        if create && !DiskManager.exists(at: location) {
            return try DiskManager.create(at: location, passphrase: passphrase(), logger: logger)
        }
        return try DiskManager(location: location, passphrase: passphrase(), logger: logger)
    }
}
