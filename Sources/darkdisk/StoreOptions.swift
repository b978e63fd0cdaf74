import ArgumentParser
import DarkDiskStore
import DarkDiskCrypto
import DarkDiskSystem
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

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
        return try Self.readPassphrase(path)
    }

    /// Reads a passphrase from `path`: a private regular file, or a pipe (`--passphrase-file <(pass show x)`),
    /// read once, to its end. A regular file that group or others can read is refused, as the key file is.
    /// The caller wipes the bytes (`wipe`) once the key is unlocked.
    static func readPassphrase(_ path: String) throws -> [UInt8] {
        let file: OwnedDescriptor
        let st: stat
        do {
            file = try OwnedDescriptor.open(path, O_RDONLY)
            st = try file.stat()
        } catch {
            throw CLIError("cannot read passphrase file \(path): \(error)")
        }
        if st.st_mode & S_IFMT == S_IFREG, st.st_mode & 0o077 != 0 {
            throw CLIError("passphrase file \(path) can be read by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); run 'chmod 600 \(path)'")
        }
        guard st.st_mode & S_IFMT != S_IFDIR else { throw CLIError("passphrase file \(path) is a directory") }
        // Read into one buffer that never grows (a grown array leaves copies behind), wiped by the caller;
        // the read buffer is wiped here.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(65536 + 4096)
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { wipe(&buffer) }
        while bytes.count <= 65536 {
            let n: Int
            do { n = try SystemCall.readSome(file.rawValue, into: &buffer, count: buffer.count) } catch {
                throw CLIError("cannot read passphrase file \(path): \(error)")
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        guard bytes.count <= 65536 else { throw CLIError("passphrase file \(path) is larger than 64 KiB") }
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard !bytes.isEmpty else { throw CLIError("passphrase file \(path) is empty") }
        return bytes
    }

    /// Opens the store; with `create`, makes a new one first if none exists.
    func open(create: Bool = false, logger: Logger = CLILog.cli) throws -> DiskManager {
        var passphrase = try passphrase()
        defer { if passphrase != nil { wipe(&passphrase!) } }
        let manager = if create && !DiskManager.exists(at: location) {
            try DiskManager.create(at: location, passphrase: passphrase, logger: logger)
        } else {
            try DiskManager(location: location, passphrase: passphrase, logger: logger)
        }
        OpenedStores.add(manager)
        return manager
    }
}

/// `--scrypt-log-n`: how expensive a new passphrase is to brute-force (`init`, `passphrase set`).
struct PassphraseCostOption: ParsableArguments {
    @Option(name: .customLong("scrypt-log-n"), help: ArgumentHelp("scrypt's cost for a new passphrase, as log2 of N: \(PassphraseCost.weakest.logN) to \(PassphraseCost.strongest.logN) (default \(PassphraseCost.standard.logN); lower only for tests or very slow machines: each unlock takes 2^N × 1 KiB of memory).", valueName: "N"))
    var scryptLogN: Int?

    /// The cost asked for, else the standard one.
    func cost() throws -> PassphraseCost {
        try scryptLogN.map { logN throws(DarkDiskError) in try PassphraseCost(logN: logN) } ?? .standard
    }
}
